import Foundation
import Testing

/// Something a test needs from outside the package, such as `../shared/vectors`.
///
/// A test that declares one with ``Testing/Trait/requires(_:)`` runs when it is present. When it
/// is absent, the test is skipped locally, and `swift test` prints the skip with what is missing;
/// in CI (`CI=true`) the same test fails instead, naming what is missing, so that a green CI run
/// means every test ran.
struct Prerequisite: Sendable {
    /// What is missing, as the skip or the failure names it.
    let name: String
    let isPresent: @Sendable () -> Bool

    /// `../shared/vectors`: Apple's real and mock data, beside the checkout.
    static let sharedVectors = Prerequisite(
        name: "the shared vectors folder (\(Fixtures.sharedVectorsPath))"
    ) { Fixtures.hasSharedVectors }

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
