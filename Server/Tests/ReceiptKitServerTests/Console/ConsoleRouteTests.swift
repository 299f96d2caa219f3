import Foundation
import Hummingbird
import HummingbirdTesting
import ReceiptKitServer
import Synchronization
import Testing

/// The console's JSON routes and its page's headers, over HTTP, on both databases.
@Suite("The console's routes")
struct ConsoleRouteTests {
    typealias Object = [String: Any]

    @Test("the customer story's timeline: periods, status spans, shadings and marks, each span the API's state then", arguments: Backend.available)
    func storyTimeline(backend: Backend) async throws {
        let fixture = try ConsoleFixture()
        try await TestServer.run(backend, now: ConsoleFixture.now) { server in
            try await fixture.fill(server)
            let answer = try await server.get("/v1/subscriptions/\(CustomerStory.original)/timeline")
            #expect(answer.status == .ok, "\(answer.text)")
            let body = try answer.json()
            let timelines = try #require(body["subscriptions"] as? [Object])
            #expect(timelines.count == 1)
            let timeline = try #require(timelines.first)
            let (t0, hour, iso) = (CustomerStory.start, CustomerStory.hour, ConsoleFixture.iso)

            // A bar per transaction, in order, dated as the story signed them.
            let periods = try #require(timeline["periods"] as? [Object])
            let expected: [(id: String, start: Int64, days: Int64)] = [
                ("7001", t0, 7), ("7002", t0 + 7 * day, 30), ("7003", t0 + 37 * day, 30), ("7004", t0 + 70 * day, 30),
                ("7005", t0 + 103 * day, 30),
            ]
            #expect(periods.map { $0["transaction_id"] as? String } == expected.map(\.id))
            #expect(periods.map { $0["start"] as? String } == expected.map { iso($0.start) })
            #expect(periods.map { $0["end"] as? String } == expected.map { iso($0.start + $0.days * day) })
            #expect(periods.map { ($0["offer"] as? Object)?["discount_type"] as? String } == ["free_trial", nil, nil, nil, nil])
            #expect(periods.map { $0["revocation_date"] as? String } == [nil, nil, nil, nil, iso(t0 + 110 * day)])

            // The status over time: billing retry and grace period between the paid periods.
            let spans = try #require(timeline["spans"] as? [Object])
            let expectedSpans: [(status: String, from: Int64)] = [
                ("active", t0), ("expired", t0 + 67 * day), ("billing_retry", t0 + 67 * day + hour), ("active", t0 + 70 * day),
                ("expired", t0 + 100 * day), ("grace_period", t0 + 100 * day + hour), ("active", t0 + 103 * day),
                ("revoked", t0 + 110 * day),
            ]
            #expect(spans.map { $0["status"] as? String } == expectedSpans.map(\.status), "\(spans)")
            #expect(spans.map { $0["from"] as? String } == expectedSpans.map { iso($0.from) })
            #expect(spans.map { $0["to"] as? String } == expectedSpans.dropFirst().map { iso($0.from) } + [nil])
            // Every span agrees with the state the API answers as of its first and last instant.
            for span in spans {
                let from = try #require(span["from"] as? String)
                let state = try await server.get("/v1/subscriptions/7000?as_of=\(from)").json()
                #expect(state["status"] as? String == span["status"] as? String, "as of \(from)")
                if let to = span["to"] as? String, let end = milliseconds(to) {
                    let last = iso(end - 1)
                    let before = try await server.get("/v1/subscriptions/7000?as_of=\(last)").json()
                    #expect(before["status"] as? String == span["status"] as? String, "as of \(last)")
                }
            }

            // A span opens the records that started it: billing retry and grace period their
            // DID_FAIL_TO_RENEW; an expiry none; the recovery its DID_RENEW and the next
            // DID_FAIL_TO_RENEW, which carries the same copy of 7004.
            let records = try #require(timeline["records"] as? [Object])
            func types(_ ids: Any?) -> [String?] {
                (ids as? [Int] ?? []).map { id in records.first { $0["id"] as? Int == id }?["notification_type"] as? String }
            }
            #expect(spans.map { types($0["records"]) } == [
                ["SUBSCRIBED"], [], ["DID_FAIL_TO_RENEW"], ["DID_RENEW", "DID_FAIL_TO_RENEW"], [], ["DID_FAIL_TO_RENEW"], ["DID_RENEW"],
                ["REFUND"],
            ])

