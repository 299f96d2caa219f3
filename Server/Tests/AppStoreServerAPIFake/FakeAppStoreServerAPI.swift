public import Foundation
import Hummingbird
import Logging
public import ReceiptKit
import Synchronization

/// A fake App Store Server API: a real HTTP server on a loopback port that checks every
/// request's bearer token as Apple does (ES256 signature under the key's public half, header,
/// each claim, expiry) and answers Apple's documented JSON, its signed items signed under the
/// test PKI.
///
/// One customer's purchases are served (``transactions``), in pages of ``pageSize`` with
/// revision and pagination tokens, each subscription with its renewal info (``renewalInfos``,
/// or one made from its latest transaction). Get Notification History answers
/// ``notifications`` — each signed at the instant it was sent, listed in the windows that hold
/// that instant — or, when there are none, one made from each transaction. ``enqueue(_:path:)`` makes
/// the next matching request fail as Apple can (an error body, 401, 429 with `Retry-After`,
/// 500, a stalled answer); ``forgedTransactionIds`` are signed by a key the chain does not
/// certify. Every request is recorded (``requests``). The Retention Messaging API is
/// ``retention``, stateful as Apple is for one app.
public final class FakeAppStoreServerAPI: Sendable {
    /// What a token must carry.
    public struct Credentials: Sendable {
        public var keyId: String
        public var issuerId: String
        public var bundleId: String
        /// The team's other apps the key serves, by bundle id, with their App Apple ID: a token's
        /// `bid` may name one, and the answer is that app's (its transactions, its ids).
        public var otherApps: [String: Int64]
        /// The In-App Purchase key's public half: token signatures are checked under it.
        public var publicKey: ES256PublicKey

        public init(keyId: String, issuerId: String, bundleId: String, otherApps: [String: Int64] = [:], publicKey: ES256PublicKey) {
            self.keyId = keyId
            self.issuerId = issuerId
            self.bundleId = bundleId
            self.otherApps = otherApps
            self.publicKey = publicKey
        }
    }

    /// A key and the `x5c` chain its JWS carry.
    public struct Signer: Sendable {
        public var key: ES256SigningKey
        public var chain: [[UInt8]]

        public init(key: ES256SigningKey, chain: [[UInt8]]) {
            self.key = key
            self.chain = chain
        }

        func sign(_ object: [String: Any]) -> String {
            // The fake's own JSON of its own values: serialization cannot fail.
            sign(payloadJSON: (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data())
        }

        func sign(payloadJSON: Data) -> String {
            (try? key.compactJWS(payload: Array(payloadJSON), certificateChain: chain)) ?? ""
        }
    }

    /// One purchase of the customer.
    public struct Transaction: Sendable, Hashable {
        public var transactionId: String
        public var originalTransactionId: String
        public var productId: String
        /// `Auto-Renewable Subscription`, `Non-Consumable`, `Consumable` or `Non-Renewing Subscription`.
        public var type: String
        public var subscriptionGroupIdentifier: String?
        public var purchaseDate: Int64
        public var expiresDate: Int64?
        public var revocationDate: Int64?
        /// The app it was bought in: one of ``Credentials/otherApps``, or `nil` for the
        /// credentials' own.
        public var bundleId: String?

        public init(
            transactionId: String, originalTransactionId: String, productId: String, type: String,
            subscriptionGroupIdentifier: String? = nil, purchaseDate: Int64, expiresDate: Int64? = nil, revocationDate: Int64? = nil,
            bundleId: String? = nil
        ) {
            self.bundleId = bundleId
            self.transactionId = transactionId
            self.originalTransactionId = originalTransactionId
            self.productId = productId
            self.type = type
            self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
            self.purchaseDate = purchaseDate
            self.expiresDate = expiresDate
            self.revocationDate = revocationDate
        }
    }

    /// A subscription's renewal info at Apple: what Get All Subscription Statuses answers for
    /// it, and what a notification about it carries (`JWSRenewalInfoDecodedPayload`).
    public struct RenewalInfo: Sendable, Hashable {
        public var originalTransactionId: String
        public var productId: String
        public var autoRenewProductId: String
        /// 1: the subscription renews; 0: the customer turned renewal off.
        public var autoRenewStatus: Int
        /// Why it expired: 1 customer cancelled, 2 billing error, 3 price increase declined, 4
        /// product unavailable, 5 other.
        public var expirationIntent: Int?
        /// Whether Apple is trying to renew a subscription that failed to renew for a billing issue.
        public var isInBillingRetryPeriod: Bool?
        /// When the billing grace period ends, while the subscription is in one.
        public var gracePeriodExpiresDate: Int64?
        /// When the most recent purchase of the subscription expires.
        public var renewalDate: Int64?

