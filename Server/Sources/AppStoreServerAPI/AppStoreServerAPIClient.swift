public import AsyncHTTPClient
public import Foundation
public import ReceiptKit

/// A client of Apple's App Store Server API (1.21) and Retention Messaging API (1.5) that verifies
/// everything Apple answers.
///
/// Every signed item of an answer — transactions, renewal infos, app transactions,
/// notifications — is verified by the ``AppStoreVerifier`` the client is given and returned as
/// ReceiptKit's verified types. An item that fails verification is never returned as data: a
/// list's answer reports it in its `rejected` (which item, which code) and the caller decides
/// whether the rest is usable; a single item's answer throws ``AppStoreServerAPIError/Code/verificationFailed``.
///
/// Create one client and share it: it is `Sendable`, reuses one bearer token until shortly
/// before it expires, and sends through one `HTTPClient` (by default `HTTPClient.shared`).
///
/// ```swift
/// let key = try InAppPurchaseKey(keyId: "ABCDEFGHIJ", issuerId: issuer, privateKeyPEM: p8)
/// let client = try AppStoreServerAPIClient(
///     configuration: .init(key: key, bundleId: "com.example.app", environment: .production),
///     verifier: AppStoreVerifier(.init(bundleId: "com.example.app", environment: .production)))
/// for try await page in client.transactionHistoryPages("2000000123") {
///     for item in page.transactions { … item.verified.payload … }
/// }
/// ```
public struct AppStoreServerAPIClient: Sendable {
    /// Apple's base URL for production.
    public static let productionBaseURL = "https://api.storekit.apple.com"
    /// Apple's base URL for the sandbox.
    public static let sandboxBaseURL = "https://api.storekit-sandbox.apple.com"

    /// How requests are retried.
    public struct RetryPolicy: Sendable, Hashable {
        /// The most requests sent for one call (1: no retry).
        public var maximumAttempts: Int
        /// The longest one call may take, retries and waits included.
        public var overallTimeout: Duration
        /// The longest one request may take, from sending to the last byte of the answer.
        public var requestTimeout: Duration
        /// The first back-off; each retry doubles it, up to ``maximumBackoff``, and waits a random
        /// time between half of it and all of it ("equal jitter").
        public var initialBackoff: Duration
        /// The longest back-off between two attempts (a `Retry-After` may ask for longer).
        public var maximumBackoff: Duration

        /// Creates a policy. The defaults: 4 attempts, 60 s per call, 20 s per request, back-off
        /// from 0.5 s to 8 s.
        public init(
            maximumAttempts: Int = 4, overallTimeout: Duration = .seconds(60), requestTimeout: Duration = .seconds(20),
            initialBackoff: Duration = .milliseconds(500), maximumBackoff: Duration = .seconds(8)
        ) {
            self.maximumAttempts = max(1, maximumAttempts)
            self.overallTimeout = overallTimeout
            self.requestTimeout = requestTimeout
            self.initialBackoff = initialBackoff
            self.maximumBackoff = maximumBackoff
        }
    }

    /// What the client signs with and where it sends.
    public struct Configuration: Sendable {
        /// The In-App Purchase key.
        public var key: InAppPurchaseKey
        /// The app's bundle identifier (the token's `bid`).
        public var bundleId: String
        /// The environment: ``AppStoreEnvironment/production`` or ``AppStoreEnvironment/sandbox``.
        public var environment: AppStoreEnvironment
        /// A base URL in place of Apple's for the environment (a proxy, a test server), without
        /// a trailing slash.
        public var baseURL: String?
        /// How failed requests are retried.
        public var retry: RetryPolicy
        /// How long a bearer token lives (`exp` − `iat`), 60…3600 s; it is replaced a minute
        /// before it expires.
        public var tokenLifetimeSeconds: Int64
        /// The largest answer read, in bytes.
        public var maximumResponseSize: Int

        /// Creates a configuration.
        public init(
            key: InAppPurchaseKey, bundleId: String, environment: AppStoreEnvironment, baseURL: String? = nil,
            retry: RetryPolicy = RetryPolicy(), tokenLifetimeSeconds: Int64 = 1200, maximumResponseSize: Int = 8 * 1024 * 1024
        ) {
            self.key = key
            self.bundleId = bundleId
            self.environment = environment
            self.baseURL = baseURL
            self.retry = retry
            self.tokenLifetimeSeconds = tokenLifetimeSeconds
            self.maximumResponseSize = maximumResponseSize
        }
    }

