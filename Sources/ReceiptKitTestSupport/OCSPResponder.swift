// A real `openssl ocsp` responder on loopback, started by the revocation tests and by the
// benchmark: one process, waited for until it listens, stopped by its own PID only.
package import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real `openssl ocsp` responder on a loopback port, answering from an `openssl ca` index.
///
/// OpenSSL 3.0's `-port` takes a port number only, so the responder listens on the wildcard
/// address; every request is sent to 127.0.0.1. Only this process is ever stopped, by its PID.
package final class OCSPResponder: @unchecked Sendable {
    // @unchecked: started and stopped by one owner (a test, the benchmark); `Process` is not Sendable.
    private let process = Process()
    /// The port it listens on.
    package let port: UInt16
    /// Its standard output and error: readiness and one line per request.
    package let log: URL

    /// `http://127.0.0.1:PORT/ocsp`, for certificates' AIA.
    package var url: String { "http://127.0.0.1:\(port)/ocsp" }

    /// Why a responder did not start, with its log.
    package struct StartError: Error, CustomStringConvertible {
        package let message: String
        package init(message: String) { self.message = message }
        package var description: String { message }
    }

    /// Starts a responder and returns once it is waiting for connections (within 60 seconds, a
    /// bound for a busy machine: it is usually ready in milliseconds).
    ///
    /// - Parameters:
    ///   - directory: The CA's directory, holding `index.txt`; the responder runs in it.
    ///   - caCertificate: The CA certificate, PEM.
    ///   - signerCertificate: The certificate it signs answers with, PEM.
    ///   - signerKey: Its private key, PEM.
    ///   - port: The port (see ``freePort()``).
    ///   - validityMinutes: Its answers' nextUpdate, in minutes after thisUpdate.
    ///   - log: Where its output goes.
    /// - Throws: ``StartError`` when it exits or is not ready in time (it is stopped first).
    package init(
        directory: URL, caCertificate: URL, signerCertificate: URL, signerKey: URL, port: UInt16,
        validityMinutes: Int = 60, log: URL
    ) throws {
        self.port = port
        self.log = log
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl", "ocsp", "-index", "index.txt", "-port", "\(port)", "-rsigner", signerCertificate.path,
                             "-rkey", signerKey.path, "-CA", caCertificate.path, "-nmin", "\(validityMinutes)",
                             "-ignore_err"]
        process.currentDirectoryURL = directory
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        // Ready when it says so. (Not by connecting to it: the responder takes the first
        // connection as its next request and stalls on one that sends nothing.)
        let deadline = ContinuousClock.now + .seconds(60)
        while !logText.contains("waiting for OCSP client connections") {
            guard ContinuousClock.now < deadline, process.isRunning else {
                stop()
                throw StartError(message: "openssl ocsp did not start on port \(port): \(logText)")
            }
            usleep(20_000)
        }
    }

    private var logText: String {
        (try? String(contentsOf: log, encoding: .utf8)) ?? ""
    }

    /// How many requests it has received (it logs each on standard error, unbuffered).
    package var requests: Int {
        logText.components(separatedBy: "Received request").count - 1
    }

    /// Stops this responder's process (SIGTERM, then SIGKILL after half a second: `openssl ocsp`
    /// takes over a second to act on SIGTERM while it waits in accept), by its PID only.
    package func stop() {
        guard process.isRunning else { return }
        let pid = process.processIdentifier
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(0.5)
        while process.isRunning, Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(pid, SIGKILL) }
        process.waitUntilExit()
    }

    deinit {
        stop()
    }

    /// A port nothing listens on at the moment: bound to 127.0.0.1:0 and released.
    ///
    /// - Throws: ``StartError`` when no socket can be bound.
    package static func freePort() throws -> UInt16 {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { throw StartError(message: "cannot open a socket") }
        defer { close(socketFD) }
        return try bindLoopback(socketFD)
    }

    /// Binds a TCP socket to 127.0.0.1 on a port the system picks.
    ///
    /// - Parameter socketFD: An unbound `AF_INET` stream socket.
    /// - Returns: The port it is bound to.
    /// - Throws: ``StartError`` when it cannot be bound.
    package static func bindLoopback(_ socketFD: Int32) throws -> UInt16 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(socketFD, pointer, length) == 0 && getsockname(socketFD, pointer, &length) == 0
            }
        }
        guard bound else { throw StartError(message: "cannot bind 127.0.0.1:0") }
        return UInt16(bigEndian: address.sin_port)
    }
}
