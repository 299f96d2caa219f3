import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOConcurrencyHelpers
import NIOHTTP1
import ReceiptKit
import ServiceLifecycle
import ServerSupport

/// Sends the outbox (``Delivery``): claims the rows that are due, sends each, and records
/// how it went — delivered on a 2xx, otherwise tried again after ``DeliveryPolicy``'s back-off
/// until the row's time runs out, then dead-lettered. At most ``DeliveryPolicy/concurrency``
/// attempts run at once, each bounded by ``DeliveryPolicy/timeout``: a slow or dead receiver
/// holds a few of this service's tasks, never a request of the API's (which only writes rows).
///
/// Woken when this server commits rows (``DeliveryWake``), and every poll interval for the rows
/// other servers wrote and the waits that ended. Delivered rows are kept a week
/// (``DeliveryPolicy/keepDelivered``), then removed. On shutdown the attempts in flight are
/// cancelled; a row whose outcome was not recorded is sent again once its lease expires.
struct DeliveryService: Service {
    let outbox: Store
    let sender: DeliverySender
    let policy: DeliveryPolicy
    let clock: @Sendable () -> Date
    let wake: DeliveryWake
    let metrics: ServerMetrics
    let logger: Logger
    /// This server, as the leases name it.
    let owner: String
    /// Finishes once the store is migrated.
    let migrated: AsyncStream<Void>
    /// A number in `0..<1` for the back-off's jitter.
    var random: @Sendable () -> Double = { Double.random(in: 0..<1) }

    func run() async throws {
        for await _ in migrated.cancelOnGracefulShutdown() {}
        guard !Task.isCancelled, !Task.isShuttingDownGracefully else { return }
        let inFlight = Locked(InFlightDeliveries())
        let wake = self.wake
        let interval = policy.pollInterval
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                wake.signal()
            }
        }
        defer { ticker.cancel() }
        let backlog = BacklogGauges(metrics: metrics)
        var lastBacklog = ContinuousClock.now - interval
        await withTaskGroup(of: Void.self) { group in
            for await _ in wake.signals.cancelOnGracefulShutdown() {
                let free = policy.concurrency - inFlight.withLockedValue { $0.count }
                if free > 0 {
                    inFlight.withLockedValue { $0.claimStarted() }
                    let claimed = await claim(limit: free)
                    for delivery in inFlight.withLockedValue({ $0.admit(claimed, id: \.id) }) {
                        group.addTask {
                            await deliver(delivery)
                            inFlight.withLockedValue { $0.ended(delivery.id) }
                            wake.signal()
                        }
                    }
                }
                if ContinuousClock.now - lastBacklog >= interval {
                    lastBacklog = ContinuousClock.now
                    let now = Timestamp(clock()).millisecondsSince1970
                    await backlog.update(from: outbox, now: now, logger: logger)
                    do {
                        try await outbox.pruneDelivered(before: now - policy.keepDelivered.wholeMilliseconds)
                    } catch {
                        logger.debug("cannot prune delivered outbox rows", metadata: ["error": "\(error)"])
                    }
                }
            }
            // Shutting down: the attempts in flight stop (a receiver that does not answer must not
            // hold the shutdown); their rows are sent again once their leases expire.
            group.cancelAll()
        }
    }

    /// The rows due now, claimed; none when the database fails (logged; the next tick tries again).
    private func claim(limit: Int) async -> [Delivery] {
        let now = Timestamp(clock()).millisecondsSince1970
        do {
            return try await outbox.claimDeliveries(
                owner: owner, now: now, leaseUntil: now + policy.lease.wholeMilliseconds, limit: limit)
        } catch {
            logger.warning("cannot claim outbox rows; trying again", metadata: ["error": "\(error)"])
            return []
        }
    }

    /// One attempt, and its outcome recorded.
    func deliver(_ delivery: Delivery) async {
        let result = await sender.send(delivery, attempt: delivery.attempts + 1)
        let now = Timestamp(clock()).millisecondsSince1970
        let outcome: DeliveryOutcome
        switch result {
        case .accepted(let status):
            outcome = DeliveryOutcome(state: .delivered, nextAttemptAt: now, attemptedAt: now, status: status, error: nil)
        case .failed(let status, let error):
            outcome = policy.afterFailure(
                attempts: delivery.attempts + 1, now: now, giveUpAt: delivery.giveUpAt, random: random(), status: status, error: error)
        case .refused(let status, let error):
            outcome = DeliveryOutcome(state: .failed, nextAttemptAt: now, attemptedAt: now, status: status, error: error)
        }
        let destination = BacklogGauges.destination(kind: delivery.kind, target: delivery.target)
        let name = outcome.state == .delivered ? "delivered" : outcome.state == .failed ? "dead_lettered" : "retried"
        metrics.delivery(destination: destination, outcome: name)
        if outcome.state != .delivered {
            logger.log(
                level: outcome.state == .failed ? .warning : .notice,
                outcome.state == .failed ? "a delivery was dead-lettered" : "a delivery failed; it will be tried again",
                metadata: [
                    "delivery_id": "\(delivery.id)", "destination": "\(destination)", "attempts": "\(delivery.attempts + 1)",
                    "status": "\(outcome.status.map(String.init) ?? "-")", "error": "\(outcome.error ?? "")",
                ])
        }
        do {
            if try await !outbox.finishDelivery(delivery.id, owner: owner, outcome: outcome) {
                logger.notice("a delivery's lease ran out before its outcome was recorded; it will be sent again",
                              metadata: ["delivery_id": "\(delivery.id)"])
            }
        } catch {
            logger.warning("cannot record a delivery's outcome; it will be sent again once its lease expires",
                           metadata: ["delivery_id": "\(delivery.id)", "error": "\(error)"])
        }
    }
}