    /// The configuration the client was created with.
    public let configuration: Configuration
    /// The verifier every signed item is verified with.
    public let verifier: AppStoreVerifier
    /// The base URL requests go to.
    public let baseURL: String
    let transport: Transport

    /// Creates a client.
    ///
    /// - Parameters:
    ///   - configuration: The key, app, environment and policies.
    ///   - verifier: Verifies every signed item. Configure it with the app's bundle id and the
    ///     environment, so that an item of another app or environment is rejected too.
    ///   - httpClient: The HTTP client to send with; `HTTPClient.shared` by default.
    ///   - clock: The current time, read for each token's `iat` and to read a `Retry-After` date.
    /// - Throws: ``AppStoreServerAPIError`` `unsupported_environment` for Xcode (its transactions
    ///   are signed by Xcode, not the App Store) and for LocalTesting without a base URL;
    ///   `invalid_request` for an empty bundle id, a malformed base URL or a token lifetime out of
    ///   range.
    public init(
        configuration: Configuration, verifier: AppStoreVerifier, httpClient: HTTPClient = .shared,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        let base: String
        switch (configuration.environment, configuration.baseURL) {
        case (.xcode, _):
            throw AppStoreServerAPIError(
                .unsupportedEnvironment,
                "the Xcode environment has no App Store Server API: Xcode signs its transactions locally; use Sandbox or Production")
        case (_, .some(let override)):
            guard override.hasPrefix("https://") || override.hasPrefix("http://"), !override.hasSuffix("/") else {
                throw AppStoreServerAPIError(.invalidRequest, "the base URL '\(override)' is not http(s)://host[:port][/path] without a trailing slash")
            }
            base = override
        case (.production, nil): base = Self.productionBaseURL
        case (.sandbox, nil): base = Self.sandboxBaseURL
        case (.localTesting, nil):
            throw AppStoreServerAPIError(.unsupportedEnvironment, "the LocalTesting environment needs a base URL")
        }
        guard !configuration.bundleId.isEmpty else {
            throw AppStoreServerAPIError(.invalidRequest, "the bundle id is empty")
        }
        guard (60...AppStoreServerAPIToken.maximumLifetimeSeconds).contains(configuration.tokenLifetimeSeconds) else {
            throw AppStoreServerAPIError(.invalidRequest, "the token lifetime is 60 to 3600 seconds, not \(configuration.tokenLifetimeSeconds)")
        }
        self.configuration = configuration
        self.verifier = verifier
        self.baseURL = base
        self.transport = Transport(
            baseURL: base, configuration: configuration, httpClient: httpClient,
            tokens: TokenCache(key: configuration.key, bundleId: configuration.bundleId,
                               lifetimeSeconds: configuration.tokenLifetimeSeconds, clock: clock),
            clock: clock)
    }

    // MARK: Transactions

    /// Get Transaction Info: one transaction, verified.
    ///
    /// `GET /inApps/v1/transactions/{transactionId}`
    ///
    /// - Throws: ``AppStoreServerAPIError``; `verification_failed` when the transaction does not verify.
    public func transactionInfo(_ transactionId: String) async throws -> VerifiedItem<JWSTransaction> {
        let body: TransactionInfoResponseBody = try await get(["inApps", "v1", "transactions", transactionId])
        return try single(body.signedTransactionInfo, field: "signedTransactionInfo", verifier.verifyTransaction)
    }

