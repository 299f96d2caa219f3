import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import ReceiptKitServer
import Testing

/// A database the suite runs on: a new SQLite file, or a new schema in the PostgreSQL database
/// that `RECEIPTKIT_TEST_POSTGRES_URL` names. Every test gets its own, so tests never see each
/// other's events.
enum Backend: String, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    /// The PostgreSQL URL of the test database, if set.
    static let postgresURL: String? = {
        guard let url = ProcessInfo.processInfo.environment["RECEIPTKIT_TEST_POSTGRES_URL"], !url.isEmpty else { return nil }
        return url
    }()

    /// SQLite always; PostgreSQL when `RECEIPTKIT_TEST_POSTGRES_URL` is set, and in CI
    /// (`CI=true`) always, where a PostgreSQL case without the URL fails naming it. Elsewhere,
    /// without the URL, `PostgresAvailabilityTests` is skipped, saying why.
    static let available: [Backend] = postgresURL == nil && !Prerequisite.isCI ? [.sqlite] : [.sqlite, .postgres]

    /// Creates a new, empty database, runs `body` with its configuration, then removes it.
    func withDatabase<T>(
        _ body: (_ location: DatabaseLocation, _ searchPath: String?) async throws -> T
    ) async throws -> T {
        switch self {
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory
                .appendingPathComponent("receiptkit-server-tests-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            return try await body(.sqlite(path: directory.appendingPathComponent("store.sqlite").path), nil)
        case .postgres:
            guard let url = Self.postgresURL else { throw Prerequisite.Missing(name: Prerequisite.postgres.name) }
            let location = try DatabaseLocation(url: url)
            let schema = "receiptkit_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
            try await Self.withPostgresClient(location) { client in
                try await client.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA \(schema)"))  // a generated name
            }
            do {
                let result = try await body(location, schema)
                try await Self.withPostgresClient(location) { client in
                    try await client.query(PostgresQuery(unsafeSQL: "DROP SCHEMA \(schema) CASCADE"))
                }
                return result
            } catch {
                try? await Self.withPostgresClient(location) { client in
                    try await client.query(PostgresQuery(unsafeSQL: "DROP SCHEMA \(schema) CASCADE"))
                }
                throw error
            }
        }
    }

    /// Runs `body` with a running PostgreSQL client of the test database.
    static func withPostgresClient(
        _ location: DatabaseLocation, searchPath: String? = nil, _ body: (PostgresClient) async throws -> Void
    ) async throws {
        guard case .postgres(let postgres) = location else { return }
        let store = Store(postgres: postgres, searchPath: searchPath, logger: Logger.silent)
        guard let client = store.postgresClient else { return }
        try await store.whileRunning { try await body(client) }
    }
}

/// A second view of a test's database, for checking what the server stored.
func withStore(
    _ location: DatabaseLocation, searchPath: String?, _ body: (Store) async throws -> Void
) async throws {
    let store = try Store(location, logger: .silent, postgresSearchPath: searchPath)
    try await store.whileRunning { try await body(store) }
    try await store.close()
}

extension Logger {
    static let silent = Logger(label: "ReceiptKitServerTests", factory: { _ in SwiftLogNoOpLogHandler() })
}

/// The API token the test servers require.
let testToken = "test-token-0123456789"

/// A server on a loopback port, on a new database of `backend`, talked to over HTTP by a real
/// client.
struct TestServer: Sendable {
    let client: any TestClientProtocol
    let location: DatabaseLocation
    let searchPath: String?

    /// Runs `test` against a server on a new database (reached through `postgresPort` instead of
    /// the test database's own port, if given), whose clock is `now`, or `clock` when given.
    static func run(
        _ backend: Backend, environment: [String: String] = Vectors.environment, token: String? = testToken,
        now: Date = Date(timeIntervalSince1970: 1_750_000_000), clock: (@Sendable () -> Date)? = nil, logger: Logger = .silent,
        postgresPort: Int? = nil, configure: (inout ServerConfiguration) -> Void = { _ in },
        _ test: @escaping @Sendable (TestServer) async throws -> Void
    ) async throws {
        try await backend.withDatabase { location, searchPath in
            try await serve(
                location: location, searchPath: searchPath, environment: environment, token: token, clock: clock ?? { now },
                logger: logger, postgresPort: postgresPort, configure: configure, test)
        }
    }

