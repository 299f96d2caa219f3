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
        /// An image for Retention Messaging is not what Apple accepts (a PNG without transparency,
        /// of the size's dimensions): the reason names the rule. Nothing is sent.
        public static let invalidImage = Code("invalid_image")
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
    /// 4000023: the product identifier is invalid.
    public static let invalidProductId = APIErrorCode(rawValue: 4_000_023)
    /// 4000020: the test notification token is invalid.
    public static let invalidTestNotificationToken = APIErrorCode(rawValue: 4_000_020)
    /// 4000033: the app account token is invalid.
    public static let invalidAppAccountToken = APIErrorCode(rawValue: 4_000_033)
    /// 4000043: the transaction is not consumable.
    public static let invalidTransactionNotConsumable = APIErrorCode(rawValue: 4_000_043)
    /// 4000048: the endpoint does not take an app transaction id.
    public static let appTransactionIdNotSupported = APIErrorCode(rawValue: 4_000_048)
    /// 4000161: Retention Messaging: the uploaded image is invalid (`InvalidImageError`).
    public static let invalidImage = APIErrorCode(rawValue: 4_000_161)
    /// 4000162: Retention Messaging: the message's header is too long (`HeaderTooLongError`).
    public static let headerTooLong = APIErrorCode(rawValue: 4_000_162)
    /// 4000163: Retention Messaging: the message's body is too long (`BodyTooLongError`).
    public static let bodyTooLong = APIErrorCode(rawValue: 4_000_163)
    /// 4000164: Retention Messaging: the locale is invalid (`InvalidLocaleError`).
    public static let invalidLocale = APIErrorCode(rawValue: 4_000_164)
    /// 4000175: Retention Messaging: an image's alternative text is too long (`AltTextTooLongError`).
    public static let altTextTooLong = APIErrorCode(rawValue: 4_000_175)
    /// 4000185: the endpoint does not take a Family Sharing transaction.
    public static let familyTransactionNotSupported = APIErrorCode(rawValue: 4_000_185)
    /// 4000187: the endpoint takes an original transaction id only.
    public static let transactionIdNotOriginalTransactionId = APIErrorCode(rawValue: 4_000_187)
    /// 4000211: Retention Messaging: the performance test request is invalid
    /// (`InvalidPerformanceTestRequestError`).
    public static let invalidPerformanceTestRequest = APIErrorCode(rawValue: 4_000_211)
    /// 4000212: Retention Messaging: the performance test's request id is invalid (`InvalidRequestIdError`).
    public static let invalidRequestId = APIErrorCode(rawValue: 4_000_212)
    /// 4000213: Retention Messaging: a performance test is already running
    /// (`ExistingPerformanceTestRunError`).
    public static let existingPerformanceTestRun = APIErrorCode(rawValue: 4_000_213)
    /// 4000215: Retention Messaging: the realtime URL is invalid (`BadRequestRealtimeUrlError`).
    public static let badRequestRealtimeURL = APIErrorCode(rawValue: 4_000_215)
    /// 4000216: Retention Messaging: the image size is invalid (`BadRequestImageSizeError`).
    public static let badRequestImageSize = APIErrorCode(rawValue: 4_000_216)
    /// 4000218: Retention Messaging: the message has too many bullet points
    /// (`BadRequestTooManyBulletPointsError`).
    public static let badRequestTooManyBulletPoints = APIErrorCode(rawValue: 4_000_218)
    /// 4000219: Retention Messaging: a bullet point's text is too long
    /// (`BadRequestBulletPointTextTooLongError`).
    public static let badRequestBulletPointTextTooLong = APIErrorCode(rawValue: 4_000_219)
    /// 4000224: Retention Messaging: `ABOVE_IMAGE` without an image
    /// (`BadRequestAboveImageRequiresAnImageError`).
    public static let badRequestAboveImageRequiresAnImage = APIErrorCode(rawValue: 4_000_224)
    /// 4030004: the subscription doesn't qualify for a renewal date extension.
    public static let subscriptionExtensionIneligible = APIErrorCode(rawValue: 4_030_004)
    /// 4030005: the subscription's renewal date can't be extended further.
    public static let subscriptionMaxExtension = APIErrorCode(rawValue: 4_030_005)
    /// 4030007: the family-shared subscription can't be extended.
    public static let familySharedSubscriptionExtensionIneligible = APIErrorCode(rawValue: 4_030_007)
    /// 4030014: Retention Messaging: the app has the most images Apple keeps (2000)
    /// (`MaximumNumberOfImagesReachedError`).
    public static let maximumNumberOfImagesReached = APIErrorCode(rawValue: 4_030_014)
    /// 4030016: Retention Messaging: the app has the most messages Apple keeps (2000)
    /// (`MaximumNumberOfMessagesReachedError`).
    public static let maximumNumberOfMessagesReached = APIErrorCode(rawValue: 4_030_016)
    /// 4030017: Retention Messaging: the message is not `APPROVED` (`MessageNotApprovedError`).
    public static let messageNotApproved = APIErrorCode(rawValue: 4_030_017)
    /// 4030018: Retention Messaging: an image of the message is not `APPROVED` (`ImageNotApprovedError`).
    public static let imageNotApproved = APIErrorCode(rawValue: 4_030_018)
    /// 4030019: Retention Messaging: a message uses the image (`ImageInUseError`).
    public static let imageInUse = APIErrorCode(rawValue: 4_030_019)
    /// 4030026: Retention Messaging: a production realtime URL needs a passed performance test
    /// (`ForbiddenNoPassingTestError`).
    public static let forbiddenNoPassingTest = APIErrorCode(rawValue: 4_030_026)
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
    /// 4040014: Retention Messaging: the image was not found (`ImageNotFoundError`).
    public static let imageNotFound = APIErrorCode(rawValue: 4_040_014)
    /// 4040015: Retention Messaging: the message was not found (`MessageNotFoundError`).
    public static let messageNotFound = APIErrorCode(rawValue: 4_040_015)
    /// 4040018: Retention Messaging: the performance test was not found (`PerformanceTestRunNotFoundError`).
    public static let performanceTestRunNotFound = APIErrorCode(rawValue: 4_040_018)
    /// 4040020: Retention Messaging: no default message is configured for the product and locale
    /// (`DefaultMessageNotFoundError`).
    public static let defaultMessageNotFound = APIErrorCode(rawValue: 4_040_020)
    /// 4040021: Retention Messaging: no realtime URL is configured (`RealtimeUrlNotFoundError`).
    public static let realtimeURLNotFound = APIErrorCode(rawValue: 4_040_021)
    /// 4090000: Retention Messaging: an image with this identifier exists (`ImageAlreadyExistsError`).
    public static let imageAlreadyExists = APIErrorCode(rawValue: 4_090_000)
    /// 4090001: Retention Messaging: a message with this identifier exists (`MessageAlreadyExistsError`).
    public static let messageAlreadyExists = APIErrorCode(rawValue: 4_090_001)
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
