import Foundation
import Hummingbird
import HummingbirdTesting
import NIOConcurrencyHelpers
import Logging
import PostgresNIO
import ReceiptKitServer
import Testing

extension Operations {
    /// PostgreSQL goes away under a webhook load of 4 connections, on a server of the test's own
    /// (``OwnPostgres``), while `receiptkit-server` runs with its defaults: every request is answered
    /// within 5 s — 200 only once committed, otherwise 503 `database_unavailable` with `Retry-After`
    /// — `/readyz` is 503 while the database is away, and the server serves again within 5 s of its
    /// return, without a restart. Every notification answered 200 is stored exactly once, and those
    /// answered 503, posted again (as Apple retries them), are stored once each.
    @Suite("The database goes away")
    struct DatabaseOutageTests {
        /// How long the database stays away.
        static let outage = Duration.seconds(10)
        /// The longest a request may wait for its answer, and the database's return for the server's.
        static let bound = Duration.seconds(5)

        @Test(
            "PostgreSQL stopped (pg_ctl stop -m fast) for 10 s under 4-connection webhook load: 503 with Retry-After within 5 s, /readyz 503, 200 again within 5 s of its return; every 200 stored once, the rest stored once when posted again",
            .requires(OwnPostgres.prerequisite))
        func postgresStopped() async throws {
            try await OwnPostgres.with { postgres in
                try await Self.outage(
                    on: postgres, idPrefix: 4_100_000,
                    begin: { try await postgres.stop() },
                    end: { try await postgres.start() })
            }
        }

        @Test(
            "every PostgreSQL connection of the server terminated (pg_terminate_backend), and new ones refused, for 10 s under 4-connection webhook load: the same answers, readiness, recovery and storage",
            .requires(OwnPostgres.prerequisite))
        func postgresConnectionsTerminated() async throws {
            try await OwnPostgres.with { postgres in
                let admin = try await PostgresConnection.connect(
                    configuration: .init(host: "127.0.0.1", port: postgres.port, username: "postgres", password: nil, database: "postgres", tls: .disable),
                    id: 1, logger: .silent)
                let terminated = Counter()
                let terminator = BackgroundLoop()
                do {
                    try await Self.outage(
                        on: postgres, idPrefix: 4_200_000,
                        begin: {
                            // Refused from now on ("database is not currently accepting connections"),
                            // then each of the server's sessions ended, as an operator's or a
                            // failover's pg_terminate_backend ends them — again every 100 ms, so
                            // that none outlives the outage.
                            try await admin.query("ALTER DATABASE receiptkit ALLOW_CONNECTIONS false", logger: .silent)
                            terminated.add(try await Self.terminateSessions(admin))
                            terminator.start {
                                while !Task.isCancelled {
                                    try? await Task.sleep(for: .milliseconds(100))
                                    if let count = try? await Self.terminateSessions(admin) { terminated.add(count) }
                                }
                            }
                        },
                        end: {
                            await terminator.stop()
                            try await admin.query("ALTER DATABASE receiptkit ALLOW_CONNECTIONS true", logger: .silent)
                        })
                } catch {
                    await terminator.stop()
                    try? await admin.close()
                    throw error
                }
                try await admin.close()
                // The server had sessions to end: the outage cut it off rather than found it idle.
                #expect(terminated.value >= 1, "pg_terminate_backend ended \(terminated.value) sessions")
                print("operations: pg_terminate_backend ended \(terminated.value) sessions of the server")
            }
        }

        @Test("RECEIPTKIT_DATABASE_TIMEOUT: 3 s by default, decimal seconds, anything else refused")
        func timeoutConfiguration() throws {
            #expect(try ServerConfiguration(environment: Vectors.environment).databaseTimeout == .seconds(3))
            let half = Vectors.environment.merging(["RECEIPTKIT_DATABASE_TIMEOUT": "0.5"]) { $1 }
            #expect(try ServerConfiguration(environment: half).databaseTimeout == .milliseconds(500))
            for bad in ["0", "-1", "abc", "nan"] {
                let error = #expect(throws: ConfigurationError.self, "\(bad)") {
                    try ServerConfiguration(environment: Vectors.environment.merging(["RECEIPTKIT_DATABASE_TIMEOUT": bad]) { $1 })
                }
                #expect(error?.message.contains("RECEIPTKIT_DATABASE_TIMEOUT") == true, "\(bad)")
            }
        }