    /// Get Transaction History v2: one page of a customer's transactions, verified.
    ///
    /// `GET /inApps/v2/history/{transactionId}?revision=…&startDate=…&…`
    ///
    /// - Parameters:
    ///   - transactionId: Any transaction id, original transaction id or app transaction id of the customer.
    ///   - filter: The filters; the same for every page.
    ///   - revision: The previous page's ``TransactionHistoryPage/revision``, or `nil` for the first.
    public func transactionHistory(
        _ transactionId: String, filter: TransactionHistoryFilter = TransactionHistoryFilter(), revision: String? = nil
    ) async throws -> TransactionHistoryPage {
        var query = revision.map { [("revision", $0)] } ?? []
        query += filter.queryItems
        let body: HistoryResponseBody = try await get(["inApps", "v2", "history", transactionId], query: query)
        let (transactions, rejected) = list(body.signedTransactions, field: "signedTransactions", verifier.verifyTransaction)
        return TransactionHistoryPage(
            revision: body.revision, hasMore: body.hasMore ?? false, bundleId: body.bundleId, appAppleId: body.appAppleId,
            rawEnvironment: body.environment, transactions: transactions, rejected: rejected)
    }

    /// Every page of Get Transaction History v2, in Apple's order, each fetched when asked for.
    public func transactionHistoryPages(
        _ transactionId: String, filter: TransactionHistoryFilter = TransactionHistoryFilter()
    ) -> AppStoreServerAPIPages<TransactionHistoryPage> {
        AppStoreServerAPIPages { revision in
            let page = try await transactionHistory(transactionId, filter: filter, revision: revision)
            return (page, page.hasMore ? page.revision : nil, page.hasMore)
        }
    }

    /// Get All Subscription Statuses: each subscription's latest transaction and renewal info,
    /// verified.
    ///
    /// `GET /inApps/v1/subscriptions/{transactionId}?status=…`
    ///
    /// - Parameters:
    ///   - transactionId: Any transaction id of the customer.
    ///   - status: Only subscriptions with these statuses; all when empty.
    public func subscriptionStatuses(
        _ transactionId: String, status: [SubscriptionStatusFilter] = []
    ) async throws -> SubscriptionStatuses {
        let body: StatusResponseBody = try await get(
            ["inApps", "v1", "subscriptions", transactionId], query: status.map { ("status", String($0.rawValue)) })
        var rejected: [RejectedItem] = []
        let groups = (body.data ?? []).enumerated().map { groupIndex, group in
            let items = (group.lastTransactions ?? []).enumerated().compactMap { index, item -> SubscriptionStatuses.LastTransaction? in
                let field = "data[\(groupIndex)].lastTransactions[\(index)]"
                let transaction = verify(item.signedTransactionInfo, field: "\(field).signedTransactionInfo", verifier.verifyTransaction)
                let renewal = verify(item.signedRenewalInfo, field: "\(field).signedRenewalInfo", verifier.verifyRenewalInfo)
                switch (transaction, renewal) {
                case (.success(let transaction), .success(let renewal)):
                    return .init(rawStatus: item.status, originalTransactionId: item.originalTransactionId,
                                 transaction: transaction, renewalInfo: renewal)
                default:
                    if case .failure(let item) = transaction { rejected.append(item) }
                    if case .failure(let item) = renewal { rejected.append(item) }
                    return nil
                }
            }
            return SubscriptionStatuses.Group(subscriptionGroupIdentifier: group.subscriptionGroupIdentifier, lastTransactions: items)
        }
        return SubscriptionStatuses(
            rawEnvironment: body.environment, bundleId: body.bundleId, appAppleId: body.appAppleId, groups: groups,
            rejected: rejected)
    }

    /// Get Refund History v2: one page of a customer's refunded transactions, verified.
    ///
    /// `GET /inApps/v2/refund/lookup/{transactionId}?revision=…`
    public func refundHistory(_ transactionId: String, revision: String? = nil) async throws -> RefundHistoryPage {
        let body: RefundHistoryResponseBody = try await get(
            ["inApps", "v2", "refund", "lookup", transactionId], query: revision.map { [("revision", $0)] } ?? [])
        let (transactions, rejected) = list(body.signedTransactions, field: "signedTransactions", verifier.verifyTransaction)
        return RefundHistoryPage(revision: body.revision, hasMore: body.hasMore ?? false, transactions: transactions, rejected: rejected)
    }

    /// Every page of Get Refund History v2, in Apple's order.
    public func refundHistoryPages(_ transactionId: String) -> AppStoreServerAPIPages<RefundHistoryPage> {
        AppStoreServerAPIPages { revision in
            let page = try await refundHistory(transactionId, revision: revision)
            return (page, page.hasMore ? page.revision : nil, page.hasMore)
        }
    }