    /// Runs `test` against a server on an existing database: several in turn on one database
    /// are a restart, side by side they are replicas.
    static func serve(
        location: DatabaseLocation, searchPath: String?, environment: [String: String] = Vectors.environment,
        token: String? = testToken, clock: @escaping @Sendable () -> Date, logger: Logger = .silent, postgresPort: Int? = nil,
        configure: (inout ServerConfiguration) -> Void = { _ in },
        _ test: @escaping @Sendable (TestServer) async throws -> Void
    ) async throws {
        var configuration = try ServerConfiguration(environment: environment.merging(["PORT": "0"]) { $1 })
        configuration.database = location
        if let postgresPort, case .postgres(var postgres) = location {
            postgres.port = postgresPort
            configuration.database = .postgres(postgres)
        }
        configuration.apiToken = token
        configure(&configuration)
        let app = try buildApplication(configuration: configuration, logger: logger, postgresSearchPath: searchPath, clock: clock)
        try await app.test(.live) { client in
            try await test(TestServer(client: client, location: location, searchPath: searchPath))
        }
    }

    /// Checks the stored events with another connection to the same database.
    func withStore(_ body: (Store) async throws -> Void) async throws {
        try await ReceiptKitServerTests.withStore(location, searchPath: searchPath, body)
    }

    func post(_ path: String, _ body: String, contentType: String? = "application/json", token: String? = testToken)
        async throws -> TestResponse
    {
        var headers = HTTPFields()
        if let contentType { headers[.contentType] = contentType }
        if let token { headers[.authorization] = "Bearer \(token)" }
        return try await client.execute(uri: path, method: .post, headers: headers, body: ByteBuffer(string: body))
    }

    func put(_ path: String, _ body: String, token: String? = testToken) async throws -> TestResponse {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        if let token { headers[.authorization] = "Bearer \(token)" }
        return try await client.execute(uri: path, method: .put, headers: headers, body: ByteBuffer(string: body))
    }

    func get(_ path: String, token: String? = testToken) async throws -> TestResponse {
        var headers = HTTPFields()
        if let token { headers[.authorization] = "Bearer \(token)" }
        return try await client.execute(uri: path, method: .get, headers: headers, body: nil)
    }

    func delete(_ path: String, token: String? = testToken) async throws -> TestResponse {
        var headers = HTTPFields()
        if let token { headers[.authorization] = "Bearer \(token)" }
        return try await client.execute(uri: path, method: .delete, headers: headers, body: nil)
    }

    /// Posts a notification body to `POST /appstore/notifications`, as Apple does.
    func notify(_ jws: String) async throws -> TestResponse {
        try await post("/appstore/notifications", Vectors.body(wrapping: jws), token: nil)
    }
}

extension TestResponse {
    /// The body, parsed as a JSON object.
    func json() throws -> [String: Any] {
        let parsed = try JSONSerialization.jsonObject(with: Data(String(buffer: body).utf8))
        return try #require(parsed as? [String: Any], "not a JSON object: \(String(buffer: body))")
    }

    /// The error code of an `{"error": {"code", "message"}}` body, or `nil` when it is not one.
    func errorCode() throws -> String? {
        guard let error = try json()["error"] as? [String: Any], error["message"] is String else { return nil }
        return error["code"] as? String
    }

    /// The message of an `{"error": {"code", "message"}}` body, or an empty string.
    func errorMessage() throws -> String {
        (try json()["error"] as? [String: Any])?["message"] as? String ?? ""
    }

    /// Expects an HTTP status and an error body with this code.
    func expectError(_ status: HTTPResponse.Status, _ code: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(self.status == status, "\(String(buffer: body))", sourceLocation: sourceLocation)
        #expect(try errorCode() == code, sourceLocation: sourceLocation)
    }

    var text: String { String(buffer: body) }
}

/// A clock a test moves: the servers it is given to read it at each request.
final class TestClock: Sendable {
    private let instant: Locked<Date>

    init(_ start: Date) {
        instant = Locked(start)
    }

    /// Starts at an instant in milliseconds since 1970.
    convenience init(milliseconds: Int64) {
        self.init(Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    var now: Date { instant.withLockedValue { $0 } }

    /// Moves the clock to an instant in milliseconds since 1970.
    func set(milliseconds: Int64) {
        instant.withLockedValue { $0 = Date(timeIntervalSince1970: Double(milliseconds) / 1000) }
    }

    /// The clock as a server takes it.
    var read: @Sendable () -> Date { { [self] in now } }
}