        public init(
            originalTransactionId: String, productId: String, autoRenewProductId: String? = nil, autoRenewStatus: Int = 1,
            expirationIntent: Int? = nil, isInBillingRetryPeriod: Bool? = nil, gracePeriodExpiresDate: Int64? = nil,
            renewalDate: Int64? = nil
        ) {
            self.originalTransactionId = originalTransactionId
            self.productId = productId
            self.autoRenewProductId = autoRenewProductId ?? productId
            self.autoRenewStatus = autoRenewStatus
            self.expirationIntent = expirationIntent
            self.isInBillingRetryPeriod = isInBillingRetryPeriod
            self.gracePeriodExpiresDate = gracePeriodExpiresDate
            self.renewalDate = renewalDate
        }
    }

    /// A notification Apple sent (`responseBodyV2DecodedPayload`), as Get Notification History
    /// lists it: signed, with its transaction and renewal info, at the instant it was sent.
    public struct Notification: Sendable, Hashable {
        /// `SUBSCRIBED`, `DID_RENEW`, `DID_FAIL_TO_RENEW`, `DID_CHANGE_RENEWAL_STATUS`, `REFUND`, …
        public var notificationType: String
        /// `GRACE_PERIOD`, `AUTO_RENEW_DISABLED`, `BILLING_RECOVERY`, … when the type has one.
        public var subtype: String?
        public var notificationUUID: String
        /// When Apple sent it: its `signedDate`, and its transaction's and renewal info's.
        public var signedDate: Int64
        /// Its `data.signedTransactionInfo`, as the transaction was then.
        public var transaction: Transaction
        /// Its `data.signedRenewalInfo`, for a subscription.
        public var renewalInfo: RenewalInfo?
        /// Whether every attempt to send it failed (what `onlyFailures` lists).
        public var failed: Bool

        public init(
            _ notificationType: String, subtype: String? = nil, uuid: String, signedDate: Int64, transaction: Transaction,
            renewalInfo: RenewalInfo? = nil, failed: Bool = true
        ) {
            self.notificationType = notificationType
            self.subtype = subtype
            self.notificationUUID = uuid
            self.signedDate = signedDate
            self.transaction = transaction
            self.renewalInfo = renewalInfo
            self.failed = failed
        }
    }

    /// A failure served instead of the next answer to a matching request.
    public enum Fault: Sendable {
        /// Apple's error body with this status.
        case apiError(status: Int, errorCode: Int64, errorMessage: String)
        /// A bare status, with `Retry-After` when given.
        case status(Int, retryAfter: String? = nil)
        /// No answer for this long (then the usual answer).
        case stall(Duration)
        /// The usual status and headers, then half the body, then nothing for this long.
        case stallBody(Duration)
    }

    /// A request as the fake received it.
    public struct RecordedRequest: Sendable {
        public let method: String
        public let path: String
        public let query: [(String, String)]
        public let body: [UInt8]
        /// The `Content-Type` the request carried.
        public let contentType: String?
        /// The token's claims, when the token was accepted.
        public let claims: [String: String]
        /// Why the token was refused, when it was.
        public let authorizationFailure: String?

        public func queryValues(_ name: String) -> [String] { query.filter { $0.0 == name }.map(\.1) }
        public var bodyJSON: [String: Any]? { try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] }
    }

    private struct State {
        var transactions: [Transaction] = []
        var renewalInfos: [String: RenewalInfo] = [:]
        var notifications: [Notification] = []
        var forged: Set<String> = []
        var faults: [(path: String, fault: Fault)] = []
        var requests: [RecordedRequest] = []
        var testNotifications: [String: String] = [:]
        var pageSize = 20
        var failedNotificationIds: Set<String> = []
        var loopingPages = false
        var signedDate: Int64 = 0
    }

    public let credentials: Credentials
    public let environment: String
    public let appAppleId: Int64
    /// The Retention Messaging API: images, messages, default messages, the realtime URL and
    /// the performance test, with its own state.
    public let retention: FakeRetentionMessaging
    /// The `signedDate` of everything the fake signs (a chain is validated at it). Move it
    /// forward to play time passing at Apple: a transaction signed again (a refund, say) is then
    /// a new copy, as Apple's are.
    public var signedDate: Int64 {
        get { state.withLock { $0.signedDate } }
        set { state.withLock { $0.signedDate = newValue } }
    }
    private let signer: Signer
    private let forger: Signer
    private let clock: @Sendable () -> Date
    private let state = Mutex(State())

    /// Creates a fake.
    ///
    /// - Parameters:
    ///   - credentials: What tokens must carry.
    ///   - signer: Signs the answers' JWS (the test leaf and its chain).
    ///   - forger: Signs ``forgedTransactionIds`` (another key, the same chain in `x5c`).
    ///   - environment: The `environment` of everything served.
    ///   - signedDate: The `signedDate` of everything signed, milliseconds.
    ///   - clock: The time tokens are checked at (`iat`, `exp`).
    public init(
        credentials: Credentials, signer: Signer, forger: Signer, environment: String = "Sandbox", appAppleId: Int64 = 1_234_567_890,
        signedDate: Int64, clock: @escaping @Sendable () -> Date
    ) {
        self.credentials = credentials
        self.signer = signer
        self.forger = forger
        self.environment = environment
        self.appAppleId = appAppleId
        self.retention = FakeRetentionMessaging(environment: environment)
        self.clock = clock
        self.state.withLock { $0.signedDate = signedDate }
    }

