import Foundation
import Testing

/// Something a test needs from outside the package: the shared vectors, or a PostgreSQL database.
///
/// A test that declares one with ``Testing/Trait/requires(_:)`` runs when it is present. When it
/// is absent, the test is skipped locally, and `swift test` prints the skip with what is missing;
/// in CI (`CI=true`) the same test fails instead, naming what is missing, so that a green CI run
/// means every test ran. (The library's tests have the same helper, in their own target.)
struct Prerequisite: Sendable {
    /// What is missing, as the skip or the failure names it.
    let name: String
    let isPresent: @Sendable () -> Bool

    /// Where the shared vectors are looked for: `RECEIPTKIT_SHARED_VECTORS` when set, else
    /// `../shared/vectors` beside the checkout.
    static let sharedVectorsPath: String = {
        if let path = ProcessInfo.processInfo.environment["RECEIPTKIT_SHARED_VECTORS"], !path.isEmpty { return path }
        return Vectors.repositoryRoot.deletingLastPathComponent().appendingPathComponent("shared/vectors").path
    }()

    /// The shared vectors folder, or `nil` when it is absent.
    static let sharedVectorsURL: URL? = {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: sharedVectorsPath, isDirectory: &isDirectory), isDirectory.boolValue
        else { return nil }
        return URL(fileURLWithPath: sharedVectorsPath, isDirectory: true)
    }()

    /// `../shared/vectors`: Apple's real data, beside the checkout.
    static let sharedVectors = Prerequisite(name: "the shared vectors folder (\(sharedVectorsPath))") { sharedVectorsURL != nil }

    /// A PostgreSQL test database, named by `RECEIPTKIT_TEST_POSTGRES_URL`.
    static let postgres = Prerequisite(
        name: "RECEIPTKIT_TEST_POSTGRES_URL (a postgres:// URL of an empty database; without it every store test ran on SQLite only)"
    ) { Backend.postgresURL != nil }

    /// Node.js (18 or later) on `PATH`, to run the README's Node example.
    static let node = Prerequisite(name: "node (Node.js 18 or later, to run the README's Node example)") {
        Tools.path(of: "node") != nil
    }

    /// Python 3 on `PATH`, to run the Python example of `docs/events.md`.
    static let python = Prerequisite(name: "python3 (to run the Python example of docs/events.md)") {
        Tools.path(of: "python3") != nil
    }

    /// PHP's command-line interpreter on `PATH`, to run the PHP example of `docs/events.md`.
    static let php = Prerequisite(name: "php (PHP's command line, Debian's php-cli: to run the PHP example of docs/events.md)") {
        Tools.path(of: "php") != nil
    }

    /// Whether this run is CI's, where nothing may be skipped: `CI=true` (or `1`).
    static var isCI: Bool {
        ["true", "1"].contains(ProcessInfo.processInfo.environment["CI"]?.lowercased() ?? "")
    }

    /// The prerequisite is absent in a CI run.
    struct Missing: Error, CustomStringConvertible {
        let name: String
        var description: String { "\(name) is missing; CI=true, where this test must run, not skip" }
    }

    /// `true` when present; `false` (the test is skipped) when absent outside CI.
    ///
    /// - Throws: ``Missing`` when absent in CI, which fails the test.
    func check() throws -> Bool {
        if isPresent() { return true }
        if Self.isCI { throw Missing(name: name) }
        return false
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test or suite only when `prerequisite` is present: otherwise a skip naming it, or
    /// in CI (`CI=true`) a failure naming it.
    static func requires(_ prerequisite: Prerequisite) -> Self {
        .enabled("\(prerequisite.name) is missing") { try prerequisite.check() }
    }
}
