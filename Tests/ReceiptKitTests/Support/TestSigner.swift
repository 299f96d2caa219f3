import CReceiptKitOpenSSL
import Foundation
import ReceiptKit
import Testing

/// Signs JWS under the project's test PKI (`TestVectors/pki`) with OpenSSL, so tests can build
/// exactly the token a case needs: a payload with one field of the wrong type, a header with an
/// extra member, a signature with chosen `r` and `s`.
struct TestSigner {
    /// The DER certificates placed in `x5c`, leaf first.
    var chain: [[UInt8]]
    /// The PEM file of the key that signs: a path under `TestVectors/`, or an absolute path (a
    /// key made at test time).
    var keyFile: String

    /// The standard test chain: leaf, intermediate, root, signed by the leaf key.
    static func standard() throws -> TestSigner {
        try TestSigner(
            chain: ["pki/leaf.der", "pki/intermediate.der", "pki/root.der"].map(Fixtures.testVector),
            keyFile: "pki/leaf.key")
    }

    /// The header `{"alg":"ES256","x5c":[…]}` for ``chain``.
    func header(extra: String = "") -> String {
        let x5c = chain.map { "\"\(Data($0).base64EncodedString())\"" }.joined(separator: ",")
        return "{\"alg\":\"ES256\",\"x5c\":[\(x5c)]\(extra)}"
    }

    /// A signed compact JWS over the given header and payload text.
    func sign(payload: String, header: String? = nil) throws -> String {
        try sign(payloadBytes: Array(payload.utf8), headerBytes: Array((header ?? self.header()).utf8))
    }

    /// A signed compact JWS over raw header and payload bytes.
    func sign(payloadBytes: [UInt8], headerBytes: [UInt8]) throws -> String {
        let input = Base64URL.string(headerBytes) + "." + Base64URL.string(payloadBytes)
        let (r, s) = try rawSignature(over: Array(input.utf8))
        return input + "." + Base64URL.string(r + s)
    }

    /// The raw `(r, s)` of a fresh ECDSA P-256 / SHA-256 signature over `message`.
    func rawSignature(over message: [UInt8]) throws -> ([UInt8], [UInt8]) {
        let pem = try keyFile.hasPrefix("/") ? Fixtures.bytes(URL(fileURLWithPath: keyFile)) : Fixtures.testVector(keyFile)
        let key: OpaquePointer = try pem.withUnsafeBytes { buffer in
            let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count))
            defer { BIO_free(bio) }
            return try #require(PEM_read_bio_PrivateKey(bio, nil, nil, nil), "cannot read \(keyFile)")
        }
        defer { EVP_PKEY_free(key) }
        let context = try #require(EVP_MD_CTX_new())
        defer { EVP_MD_CTX_free(context) }
        try #require(EVP_DigestSignInit_ex(context, nil, "SHA256", nil, nil, key, nil) == 1)
        var length = 0
        try #require(EVP_DigestSign(context, nil, &length, message, message.count) == 1)
        var der = [UInt8](repeating: 0, count: length)
        try #require(EVP_DigestSign(context, &der, &length, message, message.count) == 1)
        der.removeSubrange(length...)
        return try Self.scalars(ofDER: der)
    }

    /// Splits a DER `Ecdsa-Sig-Value` into 32-byte big-endian `r` and `s`.
    static func scalars(ofDER der: [UInt8]) throws -> ([UInt8], [UInt8]) {
        var index = 2
        func integer() throws -> [UInt8] {
            try #require(der[index] == 0x02)
            let length = Int(der[index + 1])
            let value = Array(der[(index + 2)..<(index + 2 + length)].drop(while: { $0 == 0 }))
            index += 2 + length
            return [UInt8](repeating: 0, count: 32 - value.count) + value
        }
        return (try integer(), try integer())
    }
}
