internal import CReceiptKitOpenSSL

/// Access to OpenSSL's per-thread error queue.
///
/// The queue is per thread and outlives any one call, so every operation whose failure
/// ReceiptKit reports starts by clearing it (``clear()``) and every failure drains it: otherwise
/// an error left by one input would appear in another input's reason (found by `fuzz-jws`).
enum OpenSSLErrorQueue {
    /// Empties the calling thread's error queue.
    static func clear() {
        ERR_clear_error()
    }

    /// Empties the calling thread's error queue and returns its entries as one line of text,
    /// or `nil` when it was empty. Called after every failing OpenSSL call, so no error leaks
    /// into the next operation's report.
    static func drain() -> String? {
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(String(decoding: buffer.prefix(while: { $0 != 0 }).map(UInt8.init(bitPattern:)), as: UTF8.self))
        }
        return messages.isEmpty ? nil : messages.joined(separator: "; ")
    }
}

/// One-shot message digests.
enum Digest {
    /// SHA-256 of `bytes`.
    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        bytes.withUnsafeBufferPointer { input in
            _ = SHA256(input.baseAddress, input.count, &output)
        }
        return output
    }

    /// SHA-1 of `bytes` (legacy receipts' device hash and signatures).
    static func sha1(_ bytes: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(SHA_DIGEST_LENGTH))
        bytes.withUnsafeBufferPointer { input in
            _ = SHA1(input.baseAddress, input.count, &output)
        }
        return output
    }
}

/// An ASN.1 object identifier resolved once by OpenSSL, owned by this object.
final class ASN1ObjectIdentifier: @unchecked Sendable {
    // @unchecked: the ASN1_OBJECT is created once and only ever read afterwards.
    let pointer: OpaquePointer
    let dotted: String

    /// Resolves a dotted-decimal OID.
    init(_ dotted: String) {
        guard let object = OBJ_txt2obj(dotted, 1) else {
            preconditionFailure("OpenSSL rejected the built-in OID \(dotted)")
        }
        self.pointer = object
        self.dotted = dotted
    }

    deinit {
        ASN1_OBJECT_free(pointer)
    }
}
