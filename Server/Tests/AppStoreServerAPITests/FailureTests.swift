import AppStoreServerAPI
import AppStoreServerAPIFake
import Foundation
import ReceiptKit
import Testing

/// Every failure a user acts on: Apple's error bodies, a refused token, rate limits, server
/// errors, stalls and unreachable hosts, each with its code, and retries only where safe.
@Suite("App Store Server API failures")
struct FailureTests {
    @Test("Apple's error body becomes a typed error with its number and status, not retried")
    func apiErrors() async throws {
        try await Fixture.withFake { fake, client in
            let notFound = try await #require(throws: AppStoreServerAPIError.self) { try await client.transactionInfo("2999999999") }
            #expect(notFound.code == .apiError)
            #expect(notFound.apiErrorCode == .transactionIdNotFound && notFound.httpStatus == 404)
            #expect(notFound.apiErrorMessage == "Transaction id not found.")
            #expect(notFound.attempts == 1)
            let invalid = try await #require(throws: AppStoreServerAPIError.self) { try await client.transactionHistory("not-an-id") }
            #expect(invalid.apiErrorCode == .invalidTransactionId && invalid.httpStatus == 400)
            #expect(fake.requests.last?.path == "/inApps/v2/history/not-an-id")
            let revision = try await #require(throws: AppStoreServerAPIError.self) {
                try await client.transactionHistory("2000000100", revision: "bogus")
            }
            #expect(revision.apiErrorCode == .invalidRequestRevision)
            #expect(fake.requests.count == 3)
        }
    }

    @Test("a path segment is percent-encoded, and an empty or dot one refused: an id cannot reach another endpoint")
    func pathEncoding() async throws {
        try await Fixture.withFake { fake, client in
            _ = try? await client.transactionInfo("2000000100/finish")
            #expect(fake.requests.last?.path == "/inApps/v1/transactions/2000000100%2Ffinish")
            #expect(fake.requests.last?.method == "GET")
            for id in ["", ".", ".."] {
                let error = try await #require(throws: AppStoreServerAPIError.self) { try await client.transactionInfo(id) }
                #expect(error.code == .invalidRequest)
            }
            #expect(fake.requests.count == 1)
        }
    }

    @Test("401: a token of another key id is refused; the error names the claims to check; no retry")
    func unauthorizedKeyId() async throws {
        let fake = try Fixture.fake()
        try await fake.run { baseURL in
            let key = try InAppPurchaseKey(keyId: "OTHERKEY99", issuerId: Fixture.issuerId, signingKey: Fixture.key().signingKey)
            let client = try Fixture.client(baseURL, key: key)
            let error = try await #require(throws: AppStoreServerAPIError.self) { try await client.transactionInfo("2000000100") }
            #expect(error.code == .unauthorized && error.httpStatus == 401 && error.attempts == 1)
            #expect(error.reason.contains("key id (kid)") && error.reason.contains("OTHERKEY99"))
            #expect(fake.requests.map(\.authorizationFailure) == ["kid is not TESTKEY123"])
        }
    }

    @Test("401: a token signed by another key, or expired by the client's clock, is refused")
    func unauthorizedKeyAndClock() async throws {
        let fake = try Fixture.fake()
        try await fake.run { baseURL in
            let other = try InAppPurchaseKey(
                keyId: Fixture.keyId, issuerId: Fixture.issuerId, signingKey: ES256SigningKey(pemBytes: Fixture.testVector("pki/xcode.key")))
            let forged = try await #require(throws: AppStoreServerAPIError.self) {
                try await Fixture.client(baseURL, key: other).transactionInfo("2000000100")
            }
            #expect(forged.code == .unauthorized)
            // A client whose clock is two hours behind signs a token that expired an hour ago.
            let late = try Fixture.client(baseURL, clock: { Date().addingTimeInterval(-7200) })
            let expired = try await #require(throws: AppStoreServerAPIError.self) { try await late.transactionInfo("2000000100") }
            #expect(expired.code == .unauthorized && expired.reason.contains("clock"))
            #expect(fake.requests.map(\.authorizationFailure) == ["the signature does not verify under the key", "the token expired"])
        }
    }

    @Test("one token is reused until a minute before it expires, then replaced")
    func tokenReuse() async throws {
        let clock = ManualClock(Date())
        let fake = try Fixture.fake(clock: { clock.read() })
        try await fake.run { baseURL in
            let client = try Fixture.client(baseURL, clock: { clock.read() })
            _ = try await client.transactionInfo("2000000100")
            clock.advance(by: 600)
            _ = try await client.transactionInfo("2000000100")
            clock.advance(by: 541)  // 1141 s after iat: 59 s before exp
            _ = try await client.transactionInfo("2000000100")
            let issued = try fake.requests.map { try #require($0.claims["iat"].flatMap(Int64.init)) }
            #expect(issued[0] == issued[1])
            #expect(issued[2] == issued[0] + 1141)
        }
    }

    @Test("429 with Retry-After in seconds: waits that long, then succeeds")
    func rateLimitedSeconds() async throws {
        try await Fixture.withFake(configure: { $0.enqueue(.status(429, retryAfter: "1"), path: "/inApps/v1/transactions") }) { fake, client in
            let started = ContinuousClock.now
            let item = try await client.transactionInfo("2000000100")
            #expect(ContinuousClock.now - started >= .seconds(1))
            #expect(item.verified.payload.transactionId == "2000000100")
            #expect(fake.requests.count == 2)
        }
    }

    @Test("429 with Retry-After as an HTTP date: waits until then")
    func rateLimitedDate() async throws {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let now = Date(timeIntervalSince1970: 1_780_000_000)
        let date = formatter.string(from: now.addingTimeInterval(1))
        let fake = try Fixture.fake(clock: { now })
        fake.enqueue(.status(429, retryAfter: date), path: "/inApps")
        try await fake.run { baseURL in
            // The client reads the date against its own clock, fixed here.
            let client = try Fixture.client(baseURL, clock: { now })
            let started = ContinuousClock.now
            _ = try? await client.transactionInfo("2000000100")
            #expect(ContinuousClock.now - started >= .seconds(1))
            #expect(fake.requests.count == 2)
        }
    }

    @Test("429 with Retry-After as Apple documents it, a UNIX time in milliseconds: waits until then")
    func rateLimitedUnixMilliseconds() async throws {
        let now = Date(timeIntervalSince1970: 1_780_000_000)
        let until = Int64(now.timeIntervalSince1970 * 1000) + 1_000
        let fake = try Fixture.fake(clock: { now })
        fake.enqueue(.status(429, retryAfter: String(until)), path: "/inApps")
        try await fake.run { baseURL in
            // Read as delta-seconds, the number would ask for a wait of 56,000 years: the call
            // would fail at once with rate_limited instead of waiting a second.
            let client = try Fixture.client(baseURL, clock: { now })
            let started = ContinuousClock.now
            let item = try await client.transactionInfo("2000000100")
            #expect(ContinuousClock.now - started >= .seconds(1))
            #expect(item.verified.payload.transactionId == "2000000100")
            #expect(fake.requests.count == 2)
        }
    }

    @Test("429 asking for longer than the overall timeout fails at once with rate_limited and the wait")
    func rateLimitedPastDeadline() async throws {
        let fake = try Fixture.fake()
        fake.enqueue(.status(429, retryAfter: "120"), path: "/inApps")
        try await fake.run { baseURL in
            // A client that waited for Apple's two minutes, or for its own one-minute deadline,
            // would take a minute at least; one that gives up at once takes a request's time
            // (bounded generously: the suite's other tests share the machine's two cores).
            let policy = AppStoreServerAPIClient.RetryPolicy(
                maximumAttempts: 3, overallTimeout: .seconds(60), requestTimeout: .seconds(10), initialBackoff: .milliseconds(10))
            let started = ContinuousClock.now
            let error = try await #require(throws: AppStoreServerAPIError.self) {
                try await Fixture.client(baseURL, retry: policy).transactionInfo("2000000100")
            }
            #expect(ContinuousClock.now - started < .seconds(20))
            #expect(error.code == .rateLimited && error.retryAfterSeconds == 120 && error.attempts == 1)
            #expect(fake.requests.count == 1)
        }
    }

    @Test("429 on every attempt: rate_limited after the attempt count")
    func rateLimitedEveryTime() async throws {
        let configure: (FakeAppStoreServerAPI) -> Void = { fake in
            for _ in 0..<3 { fake.enqueue(.apiError(status: 429, errorCode: 4_290_000, errorMessage: "Rate limit exceeded."), path: "/inApps") }
        }
        try await Fixture.withFake(configure: configure) { fake, client in
            let error = try await #require(throws: AppStoreServerAPIError.self) { try await client.transactionInfo("2000000100") }
            #expect(error.code == .rateLimited && error.apiErrorCode == .rateLimitExceeded && error.attempts == 3)
            #expect(fake.requests.count == 3)
        }
    }

    @Test("500 is retried with back-off: a later attempt succeeds; every attempt failing is server_error")
    func serverErrors() async throws {
        try await Fixture.withFake(configure: { $0.enqueue(.status(500), path: "/inApps"); $0.enqueue(.status(503), path: "/inApps") }) { fake, client in
            let item = try await client.transactionInfo("2000000100")
            #expect(item.verified.payload.transactionId == "2000000100")
            #expect(fake.requests.count == 3)
            for _ in 0..<3 { fake.enqueue(.apiError(status: 500, errorCode: 5_000_000, errorMessage: "An unknown error occurred."), path: "/inApps") }
            let error = try await #require(throws: AppStoreServerAPIError.self) { try await client.transactionInfo("2000000100") }
            #expect(error.code == .serverError && error.apiErrorCode == .generalInternal && error.httpStatus == 500 && error.attempts == 3)
        }
    }

    @Test("a request that is not idempotent is not retried after a 5xx (a test notification, an extension), but is after a 429")
    func notRetried() async throws {
        try await Fixture.withFake(configure: { $0.enqueue(.status(500), path: "/inApps/v1/notifications/test") }) { fake, client in
            let error = try await #require(throws: AppStoreServerAPIError.self) { try await client.requestTestNotification() }
            #expect(error.code == .serverError && error.attempts == 1)
            #expect(fake.requests.count == 1)
            fake.enqueue(.status(429, retryAfter: "0"), path: "/inApps/v1/transactions/2000000201/finish")
            try await client.finishTransaction("2000000201")
            #expect(fake.requests.count == 3)
            fake.enqueue(.status(502), path: "/inApps/v1/subscriptions/extend")
            let extend = try await #require(throws: AppStoreServerAPIError.self) {
                try await client.extendRenewalDate(
                    originalTransactionId: "2000000100", ExtendRenewalDateRequest(extendByDays: 1, extendReasonCode: 3, requestIdentifier: "x"))
            }
            #expect(extend.code == .serverError && extend.attempts == 1)
            #expect(fake.requests.count == 4)
        }
    }

    @Test("a stalled answer times out after the per-request timeout and is retried")
    func stalled() async throws {
        let fake = try Fixture.fake()
        try await fake.run { baseURL in
            fake.enqueue(.stall(.seconds(30)), path: "/inApps")
            let once = AppStoreServerAPIClient.RetryPolicy(maximumAttempts: 1, requestTimeout: .milliseconds(300))
            let started = ContinuousClock.now
            let error = try await #require(throws: AppStoreServerAPIError.self) {
                try await Fixture.client(baseURL, retry: once).transactionInfo("2000000100")
            }
            #expect(error.code == .timeout)
            #expect(ContinuousClock.now - started < .seconds(10))  // against the 30 s stall
            fake.enqueue(.stall(.seconds(30)), path: "/inApps")
            let twice = AppStoreServerAPIClient.RetryPolicy(
                maximumAttempts: 2, requestTimeout: .seconds(2), initialBackoff: .milliseconds(10))
            let item = try await Fixture.client(baseURL, retry: twice).transactionInfo("2000000100")
            #expect(item.verified.payload.transactionId == "2000000100")
        }
    }

    @Test("an answer whose body stalls after its head times out too")
    func stalledBody() async throws {
        let fake = try Fixture.fake()
        try await fake.run { baseURL in
            fake.enqueue(.stallBody(.seconds(30)), path: "/inApps")
            let policy = AppStoreServerAPIClient.RetryPolicy(
                maximumAttempts: 2, requestTimeout: .seconds(2), initialBackoff: .milliseconds(10))
            let started = ContinuousClock.now
            let item = try await Fixture.client(baseURL, retry: policy).transactionInfo("2000000100")
            #expect(item.verified.payload.transactionId == "2000000100")
            #expect(ContinuousClock.now - started < .seconds(15))  // against the 30 s stall
            #expect(fake.requests.count == 2)
            fake.enqueue(.stallBody(.seconds(30)), path: "/inApps")
            let once = AppStoreServerAPIClient.RetryPolicy(maximumAttempts: 1, requestTimeout: .milliseconds(300))
            let error = try await #require(throws: AppStoreServerAPIError.self) {
                try await Fixture.client(baseURL, retry: once).transactionInfo("2000000100")
            }
            #expect(error.code == .timeout)
        }
    }

    @Test("the overall timeout bounds a call, retries included")
    func overallTimeout() async throws {
        let fake = try Fixture.fake()
        try await fake.run { baseURL in
            for _ in 0..<5 { fake.enqueue(.stall(.seconds(30)), path: "/inApps") }
            let policy = AppStoreServerAPIClient.RetryPolicy(
                maximumAttempts: 5, overallTimeout: .milliseconds(700), requestTimeout: .milliseconds(400), initialBackoff: .milliseconds(10))
            let started = ContinuousClock.now
            let error = try await #require(throws: AppStoreServerAPIError.self) {
                try await Fixture.client(baseURL, retry: policy).transactionInfo("2000000100")
            }
            #expect(error.code == .timeout)
            #expect(ContinuousClock.now - started < .seconds(10))  // against five 30 s stalls
            // Five attempts were allowed; the 0.7 s deadline leaves room for two at most.
            #expect((1...2).contains(error.attempts))
            #expect(fake.requests.count <= 2)
        }
    }

    @Test("an unreachable host is connection_failed after every attempt")
    func connectionFailed() async throws {
        // The port of a fake that has stopped: nothing listens there.
        let baseURL = try await Fixture.fake().run { $0 }
        // AsyncHTTPClient keeps trying to connect until the request's timeout: keep it short.
        let policy = AppStoreServerAPIClient.RetryPolicy(
            maximumAttempts: 3, requestTimeout: .milliseconds(300), initialBackoff: .milliseconds(10))
        let started = ContinuousClock.now
        let error = try await #require(throws: AppStoreServerAPIError.self) {
            try await Fixture.client(baseURL, retry: policy).transactionInfo("2000000100")
        }
        #expect(error.code == .connectionFailed || error.code == .timeout)
        #expect(error.attempts == 3)
        // Against AsyncHTTPClient's own connect timeout (10 s an attempt) had the request's not applied.
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    @Test("an answer larger than the limit is malformed_response; an answer that is not Apple's JSON too")
    func malformedAnswers() async throws {
        let fake = try Fixture.fake()
        try await fake.run { baseURL in
            let small = try Fixture.client(baseURL, maximumResponseSize: 512)
            let tooLarge = try await #require(throws: AppStoreServerAPIError.self) { try await small.transactionInfo("2000000100") }
            #expect(tooLarge.code == .malformedResponse && tooLarge.attempts == 1)
            // An endpoint the fake does not know answers 404 with an error body: not a 2xx, so apiError;
            // a 200 whose body is not the shape is malformed_response.
            fake.enqueue(.status(200), path: "/inApps/v1/transactions")
            let empty = try await #require(throws: AppStoreServerAPIError.self) { try await Fixture.client(baseURL).transactionInfo("2000000100") }
            #expect(empty.code == .malformedResponse)
        }
    }

    @Test("pages whose token repeats end the sequence with malformed_response instead of looping")
    func loopingPages() async throws {
        try await Fixture.withFake(configure: { $0.loopingPages = true }) { fake, client in
            var pages = 0
            let error = try await #require(throws: AppStoreServerAPIError.self) {
                for try await _ in client.transactionHistoryPages("2000000100") { pages += 1 }
            }
            #expect(error.code == .malformedResponse)
            // The second page is returned (it verified); its token, the first page's again, is not followed.
            #expect(pages == 2)
            #expect(fake.requests.map { $0.queryValues("revision") } == [[], ["r20"]])
        }
    }

    @Test("Xcode has no API; LocalTesting needs a base URL; Apple's base URLs per environment")
    func environments() throws {
        let key = try Fixture.key()
        let verifier = try Fixture.verifier()
        #expect(throws: AppStoreServerAPIError.self) {
            try AppStoreServerAPIClient(configuration: .init(key: key, bundleId: Fixture.bundleId, environment: .xcode), verifier: verifier)
        }
        let xcode = try #require(throws: AppStoreServerAPIError.self) {
            try AppStoreServerAPIClient(
                configuration: .init(key: key, bundleId: Fixture.bundleId, environment: .xcode, baseURL: "http://127.0.0.1:1"),
                verifier: verifier)
        }
        #expect(xcode.code == .unsupportedEnvironment)
        #expect(throws: AppStoreServerAPIError.self) {
            try AppStoreServerAPIClient(configuration: .init(key: key, bundleId: Fixture.bundleId, environment: .localTesting), verifier: verifier)
        }
        let production = try AppStoreServerAPIClient(
            configuration: .init(key: key, bundleId: Fixture.bundleId, environment: .production), verifier: verifier)
        #expect(production.baseURL == "https://api.storekit.apple.com")
        let sandbox = try AppStoreServerAPIClient(
            configuration: .init(key: key, bundleId: Fixture.bundleId, environment: .sandbox), verifier: verifier)
        #expect(sandbox.baseURL == "https://api.storekit-sandbox.apple.com")
        let invalid = try #require(throws: AppStoreServerAPIError.self) {
            try AppStoreServerAPIClient(
                configuration: .init(key: key, bundleId: Fixture.bundleId, environment: .sandbox, tokenLifetimeSeconds: 3601),
                verifier: verifier)
        }
        #expect(invalid.code == .invalidRequest)
    }
}