    /// Look Up Order ID: the transactions of an order (the id on the customer's receipt e-mail),
    /// verified.
    ///
    /// `GET /inApps/v1/lookup/{orderId}`
    public func lookUpOrder(_ orderId: String) async throws -> OrderLookup {
        let body: OrderLookupResponseBody = try await get(["inApps", "v1", "lookup", orderId])
        let (transactions, rejected) = list(body.signedTransactions, field: "signedTransactions", verifier.verifyTransaction)
        return OrderLookup(rawStatus: body.status, transactions: transactions, rejected: rejected)
    }

    /// Get App Transaction Info: the customer's app transaction, verified.
    ///
    /// `GET /inApps/v1/transactions/appTransactions/{transactionId}`
    ///
    /// - Throws: ``AppStoreServerAPIError``; `verification_failed` when it does not verify.
    public func appTransactionInfo(_ transactionId: String) async throws -> VerifiedItem<AppTransaction> {
        let body: AppTransactionInfoResponseBody = try await get(["inApps", "v1", "transactions", "appTransactions", transactionId])
        return try single(body.signedAppTransactionInfo, field: "signedAppTransactionInfo", verifier.verifyAppTransaction)
    }

    // MARK: Notifications

    /// Get Notification History: one page of the notifications the App Store sent (or tried
    /// to), verified.
    ///
    /// `POST /inApps/v1/notifications/history?paginationToken=…`, retried as a read: it changes nothing.
    public func notificationHistory(
        _ request: NotificationHistoryRequest, paginationToken: String? = nil
    ) async throws -> NotificationHistoryPage {
        let body: NotificationHistoryResponseBody = try await send(
            .POST, ["inApps", "v1", "notifications", "history"], query: paginationToken.map { [("paginationToken", $0)] } ?? [],
            body: encode(request), retry: .allFailures)
        var items: [NotificationHistoryPage.Item] = []
        var rejected: [RejectedItem] = []
        for (index, entry) in (body.notificationHistory ?? []).enumerated() {
            switch verifyNotification(entry.signedPayload, field: "notificationHistory[\(index)].signedPayload") {
            case .success(let notification): items.append(.init(notification: notification, sendAttempts: entry.sendAttempts ?? []))
            case .failure(let item): rejected.append(item)
            }
        }
        return NotificationHistoryPage(
            paginationToken: body.paginationToken, hasMore: body.hasMore ?? false, items: items, rejected: rejected)
    }

    /// Every page of Get Notification History, in Apple's order.
    public func notificationHistoryPages(_ request: NotificationHistoryRequest) -> AppStoreServerAPIPages<NotificationHistoryPage> {
        AppStoreServerAPIPages { token in
            let page = try await notificationHistory(request, paginationToken: token)
            return (page, page.hasMore ? page.paginationToken : nil, page.hasMore)
        }
    }

    /// Request a Test Notification: asks the App Store to send a `TEST` notification to the
    /// app's server URL and returns the token to look it up by.
    ///
    /// `POST /inApps/v1/notifications/test`; retried only after a 429 (each accepted request
    /// sends a notification).
    public func requestTestNotification() async throws -> String {
        let body: SendTestNotificationResponseBody = try await send(
            .POST, ["inApps", "v1", "notifications", "test"], retry: .onlyRateLimited)
        guard let token = body.testNotificationToken, !token.isEmpty else {
            throw AppStoreServerAPIError(.malformedResponse, "Apple's answer has no testNotificationToken")
        }
        return token
    }

    /// Get Test Notification Status: the test notification, verified, and the attempts to send it.
    ///
    /// `GET /inApps/v1/notifications/test/{testNotificationToken}`
    public func testNotificationStatus(_ testNotificationToken: String) async throws -> TestNotificationStatus {
        let body: CheckTestNotificationResponseBody = try await get(["inApps", "v1", "notifications", "test", testNotificationToken])
        switch verifyNotification(body.signedPayload, field: "signedPayload") {
        case .success(let notification): return TestNotificationStatus(notification: notification, sendAttempts: body.sendAttempts ?? [])
        case .failure(let item): throw Self.verificationFailed([item])
        }
    }

