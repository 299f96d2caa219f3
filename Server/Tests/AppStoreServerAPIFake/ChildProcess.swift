public import Foundation
import Synchronization

/// A program run to its end by a test, as its own process: standard input fed and standard
/// output and error collected by threads of their own while it runs, so that neither a full pipe
/// (a program that writes more than a pipe holds blocks until someone reads) nor the wait blocks a
/// Swift concurrency thread — the servers and fakes such a program talks to run in the test's
/// process, on those threads. Shared by the client's tests and the server's.
public enum ChildProcess {
    public struct Result: Sendable {
        public let status: Int32
        public let stdout: String
        public let stderr: String
    }

    /// Runs `executable` with `arguments` in `environment`, `stdin` on its standard input.
    public static func run(
        _ executable: URL, _ arguments: [String], environment: [String: String], stdin: String = ""
    ) async throws -> Result {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = environment
        let input = Pipe()
        let output = Pipe()
        let error = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = error
        let outputData = Collected()
        let errorData = Collected()
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
                return
            }
            Thread {
                input.fileHandleForWriting.write(Data(stdin.utf8))
                try? input.fileHandleForWriting.close()
            }.start()
            Thread { outputData.set(output.fileHandleForReading.readDataToEndOfFile()) }.start()
            Thread { errorData.set(error.fileHandleForReading.readDataToEndOfFile()) }.start()
        }
        return Result(
            status: status, stdout: String(decoding: await outputData.value(), as: UTF8.self),
            stderr: String(decoding: await errorData.value(), as: UTF8.self))
    }

    /// Bytes a reader thread collects until its pipe closes.
    private final class Collected: Sendable {
        private let state = Mutex<(Data?, [CheckedContinuation<Data, Never>])>((nil, []))

        func set(_ data: Data) {
            let waiting = state.withLock { state -> [CheckedContinuation<Data, Never>] in
                state.0 = data
                defer { state.1 = [] }
                return state.1
            }
            waiting.forEach { $0.resume(returning: data) }
        }

        func value() async -> Data {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Data? in
                    if let data = state.0 { return data }
                    state.1.append(continuation)
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }
}