    // MARK: Set-up and inspection

    /// The customer's purchases, in purchase order.
    public var transactions: [Transaction] {
        get { state.withLock { $0.transactions } }
        set { state.withLock { $0.transactions = newValue } }
    }

    /// Each subscription's renewal info, by original transaction id; a subscription without one
    /// gets one made from its latest transaction (renewing unless refunded).
    public var renewalInfos: [String: RenewalInfo] {
        get { state.withLock { $0.renewalInfos } }
        set { state.withLock { $0.renewalInfos = newValue } }
    }

    /// The notifications Apple sent, in the order it sent them; when empty, Get Notification
    /// History lists one per transaction (`SUBSCRIBED`, or `REFUND` once refunded) in every window.
    public var notifications: [Notification] {
        get { state.withLock { $0.notifications } }
        set { state.withLock { $0.notifications = newValue } }
    }

    /// Transactions signed by the forger: their JWS do not verify.
    public var forgedTransactionIds: Set<String> {
        get { state.withLock { $0.forged } }
        set { state.withLock { $0.forged = newValue } }
    }

    /// The most items a page holds (Apple: 20).
    public var pageSize: Int {
        get { state.withLock { $0.pageSize } }
        set { state.withLock { $0.pageSize = newValue } }
    }

    /// Notifications (by transaction id) whose every send attempt failed (`onlyFailures`).
    public var failedNotificationTransactionIds: Set<String> {
        get { state.withLock { $0.failedNotificationIds } }
        set { state.withLock { $0.failedNotificationIds = newValue } }
    }

    /// Whether every page says `hasMore` with the token of the second page: a server bug the
    /// client must not loop on.
    public var loopingPages: Bool {
        get { state.withLock { $0.loopingPages } }
        set { state.withLock { $0.loopingPages = newValue } }
    }

    /// Every request received, in order.
    public var requests: [RecordedRequest] { state.withLock { $0.requests } }

    /// Serves `fault` to the next request whose path starts with `path`.
    public func enqueue(_ fault: Fault, path: String) {
        state.withLock { $0.faults.append((path, fault)) }
    }

    // MARK: Running

