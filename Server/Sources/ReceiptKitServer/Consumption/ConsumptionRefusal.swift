import ReceiptKit

/// Why an answer to a consumption request is not taken: the consumption feature's errors (a
/// field Apple would refuse is an ``InvalidInput``).
enum ConsumptionRefusal: CallerError, Equatable {
    /// `customer_consented` is not true: Apple takes consumption information only with it.
    case consentRequired
    /// No `CONSUMPTION_REQUEST` notification about the transaction is stored.
    case requestNotFound(transactionId: String)
    /// Apple took an answer until `deadline`, which has passed.
    case deadlinePassed(deadline: Timestamp)
    /// The server has no In-App Purchase key to send the answer with (`reconciliation_off`, as
    /// every route that needs the App Store Server API answers without it).
    case sendingOff

    var code: String {
        switch self {
        case .consentRequired: "customer_consent_required"
        case .requestNotFound: "consumption_request_not_found"
        case .deadlinePassed: "consumption_deadline_passed"
        case .sendingOff: "reconciliation_off"
        }
    }

    var message: String {
        switch self {
        case .consentRequired:
            "customer_consented must be true: Apple takes consumption information only with the customer's consent"
        case .requestNotFound(let transactionId):
            "no CONSUMPTION_REQUEST notification about transaction \(transactionId) is stored"
        case .deadlinePassed(let deadline):
            "Apple took an answer to this consumption request until \(deadline.iso8601)"
        case .sendingOff:
            "answering a consumption request needs the App Store Server API, which sends the answer: set RECEIPTKIT_APPSTORE_KEY_ID, RECEIPTKIT_APPSTORE_ISSUER_ID and RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE"
        }
    }
}
