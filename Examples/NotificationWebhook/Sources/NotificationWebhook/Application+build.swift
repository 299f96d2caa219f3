public import Hummingbird
public import Logging
import ReceiptKit

/// Builds the webhook server: one verifier, created once from the configuration and shared by
/// every request.
///
/// - Parameters:
///   - configuration: Where to listen and what to trust and check.
///   - logger: The server's logger; each request logs one line through it.
/// - Returns: The application, ready for `runService()`.
public func buildApplication(_ configuration: WebhookConfiguration, logger: Logger) -> some ApplicationProtocol {
    let verifier = AppStoreVerifier(configuration.verifier)
    let router = Router()
    WebhookRoutes(verifier: verifier).add(to: router)
    return Application(
        router: router,
        configuration: .init(address: .hostname(configuration.host, port: configuration.port)),
        logger: logger)
}
