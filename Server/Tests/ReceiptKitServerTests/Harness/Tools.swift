import AppStoreServerAPIFake
import Foundation
import Testing

/// Programs some tests run besides the server (Node.js for the README's example).
enum Tools {
    /// The path of an executable on `PATH`, or `nil`.
    static func path(of name: String) -> String? {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
        return directories.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Runs a program to its end (``ChildProcess``); its standard output then its standard
    /// error, and its exit status.
    static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) async throws
        -> (status: Int32, text: String)
    {
        let result = try await ChildProcess.run(
            URL(fileURLWithPath: executable), arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
        return (result.status, result.stdout + result.stderr)
    }
}
