import Foundation
import ReceiptKitTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Runs the `openssl` command and returns its standard output; a non-zero exit fails the test.
@discardableResult
func runOpenSSL(_ arguments: [String], in directory: URL) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["openssl"] + arguments
    process.currentDirectoryURL = directory
    let output = Pipe()
    let error = Pipe()
    process.standardOutput = output
    process.standardError = error
    try process.run()
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    let errorData = error.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    try #require(process.terminationStatus == 0,
                 "openssl \(arguments.joined(separator: " ")): \(String(decoding: errorData, as: UTF8.self))")
    return String(decoding: outputData, as: UTF8.self)
}

/// A certificate authority made at test time in a temporary directory with `openssl ca`, under
/// a key of the test PKI (`TestVectors/pki`): its `index.txt` is what an `openssl ocsp`
/// responder answers from, and what `openssl ca -gencrl` lists.
final class TestCA: @unchecked Sendable {
    // @unchecked: used from one test at a time; openssl keeps its state in files.
    let directory: URL
    /// The CA certificate, PEM.
    let certificate: URL
    /// The CA certificate, DER.
    let certificateDER: [UInt8]
    let key: URL

    /// A CA from an existing certificate and key of the test PKI (by default the intermediate),
    /// or from a certificate issued at test time.
    ///
    /// - Parameters:
    ///   - certificateDER: The CA's certificate, DER.
    ///   - key: Its private key (PEM).
    init(certificateDER: [UInt8], key: URL) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("receiptkit-ca-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("newcerts"), withIntermediateDirectories: true)
        self.certificateDER = certificateDER
        self.key = key
        certificate = directory.appendingPathComponent("ca.pem")
        try Data(certificateDER).write(to: directory.appendingPathComponent("ca.der"))
        try runOpenSSL(["x509", "-inform", "DER", "-in", "ca.der", "-out", certificate.path], in: directory)
        try Data().write(to: directory.appendingPathComponent("index.txt"))
        try Data("unique_subject = no\n".utf8).write(to: directory.appendingPathComponent("index.txt.attr"))
        // A random first serial: two CAs under one issuer never hand out the same serial.
        let serial = String(format: "%08X%08X", UInt32.random(in: 0x1000_0000...0x7FFF_FFFF), UInt32.random(in: 0...UInt32.max))
        try Data("\(serial)\n".utf8).write(to: directory.appendingPathComponent("serial"))
        try Data("1000\n".utf8).write(to: directory.appendingPathComponent("crlnumber"))
        try Data("""
            [ ca ]
            default_ca = test
            [ test ]
            dir = \(directory.path)
            database = $dir/index.txt
            new_certs_dir = $dir/newcerts
            serial = $dir/serial
            crlnumber = $dir/crlnumber
            certificate = \(certificate.path)
            private_key = \(key.path)
            default_md = sha384
            policy = any
            unique_subject = no
            copy_extensions = none
            default_crl_days = 1
            [ any ]
            commonName = supplied
            """.utf8).write(to: directory.appendingPathComponent("ca.cnf"))
    }

    /// The test PKI's intermediate as a CA.
    static func intermediate() throws -> TestCA {
        try TestCA(certificateDER: Fixtures.testVector("pki/intermediate.der"),
                   key: Fixtures.testVectors.appendingPathComponent("pki/intermediate.key"))
    }

    /// The test PKI's root as a CA.
    static func root() throws -> TestCA {
        try TestCA(certificateDER: Fixtures.testVector("pki/root.der"),
                   key: Fixtures.testVectors.appendingPathComponent("pki/root.key"))
    }

    /// An issued certificate: DER, its PEM file and its private key file.
    struct Issued {
        let der: [UInt8]
        let pem: URL
        let key: URL
    }

    enum Profile {
        /// An App Store signing leaf: P-256, CA:FALSE, digitalSignature, Apple's leaf marker.
        case leaf
        /// A WWDR-style intermediate: P-384, CA:TRUE pathlen 0, Apple's intermediate marker.
        case intermediate
        /// An OCSP responder: OCSPSigning extended key usage.
        case responder
        /// A responder certificate without OCSPSigning: not authorized to sign answers.
        case unauthorizedResponder
    }