            // One mark, the refund, opening the REFUND notification.
            let marks = try #require(timeline["marks"] as? [Object])
            #expect(marks.map { $0["kind"] as? String } == ["revocation"])
            #expect(marks.first?["at"] as? String == iso(t0 + 110 * day))
            #expect(marks.first?["reason"] as? String == "refunded_for_other_reason")
            #expect(records.count == 8)
            let refundIds = try #require(marks.first?["records"] as? [Int])
            let refund = try #require(records.first { $0["id"] as? Int == refundIds.first })
            #expect(refund["notification_type"] as? String == "REFUND")
            #expect(refund["received_at"] as? String == iso(Int64(ConsoleFixture.now.timeIntervalSince1970 * 1000)))
            // Each record names the chain it verified to, as the stored record does.
            for record in records {
                let chain = try #require(record["chain"] as? Object)
                let stored = try #require((record["record"] as? Object)?["chain"] as? Object)
                #expect((chain["leaf_sha256"] as? String)?.count == 64)
                #expect(chain["leaf_sha256"] as? String == stored["leaf_sha256"] as? String)
                #expect(chain["root_sha256"] as? String == stored["root_sha256"] as? String)
            }
            // The bar of a renewal opens the notification that carried it.
            let renewal = try #require(periods.first { $0["transaction_id"] as? String == "7002" })
            let carriers = try #require(renewal["records"] as? [Int])
            #expect(carriers.compactMap { id in records.first { $0["id"] as? Int == id }?["notification_type"] as? String } == ["DID_RENEW"])

