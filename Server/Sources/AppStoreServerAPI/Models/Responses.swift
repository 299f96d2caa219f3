public import ReceiptKit

/// A signed item of Apple's answer that verified: the compact JWS as Apple sent it and what
/// ``AppStoreVerifier`` made of it. Only the client's verification creates one.
public struct VerifiedItem<Payload: Sendable>: Sendable {
    /// The compact JWS, as Apple sent it (what `verify-receipt` reads).
    public let jws: String
    /// The verified payload.
    public let verified: Verified<Payload>
}

/// A notification of Apple's answer that verified, with every JWS nested in it.
public struct VerifiedNotificationItem: Sendable {
    /// The `signedPayload`, as Apple sent it: the body `{"signedPayload": …}` of a webhook.
    public let signedPayload: String
    /// The verified notification and its verified nested JWS.
    public let verified: VerifiedNotification
}

/// One attempt of the App Store to send a notification to your server.
public struct SendAttempt: Sendable, Hashable, Codable {
    /// When it was attempted (`attemptDate`, milliseconds).
    public let attemptDate: Timestamp?
    /// `SUCCESS`, `TIMED_OUT`, `TLS_ISSUE`, `CIRCULAR_REDIRECT`, `NO_RESPONSE`, `SOCKET_ISSUE`,
    /// `UNSUPPORTED_CHARSET`, `INVALID_RESPONSE`, `PREMATURE_CLOSE`, `UNSUCCESSFUL_HTTP_RESPONSE_CODE`
    /// or `OTHER`, raw (`sendAttemptResult`).
    public let rawSendAttemptResult: String?

    enum CodingKeys: String, CodingKey {
        case attemptDate
        case rawSendAttemptResult = "sendAttemptResult"
    }
}

/// One page of Get Transaction History v2: up to 20 transactions, verified.
public struct TransactionHistoryPage: Sendable {
    /// The token for the next page (`revision`).
    public let revision: String?
    /// Whether Apple has more pages (`hasMore`).
    public let hasMore: Bool
    /// `bundleId`, as Apple answered it.
    public let bundleId: String?
    /// `appAppleId`, as Apple answered it.
    public let appAppleId: Int64?
    /// `environment`, raw.
    public let rawEnvironment: String?
    /// The transactions that verified, in Apple's order.
    public let transactions: [VerifiedItem<JWSTransaction>]
    /// The transactions that did not, by position in `signedTransactions`.
    public let rejected: [RejectedItem]

    /// The typed environment, `nil` for a value ReceiptKit does not know.
    public var environment: AppStoreEnvironment? { rawEnvironment.flatMap(AppStoreEnvironment.init(rawValue:)) }
}

/// One page of Get Refund History v2: up to 20 refunded transactions, verified.
public struct RefundHistoryPage: Sendable {
    /// The token for the next page (`revision`).
    public let revision: String?
    /// Whether Apple has more pages (`hasMore`).
    public let hasMore: Bool
    /// The transactions that verified, in Apple's order.
    public let transactions: [VerifiedItem<JWSTransaction>]
    /// The transactions that did not.
    public let rejected: [RejectedItem]
}

/// The answer of Get All Subscription Statuses, verified.
public struct SubscriptionStatuses: Sendable {
    /// One subscription group's latest transactions.
    public struct Group: Sendable {
        /// `subscriptionGroupIdentifier`.
        public let subscriptionGroupIdentifier: String?
        /// Its subscriptions, each the latest transaction and renewal info that verified.
        public let lastTransactions: [LastTransaction]
    }

    /// One subscription's status with its latest transaction and renewal info, both verified.
    /// A subscription either of whose JWS failed is left out and reported in ``rejected``.
    public struct LastTransaction: Sendable {
        /// 1 active, 2 expired, 3 billing retry, 4 billing grace period, 5 revoked (`status`).
        public let rawStatus: Int32?
        /// `originalTransactionId`.
        public let originalTransactionId: String?
        /// `signedTransactionInfo`, verified.
        public let transaction: VerifiedItem<JWSTransaction>
        /// `signedRenewalInfo`, verified.
        public let renewalInfo: VerifiedItem<JWSRenewalInfo>

        /// The typed status.
        public var status: SubscriptionStatusFilter? { rawStatus.flatMap(SubscriptionStatusFilter.init(rawValue:)) }
    }

