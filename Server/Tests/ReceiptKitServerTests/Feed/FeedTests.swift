import Foundation
import Hummingbird
import HummingbirdTesting
import NIOConcurrencyHelpers
import ReceiptKit
import ReceiptKitServer
import Testing

/// The feed of what changed, over HTTP: the events a customer's story produces, in order and
/// once; the sweep's events when time alone changes a state; the cursor across a restart and
/// under concurrent writers.
@Suite("The event feed")
struct FeedTests {
    static let t0 = ms("2025-06-01T12:00:00Z")
    static let hour: Int64 = 3_600_000
    /// A sweep that never runs during a test that moves the clock itself.
    static func noSweep(_ configuration: inout ServerConfiguration) { configuration.events.sweepInterval = .seconds(3600) }

    @Test("the customer story: trial, renewals (one late and twice), billing retry, recovery, grace, recovery, refund — each change once, in order",
          arguments: Backend.available)
    func customerStory(backend: Backend) async throws {
        let story = try Story()
        let clock = TestClock(milliseconds: Self.t0)
        try await TestServer.run(backend, clock: clock.read, configure: Self.noSweep) { server in
            for step in story.steps {
                clock.set(milliseconds: step.at)
                for body in step.posts {
                    let answer = try await server.notify(body)
                    #expect(answer.status == .ok, "\(step.name): \(answer.text)")
                }
            }
            let page = try await server.feed()
            let events = page.events
            #expect(events.map { $0["type"] as? String } == story.expectedTypes)
            #expect(events.map { $0["previous_status"] as? String } == [nil, "active", "active", "billing_retry", "active", "grace_period", "active"])
            #expect(events.map { $0["status"] as? String } == ["active", "active", "billing_retry", "active", "grace_period", "active", "revoked"])
            #expect(events.map { $0["entitled"] as? Bool } == [true, true, false, true, true, true, false])
            // Ids increase; `after` is the last one.
            let ids = events.compactMap { ($0["id"] as? String).flatMap(Int64.init) }
            #expect(ids.count == events.count && ids == ids.sorted() && Set(ids).count == ids.count)
            #expect(page.after == events.last?["id"] as? String)
            #expect(page.hasMore == false)
            for (event, step) in zip(events, story.steps.filter { $0.changes }) {
                #expect(event["occurred_at"] as? String == Timestamp(millisecondsSince1970: step.at).iso8601, "\(step.name)")
                #expect(event["original_transaction_id"] as? String == story.original)
                #expect(event["bundle_id"] as? String == Payloads.bundleId)
                #expect(event["environment"] as? String == "Sandbox")
                #expect(event["customer_ids"] as? [String] == [story.customer])
                let cause = try #require(event["cause"] as? [String: Any])
                #expect(cause["source"] as? String == "webhook")
                #expect(cause["notification_uuid"] as? String == step.uuid, "\(step.name)")
                #expect(cause["notification_type"] as? String == step.type, "\(step.name)")
                let subscription = try #require(event["subscription"] as? [String: Any])
                #expect(subscription["status"] as? String == event["status"] as? String)
                #expect(subscription["as_of"] as? String == event["occurred_at"] as? String)
            }
            #expect((events.first?["subscription"] as? [String: Any])?["is_trial"] as? Bool == true)
            // The customer's feed is the same; a small page at a time gives the same events.
            let customer = try await server.feed(customer: story.customer)
            #expect(customer.events.map { $0["id"] as? String } == events.map { $0["id"] as? String })
            var paged: [String] = []
            var after = "0"
            while true {
                let page = try await server.feed(after: after, limit: 2)
                paged += page.events.compactMap { $0["id"] as? String }
                after = page.after
                if !page.hasMore { break }
            }
            #expect(paged == events.compactMap { $0["id"] as? String })
            // Replays change nothing: every notification again, no event.
            for step in story.steps {
                for body in step.posts { #expect(try await server.notify(body).status == .ok) }
            }
            #expect(try await server.feed().events.count == events.count)
            // Nobody else's feed has them.
            #expect(try await server.feed(customer: "someone-else").events.isEmpty)
        }
    }

    @Test("the same notifications in any order end in the same state, and no change is told twice", arguments: Backend.available)
    func anyOrder(backend: Backend) async throws {
        let story = try Story()
        // Purchase, two renewals, billing retry, recovery: all posted after the last was signed.
        let bodies = Array(story.steps.prefix(5).flatMap(\.posts))
        let orders = [Array(bodies.indices), Array(bodies.indices.reversed()), [2, 0, 4, 1, 3, 5, 6], [5, 3, 1, 0, 2, 6, 4]]
        let finalStates = Locked<Set<String>>([])
        for order in orders {
            try await TestServer.run(backend, now: Date(timeIntervalSince1970: Double(Self.t0 + 72 * 86_400_000) / 1000),
                                     configure: Self.noSweep) { server in
                for index in order { #expect(try await server.notify(bodies[index]).status == .ok) }
                let events = try await server.feed().events
                let states = events.compactMap { $0["subscription"] as? [String: Any] }
                // Each event is a change: no two in a row say the same.
                for (before, after) in zip(states, states.dropFirst()) {
                    #expect(NSDictionary(dictionary: before) != NSDictionary(dictionary: after), "order \(order)")
                }
                let last = try #require(events.last, "order \(order)")
                let subscription = try await server.get("/v1/subscriptions/\(story.original)")
                let current = try subscription.json()
                #expect((last["subscription"] as? [String: Any])?["latest_transaction_id"] as? String == current["latest_transaction_id"] as? String)
                #expect(last["status"] as? String == current["status"] as? String)
                finalStates.withLockedValue { _ = $0.insert(subscription.text) }
            }
        }
        #expect(finalStates.withLockedValue { $0.count } == 1)
    }

    @Test("a period that ends with no notification, a grace period that runs out, a retry window that closes: the sweep writes each, at the instant it happened",
          arguments: Backend.available)
    func sweep(backend: Backend) async throws {
        let p = try Payloads()
        let day: Int64 = 86_400_000
        let clock = TestClock(milliseconds: Self.t0 + Self.hour)
        let trial = try p.notification(
            type: "SUBSCRIBED", subtype: "INITIAL_BUY", signed: Self.t0,
            transaction: p.transaction(id: "8101", original: "8101", purchase: Self.t0, expires: Self.t0 + 7 * day, signed: Self.t0,
                                       token: "sweep-a", freeTrial: true),
            renewalInfo: p.renewalInfo(original: "8101", signed: Self.t0, autoRenew: false, renewalDate: Self.t0 + 7 * day))
        let paid = try p.notification(
            type: "SUBSCRIBED", subtype: "INITIAL_BUY", signed: Self.t0,
            transaction: p.transaction(id: "8201", original: "8201", purchase: Self.t0, expires: Self.t0 + 30 * day, signed: Self.t0,
                                       token: "sweep-b"),
            renewalInfo: p.renewalInfo(original: "8201", signed: Self.t0, renewalDate: Self.t0 + 30 * day))
        // The renewal failed the day before the period ends: the grace period starts when it ends.
        let grace = try p.notification(
            type: "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", signed: Self.t0 + 29 * day,
            transaction: p.transaction(id: "8201", original: "8201", purchase: Self.t0, expires: Self.t0 + 30 * day, signed: Self.t0,
                                       token: "sweep-b"),
            renewalInfo: p.renewalInfo(original: "8201", signed: Self.t0 + 29 * day, billingRetry: true,
                                       gracePeriodExpires: Self.t0 + 36 * day, expirationIntent: 2))
        try await TestServer.run(backend, clock: clock.read, configure: { $0.events.sweepInterval = .milliseconds(50) }) { server in
            #expect(try await server.notify(trial).status == .ok)
            #expect(try await server.notify(paid).status == .ok)
            // The trial ends with auto-renew off; nothing is posted.
            clock.set(milliseconds: Self.t0 + 8 * day)
            try await server.waitForFeed { $0.count == 3 }
            let expired = try #require(try await server.feed(customer: "sweep-a").events.last)
            #expect(expired["type"] as? String == "subscription.expired")
            #expect(expired["occurred_at"] as? String == Timestamp(millisecondsSince1970: Self.t0 + 7 * day).iso8601)
            #expect(expired["previous_status"] as? String == "active")
            #expect((expired["cause"] as? [String: Any])?["source"] as? String == "sweep")
            #expect((expired["cause"] as? [String: Any])?["notification_uuid"] is NSNull)

            // A renewal fails the day before the period ends (still active: no event). Then, with
            // no notification, the period ends into the grace period (a billing issue), the grace
            // period ends (billing retry) and Apple's 60 days of retries run out (expired): three
            // events of one sweep, each at its instant.
            clock.set(milliseconds: Self.t0 + 29 * day + Self.hour)
            #expect(try await server.notify(grace).status == .ok)
            #expect(try await server.feed().events.count == 3)
            clock.set(milliseconds: Self.t0 + 100 * day)
            try await server.waitForFeed { $0.count == 6 }
            let events = try await server.feed(customer: "sweep-b").events
            #expect(events.map { $0["type"] as? String }
                == ["subscription.started", "subscription.billing_issue", "subscription.grace_period_expired", "subscription.expired"])
            #expect(events.map { $0["occurred_at"] as? String } == [
                Self.t0 + Self.hour, Self.t0 + 30 * day, Self.t0 + 36 * day, Self.t0 + 90 * day,
            ].map { Timestamp(millisecondsSince1970: $0).iso8601 })
            #expect(events.map { ($0["cause"] as? [String: Any])?["source"] as? String } == ["webhook", "sweep", "sweep", "sweep"])
            #expect(events.map { $0["status"] as? String } == ["active", "grace_period", "billing_retry", "expired"])
            // Nothing more is due: later sweeps write nothing. A sweep takes the due keys soonest
            // first, each in a transaction of its own, so once a sweep has written the expiry of
            // a sentinel due after everything above, it has written whatever else was due too.
            let sentinel = try Self.expiring(p, id: "8301", purchase: Self.t0 + 100 * day, expires: Self.t0 + 130 * day)
            #expect(try await server.notify(sentinel).status == .ok)
            clock.set(milliseconds: Self.t0 + 131 * day)
            try await server.waitForFeed { $0.contains { $0["original_transaction_id"] as? String == "8301" && $0["type"] as? String == "subscription.expired" } }
            #expect(try await server.feed().events.filter { $0["original_transaction_id"] as? String != "8301" }.count == 6)
        }
    }

    /// A first purchase of a subscription whose auto-renewal is off: the sweep writes its expiry at `expires`.
    static func expiring(_ p: Payloads, id: String, purchase: Int64, expires: Int64) throws -> String {
        try p.notification(
            type: "SUBSCRIBED", subtype: "INITIAL_BUY", signed: purchase,
            transaction: p.transaction(id: id, original: id, purchase: purchase, expires: expires, signed: purchase),
            renewalInfo: p.renewalInfo(original: id, signed: purchase, autoRenew: false, renewalDate: expires))
    }

    @Test("two servers sweeping one database write each time-caused event once", arguments: Backend.available)
    func sweepingReplicas(backend: Backend) async throws {
        let p = try Payloads()
        let day: Int64 = 86_400_000
        let count = 24
        let bodies = try (0..<count).map { index in
            let id = String(8300 + index)
            return try p.notification(
                type: "SUBSCRIBED", subtype: "INITIAL_BUY", signed: Self.t0,
                transaction: p.transaction(id: id, original: id, purchase: Self.t0, expires: Self.t0 + 30 * day, signed: Self.t0),
                renewalInfo: p.renewalInfo(original: id, signed: Self.t0, autoRenew: false, renewalDate: Self.t0 + 30 * day))
        }
        // A clock each, moved together until the sentinels below.
        let clocks = [TestClock(milliseconds: Self.t0 + Self.hour), TestClock(milliseconds: Self.t0 + Self.hour)]
        let configure: @Sendable (inout ServerConfiguration) -> Void = { $0.events.sweepInterval = .milliseconds(10) }
        try await backend.withDatabase { location, searchPath in
            try await TestServer.serve(location: location, searchPath: searchPath, clock: clocks[0].read, configure: configure) { first in
                try await TestServer.serve(location: location, searchPath: searchPath, clock: clocks[1].read, configure: configure) { second in
                    let replicas = [first, second]
                    for (index, body) in bodies.enumerated() {
                        #expect(try await replicas[index % 2].notify(body).status == .ok)
                    }
                    for clock in clocks { clock.set(milliseconds: Self.t0 + 31 * day) }
                    try await first.waitForFeed { $0.count >= 2 * count }
                    // A second event for a key would come from a sweep of the other server that
                    // took the key too. Each server's sweeps run one after another, taking the due
                    // keys soonest first: once a server's sweep has written the expiry of a
                    // sentinel due after everything above, its earlier sweeps have ended. A
                    // server whose clock is behind a sentinel's expiry does not take it, so each
                    // sentinel is swept by the server it is meant for.
                    for (index, replica) in replicas.enumerated() {
                        let id = String(8400 + index)
                        let expires = Self.t0 + Int64(40 + 10 * index) * day
                        #expect(try await replica.notify(try Self.expiring(p, id: id, purchase: Self.t0, expires: expires)).status == .ok)
                        clocks[index].set(milliseconds: expires + day)
                        try await replica.waitForFeed {
                            $0.contains { $0["original_transaction_id"] as? String == id && $0["type"] as? String == "subscription.expired" }
                        }
                    }
                    let ids = Set((0..<count).map { String(8300 + $0) })
                    let events = try await second.feed().events.filter { ids.contains($0["original_transaction_id"] as? String ?? "") }
                    let expired = events.filter { $0["type"] as? String == "subscription.expired" }
                    #expect(events.count == 2 * count)
                    #expect(Set(expired.compactMap { $0["original_transaction_id"] as? String }).count == count)
                    #expect(expired.allSatisfy { $0["occurred_at"] as? String == Timestamp(millisecondsSince1970: Self.t0 + 30 * day).iso8601 })
                }
            }
        }
    }

    @Test("a consumer's cursor across a restart of the server: every event once", arguments: Backend.available)
    func cursorAcrossRestart(backend: Backend) async throws {
        let story = try Story()
        let clock = TestClock(milliseconds: Self.t0)
        try await backend.withDatabase { location, searchPath in
            let cursor = Locked("0")
            let seen = Locked<[String]>([])
            // The first server: the first half of the story; the consumer handles two events.
            try await TestServer.serve(location: location, searchPath: searchPath, clock: clock.read, configure: Self.noSweep) { server in
                for step in story.steps.prefix(4) {
                    clock.set(milliseconds: step.at)
                    for body in step.posts { #expect(try await server.notify(body).status == .ok) }
                }
                let page = try await server.feed(limit: 2)
                seen.withLockedValue { $0 += page.events.compactMap { $0["id"] as? String } }
                cursor.withLockedValue { $0 = page.after }
            }
            // The second: the rest; the consumer goes on from its cursor.
            try await TestServer.serve(location: location, searchPath: searchPath, clock: clock.read, configure: Self.noSweep) { server in
                for step in story.steps.dropFirst(4) {
                    clock.set(milliseconds: step.at)
                    for body in step.posts { #expect(try await server.notify(body).status == .ok) }
                }
                let page = try await server.feed(after: cursor.withLockedValue { $0 })
                seen.withLockedValue { $0 += page.events.compactMap { $0["id"] as? String } }
                let all = try await server.feed().events
                #expect(seen.withLockedValue { $0 } == all.compactMap { $0["id"] as? String })
                #expect(all.map { $0["type"] as? String } == story.expectedTypes)
            }
        }
    }

    @Test("a reader paging while many writers commit misses no event: ids increase in commit order", arguments: Backend.available)
    func cursorUnderConcurrentWriters(backend: Backend) async throws {
        let p = try Payloads()
        let count = 60
        let bodies = try (0..<count).map { index in
            let id = String(9_000 + index)
            return try p.notification(
                type: "SUBSCRIBED", subtype: "INITIAL_BUY", signed: Self.t0,
                transaction: p.transaction(id: id, original: id, purchase: Self.t0, expires: Self.t0 + 30 * 86_400_000, signed: Self.t0),
                renewalInfo: nil)
        }
        try await TestServer.run(backend, now: Date(timeIntervalSince1970: Double(Self.t0 + Self.hour) / 1000),
                                 configure: Self.noSweep) { server in
            let read = Locked<[Int64]>([])
            try await withThrowingTaskGroup(of: Void.self) { group in
                for chunk in stride(from: 0, to: count, by: 10) {
                    group.addTask {
                        for body in bodies[chunk..<(chunk + 10)] {
                            let answer = try await server.notify(body)
                            #expect(answer.status == .ok)
                        }
                    }
                }
                group.addTask {
                    var after = "0"
                    while read.withLockedValue({ $0.count }) < count {
                        let page = try await server.feed(after: after)
                        read.withLockedValue { $0 += page.events.compactMap { ($0["id"] as? String).flatMap(Int64.init) } }
                        after = page.after
                    }
                }
                try await group.waitForAll()
            }
            let ids = read.withLockedValue { $0 }
            let all = try await server.feed().events.compactMap { ($0["id"] as? String).flatMap(Int64.init) }
            #expect(ids == all)
            #expect(all.count == count)
        }
    }
}

/// The customer's story of ``CustomerStoryTests``, with the instant each step is posted at (the
/// clock only moves forward: the first renewal arrives after the second) and the event each
/// step is expected to cause.
struct Story {
    struct Step {
        let name: String
        let posts: [String]
        let at: Int64
        let uuid: String
        let type: String
        /// Whether the step changes the state (the late renewal does not).
        let changes: Bool
    }

    let original = "7000"
    let customer = "alice-token"
    let steps: [Step]
    let expectedTypes: [String?] = [
        "subscription.started", "subscription.renewed", "subscription.billing_issue", "subscription.recovered",
        "subscription.billing_issue", "subscription.recovered", "subscription.refunded",
    ]

    init() throws {
        let p = try Payloads()
        let t0 = FeedTests.t0
        let hour = FeedTests.hour
        let original = self.original
        let customer = self.customer
        func transaction(_ id: String, _ start: Int64, _ days: Int64, signed: Int64? = nil, trial: Bool = false, revoked: Int64? = nil) throws -> String {
            try p.transaction(
                id: id, original: original, purchase: start, expires: start + days * day, signed: signed ?? start,
                token: customer, freeTrial: trial, revocation: revoked, revocationReason: revoked == nil ? nil : 0)
        }
        func step(
            _ name: String, at: Int64, twice: Bool = false, changes: Bool = true, type: String, subtype: String? = nil, signed: Int64,
            transaction: String, renewalInfo: String?
        ) throws -> Step {
            let uuid = UUID().uuidString.lowercased()
            let jws = try p.notification(
                type: type, subtype: subtype, uuid: uuid, signed: signed, transaction: transaction, renewalInfo: renewalInfo)
            return Step(name: name, posts: twice ? [jws, jws] : [jws], at: at, uuid: uuid, type: type, changes: changes)
        }
        steps = [
            try step("purchase with a free trial", at: t0 + hour, type: "SUBSCRIBED", subtype: "INITIAL_BUY", signed: t0,
                     transaction: transaction("7001", t0, 7, trial: true),
                     renewalInfo: p.renewalInfo(original: original, signed: t0, renewalDate: t0 + 7 * day)),
            try step("second renewal, early", at: t0 + 38 * day, type: "DID_RENEW", signed: t0 + 37 * day,
                     transaction: transaction("7003", t0 + 37 * day, 30),
                     renewalInfo: p.renewalInfo(original: original, signed: t0 + 37 * day, renewalDate: t0 + 67 * day)),
            try step("first renewal, late and twice", at: t0 + 38 * day + hour, twice: true, changes: false, type: "DID_RENEW",
                     signed: t0 + 7 * day, transaction: transaction("7002", t0 + 7 * day, 30),
                     renewalInfo: p.renewalInfo(original: original, signed: t0 + 7 * day, renewalDate: t0 + 37 * day)),
            try step("billing retry", at: t0 + 68 * day, type: "DID_FAIL_TO_RENEW", signed: t0 + 67 * day + hour,
                     transaction: transaction("7003", t0 + 37 * day, 30),
                     renewalInfo: p.renewalInfo(original: original, signed: t0 + 67 * day + hour, billingRetry: true, expirationIntent: 2)),
            try step("recovery", at: t0 + 71 * day, twice: true, type: "DID_RENEW", subtype: "BILLING_RECOVERY", signed: t0 + 70 * day,
                     transaction: transaction("7004", t0 + 70 * day, 30),
                     renewalInfo: p.renewalInfo(original: original, signed: t0 + 70 * day, billingRetry: false, renewalDate: t0 + 100 * day)),
            try step("grace period", at: t0 + 101 * day, twice: true, type: "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD",
                     signed: t0 + 100 * day + hour, transaction: transaction("7004", t0 + 70 * day, 30),
                     renewalInfo: p.renewalInfo(
                        original: original, signed: t0 + 100 * day + hour, billingRetry: true, gracePeriodExpires: t0 + 106 * day,
                        expirationIntent: 2)),
            try step("recovery from grace", at: t0 + 104 * day, type: "DID_RENEW", subtype: "BILLING_RECOVERY", signed: t0 + 103 * day,
                     transaction: transaction("7005", t0 + 103 * day, 30),
                     renewalInfo: p.renewalInfo(original: original, signed: t0 + 103 * day, billingRetry: false, renewalDate: t0 + 133 * day)),
            try step("refund", at: t0 + 111 * day, twice: true, type: "REFUND", signed: t0 + 110 * day,
                     transaction: transaction("7005", t0 + 103 * day, 30, signed: t0 + 110 * day, revoked: t0 + 110 * day),
                     renewalInfo: nil),
        ]
    }
}

extension TestServer {
    /// A page of the feed (or of a customer's).
    func feed(after: String = "0", limit: Int = 1000, customer: String? = nil) async throws
        -> (events: [[String: Any]], after: String, hasMore: Bool)
    {
        let path = customer.map { "/v1/customers/\($0)/events" } ?? "/v1/events"
        let response = try await get("\(path)?after=\(after)&limit=\(limit)")
        #expect(response.status == .ok, "\(response.text)")
        let json = try response.json()
        let events = try #require(json["events"] as? [[String: Any]], "\(response.text)")
        return (events, json["after"] as? String ?? "", json["has_more"] as? Bool ?? false)
    }

    /// Polls the feed until `condition` holds of its events.
    func waitForFeed(within limit: Duration = .seconds(30), _ condition: ([[String: Any]]) -> Bool) async throws {
        let deadline = ContinuousClock.now + limit
        var last: [[String: Any]] = []
        while ContinuousClock.now < deadline {
            last = try await feed().events
            if condition(last) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("the feed did not get there within \(limit): \(last.map { $0["type"] ?? "" })")
        throw CancellationError()
    }
}
