import CReceiptKitOpenSSL
import Foundation
import ReceiptKit
import Testing

/// ReceiptKit's signers: every signature is checked with OpenSSL directly, under the public key
/// of the test leaf certificate (`TestVectors/pki/leaf.der`, whose key is `pki/leaf.key`), and
/// every claim field by field against Apple's documented format.
@Suite("Signing")
struct SigningTests {
    static let keyId = "ABCDEFGHIJ"
    static let issuerId = "57246542-96fe-1a63-e053-0824d011072a"
    static let bundleId = "com.receiptkit.example"
    static let issuedAt = Timestamp(millisecondsSince1970: 1_767_225_600_123)  // 2026-01-01T00:00:00.123Z
    /// D5A4E1B2-3C4D-4E5F-8A9B-0C1D2E3F4A5B
    static let nonce = UUID(uuid: (
        0xD5, 0xA4, 0xE1, 0xB2, 0x3C, 0x4D, 0x4E, 0x5F, 0x8A, 0x9B, 0x0C, 0x1D, 0x2E, 0x3F, 0x4A, 0x5B))

    static func key() throws -> InAppPurchaseKey {
        try InAppPurchaseKey(
            keyId: keyId, issuerId: issuerId, privateKeyPEM: String(decoding: Fixtures.testVector("pki/leaf.key"), as: UTF8.self))
    }

    // MARK: Keys

    @Test("a .p8 (PKCS #8 PEM, P-256) key signs ES256 that OpenSSL verifies under the certificate's key")
    func signsES256() throws {
        let key = try Self.key().signingKey
        let message = Array("the signing input".utf8)
        let raw = try key.signature(for: message)
        #expect(raw.count == 64)
        #expect(try OpenSSLCheck.verifyRaw(raw, message: message, certificate: "pki/leaf.der"))
        #expect(try !OpenSSLCheck.verifyRaw(raw, message: Array("another input".utf8), certificate: "pki/leaf.der"))
        #expect(try !OpenSSLCheck.verifyRaw(raw, message: message, certificate: "pki/other-leaf.der"))
        let der = try key.derSignature(for: message)
        #expect(try OpenSSLCheck.verifyDER(der, message: message, certificate: "pki/leaf.der"))
        // The public half is the certificate's.
        #expect(key.publicKey.subjectPublicKeyInfo == (try OpenSSLCheck.subjectPublicKeyInfo(ofCertificate: "pki/leaf.der")))
        #expect(key.publicKey.isValidSignature(raw, for: message))
        #expect(!key.publicKey.isValidSignature(raw, for: Array("another input".utf8)))
        #expect(!key.publicKey.isValidSignature(Array(raw.dropLast()), for: message))
    }

