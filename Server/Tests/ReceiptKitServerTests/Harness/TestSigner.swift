import CServerTestOpenSSL
import Foundation
import ReceiptKit
import Testing

/// Signs JWS under the project's test PKI (`TestVectors/pki`) with libcrypto, so that each test
/// builds exactly the notifications its story needs. The same approach as ReceiptKit's own
/// `Tests/ReceiptKitTests/Support/TestSigner.swift`; the server's tests reach libcrypto through
/// their own tiny module (`Tests/CServerTestOpenSSL`), ReceiptKit's being internal to it.
struct TestSigner: Sendable {
    /// The DER certificates placed in `x5c`, leaf first.
    let chain: [[UInt8]]
    /// The signing key, PEM.
    let keyPEM: [UInt8]

    /// The standard test chain: leaf, intermediate, root, signed by the leaf key.
    static func standard() throws -> TestSigner {
        TestSigner(
            chain: try ["pki/leaf.der", "pki/intermediate.der", "pki/root.der"].map { try Vectors.bytes($0) },
            keyPEM: try Vectors.bytes("pki/leaf.key"))
    }

    /// A compact JWS over `payload` with the header `{"alg":"ES256","x5c":[…]}`.
    func sign(_ payload: String) throws -> String {
        let x5c = chain.map { "\"\(Data($0).base64EncodedString())\"" }.joined(separator: ",")
        let header = "{\"alg\":\"ES256\",\"x5c\":[\(x5c)]}"
        let input = Base64URL.string(Array(header.utf8)) + "." + Base64URL.string(Array(payload.utf8))
        let (r, s) = try rawSignature(over: Array(input.utf8))
        return input + "." + Base64URL.string(r + s)
    }

    private func rawSignature(over message: [UInt8]) throws -> ([UInt8], [UInt8]) {
        let key: OpaquePointer = try keyPEM.withUnsafeBytes { buffer in
            let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count))
            defer { BIO_free(bio) }
            return try #require(PEM_read_bio_PrivateKey(bio, nil, nil, nil), "cannot read pki/leaf.key")
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
    private static func scalars(ofDER der: [UInt8]) throws -> ([UInt8], [UInt8]) {
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
