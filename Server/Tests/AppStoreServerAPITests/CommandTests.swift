import AppStoreServerAPIFake
import Foundation
import ReceiptKit
import Testing

/// The built `appstore-api` against the fake App Store Server API: what it prints, where, and
/// its exit status; and `appstore-api history … | verify-receipt --state -`.
/// Serialized: each test starts the command several times, and the machine is shared.
@Suite("appstore-api command", .serialized)
struct CommandTests {
    @Test("history prints every page's transactions, one verified JWS per line, in Apple's order; exit 0")
    func history() async throws {
        let fake = try Fixture.fake()
        try await fake.run { baseURL in
            let result = try await Command.appstoreAPI(["history", "2000000100"], baseURL: baseURL)
            #expect(result.status == 0, "\(result.stderr)")
            let verifier = try Fixture.verifier()
            let ids = try result.lines.map { try verifier.verifyTransaction($0).payload.transactionId }
            #expect(ids == Fixture.transactions().map(\.transactionId))
            #expect(fake.requests.count == 3)
            #expect(fake.requests.allSatisfy { $0.authorizationFailure == nil && $0.claims["bid"] == Fixture.bundleId })
        }
    }

    @Test("appstore-api history ID | verify-receipt --state - is the customer's state",
          .enabled(if: Command.verifyReceipt != nil, "verify-receipt is built by the root package (scripts/test.sh builds it first)"))
    func historyToState() async throws {
        let verifyReceipt = try #require(Command.verifyReceipt)
        let fake = try Fixture.fake()
        try await fake.run { baseURL in
            let history = try await Command.appstoreAPI(["history", "2000000100"], baseURL: baseURL)
            #expect(history.status == 0, "\(history.stderr)")
            let state = try await Command.run(
                verifyReceipt,
                ["--state", "-", "--as-of", "2026-06-01T00:00:00Z", "--root", Fixture.testVectorPath("pki/root.der"),
                 "--bundle-id", Fixture.bundleId, "-"],
                environment: [:], stdin: history.stdout)
            #expect(state.status == 0, "\(state.stderr)")
            let records = try state.objects()
            #expect(records.map { $0["original_transaction_id"] as? String } == [
                "2000000100", "2000000200", "2000000201", "2000000202", "2000000203", "2000000204",
            ])
            let subscription = try #require(records.first)
            #expect(subscription["status"] as? String == "active" && subscription["entitled"] as? Bool == true)
            #expect(subscription["latest_transaction_id"] as? String == "2000000139")
        }
    }

    @Test("a forged item: the others print, the item does not, its field and code go to stderr; exit 1")
    func forged() async throws {
        let fake = try Fixture.fake()
        fake.forgedTransactionIds = ["2000000107", "2000000130"]
        try await fake.run { baseURL in
            let result = try await Command.appstoreAPI(["history", "2000000100"], baseURL: baseURL)
            #expect(result.status == 1)
            #expect(result.lines.count == 43)
            let verifier = try Fixture.verifier()
            for line in result.lines { _ = try verifier.verifyTransaction(line) }
            #expect(result.stderr.contains("rejected signedTransactions[7]: invalid_signature"))
            #expect(result.stderr.contains("rejected signedTransactions[10]: invalid_signature"))
            let single = try await Command.appstoreAPI(["transaction", "2000000107"], baseURL: baseURL)
            #expect(single.status == 1 && single.stdout.isEmpty)
            #expect(single.stderr.contains("rejected signedTransactionInfo: invalid_signature"))
        }
    }

    @Test("--json prints Apple's response objects, one per page, with the verified items")
    func json() async throws {
        let fake = try Fixture.fake()
        try await fake.run { baseURL in
            let result = try await Command.appstoreAPI(["history", "2000000100", "--product-type", "NON_CONSUMABLE", "--json"], baseURL: baseURL)
            #expect(result.status == 0, "\(result.stderr)")
            let pages = try result.objects()
            #expect(pages.count == 1)
            #expect((pages.first?["signedTransactions"] as? [String])?.count == 5)
            #expect(pages.first?["hasMore"] as? Bool == false && pages.first?["environment"] as? String == "Sandbox")
            #expect(fake.requests.last?.queryValues("productType") == ["NON_CONSUMABLE"])
        }
    }

    @Test("an API error exits 2 with Apple's code on stderr; a missing credential or Xcode is a usage error (64)")
    func errors() async throws {
        let fake = try Fixture.fake()
        try await fake.run { baseURL in
            let notFound = try await Command.appstoreAPI(["transaction", "2999999999"], baseURL: baseURL)
            #expect(notFound.status == 2 && notFound.stdout.isEmpty)
            #expect(notFound.stderr.contains("api_error") && notFound.stderr.contains("errorCode 4040010"))
            let missing = try await Command.appstoreAPI(["transaction", "2000000100"], baseURL: baseURL, extraEnvironment: ["APPSTORE_API_KEY_ID": ""])
            #expect(missing.status == 64 && missing.stderr.contains("--key-id"))
            let xcode = try await Command.appstoreAPI(["transaction", "2000000100", "--environment", "Xcode"], baseURL: baseURL)
            #expect(xcode.status == 64 && xcode.stderr.contains("unsupported_environment"))
            let wrongKey = try await Command.appstoreAPI(["transaction", "2000000100", "--key-id", "OTHERKEY99"], baseURL: baseURL)
            #expect(wrongKey.status == 2 && wrongKey.stderr.contains("unauthorized"))
            fake.enqueue(.stall(.seconds(30)), path: "/inApps")
            let stalled = try await Command.appstoreAPI(
                ["transaction", "2000000100", "--timeout", "0.3", "--max-attempts", "1"], baseURL: baseURL)
            #expect(stalled.status == 2 && stalled.stderr.contains("timeout"))
            fake.enqueue(.status(429, retryAfter: "0"), path: "/inApps")
            fake.enqueue(.status(500), path: "/inApps")
            let retried = try await Command.appstoreAPI(["transaction", "2000000100"], baseURL: baseURL)
            #expect(retried.status == 0, "\(retried.stderr)")
        }
    }

    @Test("statuses, refunds, order, app-transaction print verified JWS")
    func lookups() async throws {
        let fake = try Fixture.fake()
        try await fake.run { baseURL in
            let verifier = try Fixture.verifier()
            let statuses = try await Command.appstoreAPI(["statuses", "2000000100", "--status", "active"], baseURL: baseURL)
            #expect(statuses.status == 0 && statuses.lines.count == 2)
            #expect(try verifier.verifyTransaction(statuses.lines[0]).payload.transactionId == "2000000139")
            #expect(try verifier.verifyRenewalInfo(statuses.lines[1]).payload.originalTransactionId == "2000000100")
            #expect(fake.requests.last?.queryValues("status") == ["1"])
            let statusesJSON = try await Command.appstoreAPI(["statuses", "2000000100", "--json"], baseURL: baseURL)
            let data = try #require(try statusesJSON.objects().first?["data"] as? [[String: Any]])
            let last = try #require((data.first?["lastTransactions"] as? [[String: Any]])?.first)
            #expect(data.first?["subscriptionGroupIdentifier"] as? String == "21000001")
            #expect(last["status"] as? Int == 1 && last["originalTransactionId"] as? String == "2000000100")
            let renewal = try #require(last["signedRenewalInfo"] as? String)
            #expect(try verifier.verifyRenewalInfo(renewal).payload.productId == "com.receiptkit.monthly")
            let refunds = try await Command.appstoreAPI(["refunds", "2000000100"], baseURL: baseURL)
            #expect(try refunds.lines.map { try verifier.verifyTransaction($0).payload.transactionId } == ["2000000112"])
            let order = try await Command.appstoreAPI(["order", "MQ5X3C7Z1V"], baseURL: baseURL)
            #expect(order.status == 0 && order.lines.count == 2)
            let unknownOrder = try await Command.appstoreAPI(["order", "NOTANORDER"], baseURL: baseURL)
            #expect(unknownOrder.status == 2 && unknownOrder.stderr.contains("invalid_order"))
            let app = try await Command.appstoreAPI(["app-transaction", "2000000100"], baseURL: baseURL)
            #expect(try verifier.verifyAppTransaction(app.stdout.trimmingCharacters(in: .newlines)).payload.bundleId == Fixture.bundleId)
        }
    }

    @Test("notifications print webhook bodies that verify-receipt reads; test-notification prints a token, then the notification")
    func notifications() async throws {
        let fake = try Fixture.fake()
        fake.failedNotificationTransactionIds = ["2000000120"]
        try await fake.run { baseURL in
            let verifier = try Fixture.verifier()
            let result = try await Command.appstoreAPI(
                ["notifications", "--start", "2026-05-01T00:00:00Z", "--end", "2026-06-01T00:00:00Z", "--only-failures"], baseURL: baseURL)
            #expect(result.status == 0, "\(result.stderr)")
            let bodies = try result.objects()
            #expect(bodies.count == 1 && bodies.first?.keys.sorted() == ["signedPayload"])
            let payload = try #require(bodies.first?["signedPayload"] as? String)
            #expect(try verifier.verifyNotification(payload).transaction?.payload.transactionId == "2000000120")
            let body = try #require(fake.requests.last?.bodyJSON)
            #expect(body["onlyFailures"] as? Bool == true)
            #expect((body["startDate"] as? NSNumber)?.int64Value == 1_777_593_600_000)
            let json = try await Command.appstoreAPI(
                ["notifications", "--start", "2026-05-01T00:00:00Z", "--end", "2026-06-01T00:00:00Z", "--only-failures", "--json"],
                baseURL: baseURL)
            let page = try #require(try json.objects().first)
            #expect(page["paginationToken"] is NSNull && page["hasMore"] as? Bool == false)
            let history = try #require(page["notificationHistory"] as? [[String: Any]])
            // The fake signs anew for each request (ECDSA is randomized): compare what was signed.
            let again = try #require(history.first?["signedPayload"] as? String)
            #expect(try verifier.verifyNotification(again).transaction?.payload.transactionId == "2000000120")
            #expect((history.first?["sendAttempts"] as? [[String: Any]])?.first?["sendAttemptResult"] as? String == "TIMED_OUT")
            let token = try await Command.appstoreAPI(["test-notification"], baseURL: baseURL)
            #expect(token.status == 0 && token.lines.count == 1)
            let test = try await Command.appstoreAPI(["test-notification", token.lines[0]], baseURL: baseURL)
            let testPayload = try #require(try test.objects().first?["signedPayload"] as? String)
            #expect(try verifier.verifyNotification(testPayload).notification.payload.rawNotificationType == "TEST")
            if let verifyReceipt = Command.verifyReceipt {
                let read = try await Command.run(
                    verifyReceipt, ["--root", Fixture.testVectorPath("pki/root.der"), "-"], environment: [:], stdin: result.stdout + test.stdout)
                #expect(read.status == 0, "\(read.stderr)")
                #expect(try read.objects().map { $0["kind"] as? String } == ["notification", "notification"])
            }
        }
    }

    @Test("consumption, set-app-account-token, finish, extend, extend-all, extend-status send Apple's bodies")
    func changes() async throws {
        let fake = try Fixture.fake()
        try await fake.run { baseURL in
            let consumption = try await Command.appstoreAPI(
                ["consumption", "2000000201", "--delivery-status", "DELIVERED", "--consumption-percentage", "50000",
                 "--refund-preference", "GRANT_PRORATED"], baseURL: baseURL)
            #expect(consumption.status == 0, "\(consumption.stderr)")
            #expect(fake.requests.last?.bodyJSON as NSDictionary? == [
                "customerConsented": true, "consumptionPercentage": 50_000, "deliveryStatus": "DELIVERED",
                "refundPreference": "GRANT_PRORATED", "sampleContentProvided": false,
            ] as NSDictionary)
            let v1File = Fixture.directory.appendingPathComponent("consumption-v1.json")
            try Data(#"{"customerConsented":true,"consumptionStatus":1,"platform":1,"sampleContentProvided":false,"deliveryStatus":0,"appAccountToken":"","accountTenure":2,"playTime":3,"lifetimeDollarsRefunded":0,"lifetimeDollarsPurchased":1,"userStatus":1,"refundPreference":1}"#.utf8).write(to: v1File)
            let v1 = try await Command.appstoreAPI(["consumption", "2000000201", "--v1-body", v1File.path], baseURL: baseURL)
            #expect(v1.status == 0 && fake.requests.last?.path == "/inApps/v1/transactions/consumption/2000000201")
            let token = try await Command.appstoreAPI(
                ["set-app-account-token", "2000000100", "7E3FB20B-4CDB-47CC-936D-99D65F608138"], baseURL: baseURL)
            #expect(token.status == 0 && fake.requests.last?.bodyJSON?["appAccountToken"] as? String == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
            let badToken = try await Command.appstoreAPI(["set-app-account-token", "2000000100", "customer-42"], baseURL: baseURL)
            #expect(badToken.status == 64)
            let finish = try await Command.appstoreAPI(["finish", "2000000201"], baseURL: baseURL)
            #expect(finish.status == 0 && fake.requests.last?.path == "/inApps/v1/transactions/2000000201/finish")
            let extend = try await Command.appstoreAPI(
                ["extend", "2000000100", "--days", "7", "--reason", "3", "--request-id", "outage-1"], baseURL: baseURL)
            let extended = try extend.objects().first
            #expect(extend.status == 0 && extended?["success"] as? Bool == true)
            let all = try await Command.appstoreAPI(
                ["extend-all", "--product-id", "com.receiptkit.monthly", "--days", "3", "--reason", "1",
                 "--request-id", "a5d3ce4c-bd5a-4b8c-9a49-b4a2f0d53a44", "--storefront", "USA"], baseURL: baseURL)
            #expect(try all.objects().first?["requestIdentifier"] as? String == "a5d3ce4c-bd5a-4b8c-9a49-b4a2f0d53a44")
            let status = try await Command.appstoreAPI(
                ["extend-status", "com.receiptkit.monthly", "a5d3ce4c-bd5a-4b8c-9a49-b4a2f0d53a44"], baseURL: baseURL)
            #expect(try status.objects().first?["succeededCount"] as? Int == 40)
        }
    }
}

