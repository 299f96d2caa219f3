import Logging
import ReceiptKit
import ServiceLifecycle
import UnixSignals

/// Reads the files the server reads again on each `SIGHUP`:
///
/// - `RECEIPTKIT_API_TOKENS_FILE`: a token is rotated by adding the new line, signalling, moving
///   clients to the new token, removing the old line and signalling again, with no request
///   refused;
/// - `RECEIPTKIT_ENTITLEMENTS_FILE`: read, then checked against the products the store has seen
///   (``EntitlementsFile/check(_:path:against:at:)``).
///
/// A file that does not read is logged and what it gave stays as it was.
struct SignalReloadService: Service {
    let tokens: APITokens
    var entitlements: (file: EntitlementsFile, store: Store, clock: @Sendable () -> Timestamp)?
    let logger: Logger

    func run() async throws {
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
            if tokens.file != nil {
                do {
                    let count = try tokens.reload()
                    logger.notice("read RECEIPTKIT_API_TOKENS_FILE again", metadata: ["tokens": "\(count)"])
                } catch {
                    logger.error(
                        "RECEIPTKIT_API_TOKENS_FILE did not read; the tokens stay as they were", metadata: ["error": "\(error)"])
                }
            }
            if let (file, store, clock) = entitlements {
                do {
                    let catalog = try EntitlementsFile.read(file.path)
                    try await EntitlementsFile.check(catalog, path: file.path, against: store, at: clock())
                    file.replace(with: catalog)
                    logger.notice(
                        "read RECEIPTKIT_ENTITLEMENTS_FILE again", metadata: ["entitlements": "\(catalog.names.count)"])
                } catch {
                    logger.error(
                        "RECEIPTKIT_ENTITLEMENTS_FILE did not read; the entitlements in use stay as they were",
                        metadata: ["error": "\(error)"])
                }
            }
        }
    }
}
