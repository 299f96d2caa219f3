import Foundation
import Hummingbird
import HummingbirdTesting
import NIOConcurrencyHelpers
import ReceiptKit
import ReceiptKitServer
import Testing

/// Webhooks from the durable outbox to a real receiver on loopback: signed, in order per
/// subscription, at least once through failures, dead-lettered and sent again on request, once
/// between replicas, never in the API's way.
@Suite("Webhooks")
struct WebhookDeliveryTests {
    static let secret = "whsec-test-0123456789abcdef"

    /// A server sending to `receiver` with quick retries: the test-only shortening of the first
    /// wait (production: 1 s, doubling to 10 minutes).
    static func sending(
        to receiver: WebhookReceiver, retryWindow: Duration = .seconds(600), concurrency: Int = 4, timeout: Duration = .seconds(5)
    ) -> @Sendable (inout ServerConfiguration) -> Void {
        let url = receiver.url
        return { configuration in
            configuration.events.sweepInterval = .seconds(3600)
            configuration.events.webhookURL = url
            configuration.events.webhookSecret = secret
            configuration.events.retryWindow = retryWindow
            // The story's clock moves months: delivered rows are kept for the test's checks.
            configuration.events.delivery = DeliveryPolicy(
                firstRetry: .milliseconds(50), maximumWait: .milliseconds(400), timeout: timeout, concurrency: concurrency,
                pollInterval: .milliseconds(50), keepDelivered: .seconds(365 * 86_400))
        }
    }

