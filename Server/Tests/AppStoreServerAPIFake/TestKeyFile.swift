public import Foundation

/// A new P-256 In-App Purchase key for a test run, as App Store Connect hands it out: a PKCS #8 PEM
/// `.p8` file, made by `openssl genpkey` in a directory of the run's own. Shared by the client's
/// tests and the server's, which give the fake its public half.
public enum TestKeyFile {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The run's own directory for its files, under the temporary directory, named by `label`
    /// and this process.
    public static func directory(label: String) -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(getpid())")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Writes `AuthKey_KEYID.p8` into a new directory under the temporary directory named by
    /// `label` and this process, and returns its path.
    public static func make(keyId: String, label: String) throws -> String {
        let path = directory(label: label).appendingPathComponent("AuthKey_\(keyId).p8").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw Failure(description: "openssl genpkey failed") }
        return path
    }
}
