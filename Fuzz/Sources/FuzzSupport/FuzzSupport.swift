import Foundation
import ReceiptKit

/// What every fuzz target shares: verifiers trusting the project's test PKIs (so that mutated
/// valid vectors get past the trust checks and into the deeper ones), and the properties every
/// outcome must have whatever the input.
public enum FuzzSupport {
    /// The repository root (this file is Fuzz/Sources/FuzzSupport/FuzzSupport.swift).
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    static func bytes(_ path: String) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: root.appendingPathComponent(path).path) else {
            fatalError("fuzz setup: cannot read \(path)")
        }
        return Array(data)
    }

    /// A verifier trusting the JWS and receipt test roots, validating at the signed date.
    public static let verifier: AppStoreVerifier = {
        do {
            let anchors = try TrustAnchors(rootCertificates: [
                bytes("TestVectors/pki/root.der"), bytes("TestVectors/receipts/pki/root.der"),
                bytes("TestVectors/pki/xcode.der"),
            ])
            return AppStoreVerifier(.init(anchors: anchors), clock: { Date(timeIntervalSince1970: 1_767_225_600) })
        } catch {
            fatalError("fuzz setup: \(error)")
        }
    }()

    /// The same trust without caches: every outcome must equal the cached verifier's.
    public static let uncachedVerifier: AppStoreVerifier = {
        var configuration = verifier.configuration
        configuration.cacheCapacity = 0
        return AppStoreVerifier(configuration, clock: { Date(timeIntervalSince1970: 1_767_225_600) })
    }()

    /// A valid test-PKI transaction's header and signature segments, to wrap fuzzed payloads in.
    public static let tokenParts: (header: String, signature: String) = {
        let token = String(decoding: bytes("TestVectors/jws/transaction-consumable.jws"), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let parts = token.split(separator: ".").map(String.init)
        return (parts[0], parts[2])
    }()

    /// Verifies `input` with and without caches, twice, and traps if the outcomes differ or the
    /// JSON is not one valid object: a crash is what libFuzzer reports.
    public static func checkInvariants(_ input: [UInt8]) {
        let first = verifier.verify(input: input).json(input: 1)
        let second = verifier.verify(input: input).json(input: 1)
        let uncached = uncachedVerifier.verify(input: input).json(input: 1)
        guard first == second, first == uncached else {
            fatalError("outcome depends on the cache:\n\(first)\n\(second)\n\(uncached)")
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any],
            let status = object["status"] as? String, status == "verified" || status == "rejected"
        else {
            fatalError("output is not one JSON record: \(first)")
        }
        if status == "rejected" {
            guard let error = object["error"] as? [String: Any], let code = error["code"] as? String,
                !code.isEmpty, error["message"] is String
            else {
                fatalError("rejection without a code and a message: \(first)")
            }
        }
    }

    /// Base64url without padding.
    public static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

/// libFuzzer's entry point for programs that have their own `main`.
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

extension FuzzSupport {
    /// Runs libFuzzer with the command line and `callback` as the fuzz target.
    ///
    /// SwiftPM links an executable target's `main` to a symbol named after the module
    /// (`<module>_main`), so each fuzz target defines that symbol and hands over to libFuzzer
    /// here, instead of relying on libFuzzer's own `main`.
    public static func runFuzzer(
        argc: Int32, argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
        _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
    ) -> Int32 {
        var argc = argc
        var argv = argv
        return LLVMFuzzerRunDriver(&argc, &argv, callback)
    }
}