/// `appstore-api sign …`: each output checked with the key's public half and field by field.
@Suite("appstore-api sign", .serialized)
struct SignCommandTests {
    static let nonce = "d5a4e1b2-3c4d-4e5f-8a9b-0c1d2e3f4a5b"

    func sign(_ arguments: [String], environment: [String: String]? = nil) async throws -> [String: Any] {
        let result = try await Command.run(
            Command.appstoreAPI, ["sign"] + arguments + ["--nonce", Self.nonce, "--timestamp", "1767225600123"],
            environment: try environment ?? Command.environment())
        #expect(result.status == 0, "\(result.stderr)")
        return try #require(try result.objects().first)
    }

    /// The claims of a compact JWS whose ES256 signature verifies under the run's key.
    func claims(_ jws: String) throws -> [String: Any] {
        let parts = jws.split(separator: ".").map(String.init)
        try #require(parts.count == 3)
        let segments = parts.map(FakeAppStoreServerAPI.base64URL)
        let headerData = try #require(segments[0])
        let payloadData = try #require(segments[1])
        let signature = try #require(segments[2])
        let header = try JSONSerialization.jsonObject(with: headerData) as? [String: Any]
        #expect(header as NSDictionary? == ["alg": "ES256", "kid": Fixture.keyId, "typ": "JWT"] as NSDictionary)
        let publicKey = try Fixture.key().signingKey.publicKey
        #expect(publicKey.isValidSignature(Array(signature), for: Array((parts[0] + "." + parts[1]).utf8)))
        let claims = try JSONSerialization.jsonObject(with: payloadData) as? [String: Any]
        return try #require(claims)
    }