    @Test("the customer story's events reach the receiver once each, in order, as the feed has them, signed", arguments: Backend.available)
    func story(backend: Backend) async throws {
        let story = try Story()
        let clock = TestClock(milliseconds: FeedTests.t0)
        let receiver = try WebhookReceiver()
        try await receiver.run {
            try await TestServer.run(backend, clock: clock.read, configure: Self.sending(to: receiver)) { server in
                for step in story.steps {
                    clock.set(milliseconds: step.at)
                    for body in step.posts { #expect(try await server.notify(body).status == .ok) }
                }
                try await waitUntil("the receiver has every event (\(receiver.received.count) requests)") {
                    receiver.accepted.count >= story.expectedTypes.count
                }
                let feed = try await server.feed().events
                let received = receiver.received
                #expect(received.count == feed.count, "each event once, none failed")
                #expect(received.map(\.eventId) == feed.map { $0["id"] as? String })
                #expect(received.map { $0.json?["type"] as? String } == story.expectedTypes)
                // Byte for byte the feed's event.
                let page = try await server.get("/v1/events?limit=1000").text
                for request in received {
                    #expect(page.contains(request.text), "the webhook body is the feed's event")
                    #expect(request.path == "/hooks/receiptkit")
                    #expect(request.headers["content-type"] == "application/json")
                    #expect(signatureIsValid(request, secret: Self.secret), "\(request.headers)")
                    #expect(!signatureIsValid(request, secret: Self.secret + "x"))
                    // Signed at the server's clock: during the story.
                    let t = request.headers["receiptkit-signature"]?.split(separator: ",").first.flatMap { Int64($0.dropFirst(2)) }
                    #expect(t.map { (FeedTests.t0 / 1000...clock.now.timeIntervalSince1970.rounded().int64).contains($0) } == true)
                }
                let count = feed.count
                try await server.waitUntilDeliveries("every delivery is recorded", state: "delivered") { $0.count == count }
                let delivered = try await server.deliveries(state: "delivered")
                #expect(delivered.allSatisfy { $0["attempts"] as? Int == 1 && $0["last_status"] as? Int == 200 })
            }
        }
    }

    @Test("a receiver refusing connections, then answering 500, then timing out, then recovering gets every event, in order per subscription, none lost",
          arguments: Backend.available)
    func failingReceiver(backend: Backend) async throws {
        let receiver = try WebhookReceiver()
        let keys = ["7101", "7201", "7301"]
        let bodies = try Self.changes(of: keys)
        try await TestServer.run(backend, clock: { Date() }, configure: Self.sending(to: receiver, timeout: .milliseconds(500))) { server in
            // Nothing listens: each key's first event is tried, and the rest wait behind it.
            for body in bodies { #expect(try await server.notify(body).status == .ok) }
            let events = try await server.feed().events
            #expect(events.count == keys.count * 4)
            try await server.waitUntilDeliveries("every key's first delivery failed at least once") { pending in
                pending.filter { ($0["attempts"] as? Int ?? 0) >= 1 }.count >= keys.count
            }
            let pending = try await server.deliveries(state: "pending")
            #expect(pending.count == events.count)
            // The backlog's gauges: every event waits, the oldest for some time already.
            let backlog = #"receiptkit_outbox_pending{destination="webhook"} \#(events.count)"#
            var metrics = ""
            for _ in 0..<500 where !metrics.contains(backlog) {
                metrics = try await server.get("/metrics").text
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(metrics.contains(backlog), "\(metrics)")
            #expect(metrics.contains(#"receiptkit_outbox_oldest_pending_seconds{destination="webhook"}"#))
            // Nothing answered: no status, the error says why (refused, or no answer in time).
            let tried = pending.filter { ($0["attempts"] as? Int ?? 0) >= 1 }
            #expect(tried.allSatisfy { $0["last_status"] is NSNull && ($0["last_error"] as? String)?.isEmpty == false }, "\(tried)")
            receiver.answer(next: [.status(500), .status(500), .stall(.seconds(2)), .status(503), .status(404)])
            let count = events.count
            try await receiver.run {
                try await waitUntil("every event is accepted (\(receiver.accepted.count) of \(count))") {
                    Set(receiver.accepted.compactMap(\.eventId)).count == count
                }
            }
            let received = receiver.received
            #expect(received.contains { $0.status == 500 } && received.contains { $0.status == nil })
            for key in keys {
                let ids = events.filter { $0["original_transaction_id"] as? String == key }.compactMap { $0["id"] as? String }
                let requests = received.filter { $0.json?["original_transaction_id"] as? String == key }
                // Every attempt of the key was for the earliest event not yet accepted — or, at
                // least once (docs/events.md), the one accepted last again: its 2xx reached the
                // sender after the 500 ms timeout (seen under the thread sanitizer).
                var next = 0
                for request in requests {
                    if next > 0, request.eventId == ids[next - 1] { continue }
                    #expect(request.eventId == ids[next], "key \(key): \(requests.map { ($0.eventId ?? "", $0.status ?? 0) })")
                    if (request.status ?? 0) / 100 == 2 { next += 1 }
                    guard next < ids.count else { break }
                }
                #expect(next == ids.count, "key \(key): every event accepted")
            }
            for request in received { #expect(signatureIsValid(request, secret: Self.secret)) }
            try await server.waitUntilDeliveries("every delivery is recorded delivered", state: "delivered") { $0.count == events.count }
            #expect(try await server.deliveries(state: "pending").isEmpty)
            #expect(try await server.deliveries(state: "failed").isEmpty)
            metrics = try await server.get("/metrics").text
            #expect(metrics.contains(#"receiptkit_deliveries_total{destination="webhook",outcome="retried"}"#))
            #expect(metrics.contains(#"receiptkit_deliveries_total{destination="webhook",outcome="delivered"} \#(events.count)"#))
            #expect(metrics.contains(#"receiptkit_feed_events_total{type="subscription.auto_renew_disabled",bundle_id="com.receiptkit.example",environment="Sandbox"} 3"#))
        }
    }

    @Test("a delivery whose time runs out is dead-lettered, listed, and sent again on request; the key's next event is not held back by it",
          arguments: Backend.available)
    func deadLetters(backend: Backend) async throws {
        let receiver = try WebhookReceiver()
        receiver.answer(always: .status(500))
        let bodies = try Self.changes(of: ["7401"]).prefix(2)
        try await receiver.run {
            try await TestServer.run(backend, clock: { Date() }, configure: Self.sending(to: receiver, retryWindow: .seconds(1))) { server in
                for body in bodies { #expect(try await server.notify(body).status == .ok) }
                try await server.waitUntilDeliveries("both deliveries are dead letters", state: "failed") { $0.count == 2 }
                let failed = try await server.deliveries(state: "failed")
                #expect(failed.allSatisfy { $0["last_status"] as? Int == 500 && ($0["attempts"] as? Int ?? 0) >= 1 }, "\(failed)")
                #expect(failed.allSatisfy { $0["last_error"] as? String == "HTTP 500" && $0["kind"] as? String == "webhook" })
                #expect(failed.allSatisfy { $0["target"] as? String == receiver.url && $0["next_attempt_at"] is NSNull })
                let metrics = try await server.get("/metrics").text
                #expect(metrics.contains(#"receiptkit_deliveries_total{destination="webhook",outcome="dead_lettered"} 2"#))

                receiver.answer(always: .status(204))
                for delivery in failed {
                    let id = try #require(delivery["id"] as? String)
                    let retried = try await server.post("/v1/webhooks/deliveries/\(id)/retry", "")
                    #expect(retried.status == .ok, "\(retried.text)")
                    #expect(try retried.json()["state"] as? String == "pending")
                }
                try await server.waitUntilDeliveries("both are delivered", state: "delivered") { $0.count == 2 }
                let accepted = receiver.accepted.compactMap(\.eventId)
                #expect(accepted == failed.compactMap { $0["event_id"] as? String })
                // A delivered one can be sent again too; an unknown one is 404, a bad id 400.
                try await server.post("/v1/webhooks/deliveries/999999/retry", "").expectError(.notFound, "not_found")
                try await server.post("/v1/webhooks/deliveries/x/retry", "").expectError(.badRequest, "invalid_request")
                try await server.get("/v1/webhooks/deliveries?state=lost").expectError(.badRequest, "invalid_request")
                try await server.post("/v1/webhooks/deliveries/1/retry", "", token: nil).expectError(.unauthorized, "unauthorized")
            }
        }
    }

    @Test("a delivered row is kept for keepDelivered, then removed; the feed keeps the event", arguments: Backend.available)
    func pruning(backend: Backend) async throws {
        let receiver = try WebhookReceiver()
        let keep: Int64 = 200
        let start = FeedTests.t0 + 10 * 60_000
        let clock = TestClock(milliseconds: start)
        // A forward URL nothing listens on: its row stays pending, so the backlog gauge, which
        // each round of the delivery service updates just before it prunes, shows the instant
        // every round read.
        let nowhere = try unusedLoopbackPort()
        let forward = "forward:127.0.0.1:\(nowhere)"
        let configure = Self.sending(to: receiver)
        try await receiver.run {
            try await TestServer.run(backend, clock: clock.read, configure: { configuration in
                configure(&configuration)
                configuration.events.forwardURLs = ["http://127.0.0.1:\(nowhere)/forward"]
                configuration.events.delivery.keepDelivered = .milliseconds(keep)
            }) { server in
                #expect(try await server.notify(try Self.changes(of: ["7951"])[0]).status == .ok)
                try await server.waitUntilDeliveries("the event is delivered", state: "delivered") { $0.count == 1 }
                let delivered = try #require(try await server.deliveries(state: "delivered").first)
                #expect(delivered["delivered_at"] as? String == Timestamp(millisecondsSince1970: start).iso8601)
                #expect(try await server.deliveries(state: "pending").map { $0["kind"] as? String } == ["forward"])
                // Rounds at a millisecond short of keepDelivered after the delivery, then at
                // keepDelivered: the first round's pruning has ended once the second's gauges show.
                for at in [start + keep - 1, start + keep] {
                    clock.set(milliseconds: at)
                    try await server.waitForDeliveryRound(at: at, pending: forward, since: start)
                }
                #expect(try await server.deliveries(state: "delivered").count == 1, "kept for keepDelivered")
                clock.set(milliseconds: start + keep + 1)
                try await server.waitUntilDeliveries("the delivered row is removed", state: "delivered") { $0.isEmpty }
                #expect(try await server.feed().events.count == 1)
            }
        }
    }

    @Test("two replicas sharing the database deliver each event once between them", arguments: Backend.available)
    func replicas(backend: Backend) async throws {
        let receiver = try WebhookReceiver()
        receiver.answer(always: .stall(.milliseconds(20)))
        let keys = (0..<12).map { String(7500 + $0 * 10) }
        let bodies = try Self.changes(of: keys)
        // One sentinel event per replica, written once the others are delivered.
        let sentinels = try Self.changes(of: ["7700", "7710"]).prefix(2)
        let start = FeedTests.t0 + 10 * 60_000
        // A clock each: a replica whose clock is behind the instant a row was written does not
        // claim it, so each sentinel is sent by the replica it is meant for.
        let clocks = [TestClock(milliseconds: start), TestClock(milliseconds: start)]
        try await receiver.run {
            try await backend.withDatabase { location, searchPath in
                // One attempt at a time: a replica claims a sentinel only once none of its attempts runs.
                let configure = Self.sending(to: receiver, concurrency: 1, timeout: .seconds(5))
                try await TestServer.serve(location: location, searchPath: searchPath, clock: clocks[0].read, configure: configure) { first in
                    try await TestServer.serve(location: location, searchPath: searchPath, clock: clocks[1].read, configure: configure) { second in
                        let replicas = [first, second]
                        for (index, body) in bodies.enumerated() {
                            #expect(try await replicas[index % 2].notify(body).status == .ok)
                        }
                        let events = try await first.feed().events
                        let ids = Set(events.compactMap { $0["id"] as? String })
                        try await first.waitUntilDeliveries("every event is delivered", state: "delivered") { $0.count == events.count }
                        // A second delivery would come from the other replica's claim of a row,
                        // sent by an attempt that ends before that replica claims its sentinel.
                        for (index, (replica, sentinel)) in zip(replicas, sentinels).enumerated() {
                            clocks[index].set(milliseconds: start + Int64(index + 1) * 60_000)
                            #expect(try await replica.notify(sentinel).status == .ok)
                            let id = try #require(try await replica.feed().events.last?["id"] as? String)
                            try await waitUntil("replica \(index + 1) sends its sentinel") { receiver.received.contains { $0.eventId == id } }
                        }
                        let delivered = receiver.received.compactMap(\.eventId).filter { ids.contains($0) }
                        #expect(delivered.count == events.count, "each event once")
                        #expect(Set(delivered) == ids)
                    }
                }
            }
        }
    }

    @Test("a receiver that never answers holds at most the delivery's few tasks: the webhook from Apple and the API answer at once")
    func slowReceiver() async throws {
        let receiver = try WebhookReceiver()
        receiver.answer(always: .stall(.seconds(120)))
        let keys = (0..<10).map { String(7600 + $0 * 10) }
        let bodies = try Self.changes(of: keys).prefix(keys.count)
        try await receiver.run {
            try await TestServer.run(.sqlite, clock: { Date() },
                                     configure: Self.sending(to: receiver, concurrency: 2, timeout: .seconds(60))) { server in
                let start = ContinuousClock.now
                for body in bodies { #expect(try await server.notify(body).status == .ok) }
                #expect(try await server.get("/v1/events").status == .ok)
                try await waitUntil("the receiver holds two requests") { receiver.received.count >= 2 }
                let elapsed = ContinuousClock.now - start
                #expect(elapsed < .seconds(60), "the API waited for the receiver: \(elapsed)")
                // A third request would start at a round's claim, with every row written and two
                // attempts running.
                try await server.waitForDeliveryRound(pending: "webhook")
                #expect(receiver.mostInFlight == 2)
                #expect(receiver.received.count == 2)
            }
        }
    }

    /// For each original transaction id, four changes a minute apart: a purchase (started),
    /// auto-renew off, auto-renew on, a renewal. Signed in 2025, inside the test PKI's validity,
    /// with periods of a century: a server on the wall clock (these tests' deliveries wait in real
    /// time, and CI runs the suite with the clock moved to 2031) finds each period running.
    static func changes(of originals: [String]) throws -> [String] {
        let p = try Payloads()
        let minute: Int64 = 60_000
        let now = FeedTests.t0 + 10 * minute
        let month = 36_525 * day
        var perKey: [[String]] = []
        for original in originals {
            let start = now - 10 * minute
            let first = try p.transaction(id: original, original: original, purchase: start, expires: start + month, signed: start)
            let renewal = try p.transaction(
                id: String(Int(original)! + 1), original: original, purchase: start + month, expires: start + 2 * month,
                signed: start + 4 * minute)
            perKey.append([
                try p.notification(type: "SUBSCRIBED", subtype: "INITIAL_BUY", signed: start, transaction: first,
                                   renewalInfo: p.renewalInfo(original: original, signed: start, renewalDate: start + month)),
                try p.notification(type: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", signed: start + minute,
                                   transaction: first, renewalInfo: p.renewalInfo(original: original, signed: start + minute, autoRenew: false)),
                try p.notification(type: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_ENABLED", signed: start + 2 * minute,
                                   transaction: first, renewalInfo: p.renewalInfo(original: original, signed: start + 2 * minute)),
                try p.notification(type: "DID_RENEW", signed: start + 4 * minute, transaction: renewal,
                                   renewalInfo: p.renewalInfo(original: original, signed: start + 4 * minute, renewalDate: start + 2 * month)),
            ])
        }
        // Interleaved: the keys' first changes, then their second ones, …
        return (0..<4).flatMap { index in perKey.map { $0[index] } }
    }
}

extension TestServer {
    /// The outbox's deliveries in a state.
    func deliveries(state: String) async throws -> [[String: Any]] {
        let response = try await get("/v1/webhooks/deliveries?state=\(state)&limit=1000")
        #expect(response.status == .ok, "\(response.text)")
        return try #require(try response.json()["deliveries"] as? [[String: Any]])
    }

    /// Polls the deliveries in a state until `condition` holds of them.
    ///
    /// - Throws: `CancellationError` after recording an issue naming `what`, at the caller, when
    ///   `limit` passes.
    func waitUntilDeliveries(
        _ what: String, state: String = "pending", within limit: Duration = .seconds(60),
        sourceLocation: SourceLocation = #_sourceLocation, _ condition: ([[String: Any]]) -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + limit
        var last: [[String: Any]] = []
        while ContinuousClock.now < deadline {
            last = try await deliveries(state: state)
            if condition(last) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("not within \(limit): \(what); \(state): \(last)", sourceLocation: sourceLocation)
        throw CancellationError()
    }
}

extension Double {
    var int64: Int64 { Int64(self) }
}
