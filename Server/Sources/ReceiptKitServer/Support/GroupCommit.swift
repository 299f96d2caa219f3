import NIOConcurrencyHelpers

/// Group commit: writes submitted while a database transaction is running wait for it, then go
/// together into the next one. One commit (one WAL append and `fsync` on SQLite) then serves a
/// whole batch, and a busy server writes in fewer, larger transactions, while a lone write
/// starts at once: nothing waits for a batch to fill.
///
/// Each submitter gets its own item's result once the transaction holding it has committed, or
/// the transaction's error when it did not (every item of a failed commit fails). An item's own
/// failure is its own: `commit` runs each item so that a failing one leaves the others intact
/// (on SQLite, a savepoint per item) and reports it in that item's result.
///
/// A submitter whose task is cancelled (its request timed out) stops waiting at once; its item
/// is still written if it was submitted. That is harmless: the client is answered 503, retries,
/// and the retry is a replay.
package final class GroupCommit<Item: Sendable, Output: Sendable>: Sendable {
    /// Runs one transaction over a batch, in submission order, returning one result per item; it
    /// throws when the transaction as a whole failed (nothing of it committed).
    package typealias Commit = @Sendable ([Item]) async throws -> [Result<Output, any Error>]

    private struct Pending {
        var item: Item
        var outcome: OnceOutcome<Output>
    }

    private struct State {
        var pending: [Pending] = []
        /// Whether a drain is running: it takes every pending item before it stops.
        var isDraining = false
    }

    private let commit: Commit
    private let maximumBatch: Int
    private let state = Locked(State())

    /// - Parameters:
    ///   - maximumBatch: The most items one transaction takes (bounds a transaction's size and
    ///     the time its locks are held).
    ///   - commit: One transaction over a batch.
    package init(maximumBatch: Int, commit: @escaping Commit) {
        precondition(maximumBatch > 0, "a batch holds at least one item")
        self.maximumBatch = maximumBatch
        self.commit = commit
    }

    /// The number of items waiting for a transaction (not counting those in the running one).
    package var pendingCount: Int {
        state.withLockedValue { $0.pending.count }
    }

    /// Writes an item in the next transaction and returns its result once that has committed.
    ///
    /// - Parameters:
    ///   - item: What to write.
    ///   - deadline: When to stop waiting, if ever: the item is still written if it was
    ///     submitted (as when the caller is cancelled).
    ///   - timer: What keeps the deadline.
    ///   - timedOut: The error thrown at the deadline.
    /// - Throws: The item's own error, the transaction's, `timedOut()` at the deadline, or
    ///   `CancellationError` when the calling task is cancelled first.
    package func submit(
        _ item: Item, deadline: ContinuousClock.Instant? = nil, timer: DeadlineTimer = .shared,
        timedOut: @escaping @Sendable () -> any Error = { CancellationError() }
    ) async throws -> Output {
        let outcome = OnceOutcome<Output>()
        let alarm = deadline.map { deadline in timer.schedule(at: deadline) { outcome.finish(.failure(timedOut())) } }
        defer { alarm?.cancel() }
        let startsDrain = state.withLockedValue { state in
            state.pending.append(Pending(item: item, outcome: outcome))
            defer { state.isDraining = true }
            return !state.isDraining
        }
        if startsDrain {
            // Not a child of the request: a request's cancellation must not stop the batch
            // its item shares with others.
            Task { await self.drain() }
        }
        return try await outcome.value()
    }

    /// Commits batches until nothing is pending.
    private func drain() async {
        while true {
            let batch: [Pending] = state.withLockedValue { state in
                let count = min(state.pending.count, maximumBatch)
                if count == 0 { state.isDraining = false }
                let batch = Array(state.pending.prefix(count))
                state.pending.removeFirst(count)
                return batch
            }
            if batch.isEmpty { return }
            do {
                let results = try await commit(batch.map(\.item))
                precondition(results.count == batch.count, "a commit returns one result per item")
                for (pending, result) in zip(batch, results) {
                    pending.outcome.finish(result)
                }
            } catch {
                for pending in batch {
                    pending.outcome.finish(.failure(error))
                }
            }
        }
    }
}