            try await server.get("/v1/subscriptions/nothing/timeline").expectError(.notFound, "not_found")
            try await server.get("/v1/subscriptions/7000/timeline", token: nil).expectError(.unauthorized, "unauthorized")
        }
    }

    @Test("an upgrade is a product change, auto-renew turned off a mark, and markup in ids stays text", arguments: Backend.available)
    func upgradeTimeline(backend: Backend) async throws {
        let fixture = try ConsoleFixture()
        try await TestServer.run(backend, now: ConsoleFixture.now) { server in
            try await fixture.fill(server)
            let u0 = ConsoleFixture.u0
            let iso = ConsoleFixture.iso
            let timeline = try #require((try await server.get("/v1/subscriptions/8000/timeline").json()["subscriptions"] as? [Object])?.first)
            let periods = try #require(timeline["periods"] as? [Object])
            #expect(periods.map { $0["transaction_id"] as? String } == ["8000", "8001"])
            #expect(periods.map { $0["product_id"] as? String } == [ConsoleFixture.basicProduct, ConsoleFixture.hostileProduct])
            #expect(periods.map { $0["is_upgraded"] as? Bool } == [true, false])
            let marks = try #require(timeline["marks"] as? [Object])
            #expect(marks.map { $0["kind"] as? String } == ["product_change", "auto_renew_off"])
            #expect(marks.map { $0["at"] as? String } == [iso(u0 + 14 * day), iso(u0 + 25 * day)])
            #expect(marks.first?["previous_product_id"] as? String == ConsoleFixture.basicProduct)
            #expect(marks.first?["product_id"] as? String == ConsoleFixture.hostileProduct)
            let spans = try #require(timeline["spans"] as? [Object])
            #expect(spans.map { $0["status"] as? String } == ["active", "expired"])
            #expect(spans.map { $0["from"] as? String } == [iso(u0), iso(u0 + 44 * day)])
        }
    }

    @Test("search finds a customer, an appAccountToken in any case, an original transaction id and a renewal's transaction id", arguments: Backend.available)
    func search(backend: Backend) async throws {
        let fixture = try ConsoleFixture()
        try await TestServer.run(backend, now: ConsoleFixture.now) { server in
            try await fixture.fill(server)
            func matches(_ query: String) async throws -> [Object] {
                let encoded = try #require(query.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
                let answer = try await server.get("/v1/search?q=\(encoded)")
                #expect(answer.status == .ok, "\(answer.text)")
                #expect(try answer.json()["query"] as? String == query.trimmingCharacters(in: .whitespaces))
                return try #require(try answer.json()["matches"] as? [Object])
            }
            func originals(_ match: Object?) -> [String] {
                (match?["subscriptions"] as? [Object] ?? []).compactMap { $0["original_transaction_id"] as? String }
            }
            let customer = try await matches(CustomerStory.customer)
            #expect(customer.map { $0["type"] as? String } == ["customer"])
            #expect(originals(customer.first) == ["7000"])
            let hostile = try await matches(ConsoleFixture.hostileCustomer)
            #expect(hostile.first?["customer_id"] as? String == ConsoleFixture.hostileCustomer)
            #expect(originals(hostile.first) == ["8000"])
            let token = try await matches(" " + ConsoleFixture.token.uppercased() + " ")
            #expect(token.map { $0["customer_id"] as? String } == [ConsoleFixture.token])
            let subscription = try await matches("7000")
            #expect(subscription.map { $0["type"] as? String } == ["subscription"])
            let renewal = try await matches("7003")
            #expect(renewal.map { $0["type"] as? String } == ["transaction"])
            #expect(renewal.first?["transaction_id"] as? String == "7003")
            #expect(originals(renewal.first) == ["7000"])
            let upgraded = try await matches("8001")
            #expect(originals(upgraded.first) == ["8000"])
            #expect(try await matches("nobody").isEmpty)
            try await server.get("/v1/search?q=%20").expectError(.badRequest, "invalid_request")
            try await server.get("/v1/search").expectError(.badRequest, "invalid_request")
            try await server.get("/v1/search?q=\(String(repeating: "a", count: 1025))").expectError(.badRequest, "invalid_request")
            try await server.get("/v1/search?q=7000", token: nil).expectError(.unauthorized, "unauthorized")
        }
    }

    @Test("the overview: subscriptions by status and product, notifications per day by type, the last ones with refusals", arguments: Backend.available)
    func overview(backend: Backend) async throws {
        let fixture = try ConsoleFixture()
        // The clock moves: each notification is received on a day of its own.
        let clock = ManualClock(ConsoleFixture.now)
        let today = ms("2025-10-15T00:00:00Z")
        // Webhooks to a port nothing listens on: every event's delivery waits in the outbox, or
        // runs out of time as the clock moves on.
        let closedPort = try unusedLoopbackPort()
        let configure: @Sendable (inout ServerConfiguration) -> Void = { configuration in
            configuration.events.webhookURL = "http://user:password@127.0.0.1:\(closedPort)/hooks"
            configuration.events.webhookSecret = "0123456789abcdef0123"
        }
        try await TestServer.run(backend, clock: { clock.now }, configure: configure) { server in
            // Received 40, 29 and 0 days ago, then everything else today.
            for (jws, daysAgo) in [(fixture.story.purchase, 40), (fixture.story.renewal1, 29), (fixture.story.renewal2, 0)] {
                clock.now = ConsoleFixture.now.addingTimeInterval(-Double(daysAgo) * 86_400)
                #expect(try await server.notify(jws).status == .ok)
            }
            clock.now = ConsoleFixture.now
            try await fixture.fill(server)
            // A notification that fails verification a minute later is refused, and counted.
            clock.now = ConsoleFixture.now.addingTimeInterval(60)
            try await server.notify("x.y.z").expectError(.badRequest, "malformed_jws")
            clock.now = ConsoleFixture.now.addingTimeInterval(120)

            let answer = try await server.get("/v1/overview")
            #expect(answer.status == .ok, "\(answer.text)")
            let body = try answer.json()
            #expect(body["as_of"] as? String == ConsoleFixture.iso(today + 8 * CustomerStory.hour + 120_000))
            let subscriptions = try #require(body["subscriptions"] as? Object)
            #expect(subscriptions["total"] as? Int == 2)
            #expect(subscriptions["counted"] == nil && subscriptions["complete"] == nil)
            let byStatus = try #require(subscriptions["by_status"] as? [Object])
            #expect(byStatus.map { $0["status"] as? String } == ["active", "grace_period", "billing_retry", "expired", "revoked"])
            #expect(byStatus.map { $0["count"] as? Int } == [0, 0, 0, 1, 1])
            let byProduct = try #require(subscriptions["by_product"] as? [Object])
            #expect(byProduct.map { $0["product_id"] as? String } == [ConsoleFixture.hostileProduct, Payloads.productId])
            #expect(byProduct.map { $0["total"] as? Int } == [1, 1])
            // One app and environment served, Sandbox, marked so.
            let byApp = try #require(subscriptions["by_app"] as? [Object])
            #expect(byApp.map { $0["bundle_id"] as? String } == [Payloads.bundleId])
            #expect(byApp.map { $0["environment"] as? String } == ["Sandbox"])
            #expect(byApp.map { $0["sandbox"] as? Bool } == [true])
            #expect(byApp.map { $0["total"] as? Int } == [2])
            #expect((byApp.first?["by_status"] as? [Object])?.map { $0["count"] as? Int } == [0, 0, 0, 1, 1])

            let notifications = try #require(body["notifications"] as? Object)
            #expect(notifications["since"] as? String == ConsoleFixture.iso(today - 29 * day))
            let days = try #require(notifications["days"] as? [Object])
            #expect(days.count == 30)
            #expect(days.first?["day"] as? String == "2025-09-16")
            #expect(days.last?["day"] as? String == "2025-10-15")
            // 40 days ago is outside; 29 days ago is the first day; the other 8 today (the first three again are replays).
            #expect(days.map { $0["total"] as? Int ?? -1 } == [1] + Array(repeating: 0, count: 28) + [8])
            var types: [String: Int] = [:]
            for day in days {
                for pair in day["by_type"] as? [Object] ?? [] {
                    types[pair["type"] as? String ?? "", default: 0] += pair["count"] as? Int ?? 0
                }
            }
            var expected = ConsoleFixture.notificationTypes
            expected["SUBSCRIBED"] = nil  // 40 days ago
            #expect(types == expected)

            let recent = try #require(notifications["recent"] as? [Object])
            #expect(recent.count == 11)
            #expect(recent.first?["result"] as? String == "malformed_jws")
            #expect(recent.dropFirst().allSatisfy { $0["result"] as? String == "verified" })
            #expect(recent[1]["type"] as? String == "DID_CHANGE_RENEWAL_STATUS")
            #expect(recent[1]["original_transaction_id"] as? String == "8000")
            let rejected = try #require(notifications["rejected"] as? Object)
            #expect(rejected["total"] as? Int == 1)
            #expect((rejected["by_code"] as? [Object])?.first?["code"] as? String == "malformed_jws")

            let reconciliation = try #require(body["reconciliation"] as? Object)
            #expect(reconciliation["enabled"] as? Bool == false)

            // Every event of the feed is a webhook delivery, waiting or out of time (none can be
            // delivered), and the destination is shown without its credentials.
            let feed = try #require(try await server.get("/v1/events?limit=1000").json()["events"] as? [Object])
            #expect(!feed.isEmpty)
            let deliveries = try #require(body["deliveries"] as? Object)
            let destinations = try #require(deliveries["destinations"] as? [Object])
            let pending = destinations.reduce(0) { $0 + ($1["pending"] as? Int ?? 0) }
            #expect(pending + (deliveries["failed"] as? Int ?? -1) == feed.count)
            #expect(deliveries["failed_complete"] as? Bool == true)
            for destination in destinations {
                #expect(destination["kind"] as? String == "webhook")
                #expect(destination["target"] as? String == "http://127.0.0.1:\(closedPort)/hooks")
                let oldest = try #require(destination["oldest_pending_seconds"] as? Int)
                #expect(oldest >= 0 && oldest <= 41 * 86_400)
            }
            try await server.get("/v1/overview", token: nil).expectError(.unauthorized, "unauthorized")
        }
    }

    @Test("the page and its assets: embedded, with a strict Content-Security-Policy, never framed, no inline script or style")
    func page() async throws {
        for token in [testToken, nil] {
            try await TestServer.run(.sqlite, token: token) { server in
                var bodies: [String] = []
                func fetch(_ path: String, _ type: String) async throws -> String {
                    let answer = try await server.get(path, token: nil)
                    #expect(answer.status == .ok, "\(path)")
                    #expect(answer.headers[.contentType]?.hasPrefix(type) == true, "\(path)")
                    #expect(answer.header("Content-Security-Policy") == ConsoleHeaders.contentSecurityPolicy, "\(path)")
                    #expect(answer.header("X-Frame-Options") == "DENY", "\(path)")
                    #expect(answer.header("X-Content-Type-Options") == "nosniff", "\(path)")
                    #expect(answer.header("Referrer-Policy") == "no-referrer", "\(path)")
                    return answer.text
                }
                for (path, type) in [
                    ("/console/", "text/html"), ("/console", "text/html"), ("/console/console.mjs", "text/javascript"),
                    ("/console/console.css", "text/css"), ("/console/icon.svg", "image/svg+xml"),
                ] {
                    bodies.append(try await fetch(path, type))
                }
                // The script's modules: console.mjs and every module it imports, served alike.
                var modules = ["console.mjs"]
                var scripts: [String] = []
                while scripts.count < modules.count {
                    let script = try await fetch("/console/" + modules[scripts.count], "text/javascript")
                    scripts.append(script)
                    for match in script.matches(of: #/from '\./([a-z0-9-]+\.mjs)'/#) where !modules.contains(String(match.1)) {
                        modules.append(String(match.1))
                    }
                }
                #expect(modules.count > 1)
                let page = bodies[0]
                #expect(page.contains(#"data-auth="\#(token == nil ? "none" : "token")""#))
                // Every script is the embedded file; no inline script, style or handler.
                #expect(page.components(separatedBy: "<script").count == 2)
                #expect(page.contains(#"<script type="module" src="/console/console.mjs"></script>"#))
                #expect(!page.contains("<style"))
                #expect(page.range(of: #"\s(on[a-z]+|style)\s*="#, options: .regularExpression) == nil)
                #expect(!page.contains("http://") && !page.contains("https://") && !bodies[3].contains("@import"))
                // The script never writes markup: none of its modules.
                for (name, script) in zip(modules, scripts) {
                    #expect(script.range(of: #"innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function"#, options: .regularExpression) == nil, "\(name)")
                }
                try await server.get("/console/missing.js", token: nil).expectError(.notFound, "not_found")
            }
        }
    }
}

/// The console's Content-Security-Policy, as the tests expect it.
enum ConsoleHeaders {
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}

/// A clock a test sets.
final class ManualClock: Sendable {
    private let value: Mutex<Date>

    init(_ date: Date) {
        value = Mutex(date)
    }

    var now: Date {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}

/// Milliseconds since 1970 of an instant the server wrote (ISO 8601 with milliseconds).
func milliseconds(_ text: String) -> Int64? {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter.date(from: text).map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }
}

extension TestResponse {
    /// The value of a header, by its name in any case.
    func header(_ name: String) -> String? {
        headers.first { $0.name.canonicalName == name.lowercased() }?.value
    }

}
