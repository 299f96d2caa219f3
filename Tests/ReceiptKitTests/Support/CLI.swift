import Foundation
import Testing

/// Runs the built `verify-receipt` executable, which SwiftPM builds beside the test bundle.
enum CLI {
    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String

        /// The output records, one JSON object per line.
        func records() throws -> [[String: Any]] {
            try stdout.split(separator: "\n").map { try parseJSON(String($0)) }
        }
    }

    static let executable: URL = {
        let testBinary = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: testBinary).deletingLastPathComponent()
        // On Linux the test binary is .build/<triple>/<configuration>/<Package>PackageTests.xctest.
        while directory.path != "/" {
            let candidate = directory.appendingPathComponent("verify-receipt")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory.deleteLastPathComponent()
        }
        return Fixtures.packageRoot.appendingPathComponent(".build/debug/verify-receipt")
    }()

    /// Runs `verify-receipt` with `arguments` in the package root, feeding `stdin`.
    static func run(_ arguments: [String], stdin: String = "") throws -> Result {
        try run(arguments, stdinBytes: Array(stdin.utf8))
    }

    static func run(_ arguments: [String], stdinBytes: [UInt8]) throws -> Result {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = Fixtures.packageRoot
        let input = Pipe()
        let output = Pipe()
        let error = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = error
        try process.run()
        // Write stdin and drain stdout/stderr concurrently so large outputs cannot deadlock.
        let writer = Thread {
            input.fileHandleForWriting.write(Data(stdinBytes))
            try? input.fileHandleForWriting.close()
        }
        writer.start()
        let errorData = LockedData()
        let errorReader = Thread { errorData.set(error.fileHandleForReading.readDataToEndOfFile()) }
        errorReader.start()
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        while !errorData.done { usleep(1000) }
        return Result(
            status: process.terminationStatus,
            stdout: String(decoding: outputData, as: UTF8.self),
            stderr: String(decoding: errorData.value, as: UTF8.self))
    }
}

/// A value written once by another thread.
final class LockedData: @unchecked Sendable {
    // @unchecked: every access goes through `lock`.
    private let lock = NSLock()
    private var data = Data()
    private var finished = false

    func set(_ value: Data) {
        lock.lock()
        data = value
        finished = true
        lock.unlock()
    }

    var done: Bool {
        lock.lock()
        defer { lock.unlock() }
        return finished
    }

    var value: Data {
        lock.lock()
        defer { lock.unlock() }
        return data
    }
}