    @Test("keys that are not unencrypted P-256 PEM are refused with invalid_private_key")
    func refusesOtherKeys() throws {
        let p384 = String(decoding: try Fixtures.testVector("pki/leaf-p384.key"), as: UTF8.self)
        let error = try #require(throws: ReceiptKitError.self) { try ES256SigningKey(pem: p384) }
        #expect(error.code == .invalidPrivateKey)
        #expect(error.reason.contains("secp384r1"))
        #expect(throws: ReceiptKitError(.invalidPrivateKey, "")) { try ES256SigningKey(pem: "not a key") }
        let certificate = "-----BEGIN CERTIFICATE-----\n" + Data(try Fixtures.testVector("pki/leaf.der")).base64EncodedString(
            options: .lineLength64Characters) + "\n-----END CERTIFICATE-----\n"
        #expect(throws: ReceiptKitError(.invalidPrivateKey, "")) { try ES256SigningKey(pem: certificate) }
        #expect(throws: ReceiptKitError(.invalidSigningInput, "")) {
            try InAppPurchaseKey(keyId: "", issuerId: Self.issuerId, privateKeyPEM: String(
                decoding: Fixtures.testVector("pki/leaf.key"), as: UTF8.self))
        }
        #expect(throws: ReceiptKitError(.invalidPublicKey, "")) { try ES256PublicKey(subjectPublicKeyInfo: [0x30, 0x00]) }
    }

    // MARK: App Store Server API token

    @Test("the App Store Server API token: header alg/kid/typ, claims iss, iat, exp, aud, bid")
    func apiToken() throws {
        let token = try AppStoreServerAPIToken(
            key: Self.key(), bundleId: Self.bundleId, issuedAt: Self.issuedAt, lifetimeSeconds: 1800)
        let jwt = try DecodedJWT(token.token)
        #expect(jwt.header as NSDictionary == ["alg": "ES256", "kid": Self.keyId, "typ": "JWT"] as NSDictionary)
        #expect(jwt.claims as NSDictionary == [
            "iss": Self.issuerId, "iat": 1_767_225_600, "exp": 1_767_225_600 + 1800,
            "aud": "appstoreconnect-v1", "bid": Self.bundleId,
        ] as NSDictionary)
        #expect(try jwt.verifies(certificate: "pki/leaf.der"))
        #expect(token.issuedAt == Timestamp(millisecondsSince1970: 1_767_225_600_000))
        #expect(token.expiresAt == Timestamp(millisecondsSince1970: 1_767_227_400_000))
    }

    @Test("an API token lives 1 to 3600 seconds", arguments: [Int64(0), -5, 3601])
    func apiTokenLifetime(_ lifetime: Int64) throws {
        #expect(throws: ReceiptKitError(.invalidSigningInput, "")) {
            try AppStoreServerAPIToken(key: Self.key(), bundleId: Self.bundleId, issuedAt: Self.issuedAt, lifetimeSeconds: lifetime)
        }
    }

    // MARK: Promotional offer V1

    @Test("promotional offer V1: ECDSA over the U+2063-joined fields, base64 DER")
    func promotionalOfferV1() throws {
        let signature = try PromotionalOfferSignatureV1(
            key: Self.key(), bundleId: Self.bundleId, productId: "com.receiptkit.monthly", offerId: "WINBACK10",
            appAccountToken: "7E3FB20B-4CDB-47CC-936D-99D65F608138", nonce: Self.nonce, timestamp: 1_767_225_600_123)
        #expect(signature.keyId == Self.keyId)
        #expect(signature.nonce == "d5a4e1b2-3c4d-4e5f-8a9b-0c1d2e3f4a5b")
        #expect(signature.timestamp == 1_767_225_600_123)
        // The signed bytes, spelled out: the fields joined by U+2063 (E2 81 A3 in UTF-8), the
        // app account token and the nonce lowercased.
        let separator: [UInt8] = [0xE2, 0x81, 0xA3]
        let fields = [
            "com.receiptkit.example", "ABCDEFGHIJ", "com.receiptkit.monthly", "WINBACK10",
            "7e3fb20b-4cdb-47cc-936d-99d65f608138", "d5a4e1b2-3c4d-4e5f-8a9b-0c1d2e3f4a5b", "1767225600123",
        ]
        var payload: [UInt8] = []
        for (index, field) in fields.enumerated() {
            if index > 0 { payload += separator }
            payload += Array(field.utf8)
        }
        let der = try #require(Data(base64Encoded: signature.signature))
        #expect(der.first == 0x30)
        #expect(try OpenSSLCheck.verifyDER(Array(der), message: payload, certificate: "pki/leaf.der"))
        #expect(PromotionalOfferSignatureV1.payload(
            bundleId: Self.bundleId, keyId: Self.keyId, productId: "com.receiptkit.monthly", offerId: "WINBACK10",
            appAccountToken: "7E3FB20B-4CDB-47CC-936D-99D65F608138", nonce: Self.nonce, timestamp: 1_767_225_600_123
        ).utf8.elementsEqual(payload))
    }

    @Test("promotional offer V1 without an app account token signs an empty field")
    func promotionalOfferV1WithoutToken() throws {
        let signature = try PromotionalOfferSignatureV1(
            key: Self.key(), bundleId: Self.bundleId, productId: "p", offerId: "o", nonce: Self.nonce, timestamp: 5)
        let payload = Array("com.receiptkit.example\u{2063}ABCDEFGHIJ\u{2063}p\u{2063}o\u{2063}\u{2063}d5a4e1b2-3c4d-4e5f-8a9b-0c1d2e3f4a5b\u{2063}5".utf8)
        let der = try #require(Data(base64Encoded: signature.signature))
        #expect(try OpenSSLCheck.verifyDER(Array(der), message: payload, certificate: "pki/leaf.der"))
    }

    @Test("promotional offer V1 refuses a token that is not a UUID and empty identifiers")
    func promotionalOfferV1Input() throws {
        let key = try Self.key()
        #expect(throws: ReceiptKitError(.invalidSigningInput, "")) {
            try PromotionalOfferSignatureV1(
                key: key, bundleId: Self.bundleId, productId: "p", offerId: "o", appAccountToken: "customer-42",
                nonce: Self.nonce, timestamp: 5)
        }
        #expect(throws: ReceiptKitError(.invalidSigningInput, "")) {
            try PromotionalOfferSignatureV1(key: key, bundleId: Self.bundleId, productId: "p", offerId: "", nonce: Self.nonce, timestamp: 5)
        }
        #expect(throws: ReceiptKitError(.invalidSigningInput, "")) {
            try PromotionalOfferSignatureV1(
                keyId: "", signingKey: key.signingKey, bundleId: Self.bundleId, productId: "p", offerId: "o", nonce: Self.nonce,
                timestamp: 5)
        }
    }

    // MARK: JWS for StoreKit

    @Test("promotional offer V2: aud promotional-offer, productId, offerIdentifier, transactionId")
    func promotionalOfferV2() throws {
        let signer = try AppStoreRequestSigner(key: Self.key(), bundleId: Self.bundleId)
        let jwt = try DecodedJWT(signer.promotionalOfferV2(
            productId: "com.receiptkit.monthly", offerIdentifier: "WINBACK10", transactionId: "2000000123",
            issuedAt: Self.issuedAt, nonce: Self.nonce))
        #expect(jwt.header as NSDictionary == ["alg": "ES256", "kid": Self.keyId, "typ": "JWT"] as NSDictionary)
        #expect(jwt.claims as NSDictionary == [
            "iss": Self.issuerId, "bid": Self.bundleId, "aud": "promotional-offer", "iat": 1_767_225_600,
            "nonce": "d5a4e1b2-3c4d-4e5f-8a9b-0c1d2e3f4a5b", "productId": "com.receiptkit.monthly",
            "offerIdentifier": "WINBACK10", "transactionId": "2000000123",
        ] as NSDictionary)
        #expect(try jwt.verifies(certificate: "pki/leaf.der"))
        // Without a transaction id the claim is absent, and each call has a fresh nonce.
        let first = try DecodedJWT(signer.promotionalOfferV2(productId: "p", offerIdentifier: "o", issuedAt: Self.issuedAt))
        let second = try DecodedJWT(signer.promotionalOfferV2(productId: "p", offerIdentifier: "o", issuedAt: Self.issuedAt))
        #expect(first.claims["transactionId"] == nil)
        let nonce = try #require(first.claims["nonce"] as? String)
        #expect(UUID(uuidString: nonce) != nil && nonce == nonce.lowercased())
        #expect(nonce != second.claims["nonce"] as? String)
    }

    @Test("introductory offer eligibility: aud introductory-offer-eligibility, productId, allowIntroductoryOffer, transactionId")
    func introductoryOfferEligibility() throws {
        let signer = try AppStoreRequestSigner(key: Self.key(), bundleId: Self.bundleId)
        for allow in [false, true] {
            let jwt = try DecodedJWT(signer.introductoryOfferEligibility(
                productId: "com.receiptkit.monthly", allowIntroductoryOffer: allow, transactionId: "2000000123",
                issuedAt: Self.issuedAt, nonce: Self.nonce))
            #expect(jwt.claims as NSDictionary == [
                "iss": Self.issuerId, "bid": Self.bundleId, "aud": "introductory-offer-eligibility", "iat": 1_767_225_600,
                "nonce": "d5a4e1b2-3c4d-4e5f-8a9b-0c1d2e3f4a5b", "productId": "com.receiptkit.monthly",
                "allowIntroductoryOffer": allow, "transactionId": "2000000123",
            ] as NSDictionary)
            // A JSON boolean, not 0 or 1.
            #expect(jwt.payloadText.contains("\"allowIntroductoryOffer\":\(allow)"))
            #expect(try jwt.verifies(certificate: "pki/leaf.der"))
        }
        #expect(throws: ReceiptKitError(.invalidSigningInput, "")) {
            try signer.introductoryOfferEligibility(productId: "p", allowIntroductoryOffer: true, transactionId: "", issuedAt: Self.issuedAt)
        }
    }

    @Test("Advanced Commerce: aud advanced-commerce-api, request = base64 of the request's JSON, exactly")
    func advancedCommerce() throws {
        let signer = try AppStoreRequestSigner(key: Self.key(), bundleId: Self.bundleId)
        let request = Array(#"{"operation":"CREATE_SUBSCRIPTION","version":"1","requestInfo":{"requestReferenceId":"f55df048-4cd8-4261-b404-b6f813ea0a81"},"currency":"USD","taxCode":"C003-00-2","descriptors":{"displayName":"Pro","description":"All of it"},"period":"P1M","items":[{"SKU":"pro.monthly","displayName":"Pro","description":"Pro","price":4990}],"storefront":"USA"}"#.utf8)
        let jwt = try DecodedJWT(signer.advancedCommerceRequest(request, issuedAt: Self.issuedAt, nonce: Self.nonce))
        #expect(jwt.claims as NSDictionary == [
            "iss": Self.issuerId, "bid": Self.bundleId, "aud": "advanced-commerce-api", "iat": 1_767_225_600,
            "nonce": "d5a4e1b2-3c4d-4e5f-8a9b-0c1d2e3f4a5b", "request": Data(request).base64EncodedString(),
        ] as NSDictionary)
        let requestClaim = try #require(jwt.claims["request"] as? String)
        let decodedRequest = try #require(Data(base64Encoded: requestClaim))
        #expect(Array(decodedRequest) == request)
        #expect(try jwt.verifies(certificate: "pki/leaf.der"))
        for bad in ["", "[1,2]", "{\"a\":1,\"a\":2}", "{\"a\":"] {
            #expect(throws: ReceiptKitError(.invalidSigningInput, ""), "\(bad)") {
                try signer.advancedCommerceRequest(Array(bad.utf8), issuedAt: Self.issuedAt)
            }
        }
    }
}

