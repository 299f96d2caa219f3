import AsyncHTTPClient
import Foundation
import Hummingbird
import NIOCore
import NIOHTTP1
import Synchronization

/// The Retention Messaging API of the fake App Store Server API: images, messages, default
/// messages, the realtime URL and the performance test, kept as Apple keeps them for one app.
///
/// What it checks is what Apple documents (Retention Messaging API 1.5): a PNG without
/// transparency of the size's dimensions; header 66, body 144, alternative texts 150 and bullet
/// texts 66 characters (counted as Swift `Character`s: Apple does not say how it counts);
/// five bullet points at most (Apple's own libraries' limit, not its documentation's); 2000
/// images and 2000 messages; a default message only of an `APPROVED` message whose images are
/// all `APPROVED`; a realtime URL of at most 256 characters; a production realtime URL only
/// after a passed performance test. Uploads start in ``reviewState`` — `APPROVED` in the sandbox,
/// where Apple approves at once, `PENDING` otherwise — and tests move them on with
/// ``setImageState(_:_:)`` and ``setMessageState(_:_:)``.
///
/// The performance test is real: it POSTs `{"signedPayload": …}` — a `DecodedRealtimeRequestBody`
/// signed as the fake signs everything — to the configured URL ``PerformanceTestSettings/totalRequests``
/// times, at most ``PerformanceTestSettings/maxConcurrentRequests`` at once, and measures the
/// answers: a success is a 200 whose body is a JSON object, within the response-time threshold.
/// It does not pace its requests over `totalDuration` as Apple's does.
///
/// Where Apple documents no answer, the fake's choice is marked so in the code.
public final class FakeRetentionMessaging: Sendable {
    /// The parameters Initiate Performance Test answers and runs with.
    public struct PerformanceTestSettings: Sendable {
        public var maxConcurrentRequests: Int
        public var totalRequests: Int
        /// Milliseconds; reported, not paced.
        public var totalDuration: Int64
        /// Milliseconds an answer may take.
        public var responseTimeThreshold: Int64
        /// Percent of requests that must succeed.
        public var successRateThreshold: Int32

        public init(
            maxConcurrentRequests: Int = 2, totalRequests: Int = 10, totalDuration: Int64 = 5_000,
            responseTimeThreshold: Int64 = 700, successRateThreshold: Int32 = 90
        ) {
            self.maxConcurrentRequests = maxConcurrentRequests
            self.totalRequests = totalRequests
            self.totalDuration = totalDuration
            self.responseTimeThreshold = responseTimeThreshold
            self.successRateThreshold = successRateThreshold
        }
    }

    /// What a request needs of the App Store the fake is part of, at the time it arrives.
    struct Context: Sendable {
        let appAppleId: Int64
        let signedDate: Int64
        let transactions: [FakeAppStoreServerAPI.Transaction]
        /// Signs a payload as the fake signs its answers' JWS.
        let sign: @Sendable (_ payloadJSON: Data) -> String
    }

    private struct Image {
        let identifier: String
        let size: String
        var state: String
    }

    private struct Message {
        let identifier: String
        /// The message's image and its bullet points' images.
        let imageIdentifiers: [String]
        var state: String
    }

    private struct PerformanceTest {
        let requestId: String
        let target: String
        let settings: PerformanceTestSettings
        var pending: Int
        var successes = 0
        var durations: [Int64] = []
        var failures: [String: Int] = [:]
        var finished = false
        var waiting: [CheckedContinuation<Void, Never>] = []
        var runner: Task<Void, Never>?
    }

    private struct State {
        var images: [Image] = []
        var messages: [Message] = []
        var defaults: [String: String] = [:]
        var realtimeURL: String?
        var tests: [String: PerformanceTest] = [:]
        var passedPerformanceTest = false
        var reviewState: String
        var maximumCount = 2000
        var settings = PerformanceTestSettings()
    }

    /// `Sandbox` or `Production`: the environment the fake plays.
    private let environment: String
    private let state: Mutex<State>

    init(environment: String) {
        self.environment = environment
        self.state = Mutex(State(reviewState: environment == "Sandbox" ? "APPROVED" : "PENDING"))
    }

    // MARK: Set-up and inspection

    /// The state an uploaded image or message starts in.
    public var reviewState: String {
        get { state.withLock { $0.reviewState } }
        set { state.withLock { $0.reviewState = newValue } }
    }

