// The revocation part of the benchmark: a throwaway CA under the test PKI's intermediate, a leaf
// whose AIA names a real `openssl ocsp` responder on loopback, and JWS signed by that leaf.
import Foundation
import ReceiptKitTestSupport

final class OCSPBenchmark {
    /// The responder currently running, stopped before any early exit.
    nonisolated(unsafe) static var running: OCSPBenchmark?

    let directory: URL
    /// The `openssl ocsp` process the leaf's AIA names.
    private var responder: OCSPResponder?
    /// The typical transactions, re-signed by the new leaf.
    private(set) var tokens: [String] = []

    /// Issues the leaf and a responder certificate, starts the responder and signs the tokens.
    ///
    /// - Parameters:
    ///   - root: The package root (for `TestVectors/pki`).
    ///   - directory: A scratch directory.
    ///   - typicalJWS: JWS whose payloads are re-signed by the new leaf.
    init(root: String, directory parent: URL, typicalJWS: [String]) throws {
        directory = parent.appendingPathComponent("ocsp")
        let pki = "\(root)/TestVectors/pki"
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("newcerts"), withIntermediateDirectories: true)
        try run(["x509", "-inform", "DER", "-in", "\(pki)/intermediate.der", "-out", "ca.pem"])
        try Data().write(to: directory.appendingPathComponent("index.txt"))
        try Data("unique_subject = no\n".utf8).write(to: directory.appendingPathComponent("index.txt.attr"))
        try Data("5EC0FFEE0001\n".utf8).write(to: directory.appendingPathComponent("serial"))
        try Data("""
            [ ca ]
            default_ca = bench
            [ bench ]
            dir = \(directory.path)
            database = $dir/index.txt
            new_certs_dir = $dir/newcerts
            serial = $dir/serial
            certificate = $dir/ca.pem
            private_key = \(pki)/intermediate.key
            default_md = sha384
            policy = any
            unique_subject = no
            [ any ]
            commonName = supplied
            """.utf8).write(to: directory.appendingPathComponent("ca.cnf"))
        let port = try OCSPResponder.freePort()
        try issue("responder", ["extendedKeyUsage = OCSPSigning"])
        try issue("leaf", ["1.2.840.113635.100.6.11.1 = DER:0500", "authorityInfoAccess = OCSP;URI:http://127.0.0.1:\(port)/ocsp"])

        responder = try OCSPResponder(
            directory: directory, caCertificate: directory.appendingPathComponent("ca.pem"),
            signerCertificate: directory.appendingPathComponent("responder.pem"),
            signerKey: directory.appendingPathComponent("responder.key"), port: port,
            log: directory.appendingPathComponent("responder.log"))
        Self.running = self

        let leaf = try Data(contentsOf: directory.appendingPathComponent("leaf.der")).base64EncodedString()
        let intermediate = try Data(contentsOf: URL(fileURLWithPath: "\(pki)/intermediate.der")).base64EncodedString()
        let rootCertificate = try Data(contentsOf: URL(fileURLWithPath: "\(pki)/root.der")).base64EncodedString()
        let header = Self.base64URL(Data("{\"alg\":\"ES256\",\"x5c\":[\"\(leaf)\",\"\(intermediate)\",\"\(rootCertificate)\"]}".utf8))
        tokens = try typicalJWS.map { token in
            let payload = token.split(separator: ".")[1]
            let input = "\(header).\(payload)"
            let der = try run(["dgst", "-sha256", "-sign", "leaf.key"], input: Data(input.utf8))
            return "\(input).\(Self.base64URL(Self.rawSignature(der)))"
        }
    }

    /// How many requests the responder has received (it logs each).
    var responderRequests: Int {
        responder?.requests ?? 0
    }

    /// Runs verify-receipt once over `input` and returns the revocation line of its `--summary`.
    func summary(_ executable: String, _ arguments: [String], input: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: input))
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text.split(separator: "\n").first { $0.contains("OCSP requests") }.map { $0.trimmingCharacters(in: .whitespaces) } ?? "(none)"
    }

    /// Stops the responder, by its PID only.
    func stop() {
        Self.running = nil
        responder?.stop()
    }

    private func issue(_ name: String, _ extensions: [String]) throws {
        try run(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "\(name).key"])
        try run(["req", "-new", "-key", "\(name).key", "-subj", "/CN=ReceiptKit Benchmark \(name)", "-out", "\(name).csr"])
        let all = ["basicConstraints = critical, CA:FALSE", "keyUsage = critical, digitalSignature",
                   "subjectKeyIdentifier = hash", "authorityKeyIdentifier = keyid"] + extensions
        try Data(("[ ext ]\n" + all.joined(separator: "\n") + "\n").utf8).write(to: directory.appendingPathComponent("\(name).ext"))
        try run(["ca", "-batch", "-config", "ca.cnf", "-extfile", "\(name).ext", "-extensions", "ext", "-startdate",
                 "20240101000000Z", "-enddate", "20300101000000Z", "-notext", "-in", "\(name).csr", "-out", "\(name).pem"])
        try run(["x509", "-in", "\(name).pem", "-outform", "DER", "-out", "\(name).der"])
    }

    @discardableResult
    private func run(_ arguments: [String], input: Data? = nil) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.currentDirectoryURL = directory
        let output = Pipe()
        let inputPipe = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = inputPipe
        try process.run()
        if let input { inputPipe.fileHandleForWriting.write(input) }
        try inputPipe.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            FileHandle.standardError.write(Data("openssl \(arguments.joined(separator: " ")) failed\n".utf8))
            throw CocoaError(.fileWriteUnknown)
        }
        return data
    }

    /// A DER `Ecdsa-Sig-Value` as the 64 bytes `r || s` JWS carries.
    private static func rawSignature(_ der: Data) -> Data {
        let bytes = [UInt8](der)
        var index = 2
        func integer() -> [UInt8] {
            let length = Int(bytes[index + 1])
            let value = Array(bytes[(index + 2)..<(index + 2 + length)].drop { $0 == 0 })
            index += 2 + length
            return [UInt8](repeating: 0, count: 32 - value.count) + value
        }
        return Data(integer() + integer())
    }

    private static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
