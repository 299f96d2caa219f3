import ReceiptKit

/// Whether the current task serves a request, and whether a ``Store/run(_:)`` already bounds
/// its store calls: task-local, so that every store call a request makes is under the database
/// timeout whatever makes it — a route, a feature it calls — with nothing to remember.
package enum StoreCall {
    /// Set for the whole of each request (``serving(_:)``, by `RequestLogMiddleware`).
    @TaskLocal static var servingRequest = false
    /// Set inside ``Store/run(_:)``, which bounds what it runs as one.
    @TaskLocal static var bounded = false

    /// Runs `body` as a request is served: each store call it makes waits for the database at
    /// most the store's timeout.
    package static func serving<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await $servingRequest.withValue(true) { try await body() }
    }
}

/// The store's backend as every operation reaches it (``Store/backend``): a query, an update or a
/// run of steps made while a request is served, and not inside ``Store/run(_:)`` (which bounds
/// the operations it runs as one), waits for the database at most the store's timeout, then
/// throws ``StoreError`` (503: the caller retries) and leaves the database call to finish on its
/// own (``abandoning(at:timer:timedOut:_:)``). Outside a request — the sweep, the delivery
/// worker, a command, a migration — nothing is bounded; recording has its own deadline (group
/// commit), and the reconcile lock and `ping` their own waits.
struct BoundedBackend: StoreBackend {
    /// The SQLite or PostgreSQL driver.
    let driver: any StoreBackend
    /// ``Store/timeout``.
    let timeout: Duration?

    var dialect: SQLDialect { driver.dialect }

    func query(_ fetch: Fetch) async throws -> [[StoreValue]] {
        let driver = self.driver
        return try await bounded { try await driver.query(fetch) }
    }

    func update(_ fetch: Fetch) async throws -> [[StoreValue]] {
        let driver = self.driver
        return try await bounded { try await driver.update(fetch) }
    }

    func read<Steps: RowSteps & Sendable>(_ steps: Steps) async throws -> Steps.Result where Steps.Result: Sendable {
        let driver = self.driver
        return try await bounded { try await driver.read(steps) }
    }

    func write<Steps: RowSteps & Sendable>(_ steps: Steps) async throws -> Steps.Result where Steps.Result: Sendable {
        let driver = self.driver
        return try await bounded { try await driver.write(steps) }
    }

    func record(_ recording: Recording, deadline: ContinuousClock.Instant?) async throws -> Recording.Result {
        try await driver.record(recording, deadline: deadline)
    }

    func migrate(_ migrations: ArraySlice<Migration>, at now: Timestamp) async throws {
        try await driver.migrate(migrations, at: now)
    }

    func withReconcileLock<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T? {
        try await driver.withReconcileLock(body)
    }

    func ping() async throws {
        try await driver.ping()
    }

    func close() async throws {
        try await driver.close()
    }

    private func bounded<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        guard let timeout, StoreCall.servingRequest, !StoreCall.bounded else { return try await operation() }
        return try await StoreCall.$bounded.withValue(true) {
            try await abandoning(at: ContinuousClock.now + timeout, timedOut: { StoreError.timedOut }, operation)
        }
    }
}