    /// Runs the fake on `127.0.0.1` on a free port for the time of `body`, which gets its base URL.
    public func run<Result: Sendable>(_ body: @Sendable (_ baseURL: String) async throws -> Result) async throws -> Result {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        var logger = Logger(label: "AppStoreServerAPIFake")
        logger.logLevel = .critical
        let app = Application(
            responder: CallbackResponder<BasicRequestContext> { [self] request, _ in try await self.respond(request) },
            configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: nil),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            },
            logger: logger)
        return try await withThrowingTaskGroup(of: Result?.self) { group in
            // The performance tests the body started end with the fake.
            defer { retention.stop() }
            group.addTask {
                // A server that could not start ends the wait for its port, not only its task.
                defer { continuation.finish() }
                try await app.run()
                return nil
            }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next(), port > 0 else {
                group.cancelAll()
                try await group.waitForAll()  // why it did not start
                throw FakeError("the fake App Store Server API did not start")
            }
            let result = try await body("http://127.0.0.1:\(port)")
            group.cancelAll()
            return result
        }
    }

    struct FakeError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    // MARK: Answers

    private func respond(_ request: Request) async throws -> Response {
        // An uploaded PNG may be a few MiB; every other body is small.
        var body = try await request.body.collect(upTo: 16 << 20)
        let bodyBytes = body.readBytes(length: body.readableBytes) ?? []
        let path = request.uri.path
        let query = Self.parseQuery(request.uri.query)
        let method = request.method.rawValue
        let authorization = request.headers[.authorization]
        let contentType = request.headers[.contentType]
        let check = checkToken(authorization)
        let fault: Fault? = state.withLock { state in
            state.requests.append(RecordedRequest(
                method: method, path: path, query: query, body: bodyBytes, contentType: contentType, claims: check.claims ?? [:],
                authorizationFailure: check.failure))
            guard let index = state.faults.firstIndex(where: { path.hasPrefix($0.path) }) else { return nil }
            return state.faults.remove(at: index).fault
        }
        guard check.failure == nil else {
            return Response(status: .unauthorized)
        }
        switch fault {
        case .apiError(let status, let code, let message):
            return Self.json(["errorCode": code, "errorMessage": message], status: status)
        case .status(let status, let retryAfter):
            var response = Response(status: .init(code: status))
            if let retryAfter { response.headers[.retryAfter] = retryAfter }
            return response
        case .stall(let duration):
            try await Task.sleep(for: duration)
        case .stallBody, nil:
            break
        }
        let segments = path.split(separator: "/").map { String($0).removingPercentEncoding ?? String($0) }
        if case .stallBody(let duration) = fault {
            // A body announced as 64 bytes, of which 8 come before the stall.
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: ResponseBody(contentLength: 64) { writer in
                    try await writer.write(ByteBuffer(string: "{\"signed"))
                    try await Task.sleep(for: duration)
                    try await writer.finish(nil)
                })
        }
        return route(method: method, segments, query: query, body: bodyBytes, contentType: contentType, app: check.claims?["bid"] ?? credentials.bundleId)
    }

    /// The token check Apple makes: `Bearer` JWT, header `alg` ES256, `kid`, `typ` JWT; claims
    /// `iss`, `aud`, `bid`, `iat` not in the future, `exp` not passed and at most an hour after
    /// `iat`; the signature under the key's public half.
    private func checkToken(_ authorization: String?) -> (claims: [String: String]?, failure: String?) {
        guard let authorization, authorization.hasPrefix("Bearer ") else { return (nil, "no Bearer authorization") }
        let parts = authorization.dropFirst(7).split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let headerData = Self.base64URL(parts[0]), let payloadData = Self.base64URL(parts[1]),
              let signature = Self.base64URL(parts[2]),
              let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any],
              let claims = try? JSONSerialization.jsonObject(with: payloadData) as? [String: Any]
        else { return (nil, "not a compact JWS") }
        guard header["alg"] as? String == "ES256" else { return (nil, "alg is not ES256") }
        guard header["kid"] as? String == credentials.keyId else { return (nil, "kid is not \(credentials.keyId)") }
        guard header["typ"] as? String == "JWT" else { return (nil, "typ is not JWT") }
        guard credentials.publicKey.isValidSignature(Array(signature), for: Array((parts[0] + "." + parts[1]).utf8)) else {
            return (nil, "the signature does not verify under the key")
        }
        guard claims["iss"] as? String == credentials.issuerId else { return (nil, "iss is not the issuer id") }
        guard claims["aud"] as? String == "appstoreconnect-v1" else { return (nil, "aud is not appstoreconnect-v1") }
        guard let bid = claims["bid"] as? String, bid == credentials.bundleId || credentials.otherApps[bid] != nil else {
            return (nil, "bid is not \(([credentials.bundleId] + credentials.otherApps.keys.sorted()).joined(separator: " or "))")
        }
        guard let iat = (claims["iat"] as? NSNumber)?.int64Value, let exp = (claims["exp"] as? NSNumber)?.int64Value else {
            return (nil, "iat or exp is missing")
        }
        let now = Int64(clock().timeIntervalSince1970)
        guard iat <= now + 60 else { return (nil, "iat is in the future") }
        guard exp > now else { return (nil, "the token expired") }
        guard exp - iat <= 3600 else { return (nil, "exp is more than an hour after iat") }
        var strings: [String: String] = [:]
        for (name, value) in claims { strings[name] = "\(value)" }
        return (strings, nil)
    }

    /// An app's App Apple ID.
    private func appAppleId(of bundleId: String) -> Int64 {
        bundleId == credentials.bundleId ? appAppleId : credentials.otherApps[bundleId] ?? appAppleId
    }

    /// The app a transaction was bought in.
    private func bundleId(of transaction: Transaction) -> String {
        transaction.bundleId ?? credentials.bundleId
    }

    /// Answers a request for `app` (its token's `bid`): only that app's purchases and
    /// notifications are seen.
    private func route(
        method: String, _ path: [String], query: [(String, String)], body: [UInt8], contentType: String?, app: String
    ) -> Response {
        let appAppleId = self.appAppleId(of: app)
        if let answer = retention.route(
            method: method, path, query: query, body: body, contentType: contentType,
            context: .init(appAppleId: appAppleId, signedDate: signedDate, transactions: transactions, sign: { [signer] in
                signer.sign(payloadJSON: $0)
            }))
        {
            return answer
        }
        var state = state.withLock { $0 }
        state.transactions = state.transactions.filter { bundleId(of: $0) == app }
        state.notifications = state.notifications.filter { bundleId(of: $0.transaction) == app }
        func known(_ id: String) -> Response? {
            guard !id.isEmpty, id.allSatisfy(\.isNumber) else {
                return Self.json(["errorCode": 4_000_006, "errorMessage": "Invalid transaction id."], status: 400)
            }
            guard state.transactions.contains(where: { $0.transactionId == id || $0.originalTransactionId == id }) else {
                return Self.json(["errorCode": 4_040_010, "errorMessage": "Transaction id not found."], status: 404)
            }
            return nil
        }
        let requestBody = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
        /// The path's `nil` segments when `method` and the other segments match.
        func match(_ expected: String, _ pattern: [String?]) -> [String]? {
            guard method == expected, path.count == pattern.count else { return nil }
            var captured: [String] = []
            for (segment, wanted) in zip(path, pattern) {
                if let wanted {
                    guard segment == wanted else { return nil }
                } else {
                    captured.append(segment)
                }
            }
            return captured
        }
        if let captured = match("GET", ["inApps", "v1", "transactions", nil]) {
            let id = captured[0]
            if let refusal = known(id) { return refusal }
            let transaction = state.transactions.first { $0.transactionId == id } ?? state.transactions.first { $0.originalTransactionId == id }
            return Self.json(["signedTransactionInfo": transaction.map { sign($0, state) } as Any])
        }
        if let captured = match("GET", ["inApps", "v2", "history", nil]) {
            let id = captured[0]
            if let refusal = known(id) { return refusal }
            var items = state.transactions
            let values = { (name: String) in query.filter { $0.0 == name }.map(\.1) }
            if let start = values("startDate").first.flatMap(Int64.init) { items = items.filter { $0.purchaseDate >= start } }
            if let end = values("endDate").first.flatMap(Int64.init) { items = items.filter { $0.purchaseDate < end } }
            if !values("productId").isEmpty { items = items.filter { values("productId").contains($0.productId) } }
            if !values("productType").isEmpty {
                let types = values("productType").map(Self.productTypeName)
                items = items.filter { types.contains($0.type) }
            }
            if !values("subscriptionGroupIdentifier").isEmpty {
                items = items.filter { values("subscriptionGroupIdentifier").contains($0.subscriptionGroupIdentifier ?? "") }
            }
            if let revoked = values("revoked").first { items = items.filter { ($0.revocationDate != nil) == (revoked == "true") } }
            if values("sort").first == "DESCENDING" { items.reverse() }
            return page(items, token: values("revision").first, state: state) { slice, next, hasMore in
                ["revision": next, "hasMore": hasMore, "bundleId": app,
                 "appAppleId": appAppleId, "environment": self.environment,
                 "signedTransactions": slice.map { self.sign($0, state) }]
            }
        }
        if let captured = match("GET", ["inApps", "v2", "refund", "lookup", nil]) {
            let id = captured[0]
            if let refusal = known(id) { return refusal }
            let refunded = state.transactions.filter { $0.revocationDate != nil }
            return page(refunded, token: query.first { $0.0 == "revision" }?.1, state: state) { slice, next, hasMore in
                ["revision": next, "hasMore": hasMore, "signedTransactions": slice.map { self.sign($0, state) }]
            }
        }
        if let captured = match("GET", ["inApps", "v1", "subscriptions", nil]) {
            let id = captured[0]
            if let refusal = known(id) { return refusal }
            let wanted = Set(query.filter { $0.0 == "status" }.compactMap { Int($0.1) })
            var groups: [String: [[String: Any]]] = [:]
            let latest = Dictionary(grouping: state.transactions.filter { $0.type == "Auto-Renewable Subscription" },
                                    by: \.originalTransactionId).compactMap { $0.value.max { $0.purchaseDate < $1.purchaseDate } }
            for transaction in latest.sorted(by: { $0.originalTransactionId < $1.originalTransactionId }) {
                let renewal = state.renewalInfos[transaction.originalTransactionId] ?? Self.renewalInfo(of: transaction)
                let status = Self.status(transaction, renewal, at: state.signedDate)
                guard wanted.isEmpty || wanted.contains(status) else { continue }
                groups[transaction.subscriptionGroupIdentifier ?? "", default: []].append([
                    "status": status, "originalTransactionId": transaction.originalTransactionId,
                    "signedTransactionInfo": sign(transaction, state),
                    "signedRenewalInfo": signer.sign(renewalPayload(renewal, signedDate: state.signedDate)),
                ])
            }
            return Self.json([
                "environment": environment, "bundleId": app, "appAppleId": appAppleId,
                "data": groups.keys.sorted().map { ["subscriptionGroupIdentifier": $0, "lastTransactions": groups[$0] ?? []] },
            ])
        }
        if let captured = match("GET", ["inApps", "v1", "lookup", nil]) {
            let orderId = captured[0]
            guard orderId == "MQ5X3C7Z1V" else { return Self.json(["status": 1, "signedTransactions": [String]()]) }
            return Self.json(["status": 0, "signedTransactions": state.transactions.prefix(2).map { sign($0, state) }])
        }
        if let captured = match("GET", ["inApps", "v1", "transactions", "appTransactions", nil]) {
            let id = captured[0]
            if let refusal = known(id) { return refusal }
            return Self.json(["signedAppTransactionInfo": signer.sign([
                "receiptType": environment, "appAppleId": appAppleId, "bundleId": app,
                "applicationVersion": "42", "versionExternalIdentifier": 0, "receiptCreationDate": signedDate,
                "originalPurchaseDate": 1_700_000_000_000, "originalApplicationVersion": "1", "signedDate": signedDate,
                "appTransactionId": "704289572309870002", "originalPlatform": "iOS", "environment": environment,
            ])])
        }
        if match("POST", ["inApps", "v1", "notifications", "history"]) != nil {
            guard let start = (requestBody?["startDate"] as? NSNumber)?.int64Value,
                  let end = (requestBody?["endDate"] as? NSNumber)?.int64Value
            else { return Self.json(["errorCode": 4_000_015, "errorMessage": "Invalid start date."], status: 400) }
            guard start < end else { return Self.json(["errorCode": 4_000_013, "errorMessage": "Start date after end date."], status: 400) }
            // Sent notifications in the window; without any, one made from each transaction in every window.
            var items = state.notifications.filter { (start..<end).contains($0.signedDate) }
            if state.notifications.isEmpty {
                items = state.transactions.map { transaction in
                    Notification(
                        transaction.revocationDate != nil ? "REFUND" : "SUBSCRIBED", uuid: Self.madeUUID(of: transaction),
                        signedDate: state.signedDate, transaction: transaction,
                        failed: state.failedNotificationIds.contains(transaction.transactionId))
                }
            }
            if requestBody?["onlyFailures"] as? Bool == true { items = items.filter(\.failed) }
            if let transactionId = requestBody?["transactionId"] as? String {
                items = items.filter { $0.transaction.transactionId == transactionId || $0.transaction.originalTransactionId == transactionId }
            }
            return page(items, token: query.first { $0.0 == "paginationToken" }?.1, state: state) { slice, next, hasMore in
                var page: [String: Any] = ["hasMore": hasMore, "notificationHistory": slice.map { notification -> [String: Any] in
                    ["signedPayload": self.sign(notification, state),
                     "sendAttempts": [["attemptDate": notification.signedDate, "sendAttemptResult": notification.failed ? "TIMED_OUT" : "SUCCESS"]]]
                }]
                if hasMore { page["paginationToken"] = next }
                return page
            }
        }
        if match("POST", ["inApps", "v1", "notifications", "test"]) != nil {
            let token = UUID().uuidString.lowercased() + "_\(signedDate)"
            let payload = signer.sign([
                "notificationType": "TEST", "notificationUUID": UUID().uuidString.lowercased(), "version": "2.0",
                "signedDate": signedDate,
                "data": ["bundleId": app, "appAppleId": appAppleId, "environment": environment],
            ])
            self.state.withLock { $0.testNotifications[token] = payload }
            return Self.json(["testNotificationToken": token])
        }
        if let captured = match("GET", ["inApps", "v1", "notifications", "test", nil]) {
            let token = captured[0]
            guard let payload = state.testNotifications[token] else {
                return Self.json(["errorCode": 4_040_008, "errorMessage": "Test notification not found."], status: 404)
            }
            return Self.json(["signedPayload": payload, "sendAttempts": [["attemptDate": signedDate, "sendAttemptResult": "SUCCESS"]]])
        }
        if let captured = match("PUT", ["inApps", "v2", "transactions", "consumption", nil]) {
            let id = captured[0]
            if let refusal = known(id) { return refusal }
            if let refusal = Self.checkConsumptionV2(requestBody, isAutoRenewable: state.transactions.first {
                $0.transactionId == id
            }?.type == "Auto-Renewable Subscription") {
                return refusal
            }
            return Response(status: .accepted)
        }
        if let captured = match("PUT", ["inApps", "v1", "transactions", "consumption", nil]) {
            let id = captured[0]
            if let refusal = known(id) { return refusal }
            guard requestBody?["customerConsented"] as? Bool == true else {
                return Self.json(["errorCode": 4_000_035, "errorMessage": "Invalid customer consented."], status: 400)
            }
            return Response(status: .accepted)
        }
        if let captured = match("PUT", ["inApps", "v1", "transactions", nil, "appAccountToken"]) {
            let id = captured[0]
            if let refusal = known(id) { return refusal }
            guard let token = requestBody?["appAccountToken"] as? String, UUID(uuidString: token) != nil else {
                return Self.json(["errorCode": 4_000_033, "errorMessage": "Invalid app account token."], status: 400)
            }
            return Response(status: .ok)
        }
        if let captured = match("POST", ["inApps", "v1", "transactions", nil, "finish"]) {
            let id = captured[0]
            if let refusal = known(id) { return refusal }
            return Response(status: .ok)
        }
        if let captured = match("PUT", ["inApps", "v1", "subscriptions", "extend", nil]) {
            let id = captured[0]
            if let refusal = known(id) { return refusal }
            guard let days = (requestBody?["extendByDays"] as? NSNumber)?.int64Value, (1...90).contains(days) else {
                return Self.json(["errorCode": 4_000_009, "errorMessage": "Invalid extend by days value."], status: 400)
            }
            let transaction = state.transactions.last { $0.originalTransactionId == id }
            return Self.json([
                "originalTransactionId": id, "webOrderLineItemId": "\(id)0", "success": true,
                "effectiveDate": (transaction?.expiresDate ?? signedDate) + days * 86_400_000,
            ])
        }
        if match("POST", ["inApps", "v1", "subscriptions", "extend", "mass"]) != nil {
            guard let identifier = requestBody?["requestIdentifier"] as? String, requestBody?["productId"] is String else {
                return Self.json(["errorCode": 4_000_011, "errorMessage": "Invalid request identifier."], status: 400)
            }
            return Self.json(["requestIdentifier": identifier])
        }
        if let captured = match("GET", ["inApps", "v1", "subscriptions", "extend", "mass", nil, nil]) {
            let productId = captured[0]
            let identifier = captured[1]
            return Self.json([
                "requestIdentifier": identifier, "complete": true, "completeDate": signedDate,
                "succeededCount": state.transactions.filter { $0.productId == productId }.count, "failedCount": 0,
            ])
        }
        return Self.json(["errorCode": 4_040_000, "errorMessage": "Not found: \(method) /\(path.joined(separator: "/"))"], status: 404)
    }

    /// Apple's checks of a Send Consumption Information v2 body (`ConsumptionRequest`): consent
    /// true, a known `deliveryStatus`, `sampleContentProvided` given, a known `refundPreference`,
    /// and a `consumptionPercentage` of 0 to 100000, 0 unless delivered, absent for an
    /// auto-renewable subscription. The answer to a bad one, or `nil`.
    static func checkConsumptionV2(_ body: [String: Any]?, isAutoRenewable: Bool) -> Response? {
        func refuse(_ code: Int64, _ message: String) -> Response { json(["errorCode": code, "errorMessage": message], status: 400) }
        guard let body, body["customerConsented"] as? Bool == true else { return refuse(4_000_035, "Invalid customer consented.") }
        let statuses = ["DELIVERED", "UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_WRONG_ITEM", "UNDELIVERED_SERVER_OUTAGE", "UNDELIVERED_OTHER"]
        guard let delivery = body["deliveryStatus"] as? String, statuses.contains(delivery) else {
            return refuse(4_000_036, "Invalid delivery status.")
        }
        guard body["sampleContentProvided"] is Bool else { return refuse(4_000_041, "Invalid sample content provided.") }
        if let preference = body["refundPreference"], !["DECLINE", "GRANT_FULL", "GRANT_PRORATED"].contains(preference as? String ?? "") {
            return refuse(4_000_000, "Invalid refund preference.")
        }
        if let percentage = body["consumptionPercentage"] {
            guard let value = (percentage as? NSNumber)?.int64Value, (0...100_000).contains(value), !isAutoRenewable,
                  delivery == "DELIVERED" || value == 0
            else { return refuse(4_000_000, "Invalid consumption percentage.") }
        }
        return nil
    }

    /// A page of `items` from the offset its token names; tokens are `r<offset>`. `next` is the
    /// offset after the page even on the last one: as Apple's revision token, it fetches later
    /// only what has been added since.
    private func page<Item>(
        _ items: [Item], token: String?, state: State, _ make: ([Item], _ next: String, _ hasMore: Bool) -> [String: Any]
    ) -> Response {
        var offset = 0
        if let token {
            guard token.hasPrefix("r"), let parsed = Int(token.dropFirst()), (0...items.count).contains(parsed) else {
                return Self.json(["errorCode": 4_000_005, "errorMessage": "Invalid request revision."], status: 400)
            }
            offset = parsed
        }
        let end = min(items.count, offset + state.pageSize)
        if state.loopingPages {
            return Self.json(make(Array(items[offset..<end]), "r\(state.pageSize)", true))
        }
        let hasMore = end < items.count
        return Self.json(make(Array(items[offset..<end]), "r\(end)", hasMore))
    }

    // MARK: Signed items

    /// A transaction's `JWSTransactionDecodedPayload`, signed at `signedDate` (the fake's by default).
    func transactionPayload(_ transaction: Transaction, signedDate: Int64? = nil) -> [String: Any] {
        var payload: [String: Any] = [
            "transactionId": transaction.transactionId, "originalTransactionId": transaction.originalTransactionId,
            "bundleId": bundleId(of: transaction), "productId": transaction.productId, "purchaseDate": transaction.purchaseDate,
            "originalPurchaseDate": transaction.purchaseDate, "quantity": 1, "type": transaction.type,
            "inAppOwnershipType": "PURCHASED", "signedDate": signedDate ?? self.signedDate, "environment": environment,
            "transactionReason": "PURCHASE", "storefront": "USA", "storefrontId": "143441", "price": 4990, "currency": "USD",
            "appTransactionId": "704289572309870002",
        ]
        if let group = transaction.subscriptionGroupIdentifier { payload["subscriptionGroupIdentifier"] = group }
        if let expires = transaction.expiresDate {
            payload["expiresDate"] = expires
            payload["webOrderLineItemId"] = transaction.transactionId + "0"
        }
        if let revocation = transaction.revocationDate {
            payload["revocationDate"] = revocation
            payload["revocationReason"] = 0
        }
        return payload
    }

    private func sign(_ transaction: Transaction, _ state: State) -> String {
        (state.forged.contains(transaction.transactionId) ? forger : signer).sign(transactionPayload(transaction))
    }

    /// The renewal info Apple keeps for a subscription nobody set one for: renewing its latest
    /// transaction, unless that was refunded.
    static func renewalInfo(of transaction: Transaction) -> RenewalInfo {
        RenewalInfo(
            originalTransactionId: transaction.originalTransactionId, productId: transaction.productId,
            autoRenewStatus: transaction.revocationDate == nil ? 1 : 0, renewalDate: transaction.expiresDate)
    }

    /// A renewal info's `JWSRenewalInfoDecodedPayload`, signed at `signedDate`.
    func renewalPayload(_ renewal: RenewalInfo, signedDate: Int64) -> [String: Any] {
        var payload: [String: Any] = [
            "originalTransactionId": renewal.originalTransactionId, "autoRenewProductId": renewal.autoRenewProductId,
            "productId": renewal.productId, "autoRenewStatus": renewal.autoRenewStatus, "signedDate": signedDate,
            "environment": environment, "renewalDate": renewal.renewalDate ?? signedDate,
            "appTransactionId": "704289572309870002",
        ]
        if let intent = renewal.expirationIntent { payload["expirationIntent"] = intent }
        if let retrying = renewal.isInBillingRetryPeriod { payload["isInBillingRetryPeriod"] = retrying }
        if let grace = renewal.gracePeriodExpiresDate { payload["gracePeriodExpiresDate"] = grace }
        return payload
    }

    /// Apple's `status` of a subscription at an instant: 1 active, 2 expired, 3 billing retry, 4
    /// grace period, 5 revoked.
    static func status(_ transaction: Transaction, _ renewal: RenewalInfo?, at instant: Int64) -> Int {
        if transaction.revocationDate != nil { return 5 }
        if (transaction.expiresDate ?? 0) > instant { return 1 }
        if let grace = renewal?.gracePeriodExpiresDate, grace > instant { return 4 }
        if renewal?.isInBillingRetryPeriod == true { return 3 }
        return 2
    }

    /// The UUID of the notification made from a transaction when no ``notifications`` are set:
    /// one per transaction and type (a refund's differs from the purchase's).
    static func madeUUID(of transaction: Transaction) -> String {
        (transaction.revocationDate != nil ? "00000000-0000-4000-8001-" : "00000000-0000-4000-8000-")
            + String(repeating: "0", count: max(0, 12 - transaction.transactionId.count)) + transaction.transactionId.suffix(12)
    }

    /// A notification's `signedPayload`, everything in it signed at its `signedDate`; by the
    /// forger when its transaction is forged.
    private func sign(_ notification: Notification, _ state: State) -> String {
        let transaction = notification.transaction
        var data: [String: Any] = [
            "bundleId": bundleId(of: transaction), "appAppleId": appAppleId(of: bundleId(of: transaction)), "environment": environment,
            "signedTransactionInfo": signer.sign(transactionPayload(transaction, signedDate: notification.signedDate)),
        ]
        if let renewal = notification.renewalInfo {
            data["signedRenewalInfo"] = signer.sign(renewalPayload(renewal, signedDate: notification.signedDate))
        }
        if transaction.type == "Auto-Renewable Subscription" {
            data["status"] = Self.status(transaction, notification.renewalInfo, at: notification.signedDate)
        }
        var payload: [String: Any] = [
            "notificationType": notification.notificationType, "notificationUUID": notification.notificationUUID,
            "version": "2.0", "signedDate": notification.signedDate, "data": data,
        ]
        if let subtype = notification.subtype { payload["subtype"] = subtype }
        return (state.forged.contains(transaction.transactionId) ? forger : signer).sign(payload)
    }

    // MARK: HTTP helpers

    static func json(_ object: [String: Any], status: Int = 200) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return Response(
            status: .init(code: status), headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: Array(data))))
    }

    static func parseQuery(_ query: String?) -> [(String, String)] {
        guard let query, !query.isEmpty else { return [] }
        return query.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            let decode = { (text: String) in text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? text }
            return (decode(parts[0]), decode(parts.count > 1 ? parts[1] : ""))
        }
    }

    /// Decodes unpadded base64url (a JWS segment).
    public static func base64URL(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }

    static func productTypeName(_ filter: String) -> String {
        switch filter {
        case "AUTO_RENEWABLE": "Auto-Renewable Subscription"
        case "NON_RENEWABLE": "Non-Renewing Subscription"
        case "CONSUMABLE": "Consumable"
        case "NON_CONSUMABLE": "Non-Consumable"
        default: filter
        }
    }
}
