import ReceiptKitServer
import Synchronization
import Testing

/// ``DeadlineTimer`` and ``withTimeout(_:timer:timedOut:_:)``: a sleeper wakes at its deadline and not
/// before, a cancelled one stops at once and leaves the table, the ticking task stops when the
/// table is empty and starts again for the next sleeper, and a timeout cuts an operation short.
///
/// Serialized: its tests measure sleeps, and run one at a time they do not compete with each
/// other for the cores. How late a sleeper wakes is compared with a plain `Task.sleep` to the same
/// deadline, started beside it: on a machine busy with other suites both are late (a 500 ms sleep
/// has taken 5.3 s in CI), and only a timer later than the machine makes any sleeper is wrong.
@Suite("Request timeouts", .serialized)
struct TimeoutTests {
    struct TimedOut: Error {}

    /// How late `sleep` returns past `deadline`, and how late a `Task.sleep(until: deadline)` run
    /// beside it returns: the lateness the machine's load gives any sleeper now.
    static func lateness(
        until deadline: ContinuousClock.Instant, _ sleep: @escaping @Sendable () async throws -> Void
    ) async throws -> (subject: Duration, reference: Duration) {
        try await withThrowingTaskGroup(of: (isReference: Bool, lateness: Duration).self) { group in
            group.addTask {
                try await sleep()
                return (false, ContinuousClock.now - deadline)
            }
            group.addTask {
                try await Task.sleep(until: deadline, clock: .continuous)
                return (true, ContinuousClock.now - deadline)
            }
            var subject = Duration.zero, reference = Duration.zero
            for try await (isReference, lateness) in group {
                if isReference { reference = lateness } else { subject = lateness }
            }
            return (subject, reference)
        }
    }

    /// Not before the deadline, and not much later than the machine wakes any sleeper: the timer
    /// takes two wake-ups to the reference's one (its tick, then the sleeper), so three times the
    /// reference's lateness, plus half a second that a 10 ms tick never needs.
    static func isOnTime(_ lateness: (subject: Duration, reference: Duration)) -> Bool {
        lateness.subject >= .zero && lateness.subject < lateness.reference * 3 + .milliseconds(500)
    }

    /// What tasks record, shared between them.
    final class Log<Value: Sendable>: Sendable {
        private let values: Mutex<[Value]> = Mutex([])
        func append(_ value: Value) { values.withLock { $0.append(value) } }
        var all: [Value] { values.withLock { $0 } }
    }

    @Test("a sleeper wakes at its deadline: not before, and no later than the machine wakes any sleeper")
    func wakesAtDeadline() async throws {
        let timer = DeadlineTimer(resolution: .milliseconds(10))
        let deadline = ContinuousClock.now + .milliseconds(500)
        let lateness = try await Self.lateness(until: deadline) { try await timer.sleep(until: deadline) }
        #expect(Self.isOnTime(lateness), "woke \(lateness.subject) late; a plain sleep \(lateness.reference)")
        #expect(timer.sleeperCount == 0)
    }

    @Test("sleepers with different deadlines each wake at theirs, not before, and the timer ticks again after an idle spell")
    func severalSleepers() async throws {
        let timer = DeadlineTimer(resolution: .milliseconds(5))
        let lateness = Log<(subject: Duration, reference: Duration)>()
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for delay in [300, 60, 180] {
                group.addTask {
                    let deadline = start + .milliseconds(delay)
                    lateness.append(try await Self.lateness(until: deadline) { try await timer.sleep(until: deadline) })
                }
            }
            try await group.waitForAll()
        }
        #expect(lateness.all.count == 3)
        #expect(lateness.all.allSatisfy(Self.isOnTime), "\(lateness.all)")
        #expect(timer.sleeperCount == 0)
        // Nothing sleeps: the ticking task has stopped (or stops at its next tick).
        try await Task.sleep(for: .milliseconds(50))
        let again = ContinuousClock.now
        try await timer.sleep(until: again + .milliseconds(30))
        #expect(ContinuousClock.now - again >= .milliseconds(30))
    }

    @Test("a cancelled sleeper throws CancellationError at once and leaves the table")
    func cancelledSleeper() async throws {
        let timer = DeadlineTimer(resolution: .milliseconds(10))
        let sleeper = Task { try await timer.sleep(until: .now + .seconds(60)) }
        let deadline = ContinuousClock.now + .seconds(60)
        while timer.sleeperCount == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(timer.sleeperCount == 1)
        let start = ContinuousClock.now
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        // At once, not at the 60 s deadline.
        #expect(ContinuousClock.now - start < .seconds(10))
        #expect(timer.sleeperCount == 0)
    }

    @Test("a sleeper whose task is already cancelled throws at once")
    func alreadyCancelled() async throws {
        let timer = DeadlineTimer(resolution: .milliseconds(10))
        let sleeper = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await timer.sleep(until: .now + .seconds(60))
        }
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(timer.sleeperCount == 0)
    }

    @Test("withTimeout returns a quick operation's result and leaves no sleeper behind")
    func quickOperation() async throws {
        let timer = DeadlineTimer(resolution: .milliseconds(10))
        let value = try await withTimeout(.seconds(30), timer: timer, timedOut: { TimedOut() }) { 42 }
        #expect(value == 42)
        #expect(timer.sleeperCount == 0)
    }

    @Test("withTimeout throws timedOut() at the timeout and cancels the operation")
    func slowOperation() async throws {
        let cancelled = Log<Bool>()
        let deadline = ContinuousClock.now + .milliseconds(500)
        let lateness = try await Self.lateness(until: deadline) {
            await #expect(throws: TimedOut.self) {
                try await withTimeout(.milliseconds(500), timedOut: { TimedOut() }) {
                    do {
                        try await Task.sleep(for: .seconds(60))
                    } catch {
                        cancelled.append(true)
                        throw error
                    }
                }
            }
        }
        // At the 500 ms timeout: not before it, and not later than the machine wakes any sleeper.
        #expect(Self.isOnTime(lateness), "timed out \(lateness.subject) late; a plain sleep \(lateness.reference)")
        #expect(cancelled.all == [true])
    }

    @Test("withTimeout passes an operation's own error on")
    func failingOperation() async throws {
        struct Own: Error {}
        await #expect(throws: Own.self) {
            try await withTimeout(.seconds(30), timedOut: { TimedOut() }) { () async throws -> Int in throw Own() }
        }
    }
}
