import Foundation
import NIOConcurrencyHelpers
import ReceiptKit
import ReceiptKitServer
import Testing

/// Every store call made while a request is served waits for the database at most the store's
/// timeout, whatever makes it (`BoundedBackend`): not only those a route wraps in `run`.
@Suite("The database timeout, by construction")
struct BoundedStoreTests {
    @Test("while another connection holds the lock: a call serving a request is cut off at the timeout; one outside a request waits for the lock", arguments: Backend.available)
    func bounded(backend: Backend) async throws {
        try await backend.withDatabase { location, searchPath in
            let store = try Store(location, logger: .silent, postgresSearchPath: searchPath, timeout: .milliseconds(500))
            try await store.whileRunning {
                try await store.migrate()
                let key = SubscriptionKey(bundleId: "com.receiptkit.example", environment: "Sandbox", originalTransactionId: "9100")
                // What the lock blocks: SQLite's exclusive lock every write; PostgreSQL's table
                // lock every read of the inputs.
                let blocked: @Sendable () async throws -> Void = {
                    switch location {
                    case .sqlite: try await store.setHistoryRevision("r", for: [key], at: 0)
                    case .postgres: _ = try await store.inputCount(dedupKeys: nil)
                    }
                }
                let finished = NIOLockedValueBox(false)
                let outside = NIOLockedValueBox<Task<Void, any Error>?>(nil)
                try await Backend.holdingWriteLock(location, searchPath: searchPath) {
                    // Cut off by the store's timeout (its own error, not the database's: SQLite's
                    // busy wait is 10 s), never before it. How long after it depends on the
                    // machine: a cooperative thread blocked by another SQLite wait delays the alarm.
                    let start = ContinuousClock.now
                    let error = await #expect(throws: StoreError.self) { try await StoreCall.serving { try await blocked() } }
                    let waited = ContinuousClock.now - start
                    #expect(waited >= .milliseconds(500), "cut off after \(waited)")
                    #expect(error?.description == StoreError.timedOut.description, "\(String(describing: error))")

                    // Outside a request (the sweep, a command) the same call waits: still waiting
                    // well past the timeout, and done once the lock is released.
                    outside.withLockedValue {
                        $0 = Task {
                            try await blocked()
                            finished.withLockedValue { $0 = true }
                        }
                    }
                    try await Task.sleep(for: .milliseconds(1500))
                    #expect(!finished.withLockedValue { $0 }, "a call outside a request did not wait for the lock")
                }
                try await outside.withLockedValue { $0 }?.value
                #expect(finished.withLockedValue { $0 })
            }
            try await store.close()
        }
    }
}