        @Test(
            "a write lock held elsewhere (SQLite busy, a PostgreSQL table lock): the webhook is 503 database_unavailable with Retry-After at RECEIPTKIT_DATABASE_TIMEOUT, not at the request timeout, and the retry is stored once",
            arguments: Backend.available)
        func lockHeldElsewhere(backend: Backend) async throws {
            let environment = Vectors.environment.merging(["RECEIPTKIT_DATABASE_TIMEOUT": "1"]) { $1 }
            let notification = try await LoadNotifications(count: 1, prefix: 4_000_000).all[0]
            try await TestServer.run(backend, environment: environment) { server in
                try await Backend.holdingWriteLock(server.location, searchPath: server.searchPath) {
                    let start = ContinuousClock.now
                    let refused = try await server.post("/appstore/notifications", notification.body, token: nil)
                    let elapsed = ContinuousClock.now - start
                    try refused.expectError(.serviceUnavailable, "database_unavailable")
                    #expect(refused.headers[.retryAfter] == "5")
                    // At the 1 s database timeout: not before it, and well before the request's 30 s.
                    #expect(elapsed >= .seconds(1) && elapsed < .seconds(10), "answered after \(elapsed)")
                }
                let retried = try await server.post("/appstore/notifications", notification.body, token: nil)
                #expect(retried.status == .ok, "\(retried.text)")
                try await server.withStore { store async throws in
                    #expect(try await store.inputCount(dedupKeys: [notification.dedupKey]) == 1)
                    #expect(try await store.inputCount(dedupKeys: nil) == 1)
                }
            }
        }