    /// `environment`, raw.
    public let rawEnvironment: String?
    /// `bundleId`.
    public let bundleId: String?
    /// `appAppleId`.
    public let appAppleId: Int64?
    /// `data`: one entry per subscription group.
    public let groups: [Group]
    /// The JWS that did not verify.
    public let rejected: [RejectedItem]
}

/// The answer of Look Up Order ID, verified.
public struct OrderLookup: Sendable {
    /// 0: the order id is valid; 1: it is not (`status`).
    public let rawStatus: Int32?
    /// The order's transactions that verified.
    public let transactions: [VerifiedItem<JWSTransaction>]
    /// The transactions that did not.
    public let rejected: [RejectedItem]

    /// Whether Apple says the order id is valid.
    public var isValid: Bool { rawStatus == 0 }
}

/// One page of Get Notification History, verified.
public struct NotificationHistoryPage: Sendable {
    /// One notification with the attempts to send it.
    public struct Item: Sendable {
        /// The notification, verified.
        public let notification: VerifiedNotificationItem
        /// `sendAttempts`.
        public let sendAttempts: [SendAttempt]
    }

    /// The token for the next page (`paginationToken`).
    public let paginationToken: String?
    /// Whether Apple has more pages (`hasMore`).
    public let hasMore: Bool
    /// The notifications that verified, in Apple's order.
    public let items: [Item]
    /// The notifications that did not.
    public let rejected: [RejectedItem]
}

/// The answer of Get Test Notification Status, verified.
public struct TestNotificationStatus: Sendable {
    /// The test notification, verified.
    public let notification: VerifiedNotificationItem
    /// `sendAttempts`.
    public let sendAttempts: [SendAttempt]
}

/// The answer of Extend a Subscription Renewal Date.
public struct ExtendRenewalDateResponse: Sendable, Hashable, Codable {
    /// `originalTransactionId`.
    public let originalTransactionId: String?
    /// `webOrderLineItemId`.
    public let webOrderLineItemId: String?
    /// Whether the extension succeeded (`success`).
    public let success: Bool?
    /// The new expiration date (`effectiveDate`).
    public let effectiveDate: Timestamp?
}

/// The answer of Get Status of Subscription Renewal Date Extensions.
public struct MassExtendRenewalDateStatus: Sendable, Hashable, Codable {
    /// `requestIdentifier`.
    public let requestIdentifier: String?
    /// Whether every eligible subscription was processed (`complete`).
    public let complete: Bool?
    /// When it completed (`completeDate`).
    public let completeDate: Timestamp?
    /// How many extensions succeeded (`succeededCount`).
    public let succeededCount: Int64?
    /// How many failed (`failedCount`).
    public let failedCount: Int64?
}

// MARK: Apple's JSON, as decoded before anything is verified

struct HistoryResponseBody: Decodable {
    let revision: String?
    let hasMore: Bool?
    let bundleId: String?
    let appAppleId: Int64?
    let environment: String?
    let signedTransactions: [String]?
}

struct RefundHistoryResponseBody: Decodable {
    let signedTransactions: [String]?
    let revision: String?
    let hasMore: Bool?
}

struct TransactionInfoResponseBody: Decodable {
    let signedTransactionInfo: String?
}

struct AppTransactionInfoResponseBody: Decodable {
    let signedAppTransactionInfo: String?
}

struct StatusResponseBody: Decodable {
    struct Group: Decodable {
        let subscriptionGroupIdentifier: String?
        let lastTransactions: [Item]?
    }

    struct Item: Decodable {
        let status: Int32?
        let originalTransactionId: String?
        let signedTransactionInfo: String?
        let signedRenewalInfo: String?
    }

    let environment: String?
    let bundleId: String?
    let appAppleId: Int64?
    let data: [Group]?
}

struct OrderLookupResponseBody: Decodable {
    let status: Int32?
    let signedTransactions: [String]?
}

struct NotificationHistoryResponseBody: Decodable {
    struct Item: Decodable {
        let signedPayload: String?
        let sendAttempts: [SendAttempt]?
    }

    let paginationToken: String?
    let hasMore: Bool?
    let notificationHistory: [Item]?
}

struct CheckTestNotificationResponseBody: Decodable {
    let signedPayload: String?
    let sendAttempts: [SendAttempt]?
}

struct SendTestNotificationResponseBody: Decodable {
    let testNotificationToken: String?
}

struct MassExtendRenewalDateResponseBody: Decodable {
    let requestIdentifier: String?
}

struct ErrorPayloadBody: Decodable {
    let errorCode: Int64?
    let errorMessage: String?
}
