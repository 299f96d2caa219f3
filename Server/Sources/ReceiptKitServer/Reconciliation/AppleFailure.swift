import AppStoreServerAPI

/// Why asking Apple gave nothing to use: the reconciliation feature's errors.
enum AppleFailure: CallerError, Equatable {
    /// The server has no In-App Purchase key (`RECEIPTKIT_APPSTORE_*`): a feature it is not
    /// configured for.
    case notConfigured
    /// Apple knows no such transaction in the app and environment asked (`apple` is Apple's own
    /// error code, when it gave one).
    case transactionNotFound(transactionId: String, apple: String?)
    /// Apple unreachable, rate-limiting or failing after the client's retries; a retry may work
    /// after `retryAfterSeconds` (Apple's `Retry-After`, or 30).
    case unavailable(cause: String, attempts: Int, retryAfterSeconds: Int)
    /// Apple refused the In-App Purchase key.
    case keyRefused
    /// Apple answered what is not its API, or failed otherwise.
    case failed(reason: String)
    /// Apple answered, but none of what it answered verified: nothing was stored.
    case answerRejected(count: Int)

    var code: String {
        switch self {
        case .notConfigured: "reconciliation_off"
        case .transactionNotFound: "transaction_not_found"
        case .unavailable: "apple_unavailable"
        case .keyRefused: "apple_unauthorized"
        case .failed: "apple_error"
        case .answerRejected: "apple_answer_rejected"
        }
    }

    var message: String {
        switch self {
        case .notConfigured:
            "this needs the App Store Server API: set RECEIPTKIT_APPSTORE_KEY_ID, RECEIPTKIT_APPSTORE_ISSUER_ID and RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE"
        case .transactionNotFound(let transactionId, let apple?):
            "Apple knows no transaction \(transactionId) in this app and environment (\(apple))"
        case .transactionNotFound(let transactionId, nil):
            "Apple lists no transaction \(transactionId)"
        case .unavailable(let cause, let attempts, _):
            "the App Store Server API is unavailable (\(cause) after \(attempts) attempts); retry later"
        case .keyRefused:
            "Apple refused the In-App Purchase key: check RECEIPTKIT_APPSTORE_KEY_ID, RECEIPTKIT_APPSTORE_ISSUER_ID and the key file"
        case .failed(let reason):
            "the App Store Server API failed: \(reason)"
        case .answerRejected(let count):
            "none of the \(count) transactions Apple answered verified: nothing was stored"
        }
    }

    /// What a failed call to Apple means here.
    init(_ error: AppStoreServerAPIError, transactionId: String?) {
        let notFound: Set<APIErrorCode> = [.transactionIdNotFound, .originalTransactionIdNotFound, .invalidTransactionId, .accountNotFound]
        if let code = error.apiErrorCode, notFound.contains(code) {
            self = .transactionNotFound(transactionId: transactionId ?? "", apple: String(code.rawValue))
            return
        }
        switch error.code {
        case .rateLimited, .serverError, .connectionFailed, .timeout:
            self = .unavailable(
                cause: error.code.rawValue, attempts: error.attempts,
                retryAfterSeconds: error.retryAfterSeconds.map { max(1, Int($0.rounded(.up))) } ?? 30)
        case .unauthorized:
            self = .keyRefused
        default:
            self = .failed(reason: error.reason)
        }
    }
}

/// Why a reconcile run did not run or did not finish.
enum ReconcileConflict: CallerError, Equatable {
    /// Another server holds the reconcile lock (retry when it is done).
    case running
    /// Another server's run took this pair's cursor over; this run stopped.
    case takenOver

    var code: String {
        switch self {
        case .running: "reconcile_running"
        case .takenOver: "reconcile_taken_over"
        }
    }

    var message: String {
        switch self {
        case .running: "another server is reconciling now; retry when it is done"
        case .takenOver: "another server's run took the reconcile cursor over; this run stopped"
        }
    }
}