    /// Apple's review of an image: `PENDING`, `APPROVED` or `REJECTED`.
    public func setImageState(_ identifier: String, _ newState: String) {
        state.withLock { state in
            for index in state.images.indices where state.images[index].identifier == identifier.lowercased() {
                state.images[index].state = newState
            }
        }
    }

    /// Apple's review of a message: `PENDING`, `APPROVED` or `REJECTED`.
    public func setMessageState(_ identifier: String, _ newState: String) {
        state.withLock { state in
            for index in state.messages.indices where state.messages[index].identifier == identifier.lowercased() {
                state.messages[index].state = newState
            }
        }
    }

    /// The most images, and the most messages, the app may keep (Apple: 2000).
    public var maximumCount: Int {
        get { state.withLock { $0.maximumCount } }
        set { state.withLock { $0.maximumCount = newValue } }
    }

    /// How the next performance test runs.
    public var performanceTestSettings: PerformanceTestSettings {
        get { state.withLock { $0.settings } }
        set { state.withLock { $0.settings = newValue } }
    }

    /// Whether a performance test passed (in the sandbox; set it for a production fake).
    public var passedPerformanceTest: Bool {
        get { state.withLock { $0.passedPerformanceTest } }
        set { state.withLock { $0.passedPerformanceTest = newValue } }
    }

    /// The configured Get Retention Message URL.
    public var realtimeURL: String? { state.withLock { $0.realtimeURL } }

    /// Returns when the performance test `requestId` has finished (at once for an unknown one).
    public func performanceTestFinished(_ requestId: String) async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool in
                guard var test = state.tests[requestId], !test.finished else { return true }
                test.waiting.append(continuation)
                state.tests[requestId] = test
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Cancels the performance tests still running (the fake is stopping).
    func stop() {
        let runners = state.withLock { state in state.tests.values.compactMap(\.runner) }
        runners.forEach { $0.cancel() }
    }

    // MARK: Answers

    /// The answer to `method /inApps/v1/messaging/…`, or `nil` for another path.
    func route(
        method: String, _ path: [String], query: [(String, String)], body: [UInt8], contentType: String?, context: @autoclosure () -> Context
    ) -> Response? {
        guard path.count >= 4, path[0] == "inApps", path[1] == "v1", path[2] == "messaging" else { return nil }
        let rest = Array(path.dropFirst(3))
        let json = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
        switch (method, rest.count, rest.first) {
        case ("GET", 2, "image") where rest[1] == "list": return imageList()
        case ("PUT", 2, "image"):
            return uploadImage(rest[1], size: query.first { $0.0 == "imageSize" }?.1, body: body, contentType: contentType)
        case ("DELETE", 2, "image"): return deleteImage(rest[1])
        case ("GET", 2, "message") where rest[1] == "list": return messageList()
        case ("PUT", 2, "message"): return uploadMessage(rest[1], json)
        case ("DELETE", 2, "message"): return deleteMessage(rest[1])
        case (_, 3, "default"): return defaultMessage(method, productId: rest[1], locale: rest[2], json)
        case (_, 2, "realtime") where rest[1] == "url": return realtimeURL(method, json)
        case ("POST", 1, "performanceTest"): return initiatePerformanceTest(json, context: context())
        case ("GET", 3, "performanceTest") where rest[1] == "result": return performanceTestResult(rest[2])
        default: return nil
        }
    }

    private static func error(_ status: Int, _ code: Int64, _ message: String) -> Response {
        FakeAppStoreServerAPI.json(["errorCode": code, "errorMessage": message], status: status)
    }

    private static var badRequest: Response { error(400, 4_000_000, "Invalid request.") }

    private static func isUUID(_ text: String) -> Bool {
        UUID(uuidString: text) != nil
    }

    // MARK: Images

    private func uploadImage(_ identifier: String, size: String?, body: [UInt8], contentType: String?) -> Response {
        // Apple documents no answer for an identifier that is not a UUID: a bad request.
        guard Self.isUUID(identifier) else { return Self.badRequest }
        let size = size ?? "FULL_SIZE"
        guard size == "FULL_SIZE" || size == "BULLET_POINT" else {
            return Self.error(400, 4_000_216, "Invalid request. The image's size is invalid.")
        }
        guard contentType?.lowercased().hasPrefix("image/png") == true, Self.acceptable(png: body, size: size) else {
            return Self.error(400, 4_000_161, "Invalid request. The image is invalid.")
        }
        return state.withLock { state in
            guard !state.images.contains(where: { $0.identifier == identifier.lowercased() }) else {
                return Self.error(409, 4_090_000, "The image identifier already exists.")
            }
            guard state.images.count < state.maximumCount else {
                return Self.error(403, 4_030_014, "The maximum number of images has been reached.")
            }
            state.images.append(Image(identifier: identifier.lowercased(), size: size, state: state.reviewState))
            return Response(status: .ok)
        }
    }

