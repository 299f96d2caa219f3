import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import Testing

/// Notifications for a load: each a new subscription (its own original transaction id) under its
/// own `notificationUUID`, signed under the test PKI, as the webhook's bodies.
struct LoadNotifications: Sendable {
    struct Notification: Sendable {
        let uuid: String
        let originalTransactionId: String
        let body: String
        /// The input's dedup key in the store.
        var dedupKey: String { "notification:\(uuid)" }
    }

    let all: [Notification]

    /// `count` notifications, their original transaction ids `prefix` followed by 0, 1, …,
    /// signed on two tasks (in a debug build a notification and its transaction take about 15 ms).
    init(count: Int, prefix: Int) async throws {
        let payloads = try Payloads()
        let purchase = ms("2025-06-01T12:00:00Z")
        @Sendable func sign(_ index: Int) throws -> Notification {
            let id = String(prefix + index)
            let uuid = UUID().uuidString.lowercased()
            let jws = try payloads.notification(
                type: "SUBSCRIBED", subtype: "INITIAL_BUY", uuid: uuid, signed: purchase,
                transaction: payloads.transaction(id: id, original: id, purchase: purchase, expires: purchase + 30 * day, signed: purchase),
                renewalInfo: nil)
            return Notification(uuid: uuid, originalTransactionId: id, body: Vectors.body(wrapping: jws))
        }
        let halves = [0..<(count / 2), (count / 2)..<count]
        let signed = try await withThrowingTaskGroup(of: (Int, [Notification]).self) { group in
            for (index, range) in halves.enumerated() {
                group.addTask { (index, try range.map(sign)) }
            }
            var signed: [Int: [Notification]] = [:]
            for try await (index, notifications) in group { signed[index] = notifications }
            return signed
        }
        all = halves.indices.flatMap { signed[$0] ?? [] }
    }
}

/// One webhook request of a load and how it was answered.
struct LoadOutcome: Sendable {
    /// The notification's index.
    let index: Int
    let start: ContinuousClock.Instant
    let end: ContinuousClock.Instant
    /// The HTTP status, or `nil` when no answer came (``failure`` says why).
    let status: Int?
    /// The `Retry-After` header, if any.
    let retryAfter: String?
    /// The error code of a non-2xx answer.
    let code: String?
    /// Why no answer came, if none did.
    let failure: String?

    var latency: Duration { end - start }
    var isStored: Bool { status == 200 }
}

/// A load on a server's webhook from a real HTTP client: `connections` workers, each posting the
/// next notification, one at a time, at most one every `pace`, until ``stop()`` or until the
/// notifications run out — a load bounded in count and time, on loopback only.
final class WebhookLoad: Sendable {
    private let client: HTTPClient
    private let url: String
    private let notifications: [LoadNotifications.Notification]
    private let pace: Duration
    private let state = NIOLockedValueBox(State())
    private let workers: NIOLockedValueBox<Task<Void, Never>?> = NIOLockedValueBox(nil)

    private struct State {
        var next = 0
        var stopped = false
        var outcomes: [LoadOutcome] = []
    }

