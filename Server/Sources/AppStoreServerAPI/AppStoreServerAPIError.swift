public import ReceiptKit

/// The one error the App Store Server API client throws: a stable snake_case ``code``, a human
/// ``reason``, and what Apple answered (HTTP status, Apple's numeric `errorCode` and message,
/// `Retry-After`) when it answered.
///
/// Two errors are equal when their codes are equal, as ``ReceiptKitError``s are.
public struct AppStoreServerAPIError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable snake_case code: the same string `appstore-api` prints.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        /// The snake_case string.
        public let rawValue: String

        init(_ rawValue: String) {
            self.rawValue = rawValue
        }

        public var description: String { rawValue }

        /// Apple answered 4xx with an error body (`errorCode`, `errorMessage`): see
        /// ``AppStoreServerAPIError/apiErrorCode``. Not retried.
        public static let apiError = Code("api_error")
        /// Apple answered 401: the token was refused (key id, issuer id, bundle id, key, or clock).
        public static let unauthorized = Code("unauthorized")
        /// Apple answered 429 on every attempt, or asked to wait past the deadline.
        public static let rateLimited = Code("rate_limited")
        /// Apple answered 5xx on every attempt (or once, for a request that is not retried).
        public static let serverError = Code("server_error")
        /// No answer: the connection failed on every attempt.
        public static let connectionFailed = Code("connection_failed")
        /// No answer within the per-request timeout, or the overall deadline passed.
        public static let timeout = Code("timeout")
        /// Apple's answer is not the JSON the endpoint documents, or is larger than the limit.
        public static let malformedResponse = Code("malformed_response")
        /// A signed item Apple returned failed verification: see ``AppStoreServerAPIError/rejected``.
        public static let verificationFailed = Code("verification_failed")
        /// The environment has no App Store Server API (Xcode, or LocalTesting without a base URL).
        public static let unsupportedEnvironment = Code("unsupported_environment")
        /// The call's own arguments cannot make a request (an empty identifier, say).
        public static let invalidRequest = Code("invalid_request")
        /// The bearer token could not be signed.
        public static let signingFailed = Code("signing_failed")
    }

    /// The stable code.
    public let code: Code
    /// What failed, for a person.
    public let reason: String
    /// The HTTP status Apple answered with, when it answered.
    public let httpStatus: Int?
    /// Apple's numeric `errorCode` (e.g. 4040010), when its body had one.
    public let apiErrorCode: APIErrorCode?
    /// Apple's `errorMessage`, when its body had one.
    public let apiErrorMessage: String?
    /// The wait Apple asked for with `Retry-After`, in seconds, on a 429.
    public let retryAfterSeconds: Double?
    /// The signed items that failed verification (``Code/verificationFailed``).
    public let rejected: [RejectedItem]
    /// How many requests were sent.
    public let attempts: Int

    init(
        _ code: Code, _ reason: String, httpStatus: Int? = nil, apiErrorCode: APIErrorCode? = nil,
        apiErrorMessage: String? = nil, retryAfterSeconds: Double? = nil, rejected: [RejectedItem] = [], attempts: Int = 0
    ) {
        self.code = code
        self.reason = reason
        self.httpStatus = httpStatus
        self.apiErrorCode = apiErrorCode
        self.apiErrorMessage = apiErrorMessage
        self.retryAfterSeconds = retryAfterSeconds
        self.rejected = rejected
        self.attempts = attempts
    }

    /// The same error after `attempts` requests.
    func after(attempts: Int) -> AppStoreServerAPIError {
        AppStoreServerAPIError(
            code, reason, httpStatus: httpStatus, apiErrorCode: apiErrorCode, apiErrorMessage: apiErrorMessage,
            retryAfterSeconds: retryAfterSeconds, rejected: rejected, attempts: attempts)
    }

    public var description: String { "\(code.rawValue): \(reason)" }

    public static func == (lhs: AppStoreServerAPIError, rhs: AppStoreServerAPIError) -> Bool {
        lhs.code == rhs.code
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
    }
}

/// Apple's numeric error code from an error body, with names for the ones a backend acts on.
/// An unknown code keeps its number.
public struct APIErrorCode: Sendable, Hashable, CustomStringConvertible {
    /// The number Apple sent, e.g. 4040010.
    public let rawValue: Int64

    /// Wraps a number.
    public init(rawValue: Int64) {
        self.rawValue = rawValue
    }

