/// Runs `operation`, or throws `timedOut()` once `timeout` has passed; either way the other is
/// cancelled before this returns. The operation must stop on cancellation (wrap a call that may
/// not in ``abandoningOnCancel(_:)``), since this waits for it.
///
/// - Parameters:
///   - timeout: How long the operation may take.
///   - timedOut: The error thrown at the timeout.
///   - operation: The work.
/// - Returns: The operation's result.
/// - Throws: The operation's error, or `timedOut()`.
func withTimeout<T: Sendable>(
    _ timeout: Duration, timedOut: @escaping @Sendable () -> any Error, _ operation: () async throws -> T
) async throws -> T {
    try await withoutActuallyEscaping(operation) { operation in
        try await withThrowingTaskGroup(of: T.self) { group in
            nonisolated(unsafe) let operation = operation  // the group is awaited before this returns
            group.addTask { try await operation() }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw timedOut()
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw timedOut() }
            return first
        }
    }
}