        /// Ends every session of the `receiptkit` database (the server's: this one is in `postgres`).
        ///
        /// - Returns: How many it ended.
        static func terminateSessions(_ admin: PostgresConnection) async throws -> Int {
            var count = 0
            let rows = try await admin.query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'receiptkit' AND pid <> pg_backend_pid()",
                logger: .silent)
            for try await ended in rows.decode(Bool.self) where ended { count += 1 }
            return count
        }

        /// A server on `postgres` under webhook load: `begin` takes the database away, and `end`,
        /// 10 s after `begin` started, brings it back. Checks what the suite promises.
        static func outage(
            on postgres: OwnPostgres, idPrefix: Int,
            begin: @escaping @Sendable () async throws -> Void, end: @escaping @Sendable () async throws -> Void
        ) async throws {
            let notifications = try await LoadNotifications(count: 400, prefix: idPrefix)
            let location = try postgres.location()
            try await TestServer.serve(location: location, searchPath: nil, clock: { Date(timeIntervalSince1970: 1_750_000_000) }) { server in
                let port = try #require(server.client.port)
                let probe = ReadinessProbe(port: port)
                let load = WebhookLoad(port: port, notifications: notifications.all, pace: .milliseconds(100))
                let window: OutageWindow
                let outcomes: [LoadOutcome]
                let answers: [ReadinessProbe.Answer]
                do {
                    try await load.wait(for: "40 notifications stored", upTo: .seconds(60)) { $0.filter(\.isStored).count >= 40 }
                    let started = ContinuousClock.now
                    try await begin()
                    let down = ContinuousClock.now
                    try await Task.sleep(until: started + outage)
                    let returning = ContinuousClock.now
                    try await end()
                    let up = ContinuousClock.now
                    window = OutageWindow(down: down, returning: returning, up: up)
                    // Long enough after the return to see every answer 200 from 5 s on.
                    try await load.wait(for: "20 notifications posted 5 s after the database's return", upTo: .seconds(60)) { outcomes in
                        outcomes.filter { $0.start >= up + bound }.count >= 20
                    }
                    outcomes = try await load.stop()
                    answers = try await probe.stop()
                } catch {
                    _ = try? await load.stop()
                    _ = try? await probe.stop()
                    Issue.record("PostgreSQL's log:\n\(postgres.log.suffix(4000))")
                    throw error
                }
                try expectAnswers(outcomes, window)
                try expectReadiness(answers, window)
                try await expectStored(outcomes, notifications, server)
            }
        }

        /// When the database was away: gone from `down` (the stop or the first termination done)
        /// until `returning` (its return begun); back from `up`.
        struct OutageWindow {
            let down: ContinuousClock.Instant
            let returning: ContinuousClock.Instant
            let up: ContinuousClock.Instant

            /// Whether a request was sent and answered while the database was away.
            func within(_ start: ContinuousClock.Instant, _ end: ContinuousClock.Instant) -> Bool {
                start > down && end < returning
            }
        }

        /// Every webhook request answered within 5 s: 200, or 503 `database_unavailable` with
        /// `Retry-After`; none 200 while the database was away; 503s during the outage; every request
        /// 200 from 5 s after its return.
        static func expectAnswers(_ outcomes: [LoadOutcome], _ window: OutageWindow) throws {
            let failures = outcomes.filter { $0.status == nil }
            #expect(failures.isEmpty, "no answer: \(failures.prefix(3).map { $0.failure ?? "" })")
            let slowest = try #require(outcomes.map(\.latency).max())
            #expect(slowest < bound, "the slowest answer took \(slowest)")
            let refused = outcomes.filter { $0.status != nil && $0.status != 200 }
            for outcome in refused {
                #expect(outcome.status == 503 && outcome.code == "database_unavailable", "\(outcome)")
                #expect(outcome.retryAfter.flatMap(Int.init).map { $0 > 0 } == true, "Retry-After: \(outcome.retryAfter ?? "none")")
            }
            let duringOutage = refused.filter { $0.start >= window.down && $0.start < window.returning }
            #expect(!duringOutage.isEmpty, "no 503 while the database was away")
            let storedWhileAway = outcomes.filter { $0.isStored && window.within($0.start, $0.end) }
            #expect(storedWhileAway.isEmpty, "answered 200 while the database was away: \(storedWhileAway.map(\.index))")
            let afterReturn = outcomes.filter { $0.start >= window.up }
            let recovered = try #require(afterReturn.filter(\.isStored).map(\.end).min(), "no 200 after the database's return")
            #expect(recovered - window.up < bound, "the first 200 came \(recovered - window.up) after the database's return")
            let lateRefusals = afterReturn.filter { $0.start >= window.up + bound && !$0.isStored }
            #expect(lateRefusals.isEmpty, "refused 5 s after the database's return: \(lateRefusals)")
            print(
                "operations: \(outcomes.count) webhook requests, \(outcomes.filter(\.isStored).count) answered 200, \(refused.count) 503; slowest answer \(slowest), slowest 503 \(refused.map(\.latency).max() ?? .zero); first 200 \(recovered - window.up) after the database's return")
        }

        /// `/readyz`: 503 with `Retry-After` while the database was away, within 5 s; 200 again within
        /// 5 s of its return.
        static func expectReadiness(_ answers: [ReadinessProbe.Answer], _ window: OutageWindow) throws {
            let slowest = try #require(answers.map(\.latency).max())
            #expect(slowest < bound, "/readyz took \(slowest)")
            let away = answers.filter { window.within($0.start, $0.end) }
            #expect(!away.isEmpty, "/readyz was not asked while the database was away")
            for answer in away {
                #expect(answer.status == 503 && answer.retryAfter != nil, "/readyz answered \(answer.status.map(String.init) ?? "nothing") while the database was away")
            }
            let ready = try #require(answers.filter { $0.start >= window.up && $0.status == 200 }.map(\.end).min(), "/readyz never 200 after the return")
            #expect(ready - window.up < bound, "/readyz was 200 again \(ready - window.up) after the database's return")
            let late = answers.filter { $0.start >= window.up + bound && $0.status != 200 }
            #expect(late.isEmpty, "/readyz not 200 5 s after the return: \(late.map { $0.status.map(String.init) ?? "nothing" })")
            print("operations: /readyz 503 \(away.count) times while the database was away; 200 again \(ready - window.up) after its return")
        }

        /// Every notification answered 200 is stored exactly once; the rest, posted again, are 200
        /// and stored once each; nothing else is stored.
        static func expectStored(_ outcomes: [LoadOutcome], _ notifications: LoadNotifications, _ server: TestServer) async throws {
            let acknowledged = outcomes.filter(\.isStored).map { notifications.all[$0.index] }
            let rest = outcomes.filter { !$0.isStored }.map { notifications.all[$0.index] }
            try await server.withStore { store async throws in
                #expect(try await store.inputCount(dedupKeys: acknowledged.map(\.dedupKey)) == acknowledged.count)
            }
            for notification in rest {
                let again = try await server.post("/appstore/notifications", notification.body, token: nil)
                #expect(again.status == .ok, "\(again.text)")
            }
            let sent = outcomes.map { notifications.all[$0.index].dedupKey }
            try await server.withStore { store async throws in
                #expect(try await store.inputCount(dedupKeys: sent) == sent.count)
                #expect(try await store.inputCount(dedupKeys: nil) == sent.count)
            }
        }
    }
}

/// A count tasks add to.
final class Counter: Sendable {
    private let total = Locked(0)
    func add(_ count: Int) { total.withLockedValue { $0 += count } }
    var value: Int { total.withLockedValue { $0 } }
}

/// A task started by one closure and stopped by another.
final class BackgroundLoop: Sendable {
    private let task = Locked<Task<Void, Never>?>(nil)

    func start(_ body: @escaping @Sendable () async -> Void) {
        task.withLockedValue { $0 = Task { await body() } }
    }

    func stop() async {
        let running = task.withLockedValue { task in
            defer { task = nil }
            return task
        }
        running?.cancel()
        await running?.value
    }
}