    // MARK: Changes

    /// Send Consumption Information (v2): answers a `CONSUMPTION_REQUEST` notification.
    ///
    /// `PUT /inApps/v2/transactions/consumption/{transactionId}`, retried: a PUT replaces.
    public func sendConsumptionInformation(_ transactionId: String, _ request: ConsumptionRequest) async throws {
        try await sendWithoutAnswer(.PUT, ["inApps", "v2", "transactions", "consumption", transactionId], body: encode(request))
    }

    /// Send Consumption Information v1 (deprecated by Apple; see ``sendConsumptionInformation(_:_:)``).
    ///
    /// `PUT /inApps/v1/transactions/consumption/{transactionId}`
    public func sendConsumptionInformationV1(_ transactionId: String, _ request: ConsumptionRequestV1) async throws {
        try await sendWithoutAnswer(.PUT, ["inApps", "v1", "transactions", "consumption", transactionId], body: encode(request))
    }

    /// Set App Account Token: sets the app account token of a purchase.
    ///
    /// `PUT /inApps/v1/transactions/{originalTransactionId}/appAccountToken`
    public func setAppAccountToken(originalTransactionId: String, appAccountToken: UUIDString) async throws {
        try await sendWithoutAnswer(
            .PUT, ["inApps", "v1", "transactions", originalTransactionId, "appAccountToken"],
            body: encode(UpdateAppAccountTokenRequest(appAccountToken: appAccountToken.value)))
    }

    /// Finish Transaction: tells the App Store your server finished processing a transaction.
    ///
    /// `POST /inApps/v1/transactions/{transactionId}/finish`; retried only after a 429.
    public func finishTransaction(_ transactionId: String) async throws {
        try await sendWithoutAnswer(.POST, ["inApps", "v1", "transactions", transactionId, "finish"], retry: .onlyRateLimited)
    }

    /// Extend a Subscription Renewal Date.
    ///
    /// `PUT /inApps/v1/subscriptions/extend/{originalTransactionId}`; retried only after a 429:
    /// Apple does not document that a repeated `requestIdentifier` is applied once.
    public func extendRenewalDate(
        originalTransactionId: String, _ request: ExtendRenewalDateRequest
    ) async throws -> ExtendRenewalDateResponse {
        try await send(
            .PUT, ["inApps", "v1", "subscriptions", "extend", originalTransactionId], body: encode(request), retry: .onlyRateLimited)
    }

    /// Extend Subscription Renewal Dates for All Active Subscribers; returns the request
    /// identifier to follow it with ``massExtendRenewalDateStatus(productId:requestIdentifier:)``.
    ///
    /// `POST /inApps/v1/subscriptions/extend/mass`; retried only after a 429.
    public func massExtendRenewalDate(_ request: MassExtendRenewalDateRequest) async throws -> String {
        let body: MassExtendRenewalDateResponseBody = try await send(
            .POST, ["inApps", "v1", "subscriptions", "extend", "mass"], body: encode(request), retry: .onlyRateLimited)
        return body.requestIdentifier ?? request.requestIdentifier
    }

    /// Get Status of Subscription Renewal Date Extensions.
    ///
    /// `GET /inApps/v1/subscriptions/extend/mass/{productId}/{requestIdentifier}`
    public func massExtendRenewalDateStatus(productId: String, requestIdentifier: String) async throws -> MassExtendRenewalDateStatus {
        try await get(["inApps", "v1", "subscriptions", "extend", "mass", productId, requestIdentifier])
    }

    // MARK: Verification

    /// Verifies one signed item with `verify`; a missing item is rejected too.
    private func check<Value>(
        _ jws: String?, field: String, _ verify: (String) throws -> Value
    ) -> Result<(jws: String, value: Value), RejectedItem> {
        guard let jws else {
            return .failure(RejectedItem(field: field, error: ReceiptKitError(.unrecognizedInput, "Apple's answer has no \(field)")))
        }
        do {
            return .success((jws, try verify(jws)))
        } catch let error as ReceiptKitError {
            return .failure(RejectedItem(field: field, error: error))
        } catch {
            return .failure(RejectedItem(field: field, error: ReceiptKitError(.unrecognizedInput, "\(error)")))
        }
    }

