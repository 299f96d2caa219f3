import NIOConcurrencyHelpers

/// Runs `operation` in a task of its own and waits for it, but stops waiting as soon as the
/// calling task is cancelled (throwing `CancellationError`), whether or not the operation notices.
///
/// A database call can wait where cancellation does not reach it — SQLite's busy handler, a
/// PostgreSQL query blocked on a lock — and a request's timeout cancels the request's task: this
/// is what lets the 503 go out at the timeout rather than when the database gives up. The
/// abandoned operation is cancelled too and finishes on its own; a write it commits after its
/// request was answered 503 is harmless, since the client retries and a replay changes nothing.
///
/// - Parameter operation: The work, typically one store call.
/// - Returns: The operation's result, if it finished before the caller was cancelled.
/// - Throws: The operation's error, or `CancellationError`.
func abandoningOnCancel<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws -> T {
    let outcome = OnceOutcome<T>()
    let task = outcome.start(operation)
    return try await outcome.value { task.cancel() }
}

/// Runs `operation` as ``abandoningOnCancel(_:)`` does, and stops waiting for it at `deadline`
/// too, throwing `timedOut()`: the operation is then cancelled and finishes on its own.
///
/// This is how a request's wait for the database is bounded: a PostgreSQL pool waiting for a
/// connection to a server that is gone, SQLite's busy handler, a lock held elsewhere. One alarm
/// in the shared ``DeadlineTimer`` and the one task ``abandoningOnCancel(_:)`` starts anyway: no
/// task group.
///
/// - Parameters:
///   - deadline: When to stop waiting.
///   - timer: What keeps the deadline, to within its resolution.
///   - timedOut: The error thrown at the deadline.
///   - operation: The work, typically one store call.
/// - Returns: The operation's result, if it finished before the deadline and the caller's
///   cancellation.
/// - Throws: The operation's error, `timedOut()`, or `CancellationError`.
func abandoning<T: Sendable>(
    at deadline: ContinuousClock.Instant, timer: DeadlineTimer = .shared, timedOut: @escaping @Sendable () -> any Error,
    _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let outcome = OnceOutcome<T>()
    let task = outcome.start(operation)
    let alarm = timer.schedule(at: deadline) {
        outcome.finish(.failure(timedOut()))
        task.cancel()
    }
    defer { alarm.cancel() }
    return try await outcome.value { task.cancel() }
}

/// The first of an operation's result and its caller's cancellation, handed to the one waiting
/// continuation exactly once, whichever arrives first and whenever the continuation arrives.
final class OnceOutcome<T: Sendable>: Sendable {
    private enum State {
        case empty
        case waiting(CheckedContinuation<T, any Error>)
        case finished(Result<T, any Error>)
        case delivered
    }

    private let state = Locked(State.empty)

    /// Runs `operation` in a task of its own, its result or error finishing this.
    ///
    /// - Returns: The task, to cancel when the wait for it is abandoned.
    func start(_ operation: @escaping @Sendable () async throws -> T) -> Task<Void, Never> {
        Task {
            do {
                finish(.success(try await operation()))
            } catch {
                finish(.failure(error))
            }
        }
    }

    /// Waits for the result, or throws `CancellationError` as soon as the calling task is
    /// cancelled (after calling `onCancel`).
    func value(onCancel: @Sendable () -> Void = {}) async throws -> T {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                wait(continuation)
            }
        } onCancel: {
            onCancel()
            finish(.failure(CancellationError()))
        }
    }

    private func wait(_ continuation: CheckedContinuation<T, any Error>) {
        let result: Result<T, any Error>? = state.withLockedValue { state in
            switch state {
            case .finished(let result):
                state = .delivered
                return result
            default:
                state = .waiting(continuation)
                return nil
            }
        }
        if let result { continuation.resume(with: result) }
    }

    func finish(_ result: Result<T, any Error>) {
        let continuation: CheckedContinuation<T, any Error>? = state.withLockedValue { state in
            switch state {
            case .empty:
                state = .finished(result)
                return nil
            case .waiting(let continuation):
                state = .delivered
                return continuation
            case .finished, .delivered:
                return nil
            }
        }
        continuation?.resume(with: result)
    }
}