    @Test("sign promotional-offer: key_id, nonce, timestamp, and a DER signature over the U+2063-joined fields")
    func promotionalOffer() async throws {
        // V1 needs no issuer id.
        var environment = try Command.environment()
        environment["APPSTORE_API_ISSUER_ID"] = nil
        let output = try await sign([
            "promotional-offer", "--product-id", "com.receiptkit.monthly", "--offer-id", "WINBACK10",
            "--app-account-token", "7E3FB20B-4CDB-47CC-936D-99D65F608138",
        ], environment: environment)
        #expect(Set(output.keys) == ["key_id", "nonce", "timestamp", "signature"])
        #expect(output["key_id"] as? String == Fixture.keyId && output["nonce"] as? String == Self.nonce)
        #expect((output["timestamp"] as? NSNumber)?.int64Value == 1_767_225_600_123)
        let payload = "com.receiptkit.example\u{2063}TESTKEY123\u{2063}com.receiptkit.monthly\u{2063}WINBACK10\u{2063}"
            + "7e3fb20b-4cdb-47cc-936d-99d65f608138\u{2063}\(Self.nonce)\u{2063}1767225600123"
        let signature = try #require(output["signature"] as? String)
        let der = try #require(Data(base64Encoded: signature))
        #expect(try Fixture.key().signingKey.publicKey.isValidDERSignature(Array(der), for: Array(payload.utf8)))
    }