    /// Starts the load.
    ///
    /// - Parameters:
    ///   - port: The server's loopback port.
    ///   - notifications: What to post, each at most once, in order.
    ///   - connections: How many requests are in flight at once, each on its own connection.
    ///   - pace: The least time between two requests of one worker.
    init(port: Int, notifications: [LoadNotifications.Notification], connections: Int = 4, pace: Duration = .milliseconds(40)) {
        client = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: .init(connectionPool: .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: connections)))
        url = "http://127.0.0.1:\(port)/appstore/notifications"
        self.notifications = notifications
        self.pace = pace
        let task = Task { [self] in
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<connections { group.addTask { await self.work() } }
            }
        }
        workers.withLockedValue { $0 = task }
    }

    /// The outcomes so far, in the order they were answered.
    var outcomes: [LoadOutcome] { state.withLockedValue { $0.outcomes } }

    /// Returns once the outcomes so far satisfy `condition`, or records an issue and throws after
    /// `limit`.
    func wait(
        for what: String, upTo limit: Duration, sourceLocation: SourceLocation = #_sourceLocation,
        until condition: ([LoadOutcome]) -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + limit
        while !condition(outcomes) {
            guard ContinuousClock.now < deadline else {
                let outcomes = self.outcomes
                Issue.record(
                    "the load did not reach \(what) within \(limit): \(outcomes.count) answers, \(outcomes.filter(\.isStored).count) of them 200",
                    sourceLocation: sourceLocation)
                throw CancellationError()
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Stops taking notifications, waits for the requests in flight, and shuts the client down.
    ///
    /// - Returns: Every outcome.
    func stop() async throws -> [LoadOutcome] {
        state.withLockedValue { $0.stopped = true }
        await workers.withLockedValue { $0 }?.value
        try await client.shutdown()
        return outcomes
    }

    private func work() async {
        while true {
            let index: Int? = state.withLockedValue { state in
                guard !state.stopped, state.next < notifications.count else { return nil }
                defer { state.next += 1 }
                return state.next
            }
            guard let index else { return }
            let started = ContinuousClock.now
            let outcome = await post(index)
            state.withLockedValue { $0.outcomes.append(outcome) }
            let rest = pace - (ContinuousClock.now - started)
            if rest > .zero { try? await Task.sleep(for: rest) }
        }
    }

    private func post(_ index: Int) async -> LoadOutcome {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: notifications[index].body))
        let start = ContinuousClock.now
        do {
            // Far past the 5 s an answer must come within: a hang shows as a failure.
            let response = try await client.execute(request, timeout: .seconds(60))
            let body = try await response.body.collect(upTo: 1 << 20)
            let end = ContinuousClock.now
            var code: String?
            if response.status.code != 200,
                let object = try? JSONSerialization.jsonObject(with: Data(String(buffer: body).utf8)) as? [String: Any]
            {
                code = (object["error"] as? [String: Any])?["code"] as? String
            }
            return LoadOutcome(
                index: index, start: start, end: end, status: Int(response.status.code), retryAfter: response.headers.first(name: "Retry-After"),
                code: code, failure: nil)
        } catch {
            return LoadOutcome(
                index: index, start: start, end: ContinuousClock.now, status: nil, retryAfter: nil, code: nil, failure: "\(error)")
        }
    }
}

/// Polls a server's `/readyz` every `interval` until stopped, recording each answer.
final class ReadinessProbe: Sendable {
    struct Answer: Sendable {
        let start: ContinuousClock.Instant
        let end: ContinuousClock.Instant
        let status: Int?
        let retryAfter: String?
        var latency: Duration { end - start }
    }

    private let client = HTTPClient(eventLoopGroupProvider: .singleton)
    private let answers = NIOLockedValueBox<[Answer]>([])
    private let stopped = NIOLockedValueBox(false)
    private let task: NIOLockedValueBox<Task<Void, Never>?> = NIOLockedValueBox(nil)

    init(port: Int, interval: Duration = .milliseconds(100)) {
        let url = "http://127.0.0.1:\(port)/readyz"
        let task = Task { [self] in
            while !stopped.withLockedValue({ $0 }) {
                let start = ContinuousClock.now
                let answer: Answer
                if let response = try? await client.execute(HTTPClientRequest(url: url), timeout: .seconds(60)) {
                    _ = try? await response.body.collect(upTo: 1 << 16)
                    answer = Answer(
                        start: start, end: .now, status: Int(response.status.code), retryAfter: response.headers.first(name: "Retry-After"))
                } else {
                    answer = Answer(start: start, end: .now, status: nil, retryAfter: nil)
                }
                answers.withLockedValue { $0.append(answer) }
                try? await Task.sleep(for: interval)
            }
        }
        self.task.withLockedValue { $0 = task }
    }

    var all: [Answer] { answers.withLockedValue { $0 } }

    /// Stops polling and shuts the client down.
    ///
    /// - Returns: Every answer.
    func stop() async throws -> [Answer] {
        stopped.withLockedValue { $0 = true }
        await task.withLockedValue { $0 }?.value
        try await client.shutdown()
        return all
    }
}