/// A compact JWS split and decoded with Foundation, independently of ReceiptKit.
struct DecodedJWT {
    let header: [String: Any]
    let claims: [String: Any]
    let payloadText: String
    let signingInput: [UInt8]
    let signature: [UInt8]

    init(_ token: String) throws {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(parts.count == 3)
        func decode(_ segment: String) throws -> Data {
            #expect(!segment.contains("=") && !segment.contains("+") && !segment.contains("/"), "not base64url: \(segment)")
            var base64 = segment.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
            return try #require(Data(base64Encoded: base64))
        }
        header = try #require(try JSONSerialization.jsonObject(with: decode(parts[0])) as? [String: Any])
        let payload = try decode(parts[1])
        payloadText = String(decoding: payload, as: UTF8.self)
        claims = try #require(try JSONSerialization.jsonObject(with: payload) as? [String: Any])
        signingInput = Array((parts[0] + "." + parts[1]).utf8)
        signature = Array(try decode(parts[2]))
    }

    func verifies(certificate: String) throws -> Bool {
        try OpenSSLCheck.verifyRaw(signature, message: signingInput, certificate: certificate)
    }
}

/// ECDSA-SHA256 checks made with OpenSSL alone, under a test certificate's public key.
enum OpenSSLCheck {
    static func verifyRaw(_ raw: [UInt8], message: [UInt8], certificate: String) throws -> Bool {
        try #require(raw.count == 64)
        let signature = try #require(ECDSA_SIG_new())
        defer { ECDSA_SIG_free(signature) }
        let r = BN_bin2bn(raw, 32, nil)
        let s = BN_bin2bn(Array(raw[32...]), 32, nil)
        try #require(ECDSA_SIG_set0(signature, r, s) == 1)
        var derPointer: UnsafeMutablePointer<UInt8>?
        let length = i2d_ECDSA_SIG(signature, &derPointer)
        try #require(length > 0)
        let der = Array(UnsafeBufferPointer(start: derPointer, count: Int(length)))
        CRYPTO_free(derPointer, #file, #line)
        return try verifyDER(der, message: message, certificate: certificate)
    }

    static func verifyDER(_ der: [UInt8], message: [UInt8], certificate: String) throws -> Bool {
        try withPublicKey(ofCertificate: certificate) { key in
            let context = try #require(EVP_MD_CTX_new())
            defer { EVP_MD_CTX_free(context) }
            try #require(EVP_DigestVerifyInit_ex(context, nil, "SHA256", nil, nil, key, nil) == 1)
            let result = EVP_DigestVerify(context, der, der.count, message, message.count)
            ERR_clear_error()
            return result == 1
        }
    }

    static func subjectPublicKeyInfo(ofCertificate certificate: String) throws -> [UInt8] {
        try withPublicKey(ofCertificate: certificate) { key in
            var pointer: UnsafeMutablePointer<UInt8>?
            let length = i2d_PUBKEY(key, &pointer)
            try #require(length > 0)
            defer { CRYPTO_free(pointer, #file, #line) }
            return Array(UnsafeBufferPointer(start: pointer, count: Int(length)))
        }
    }

    /// Calls `body` with the public key of a certificate under `TestVectors/`, read by OpenSSL.
    private static func withPublicKey<Result>(
        ofCertificate certificate: String, _ body: (OpaquePointer) throws -> Result
    ) throws -> Result {
        let certificateDER = try Fixtures.testVector(certificate)
        let x509: OpaquePointer = try #require(certificateDER.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_X509(nil, &cursor, buffer.count)
        })
        defer { X509_free(x509) }
        return try body(try #require(X509_get0_pubkey(x509)))
    }
}
