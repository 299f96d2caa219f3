import Hummingbird

/// An ``APIError`` a store operation's caller throws is its answer: the store passes it on as
/// thrown (``Store/run(_:)``).
extension APIError: AnswerError {}

extension APIError {
    /// The answer when the server has no In-App Purchase key: 409, a feature this server is not
    /// configured for (a 5xx would say "our fault" to every client and alert).
    static let reconciliationOff = APIError(
        .conflict, "reconciliation_off",
        "this needs the App Store Server API: set RECEIPTKIT_APPSTORE_KEY_ID, RECEIPTKIT_APPSTORE_ISSUER_ID and RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE")
}