    private func verify<Payload>(
        _ jws: String?, field: String, _ verify: (String) throws -> Verified<Payload>
    ) -> Result<VerifiedItem<Payload>, RejectedItem> {
        check(jws, field: field, verify).map { VerifiedItem(jws: $0.jws, verified: $0.value) }
    }

    private func verifyNotification(_ signedPayload: String?, field: String) -> Result<VerifiedNotificationItem, RejectedItem> {
        check(signedPayload, field: field, verifier.verifyNotification)
            .map { VerifiedNotificationItem(signedPayload: $0.jws, verified: $0.value) }
    }

    private func list<Payload>(
        _ items: [String]?, field: String, _ verify: (String) throws -> Verified<Payload>
    ) -> ([VerifiedItem<Payload>], [RejectedItem]) {
        var verified: [VerifiedItem<Payload>] = []
        var rejected: [RejectedItem] = []
        for (index, jws) in (items ?? []).enumerated() {
            switch self.verify(jws, field: "\(field)[\(index)]", verify) {
            case .success(let item): verified.append(item)
            case .failure(let item): rejected.append(item)
            }
        }
        return (verified, rejected)
    }

    private func single<Payload>(
        _ jws: String?, field: String, _ verify: (String) throws -> Verified<Payload>
    ) throws -> VerifiedItem<Payload> {
        switch self.verify(jws, field: field, verify) {
        case .success(let item): return item
        case .failure(let item): throw Self.verificationFailed([item])
        }
    }

    static func verificationFailed(_ items: [RejectedItem]) -> AppStoreServerAPIError {
        AppStoreServerAPIError(
            .verificationFailed, "Apple's answer did not verify: " + items.map(\.description).joined(separator: "; "),
            rejected: items)
    }

    // MARK: Requests

    func get<Answer: Decodable>(_ path: [String], query: [(String, String)] = []) async throws -> Answer {
        try await send(.GET, path, query: query, retry: .allFailures)
    }

    func send<Answer: Decodable>(
        _ method: HTTPMethodName, _ path: [String], query: [(String, String)] = [], body: [UInt8]? = nil,
        retry: RetryScope = .allFailures
    ) async throws -> Answer {
        let bytes = try await transport.send(Request(method: method, path: path, query: query, body: body, retry: retry))
        do {
            return try JSONDecoder().decode(Answer.self, from: Data(bytes))
        } catch {
            throw AppStoreServerAPIError(
                .malformedResponse, "Apple's answer is not the documented \(Answer.self) JSON: \(error)", httpStatus: 200)
        }
    }

    /// Sends a request whose 2xx answer has no body the caller needs (Apple's is empty).
    func sendWithoutAnswer(
        _ method: HTTPMethodName, _ path: [String], query: [(String, String)] = [], body: [UInt8]? = nil,
        contentType: String = "application/json", retry: RetryScope = .allFailures
    ) async throws {
        _ = try await transport.send(
            Request(method: method, path: path, query: query, body: body, retry: retry, contentType: contentType))
    }

    func encode(_ value: some Encodable) throws -> [UInt8] {
        do {
            return Array(try JSONEncoder().encode(value))
        } catch {
            throw AppStoreServerAPIError(.invalidRequest, "the request body cannot be encoded: \(error)")
        }
    }
}

/// A UUID in its text form, as Apple's app account tokens are written.
public struct UUIDString: Sendable, Hashable, CustomStringConvertible {
    /// The lowercase text.
    public let value: String

    /// Checks `text` is a UUID.
    ///
    /// - Throws: ``AppStoreServerAPIError`` `invalid_request` when it is not.
    public init(_ text: String) throws {
        let lower = text.lowercased()
        let groups = lower.split(separator: "-", omittingEmptySubsequences: false)
        guard groups.map(\.count) == [8, 4, 4, 4, 12], groups.allSatisfy({ Hex.isLowercase($0, count: $0.count) }) else {
            throw AppStoreServerAPIError(.invalidRequest, "'\(text)' is not a UUID")
        }
        self.value = lower
    }

    public var description: String { value }
}