    public var description: String { String(rawValue) }

    /// 4000000: a generic bad request.
    public static let generalBadRequest = APIErrorCode(rawValue: 4_000_000)
    /// 4000002: the app identifier is invalid.
    public static let invalidAppIdentifier = APIErrorCode(rawValue: 4_000_002)
    /// 4000005: the revision token is invalid.
    public static let invalidRequestRevision = APIErrorCode(rawValue: 4_000_005)
    /// 4000006: the transaction id is invalid.
    public static let invalidTransactionId = APIErrorCode(rawValue: 4_000_006)
    /// 4000008: the original transaction id is invalid.
    public static let invalidOriginalTransactionId = APIErrorCode(rawValue: 4_000_008)
    /// 4000009: the extend-by days are invalid.
    public static let invalidExtendByDays = APIErrorCode(rawValue: 4_000_009)
    /// 4000010: the extend reason code is invalid.
    public static let invalidExtendReasonCode = APIErrorCode(rawValue: 4_000_010)
    /// 4000011: the request identifier is invalid.
    public static let invalidRequestIdentifier = APIErrorCode(rawValue: 4_000_011)
    /// 4000012: the start date is too far in the past.
    public static let startDateTooFarInPast = APIErrorCode(rawValue: 4_000_012)
    /// 4000013: the start date is after the end date.
    public static let startDateAfterEndDate = APIErrorCode(rawValue: 4_000_013)
    /// 4000014: the pagination token is invalid.
    public static let invalidPaginationToken = APIErrorCode(rawValue: 4_000_014)
    /// 4000017: the pagination token expired.
    public static let paginationTokenExpired = APIErrorCode(rawValue: 4_000_017)
    /// 4000020: the test notification token is invalid.
    public static let invalidTestNotificationToken = APIErrorCode(rawValue: 4_000_020)
    /// 4000033: the app account token is invalid.
    public static let invalidAppAccountToken = APIErrorCode(rawValue: 4_000_033)
    /// 4000043: the transaction is not consumable.
    public static let invalidTransactionNotConsumable = APIErrorCode(rawValue: 4_000_043)
    /// 4030004: the subscription doesn't qualify for a renewal date extension.
    public static let subscriptionExtensionIneligible = APIErrorCode(rawValue: 4_030_004)
    /// 4030005: the subscription's renewal date can't be extended further.
    public static let subscriptionMaxExtension = APIErrorCode(rawValue: 4_030_005)
    /// 4030007: the family-shared subscription can't be extended.
    public static let familySharedSubscriptionExtensionIneligible = APIErrorCode(rawValue: 4_030_007)
    /// 4040001: the account was not found.
    public static let accountNotFound = APIErrorCode(rawValue: 4_040_001)
    /// 4040003: the app was not found.
    public static let appNotFound = APIErrorCode(rawValue: 4_040_003)
    /// 4040005: the original transaction id was not found.
    public static let originalTransactionIdNotFound = APIErrorCode(rawValue: 4_040_005)
    /// 4040007: no App Store Server Notifications URL is set for the app.
    public static let serverNotificationURLNotFound = APIErrorCode(rawValue: 4_040_007)
    /// 4040008: the test notification was not found.
    public static let testNotificationNotFound = APIErrorCode(rawValue: 4_040_008)
    /// 4040009: the status request was not found.
    public static let statusRequestNotFound = APIErrorCode(rawValue: 4_040_009)
    /// 4040010: the transaction id was not found.
    public static let transactionIdNotFound = APIErrorCode(rawValue: 4_040_010)
    /// 4290000: the rate limit was exceeded.
    public static let rateLimitExceeded = APIErrorCode(rawValue: 4_290_000)
    /// 5000000: a general internal error.
    public static let generalInternal = APIErrorCode(rawValue: 5_000_000)
    /// 5000001: a general internal error; retry.
    public static let generalInternalRetryable = APIErrorCode(rawValue: 5_000_001)
}

/// A signed item of Apple's answer that failed verification: where it was and why. The item
/// itself is never returned.
public struct RejectedItem: Error, Sendable, Hashable, CustomStringConvertible {
    /// Where the item was in Apple's answer, e.g. `signedTransactions[3]` or
    /// `data[0].lastTransactions[1].signedRenewalInfo`.
    public let field: String
    /// Why it was rejected.
    public let error: ReceiptKitError

    public var description: String { "\(field): \(error.code.rawValue): \(error.message)" }
}
