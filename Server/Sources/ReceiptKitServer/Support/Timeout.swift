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

/// Wakes sleepers at their deadlines, all of them from one task that ticks while any sleeper
/// waits.
///
/// Every request has a timeout, and nearly every one finishes long before it. A `Task.sleep`
/// per request arms a libdispatch timer, wakes libdispatch's manager thread to do so, and is
/// not disarmed when the sleep is cancelled: under load that was about 3% of a webhook
/// request's time. Here a request's sleep is an entry in a table, removed when it is cancelled.
package final class DeadlineTimer: Sendable {
    /// The timer every ``withTimeout(_:timer:timedOut:_:)`` uses.
    package static let shared = DeadlineTimer(resolution: .milliseconds(10))

    private struct Sleeper {
        let deadline: ContinuousClock.Instant
        let outcome: OnceOutcome<Void>
    }

    private struct State {
        var sleepers: [UInt64: Sleeper] = [:]
        var lastIdentifier: UInt64 = 0
        /// Whether the ticking task runs; it stops once no sleeper is left.
        var isTicking = false
    }

    /// How late past its deadline a sleeper may be woken.
    package let resolution: Duration
    private let state = Locked(State())

    package init(resolution: Duration) {
        self.resolution = resolution
    }

    /// The number of sleepers waiting.
    package var sleeperCount: Int {
        state.withLockedValue { $0.sleepers.count }
    }

    /// Returns once `deadline` has passed (within ``resolution``), or throws `CancellationError`
    /// as soon as the calling task is cancelled.
    package func sleep(until deadline: ContinuousClock.Instant) async throws {
        let outcome = OnceOutcome<Void>()
        let (identifier, startsTicking) = state.withLockedValue { state in
            state.lastIdentifier &+= 1
            state.sleepers[state.lastIdentifier] = Sleeper(deadline: deadline, outcome: outcome)
            defer { state.isTicking = true }
            return (state.lastIdentifier, !state.isTicking)
        }
        if startsTicking {
            Task.detached { await self.tick() }
        }
        try await outcome.value { [self] in
            _ = state.withLockedValue { $0.sleepers.removeValue(forKey: identifier) }
        }
    }

    /// Wakes the sleepers whose deadline has passed, every ``resolution``, until none is left.
    private func tick() async {
        while true {
            try? await Task.sleep(for: resolution)
            let now = ContinuousClock.now
            let due: [OnceOutcome<Void>]? = state.withLockedValue { state in
                guard !state.sleepers.isEmpty else {
                    state.isTicking = false
                    return nil
                }
                let identifiers = state.sleepers.compactMap { $0.value.deadline <= now ? $0.key : nil }
                return identifiers.compactMap { state.sleepers.removeValue(forKey: $0)?.outcome }
            }
            guard let due else { return }
            for outcome in due { outcome.finish(.success(())) }
        }
    }
}
