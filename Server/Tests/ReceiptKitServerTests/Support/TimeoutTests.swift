import ReceiptKitServer
import Synchronization
import Testing

/// ``DeadlineTimer`` and ``withTimeout(_:timer:timedOut:_:)``: a sleeper wakes at its deadline and not
/// before, a cancelled one stops at once and leaves the table, the ticking task stops when the
/// table is empty and starts again for the next sleeper, and a timeout cuts an operation short.
///
/// The deadlines are compared with a time the test moves (``ManualTime``), and what must not
/// happen yet is checked after ticks the timer was seen to make: how late a tick comes depends on
/// the machine (a 500 ms sleep has taken 5.3 s in CI, the cores busy with other suites), what a
/// tick does does not.
@Suite("Request timeouts", .serialized)
struct TimeoutTests {
    struct TimedOut: Error {}

    /// What tasks record, shared between them.
    final class Log<Value: Sendable>: Sendable {
        private let values: Mutex<[Value]> = Mutex([])
        func append(_ value: Value) { values.withLock { $0.append(value) } }
        var all: [Value] { values.withLock { $0 } }
    }

    /// The time a timer compares its deadlines with, moved by the test.
    final class ManualTime: Sendable {
        private let instant: Mutex<ContinuousClock.Instant>
        init(_ start: ContinuousClock.Instant) { instant = Mutex(start) }
        var now: ContinuousClock.Instant { instant.withLock { $0 } }
        func set(_ value: ContinuousClock.Instant) { instant.withLock { $0 = value } }
    }

    /// Waits for three more ticks of `timer`: what a tick would do, it has had the chance to.
    static func threeTicks(of timer: DeadlineTimer, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let seen = timer.ticking.ticks
        try await waitUntil("three ticks", sourceLocation: sourceLocation) { timer.ticking.ticks >= seen + 3 }
    }

    @Test("a sleeper wakes at the first tick at or past its deadline, and sleeps through the ticks before it")
    func wakesAtDeadline() async throws {
        let start = ContinuousClock.now
        let time = ManualTime(start)
        let timer = DeadlineTimer(resolution: .milliseconds(1), now: { time.now })
        let woke = Log<Bool>()
        let sleeper = Task {
            try await timer.sleep(until: start + .milliseconds(500))
            woke.append(true)
        }
        try await waitUntil("the sleeper in the table") { timer.sleeperCount == 1 }
        try await Self.threeTicks(of: timer)
        time.set(start + .milliseconds(499))
        try await Self.threeTicks(of: timer)
        #expect(woke.all.isEmpty, "woken before its deadline")
        #expect(timer.sleeperCount == 1)

        time.set(start + .milliseconds(500))
        try await waitUntil("awake at its deadline") { woke.all.count == 1 }
        sleeper.cancel()  // Not woken (a failure already recorded): it must not hang the suite.
        _ = await sleeper.result
        #expect(woke.all == [true])
        #expect(timer.sleeperCount == 0)
    }

    @Test("sleepers with different deadlines each wake at theirs, not before, and the timer ticks again after an idle spell")
    func severalSleepers() async throws {
        let start = ContinuousClock.now
        let time = ManualTime(start)
        let timer = DeadlineTimer(resolution: .milliseconds(1), now: { time.now })
        let woke = Log<Int>()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for delay in [300, 60, 180] {
                group.addTask {
                    try await timer.sleep(until: start + .milliseconds(delay))
                    woke.append(delay)
                }
            }
            try await waitUntil("three sleepers") { timer.sleeperCount == 3 }
            for (now, awake) in [(100, [60]), (250, [60, 180]), (300, [60, 180, 300])] {
                time.set(start + .milliseconds(now))
                try await waitUntil("awake at \(now) ms: \(awake)") { woke.all.count == awake.count }
                // The others sleep through the ticks that follow (with none left, it stops ticking).
                if awake.count < 3 { try await Self.threeTicks(of: timer) }
                #expect(woke.all == awake, "at \(now) ms")
            }
            group.cancelAll()  // Each is awake by now, or a failure is recorded: no hang either way.
            while let _ = try? await group.next() {}
        }
        #expect(timer.sleeperCount == 0)
        // Nothing sleeps: the ticking task stops; the next sleeper starts it again.
        try await waitUntil("the ticking task stopped") { !timer.ticking.isTicking }
        let again = Task { try await timer.sleep(until: start + .milliseconds(400)) }
        try await waitUntil("ticking again") { timer.ticking.isTicking }
        time.set(start + .milliseconds(400))
        try await waitUntil("the new sleeper awake") { timer.sleeperCount == 0 }
        again.cancel()
        #expect((try? await again.result.get()) != nil, "the new sleeper was not woken")
        #expect(timer.sleeperCount == 0)
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

    @Test("withTimeout throws timedOut() at the timeout, not before, and cancels the operation")
    func slowOperation() async throws {
        let time = ManualTime(ContinuousClock.now)
        let timer = DeadlineTimer(resolution: .milliseconds(1), now: { time.now })
        let cancelled = Log<Bool>()
        let timeout = Task {
            await #expect(throws: TimedOut.self) {
                try await withTimeout(.milliseconds(500), timer: timer, timedOut: { TimedOut() }) {
                    do {
                        try await Task.sleep(for: .seconds(60))
                    } catch {
                        cancelled.append(true)
                        throw error
                    }
                }
            }
        }
        try await waitUntil("the timeout in the table") { timer.sleeperCount == 1 }
        try await Self.threeTicks(of: timer)
        #expect(cancelled.all.isEmpty, "cut short before the timeout")
        // Past the 500 ms timeout, whenever withTimeout read the time.
        time.set(ContinuousClock.now + .seconds(1))
        try await waitUntil("cut short") { cancelled.all.count == 1 }
        await timeout.value
        #expect(cancelled.all == [true])
        #expect(timer.sleeperCount == 0)
    }

    @Test("withTimeout passes an operation's own error on")
    func failingOperation() async throws {
        struct Own: Error {}
        await #expect(throws: Own.self) {
            try await withTimeout(.seconds(30), timedOut: { TimedOut() }) { () async throws -> Int in throw Own() }
        }
    }
}