/// The rows one ``DeliveryService`` is sending, so that none is sent twice at once by it.
///
/// A claim answers a row again when the clock moved past the row's lease while its attempt was
/// still running (a clock set forward, or an attempt outliving its lease), and the claim renews
/// that lease for this server. Such a row is not sent again: the attempt running records its
/// outcome under the renewed lease. The answer may also arrive only after that attempt has ended
/// and recorded its outcome — the claim read the row before — so the rows whose attempts ended
/// while a claim was running are not sent from its answer either: what the attempt recorded
/// stands (delivered, or pending until its next attempt is due), and a row whose outcome could
/// not be recorded is claimed again once the lease the claim gave it runs out.
package struct InFlightDeliveries: Sendable {
    private var sending: Set<Int64> = []
    /// The ids whose attempts ended since the running claim started; `nil` when none runs.
    private var endedDuringClaim: Set<Int64>?

    package init() {}

    /// The number of attempts running.
    package var count: Int { sending.count }

    /// A claim is about to read the outbox (one at a time).
    package mutating func claimStarted() {
        precondition(endedDuringClaim == nil, "one claim at a time")
        endedDuringClaim = []
    }

    /// What the running claim answered (rows named by `id`): those to attempt now, each counted
    /// as running from here.
    package mutating func admit<Row>(_ claimed: [Row], id: (Row) -> Int64) -> [Row] {
        let ended = endedDuringClaim ?? []
        endedDuringClaim = nil
        return claimed.filter { !ended.contains(id($0)) && sending.insert(id($0)).inserted }
    }

    /// The attempt at delivery `id` has ended and its outcome has been recorded (or not).
    package mutating func ended(_ id: Int64) {
        sending.remove(id)
        endedDuringClaim?.insert(id)
    }
}

