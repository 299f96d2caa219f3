import Logging
import ServiceLifecycle
import UnixSignals

/// Reads `RECEIPTKIT_API_TOKENS_FILE` again on each `SIGHUP`: a token is rotated by adding the new
/// line, signalling, moving clients to the new token, removing the old line and signalling again,
/// with no request refused. A file that does not read is logged and the tokens stay as they were.
struct TokenReloadService: Service {
    let tokens: APITokens
    let logger: Logger

    func run() async throws {
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
            do {
                let count = try tokens.reload()
                logger.notice("read RECEIPTKIT_API_TOKENS_FILE again", metadata: ["tokens": "\(count)"])
            } catch {
                logger.error(
                    "RECEIPTKIT_API_TOKENS_FILE did not read; the tokens stay as they were", metadata: ["error": "\(error)"])
            }
        }
    }
}