    @Test("sign promotional-offer-v2, intro-eligibility, advanced-commerce: {\"jws\"} with Apple's claims")
    func jws() async throws {
        let v2 = try claims(try #require(try await sign([
            "promotional-offer-v2", "--product-id", "com.receiptkit.monthly", "--offer-id", "WINBACK10", "--transaction-id", "2000000100",
        ])["jws"] as? String))
        #expect(v2 as NSDictionary == [
            "iss": Fixture.issuerId, "bid": Fixture.bundleId, "aud": "promotional-offer", "iat": 1_767_225_600, "nonce": Self.nonce,
            "productId": "com.receiptkit.monthly", "offerIdentifier": "WINBACK10", "transactionId": "2000000100",
        ] as NSDictionary)
        let intro = try claims(try #require(try await sign([
            "intro-eligibility", "--product-id", "com.receiptkit.monthly", "--allow-introductory-offer", "false",
            "--transaction-id", "2000000100",
        ])["jws"] as? String))
        #expect(intro["aud"] as? String == "introductory-offer-eligibility" && intro["allowIntroductoryOffer"] as? Bool == false)
        #expect(intro["transactionId"] as? String == "2000000100" && intro["productId"] as? String == "com.receiptkit.monthly")
        let request = Fixture.directory.appendingPathComponent("advanced-commerce.json")
        let requestJSON = #"{"operation":"CREATE_SUBSCRIPTION","version":"1","requestInfo":{"requestReferenceId":"f55df048-4cd8-4261-b404-b6f813ea0a81"}}"#
        try Data(requestJSON.utf8).write(to: request)
        let commerce = try claims(try #require(try await sign(["advanced-commerce", "--request", request.path])["jws"] as? String))
        #expect(commerce["aud"] as? String == "advanced-commerce-api")
        #expect(commerce["request"] as? String == Data(requestJSON.utf8).base64EncodedString())
        let bad = try await Command.run(
            Command.appstoreAPI, ["sign", "intro-eligibility", "--product-id", "p", "--allow-introductory-offer", "maybe", "--transaction-id", "1"],
            environment: try Command.environment())
        #expect(bad.status == 64)
    }
}