/// Wakes ``DeliveryService``: when this server commits outbox rows, when an attempt ends, and
/// every poll interval. Signals that arrive while one is pending are one.
final class DeliveryWake: Sendable {
    let signals: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() {
        (signals, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    func signal() {
        continuation.yield()
    }
}

/// The outbox's gauges per destination: rows pending, and the age of the oldest.
final class BacklogGauges: Sendable {
    let metrics: ServerMetrics
    /// Every destination seen: one whose rows are all sent goes back to 0.
    private let seen = Locked<Set<String>>([])

    init(metrics: ServerMetrics) {
        self.metrics = metrics
    }

    /// A destination as the metrics name it: `webhook`, `apple`, or `forward:HOST[:PORT]` (never
    /// a URL's path or query, which may carry a token).
    static func destination(kind: Delivery.Kind, target: String) -> String {
        switch kind {
        case .webhook: return "webhook"
        case .consumption: return "apple"
        case .forward:
            guard let url = URLComponents(string: target), let host = url.host else { return "forward" }
            return "forward:\(host)" + (url.port.map { ":\($0)" } ?? "")
        }
    }

    func update(from outbox: Store, now: Int64, logger: Logger) async {
        let backlog: [OutboxBacklog]
        do {
            backlog = try await outbox.outboxBacklog()
        } catch {
            logger.debug("cannot read the outbox's backlog", metadata: ["error": "\(error)"])
            return
        }
        var current: [String: (pending: Int, oldest: Int64)] = [:]
        for row in backlog {
            let name = Self.destination(kind: row.kind, target: row.target)
            let previous = current[name]
            current[name] = ((previous?.pending ?? 0) + row.pending, min(previous?.oldest ?? .max, row.oldestCreatedAt))
        }
        let names = seen.withLockedValue { seen in
            seen.formUnion(current.keys)
            return seen
        }
        for name in names {
            let entry = current[name]
            metrics.outbox(
                destination: name, pending: entry?.pending ?? 0,
                oldestPendingSeconds: entry.map { Double(max(0, now - $0.oldest)) / 1000 } ?? 0)
        }
    }
}

/// Sends one outbox row: a webhook (signed), a forwarded notification, a consumption answer.
struct DeliverySender: Sendable {
    /// `RECEIPTKIT_WEBHOOK_SECRET`.
    let secret: [UInt8]
    let policy: DeliveryPolicy
    let clock: @Sendable () -> Date
    var httpClient: HTTPClient = .shared
    /// Sends a consumption answer to Apple, when the App Store Server API is configured.
    var consumption: (@Sendable (Delivery) async -> Result)?

    /// How an attempt ended.
    enum Result: Sendable, Equatable {
        /// A 2xx.
        case accepted(status: Int)
        /// Anything else: tried again.
        case failed(status: Int?, error: String)
        /// Nothing sent again would change: dead-lettered now.
        case refused(status: Int?, error: String)
    }

    /// The most of an answer's body read (and thrown away).
    static let maximumAnswer = 64 * 1024

    func send(_ delivery: Delivery, attempt: Int) async -> Result {
        switch delivery.kind {
        case .webhook:
            // A row written while a webhook was configured, read by a server without its secret:
            // never sent unsigned; it waits (and is retried) until the secret is back.
            guard !secret.isEmpty else { return .failed(status: nil, error: "RECEIPTKIT_WEBHOOK_SECRET is not set") }
            var headers = HTTPHeaders()
            headers.add(name: "ReceiptKit-Event-Id", value: delivery.eventId.map { String($0) } ?? "")
            headers.add(name: "ReceiptKit-Delivery-Attempt", value: String(attempt))
            let timestamp = Timestamp(clock()).secondsSince1970
            headers.add(
                name: "ReceiptKit-Signature", value: WebhookSignature.header(secret: secret, timestamp: timestamp, body: delivery.body))
            return await post(delivery.body, to: delivery.target, headers: headers)
        case .forward:
            return await post(delivery.body, to: delivery.target, headers: HTTPHeaders())
        case .consumption:
            guard let consumption else {
                return .failed(status: nil, error: "the App Store Server API is not configured (RECEIPTKIT_APPSTORE_*)")
            }
            return await consumption(delivery)
        }
    }

    /// POSTs `body` as JSON; 2xx is accepted, anything else (a status, a refused connection, a
    /// timeout) fails.
    func post(_ body: [UInt8], to url: String, headers: HTTPHeaders) async -> Result {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers = headers
        request.headers.replaceOrAdd(name: "Content-Type", value: "application/json")
        request.headers.replaceOrAdd(name: "User-Agent", value: "receiptkit-server")
        request.body = .bytes(ByteBuffer(bytes: body))
        let timeout = policy.timeout
        let client = httpClient
        do {
            let status = try await withTimeout(timeout, timedOut: { DeliveryTimedOut() }) {
                let response = try await client.execute(request, timeout: .milliseconds(timeout.wholeMilliseconds))
                // The answer is read (so the connection can be reused) and thrown away.
                _ = try? await response.body.collect(upTo: Self.maximumAnswer)
                return Int(response.status.code)
            }
            if (200..<300).contains(status) { return .accepted(status: status) }
            return .failed(status: status, error: "HTTP \(status)")
        } catch is DeliveryTimedOut {
            return .failed(status: nil, error: "no answer within \(timeout)")
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            return .failed(status: nil, error: "no answer within \(timeout) (\(error))")
        } catch {
            return .failed(status: nil, error: "cannot reach the receiver: \(error)")
        }
    }

    struct DeliveryTimedOut: Error {}
}