    /// Apple's image rules, read independently of the client's check: the PNG signature, an
    /// IHDR of the size's dimensions, no alpha channel (colour types 4 and 6) and no `tRNS`
    /// chunk before the first `IDAT`.
    static func acceptable(png: [UInt8], size: String) -> Bool {
        let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        guard png.count >= 33, png.starts(with: signature), Array(png[12..<16]) == Array("IHDR".utf8) else { return false }
        func number(_ offset: Int) -> Int { png[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) } }
        let (width, height, colourType) = (number(16), number(20), png[25])
        guard colourType != 4, colourType != 6 else { return false }
        var offset = 8
        while offset + 8 <= png.count {
            let type = String(decoding: png[offset + 4..<offset + 8], as: UTF8.self)
            if type == "tRNS" { return false }
            if type == "IDAT" || type == "IEND" { break }
            offset += 12 + number(offset)
        }
        switch size {
        case "FULL_SIZE": return width == 3840 && (160...2160).contains(height)
        default: return width == 1024 && height == 1024
        }
    }

    private func deleteImage(_ identifier: String) -> Response {
        state.withLock { state in
            guard let index = state.images.firstIndex(where: { $0.identifier == identifier.lowercased() }) else {
                return Self.error(404, 4_040_014, "The image identifier was not found.")
            }
            guard !state.messages.contains(where: { $0.imageIdentifiers.contains(identifier.lowercased()) }) else {
                return Self.error(403, 4_030_019, "The image is in use by a message.")
            }
            state.images.remove(at: index)
            return Response(status: .ok)
        }
    }

    private func imageList() -> Response {
        let images = state.withLock { $0.images }
        return FakeAppStoreServerAPI.json(["imageIdentifiers": images.map {
            ["imageIdentifier": $0.identifier, "imageState": $0.state, "imageSize": $0.size]
        }])
    }

    // MARK: Messages

    private func uploadMessage(_ identifier: String, _ body: [String: Any]?) -> Response {
        guard Self.isUUID(identifier), let body, let header = body["header"] as? String, let text = body["body"] as? String else {
            return Self.badRequest
        }
        guard header.count <= 66 else { return Self.error(400, 4_000_162, "Invalid request. The header text is too long.") }
        guard text.count <= 144 else { return Self.error(400, 4_000_163, "Invalid request. The body text is too long.") }
        let altTooLong = Self.error(400, 4_000_175, "Invalid request. The alt text is too long.")
        var images: [(identifier: String, size: String)] = []
        if let image = body["image"] {
            guard let image = image as? [String: Any], let imageId = image["imageIdentifier"] as? String, Self.isUUID(imageId),
                  let alt = image["altText"] as? String
            else { return Self.badRequest }
            guard alt.count <= 150 else { return altTooLong }
            images.append((imageId.lowercased(), "FULL_SIZE"))
        }
        if let bullets = body["bulletPoints"] {
            guard let bullets = bullets as? [[String: Any]] else { return Self.badRequest }
            guard bullets.count <= 5 else {
                return Self.error(400, 4_000_218, "Invalid request. The number of bullet points is too many.")
            }
            for bullet in bullets {
                guard let text = bullet["text"] as? String, let imageId = bullet["imageIdentifier"] as? String, Self.isUUID(imageId),
                      let alt = bullet["altText"] as? String
                else { return Self.badRequest }
                guard text.count <= 66 else {
                    return Self.error(400, 4_000_219, "Invalid request. The bullet point text is too long.")
                }
                guard alt.count <= 150 else { return altTooLong }
                images.append((imageId.lowercased(), "BULLET_POINT"))
            }
        }
        switch body["headerPosition"] as? String {
        case nil, "ABOVE_BODY": break
        case "ABOVE_IMAGE":
            guard body["image"] != nil else {
                return Self.error(400, 4_000_224, "Invalid request. ABOVE_IMAGE header position requires an image.")
            }
        default: return Self.badRequest
        }
        return state.withLock { state in
            // Apple lists BadRequestImageSizeError for Upload Message: an uploaded image of the
            // other size. An image not uploaded (yet) is accepted — Apple lists no "not found"
            // here — and keeps the message from being a default until it is APPROVED.
            for image in images {
                if let known = state.images.first(where: { $0.identifier == image.identifier }), known.size != image.size {
                    return Self.error(400, 4_000_216, "Invalid request. The image's size is invalid.")
                }
            }
            guard !state.messages.contains(where: { $0.identifier == identifier.lowercased() }) else {
                return Self.error(409, 4_090_001, "The message identifier already exists.")
            }
            guard state.messages.count < state.maximumCount else {
                return Self.error(403, 4_030_016, "The maximum number of messages has been reached.")
            }
            state.messages.append(Message(
                identifier: identifier.lowercased(), imageIdentifiers: images.map(\.identifier), state: state.reviewState))
            return Response(status: .ok)
        }
    }

    private func deleteMessage(_ identifier: String) -> Response {
        state.withLock { state in
            guard let index = state.messages.firstIndex(where: { $0.identifier == identifier.lowercased() }) else {
                return Self.error(404, 4_040_015, "The message identifier was not found.")
            }
            // Apple does not say what becomes of a default configuration naming a deleted
            // message: the fake keeps it, as Apple's Get Default Message would show.
            state.messages.remove(at: index)
            return Response(status: .ok)
        }
    }

    private func messageList() -> Response {
        let messages = state.withLock { $0.messages }
        return FakeAppStoreServerAPI.json(["messageIdentifiers": messages.map {
            ["messageIdentifier": $0.identifier, "messageState": $0.state]
        }])
    }

    // MARK: Default messages

    /// A locale as the fake accepts it (`en`, `en-US`, `zh_Hant_TW`): Apple documents only
    /// `InvalidLocaleError`, not the form it takes.
    private static func isLocale(_ text: String) -> Bool {
        let parts = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "-" || $0 == "_" })
        guard let language = parts.first, (2...3).contains(language.count), language.allSatisfy({ $0.isASCII && $0.isLetter }) else {
            return false
        }
        return parts.dropFirst().allSatisfy { (2...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } }
    }

    private func defaultMessage(_ method: String, productId: String, locale: String, _ body: [String: Any]?) -> Response {
        guard Self.isLocale(locale) else { return Self.error(400, 4_000_164, "Invalid request. The locale is invalid.") }
        let key = productId + "\u{0}" + locale
        return state.withLock { state in
            switch method {
            case "GET":
                guard let identifier = state.defaults[key] else {
                    return Self.error(404, 4_040_020, "The default message was not found.")
                }
                return FakeAppStoreServerAPI.json(["messageIdentifier": identifier])
            case "DELETE":
                state.defaults[key] = nil
                return Response(status: .ok)
            case "PUT":
                guard let identifier = (body?["messageIdentifier"] as? String)?.lowercased(), Self.isUUID(identifier) else {
                    return Self.badRequest
                }
                guard let message = state.messages.first(where: { $0.identifier == identifier }) else {
                    return Self.error(404, 4_040_015, "The message identifier was not found.")
                }
                guard message.state == "APPROVED" else { return Self.error(403, 4_030_017, "The message isn't approved.") }
                for imageId in message.imageIdentifiers where state.images.first(where: { $0.identifier == imageId })?.state != "APPROVED" {
                    return Self.error(403, 4_030_018, "The image \(imageId) isn't approved.")
                }
                state.defaults[key] = identifier
                return Response(status: .ok)
            default:
                return FakeAppStoreServerAPI.json(["errorCode": 4_040_000, "errorMessage": "Not found."], status: 404)
            }
        }
    }

    // MARK: Realtime URL

    /// A URL Apple would accept: HTTPS with a host, at most 256 characters. Plain HTTP is
    /// accepted for a loopback host, so that a test's endpoint needs no certificate.
    private static func isRealtimeURL(_ text: String) -> Bool {
        guard text.count <= 256, let url = URL(string: text), let host = url.host, !host.isEmpty else { return false }
        switch url.scheme?.lowercased() {
        case "https": return true
        case "http": return host == "127.0.0.1" || host == "localhost" || host == "::1" || host == "[::1]"
        default: return false
        }
    }

    private func realtimeURL(_ method: String, _ body: [String: Any]?) -> Response {
        state.withLock { state in
            switch method {
            case "GET":
                guard let url = state.realtimeURL else {
                    return Self.error(404, 4_040_021, "The realtime URL was not found.")
                }
                return FakeAppStoreServerAPI.json(["realtimeURL": url])
            case "DELETE":
                state.realtimeURL = nil
                return Response(status: .ok)
            case "PUT":
                guard let url = body?["realtimeURL"] as? String, Self.isRealtimeURL(url) else {
                    return Self.error(400, 4_000_215, "Invalid request. The url is invalid.")
                }
                guard environment == "Sandbox" || state.passedPerformanceTest else {
                    return Self.error(403, 4_030_026, "A passing performance test is required before setting a production URL.")
                }
                state.realtimeURL = url
                return Response(status: .ok)
            default:
                return FakeAppStoreServerAPI.json(["errorCode": 4_040_000, "errorMessage": "Not found."], status: 404)
            }
        }
    }

    // MARK: Performance test

    private func initiatePerformanceTest(_ body: [String: Any]?, context: Context) -> Response {
        // Apple lists only the sandbox host for the performance test.
        guard environment == "Sandbox" else {
            return FakeAppStoreServerAPI.json(["errorCode": 4_040_000, "errorMessage": "Not found."], status: 404)
        }
        guard let id = body?["originalTransactionId"] as? String, !id.isEmpty, id.allSatisfy(\.isNumber) else {
            return Self.error(400, 4_000_006, "Invalid transaction id.")
        }
        let transactions = context.transactions
        guard transactions.contains(where: { $0.transactionId == id || $0.originalTransactionId == id }) else {
            return Self.error(400, 4_000_006, "Invalid transaction id.")
        }
        // BadRequestTransactionIdNotOtidError: Apple's page gives no number; 4000187 is the App
        // Store Server API's error of the same meaning (TransactionIdNotOriginalTransactionIdError).
        guard let latest = transactions.filter({ $0.originalTransactionId == id }).max(by: { $0.purchaseDate < $1.purchaseDate }) else {
            return Self.error(400, 4_000_187, "Invalid request. The transaction id isn't an original transaction id.")
        }
        let signedDate = context.signedDate
        guard latest.type == "Auto-Renewable Subscription", latest.revocationDate == nil, (latest.expiresDate ?? 0) > signedDate else {
            return Self.error(400, 4_000_211, "Invalid request. The performance test request is invalid.")
        }
        let requestId = UUID().uuidString.lowercased()
        let started: (target: String, settings: PerformanceTestSettings)? = state.withLock { state in
            // Apple documents no answer for a test without a URL: the request is invalid.
            guard let target = state.realtimeURL, !state.tests.values.contains(where: { !$0.finished }) else { return nil }
            state.tests[requestId] = PerformanceTest(
                requestId: requestId, target: target, settings: state.settings, pending: state.settings.totalRequests)
            return (target, state.settings)
        }
        guard let started else {
            let running = state.withLock { state in state.tests.values.contains { !$0.finished } }
            return running
                ? Self.error(400, 4_000_213, "Invalid request. A performance test is already running.")
                : Self.error(400, 4_000_211, "Invalid request. The performance test request is invalid.")
        }
        let runner = Task { [self] in
            await run(requestId, target: started.target, settings: started.settings, transaction: latest, context: context)
        }
        state.withLock { $0.tests[requestId]?.runner = runner }
        return FakeAppStoreServerAPI.json(["requestId": requestId, "config": Self.config(started.settings)])
    }

    private static func config(_ settings: PerformanceTestSettings) -> [String: Any] {
        ["maxConcurrentRequests": settings.maxConcurrentRequests, "totalRequests": settings.totalRequests,
         "totalDuration": settings.totalDuration, "responseTimeThreshold": settings.responseTimeThreshold,
         "successRateThreshold": settings.successRateThreshold]
    }

    private func performanceTestResult(_ requestId: String) -> Response {
        guard Self.isUUID(requestId) else { return Self.error(400, 4_000_212, "Invalid request. The request id is invalid.") }
        guard let test = state.withLock({ $0.tests[requestId.lowercased()] }) else {
            return Self.error(404, 4_040_018, "The performance test run was not found.")
        }
        let sorted = test.durations.sorted()
        func percentile(_ share: Double) -> Int64 {
            sorted.isEmpty ? 0 : sorted[max(0, Int((share * Double(sorted.count)).rounded(.up)) - 1)]
        }
        let total = test.settings.totalRequests
        let successRate = total == 0 ? 0 : test.successes * 100 / total
        let result = !test.finished ? "PENDING" : successRate >= Int(test.settings.successRateThreshold) ? "PASS" : "FAIL"
        return FakeAppStoreServerAPI.json([
            "config": Self.config(test.settings), "target": test.target, "result": result, "successRate": successRate,
            "numPending": test.pending, "failures": test.failures,
            "responseTimes": [
                "average": sorted.isEmpty ? 0 : sorted.reduce(0, +) / Int64(sorted.count),
                "p50": percentile(0.5), "p90": percentile(0.9), "p95": percentile(0.95), "p99": percentile(0.99),
            ],
        ])
    }

    /// Sends the test's requests, at most `maxConcurrentRequests` at once, and records each outcome.
    private func run(
        _ requestId: String, target: String, settings: PerformanceTestSettings, transaction: FakeAppStoreServerAPI.Transaction,
        context: Context
    ) async {
        await withTaskGroup(of: Void.self) { group in
            var sent = 0
            func sendNext() {
                guard sent < settings.totalRequests else { return }
                sent += 1
                group.addTask { [self] in
                    let (duration, outcome) = await send(to: target, settings: settings, transaction: transaction, context: context)
                    state.withLock { state in
                        state.tests[requestId]?.pending -= 1
                        state.tests[requestId]?.durations.append(duration)
                        if outcome == "SUCCESS" {
                            state.tests[requestId]?.successes += 1
                        } else {
                            state.tests[requestId]?.failures[outcome, default: 0] += 1
                        }
                    }
                }
            }
            for _ in 0..<max(1, settings.maxConcurrentRequests) { sendNext() }
            while await group.next() != nil { sendNext() }
        }
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard var test = state.tests[requestId] else { return [] }
            test.finished = true
            let total = test.settings.totalRequests
            if total > 0, test.successes * 100 / total >= Int(test.settings.successRateThreshold) {
                state.passedPerformanceTest = true
            }
            defer { test.waiting = []; state.tests[requestId] = test }
            return test.waiting
        }
        waiting.forEach { $0.resume() }
    }

    /// One request of the test: its time in milliseconds and Apple's `sendAttemptResult` for it.
    private func send(
        to target: String, settings: PerformanceTestSettings, transaction: FakeAppStoreServerAPI.Transaction, context: Context
    ) async -> (Int64, String) {
        let payload: [String: Any] = [
            "originalTransactionId": transaction.originalTransactionId, "appAppleId": context.appAppleId,
            "productId": transaction.productId, "userLocale": "en-US", "requestIdentifier": UUID().uuidString.lowercased(),
            "environment": environment, "signedDate": context.signedDate,
        ]
        let payloadJSON = (try? JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])) ?? Data()
        let body = (try? JSONSerialization.data(withJSONObject: ["signedPayload": context.sign(payloadJSON)])) ?? Data()
        var request = HTTPClientRequest(url: target)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: Array(body)))
        let started = ContinuousClock.now
        func elapsed() -> Int64 {
            let (seconds, attoseconds) = (ContinuousClock.now - started).components
            return seconds * 1000 + attoseconds / 1_000_000_000_000_000
        }
        do {
            let response = try await HTTPClient.shared.execute(request, timeout: .milliseconds(settings.responseTimeThreshold))
            let answer = try await response.body.collect(upTo: 64 * 1024)
            let duration = elapsed()
            guard duration <= settings.responseTimeThreshold else { return (duration, "TIMED_OUT") }
            guard response.status.code == 200 else { return (duration, "UNSUCCESSFUL_HTTP_RESPONSE_CODE") }
            let object = (try? JSONSerialization.jsonObject(with: Data(answer.readableBytesView))) as? [String: Any]
            return (duration, object == nil ? "INVALID_RESPONSE" : "SUCCESS")
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
            return (elapsed(), "TIMED_OUT")
        } catch {
            return (elapsed(), elapsed() >= settings.responseTimeThreshold ? "TIMED_OUT" : "SOCKET_ISSUE")
        }
    }
}