    /// Issues a certificate with `openssl ca`.
    ///
    /// - Parameters:
    ///   - name: Its common name, and the base of its file names.
    ///   - profile: What it is.
    ///   - ocspURL: The OCSP responder its AIA names, if any.
    ///   - notBefore: `YYYYMMDDHHMMSSZ`; by default 2024-01-01, before the signed dates the
    ///     tests use.
    ///   - notAfter: `YYYYMMDDHHMMSSZ`; by default ten years after the run (see
    ///     ``validForYears(_:)``), so that a responder's certificate, checked at the verifier's
    ///     clock, never expires under a test.
    func issue(
        _ name: String, _ profile: Profile, ocspURL: String? = nil,
        notBefore: String = "20240101000000Z", notAfter: String = TestCA.validForYears(10)
    ) throws -> Issued {
        let key = directory.appendingPathComponent("\(name).key")
        let curve = profile == .intermediate ? "secp384r1" : "prime256v1"
        try runOpenSSL(["ecparam", "-name", curve, "-genkey", "-noout", "-out", key.path], in: directory)
        try runOpenSSL(["req", "-new", "-key", key.path, "-subj", "/CN=\(name)", "-out", "\(name).csr"], in: directory)
        var extensions: [String]
        switch profile {
        case .leaf:
            extensions = ["basicConstraints = critical, CA:FALSE", "keyUsage = critical, digitalSignature",
                          "1.2.840.113635.100.6.11.1 = DER:0500"]
        case .intermediate:
            extensions = ["basicConstraints = critical, CA:TRUE, pathlen:0", "keyUsage = critical, keyCertSign, cRLSign",
                          "1.2.840.113635.100.6.2.1 = DER:0500"]
        case .responder:
            extensions = ["basicConstraints = critical, CA:FALSE", "keyUsage = critical, digitalSignature",
                          "extendedKeyUsage = OCSPSigning"]
        case .unauthorizedResponder:
            extensions = ["basicConstraints = critical, CA:FALSE", "keyUsage = critical, digitalSignature"]
        }
        extensions += ["subjectKeyIdentifier = hash", "authorityKeyIdentifier = keyid"]
        if let ocspURL { extensions.append("authorityInfoAccess = OCSP;URI:\(ocspURL)") }
        try Data(("[ ext ]\n" + extensions.joined(separator: "\n") + "\n").utf8)
            .write(to: directory.appendingPathComponent("\(name).ext"))
        let pem = directory.appendingPathComponent("\(name).pem")
        try runOpenSSL(["ca", "-batch", "-config", "ca.cnf", "-extfile", "\(name).ext", "-extensions", "ext",
                        "-startdate", notBefore, "-enddate", notAfter, "-notext", "-in", "\(name).csr", "-out", pem.path],
                       in: directory)
        try runOpenSSL(["x509", "-in", pem.path, "-outform", "DER", "-out", "\(name).der"], in: directory)
        return Issued(der: try Fixtures.bytes(directory.appendingPathComponent("\(name).der")), pem: pem, key: key)
    }

    /// `YYYYMMDDHHMMSSZ` for `years` (of 365 days) after now: validity relative to the run,
    /// not to the day a test was written.
    static func validForYears(_ years: Int, from now: Date = Date()) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMddHHmmss'Z'"
        return formatter.string(from: now.addingTimeInterval(Double(years) * 365 * 86_400))
    }

    /// Marks a certificate revoked in the index (revocation time: now).
    func revoke(_ certificate: Issued, reason: String = "keyCompromise") throws {
        try runOpenSSL(["ca", "-config", "ca.cnf", "-revoke", certificate.pem.path, "-crl_reason", reason], in: directory)
    }

    /// A CRL of the index, signed by this CA, valid for `hours` from now; PEM or DER.
    func crl(hours: Int = 24, der: Bool = false) throws -> URL {
        let pem = directory.appendingPathComponent("crl-\(UUID().uuidString).pem")
        try runOpenSSL(["ca", "-config", "ca.cnf", "-gencrl", "-crlhours", "\(hours)", "-out", pem.path], in: directory)
        guard der else { return pem }
        let out = pem.deletingPathExtension().appendingPathExtension("der")
        try runOpenSSL(["crl", "-in", pem.path, "-outform", "DER", "-out", out.path], in: directory)
        return out
    }

    deinit {
        try? FileManager.default.removeItem(at: directory)
    }
}

extension OCSPResponder {
    /// Starts a responder answering from `ca`'s index, its log beside the index.
    ///
    /// - Parameters:
    ///   - ca: The CA whose index it answers from.
    ///   - signer: The certificate it signs answers with (and its key).
    ///   - port: The port (see ``OCSPResponder/freePort()``).
    ///   - validityMinutes: Its answers' nextUpdate, in minutes after thisUpdate.
    convenience init(ca: TestCA, signer: TestCA.Issued, port: UInt16, validityMinutes: Int = 60) throws {
        try self.init(
            directory: ca.directory, caCertificate: ca.certificate, signerCertificate: signer.pem, signerKey: signer.key,
            port: port, validityMinutes: validityMinutes, log: ca.directory.appendingPathComponent("ocsp-\(port).log"))
    }
}

/// A loopback TCP listener that accepts connections and never answers: a responder that hangs.
final class SilentListener: @unchecked Sendable {
    // @unchecked: the descriptor is only closed in deinit.
    let socketFD: Int32
    let port: UInt16

    init() throws {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(socketFD >= 0)
        let port: UInt16
        do {
            port = try OCSPResponder.bindLoopback(socketFD)
        } catch {
            close(socketFD)
            throw error
        }
        guard listen(socketFD, 16) == 0 else {
            close(socketFD)
            throw OCSPResponder.StartError(message: "cannot listen on 127.0.0.1")
        }
        self.socketFD = socketFD
        self.port = port
    }

    deinit {
        close(socketFD)
    }
}
