import NIOConcurrencyHelpers

/// Runs `operation`, or throws `timedOut()` once `timeout` has passed; either way the other is
/// cancelled before this returns. The operation must stop on cancellation (wrap a call that may
/// not in ``abandoningOnCancel(_:)``), since this waits for it.
///
/// - Parameters:
///   - timeout: How long the operation may take.
///   - timer: What keeps the timeout, to within its resolution (10 ms for the shared one).
///   - timedOut: The error thrown at the timeout.
///   - operation: The work.
/// - Returns: The operation's result.
/// - Throws: The operation's error, or `timedOut()`.
package func withTimeout<T: Sendable>(
    _ timeout: Duration, timer: DeadlineTimer = .shared, timedOut: @escaping @Sendable () -> any Error,
    _ operation: () async throws -> T
) async throws -> T {
    let deadline = ContinuousClock.now + timeout
    return try await withoutActuallyEscaping(operation) { operation in
        try await withThrowingTaskGroup(of: T.self) { group in
            nonisolated(unsafe) let operation = operation  // the group is awaited before this returns
            group.addTask { try await operation() }
            group.addTask {
                try await timer.sleep(until: deadline)
                throw timedOut()
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw timedOut() }
            return first
        }
    }
}

/// Wakes sleepers and fires alarms at their deadlines, all of them from one task that ticks
/// while any waits.
///
/// Every request has a timeout, and nearly every one finishes long before it. A `Task.sleep`
/// per request arms a libdispatch timer, wakes libdispatch's manager thread to do so, and is
/// not disarmed when the sleep is cancelled: under load that was about 3% of a webhook
/// request's time. Here a request's sleep, or its alarm, is an entry in a table, removed when it
/// is cancelled.
package final class DeadlineTimer: Sendable {
    /// The timer every ``withTimeout(_:timer:timedOut:_:)`` uses.
    package static let shared = DeadlineTimer(resolution: .milliseconds(10))

    private struct Entry {
        let deadline: ContinuousClock.Instant
        let fire: @Sendable () -> Void
    }

    private struct State {
        var entries: [UInt64: Entry] = [:]
        var lastIdentifier: UInt64 = 0
        /// Whether the ticking task runs; it stops once no entry is left.
        var isTicking = false
        /// How many times the ticking task has looked at the entries.
        var ticks = 0
    }

    /// How late past its deadline a sleeper may be woken, or an alarm fired.
    package let resolution: Duration
    /// The time the deadlines are compared with: the continuous clock's, or a test's.
    private let now: @Sendable () -> ContinuousClock.Instant
    private let state = Locked(State())

    /// - Parameters:
    ///   - resolution: How often it ticks while any sleeper or alarm waits.
    ///   - now: The time its deadlines are compared with at each tick (a test moves it by hand).
    package init(resolution: Duration, now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.resolution = resolution
        self.now = now
    }

    /// The number of sleepers and alarms waiting.
    package var sleeperCount: Int {
        state.withLockedValue { $0.entries.count }
    }

    /// How many times the timer has looked at its deadlines, and whether its task ticks now.
    package var ticking: (ticks: Int, isTicking: Bool) {
        state.withLockedValue { ($0.ticks, $0.isTicking) }
    }

    /// Returns once `deadline` has passed (within ``resolution``), or throws `CancellationError`
    /// as soon as the calling task is cancelled.
    package func sleep(until deadline: ContinuousClock.Instant) async throws {
        let outcome = OnceOutcome<Void>()
        let alarm = schedule(at: deadline) { outcome.finish(.success(())) }
        try await outcome.value { alarm.cancel() }
    }

    /// Calls `fire` once `deadline` has passed (within ``resolution``), from the timer's task,
    /// unless the alarm is cancelled first.
    ///
    /// - Parameters:
    ///   - deadline: When to call `fire`.
    ///   - fire: What to do then; it must return promptly (it runs on the timer's task).
    /// - Returns: The alarm, to cancel once what it guards has finished.
    package func schedule(at deadline: ContinuousClock.Instant, _ fire: @escaping @Sendable () -> Void) -> Alarm {
        let (identifier, startsTicking) = state.withLockedValue { state in
            state.lastIdentifier &+= 1
            state.entries[state.lastIdentifier] = Entry(deadline: deadline, fire: fire)
            defer { state.isTicking = true }
            return (state.lastIdentifier, !state.isTicking)
        }
        if startsTicking {
            // Its work is a few comparisons a tick, and every timeout of the process waits for
            // it: at a lower priority than the requests, a busy pool delays it past their
            // deadlines (seen 1.5 s late where a plain sleep was 0.16 s).
            Task.detached(priority: .high) { await self.tick() }
        }
        return Alarm(timer: self, identifier: identifier)
    }

    /// An alarm of ``schedule(at:_:)``.
    package struct Alarm: Sendable {
        fileprivate let timer: DeadlineTimer
        fileprivate let identifier: UInt64

        /// Removes the alarm, if it has not fired: it then never fires.
        package func cancel() {
            _ = timer.state.withLockedValue { $0.entries.removeValue(forKey: identifier) }
        }
    }

    /// Fires the entries whose deadline has passed, every ``resolution``, until none is left.
    private func tick() async {
        while true {
            try? await Task.sleep(for: resolution)
            let now = self.now()
            let due: [Entry]? = state.withLockedValue { state in
                state.ticks += 1
                guard !state.entries.isEmpty else {
                    state.isTicking = false
                    return nil
                }
                let identifiers = state.entries.compactMap { $0.value.deadline <= now ? $0.key : nil }
                return identifiers.compactMap { state.entries.removeValue(forKey: $0) }
            }
            guard let due else { return }
            // Earliest first: of two deadlines a late tick finds passed, the earlier fires first.
            for entry in due.sorted(by: { $0.deadline < $1.deadline }) { entry.fire() }
        }
    }
}
