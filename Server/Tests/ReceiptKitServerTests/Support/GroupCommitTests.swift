import ReceiptKitServer
import Synchronization
import Testing

/// ``GroupCommit``'s promises, with a commit that the test holds open: what arrives during a
/// transaction goes into the next one, each submitter gets its own item's result, a failed
/// transaction fails its whole batch and only it, and a cancelled submitter stops waiting.
@Suite("Group commit")
struct GroupCommitTests {
    struct Failure: Error, Equatable {
        let item: Int
    }

    /// A commit the test controls: it records each batch, holds the first one open until
    /// ``release()``, fails the items `failing` names, and throws for a batch holding `poison`.
    final class Database: Sendable {
        let failing: Set<Int>
        let poison: Int?
        private let state = Mutex<(batches: [[Int]], held: Bool, waiting: [CheckedContinuation<Void, Never>])>(([], true, []))

        init(failing: Set<Int> = [], poison: Int? = nil) {
            self.failing = failing
            self.poison = poison
        }

        var batches: [[Int]] { state.withLock { $0.batches } }

        func commit(_ items: [Int]) async throws -> [Result<Int, any Error>] {
            let isFirst = state.withLock { state in
                state.batches.append(items)
                return state.batches.count == 1
            }
            if isFirst {
                await withCheckedContinuation { continuation in
                    let resumeNow = state.withLock { state in
                        if state.held { state.waiting.append(continuation) }
                        return !state.held
                    }
                    if resumeNow { continuation.resume() }
                }
            }
            if let poison, items.contains(poison) { throw Failure(item: poison) }
            return items.map { failing.contains($0) ? .failure(Failure(item: $0)) : .success($0 * 10) }
        }

        func release() {
            let waiting = state.withLock { state in
                state.held = false
                defer { state.waiting = [] }
                return state.waiting
            }
            for continuation in waiting { continuation.resume() }
        }
    }

    /// Waits until `condition` holds, polling every millisecond, for at most 60 s (a bound for a
    /// busy machine: it usually holds within milliseconds).
    func eventually(_ condition: () -> Bool, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if condition() { return }
            try await Task.sleep(for: .milliseconds(1))
        }
        Issue.record("the condition did not hold within 60 s", sourceLocation: sourceLocation)
    }

    /// Submits 0 and holds its transaction open, then submits `items` while it is held.
    func submitDuringFirstCommit(
        _ items: [Int], database: Database, maximumBatch: Int = 64
    ) async throws -> (GroupCommit<Int, Int>, [Task<Int, any Error>]) {
        let commits = GroupCommit<Int, Int>(maximumBatch: maximumBatch) { try await database.commit($0) }
        let first = Task { try await commits.submit(0) }
        try await eventually { database.batches.count == 1 }
        let later = items.map { item in Task { try await commits.submit(item) } }
        try await eventually { commits.pendingCount == items.count }
        return (commits, [first] + later)
    }

    @Test("what arrives during a transaction goes into the next one; each gets its own result")
    func batches() async throws {
        let database = Database()
        let (_, tasks) = try await submitDuringFirstCommit(Array(1...9), database: database)
        database.release()
        for (item, task) in zip(0...9, tasks) {
            #expect(try await task.value == item * 10)
        }
        #expect(database.batches.count == 2)
        #expect(database.batches.first == [0])
        #expect(database.batches.last?.sorted() == Array(1...9))
    }

    @Test("a batch holds at most maximumBatch items, in the order they were submitted")
    func bounded() async throws {
        let database = Database()
        let (_, tasks) = try await submitDuringFirstCommit(Array(1...9), database: database, maximumBatch: 4)
        database.release()
        for task in tasks { _ = try await task.value }
        #expect(database.batches.map(\.count) == [1, 4, 4, 1])
        #expect(database.batches.dropFirst().flatMap { $0 }.sorted() == Array(1...9))
    }

    @Test("an item's own failure is its own: the others of its batch succeed")
    func itemFailure() async throws {
        let database = Database(failing: [3, 5])
        let (_, tasks) = try await submitDuringFirstCommit(Array(1...6), database: database)
        database.release()
        for (item, task) in zip(0...6, tasks) {
            if item == 3 || item == 5 {
                await #expect(throws: Failure(item: item)) { try await task.value }
            } else {
                #expect(try await task.value == item * 10)
            }
        }
    }

    @Test("a failed transaction fails every item of its batch and no other")
    func transactionFailure() async throws {
        let database = Database(poison: 4)
        let (commits, tasks) = try await submitDuringFirstCommit(Array(1...6), database: database)
        database.release()
        #expect(try await tasks[0].value == 0)
        for task in tasks.dropFirst() {
            await #expect(throws: Failure(item: 4)) { try await task.value }
        }
        // The next transaction is not affected.
        #expect(try await commits.submit(7) == 70)
    }

    @Test("a cancelled submitter stops waiting at once; its item is still written")
    func cancellation() async throws {
        let database = Database()
        let (_, tasks) = try await submitDuringFirstCommit([1, 2], database: database)
        tasks[1].cancel()
        await #expect(throws: CancellationError.self) { try await tasks[1].value }
        database.release()
        #expect(try await tasks[0].value == 0)
        #expect(try await tasks[2].value == 20)
        #expect(database.batches.last?.sorted() == [1, 2])
    }
}
