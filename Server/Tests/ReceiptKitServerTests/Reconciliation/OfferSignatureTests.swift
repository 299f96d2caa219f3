import AppStoreServerAPIFake
import Foundation
import Hummingbird
import HummingbirdTesting
import ReceiptKit
import ReceiptKitServer
import Testing

@Suite("POST /v1/offers/signature: offers signed with the In-App Purchase key, verified here with its public key by ReceiptKit and by OpenSSL")
struct OfferSignatureTests {
    static func body(_ members: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: members), as: UTF8.self)
    }

    /// Whether OpenSSL's own command accepts an ECDSA signature (DER) over `message` under the
    /// public half of the run's In-App Purchase key file (`openssl pkey -pubout`, then `openssl
    /// dgst -sha256 -verify`): a check independent of ReceiptKit's ES256 code, which signed.
    static func opensslVerifies(der signature: [UInt8], over message: [UInt8]) async throws -> Bool {
        let directory = TestKeyFile.directory(label: "receiptkit-offer-check").appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (publicKey, signatureFile, messageFile) = (
            directory.appendingPathComponent("public.pem").path, directory.appendingPathComponent("signature.der"),
            directory.appendingPathComponent("message"))
        try Data(signature).write(to: signatureFile)
        try Data(message).write(to: messageFile)
        let exported = try await Tools.run("/usr/bin/env", ["openssl", "pkey", "-in", try AppleFake.keyFile.get(), "-pubout", "-out", publicKey])
        try #require(exported.status == 0, "openssl pkey -pubout: \(exported.text)")
        let checked = try await Tools.run(
            "/usr/bin/env", ["openssl", "dgst", "-sha256", "-verify", publicKey, "-signature", signatureFile.path, messageFile.path])
        return checked.status == 0 && checked.text.contains("Verified OK")
    }

    /// A JWS signature (`r` and `s`, 32 bytes each) as DER's `Ecdsa-Sig-Value`
    /// (`SEQUENCE { r INTEGER, s INTEGER }`), for OpenSSL.
    static func der(ofJWSSignature raw: [UInt8]) -> [UInt8] {
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            var value = Array(bytes.drop { $0 == 0 })
            if value.isEmpty || value[0] >= 0x80 { value.insert(0, at: 0) }
            return [0x02, UInt8(value.count)] + value
        }
        let body = integer(raw.prefix(32)) + integer(raw.dropFirst(32))
        return [0x30, UInt8(body.count)] + body
    }

    /// The header and claims of a compact JWS whose ES256 signature verifies under the run's
    /// key, by ReceiptKit and by OpenSSL's command.
    static func verifiedClaims(_ jws: String) async throws -> (header: [String: Any], claims: [String: Any]) {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(parts.count == 3)
        let signature = try #require(FakeAppStoreServerAPI.base64URL(parts[2]))
        let publicKey = try AppleFake.key().signingKey.publicKey
        let signingInput = Array((parts[0] + "." + parts[1]).utf8)
        #expect(signature.count == 64 && publicKey.isValidSignature(Array(signature), for: signingInput))
        #expect(try await Self.opensslVerifies(der: Self.der(ofJWSSignature: Array(signature)), over: signingInput))
        let headerData = try #require(FakeAppStoreServerAPI.base64URL(parts[0]))
        let claimsData = try #require(FakeAppStoreServerAPI.base64URL(parts[1]))
        let header = try #require(try JSONSerialization.jsonObject(with: headerData) as? [String: Any])
        let claims = try #require(try JSONSerialization.jsonObject(with: claimsData) as? [String: Any])
        return (header, claims)
    }

    @Test("promotional offer V1: key_id, nonce, the server's time, a DER signature over the U+2063-joined fields")
    func promotionalOfferV1() async throws {
        let fake = try AppleFake.fake([])
        try await AppleFake.withServer(.sqlite, fake: fake) { server in
            let token = "1E3B6F2A-3C4D-4E5F-8A9B-0C1D2E3F4A5B"
            let answer = try await server.post("/v1/offers/signature", Self.body([
                "type": "promotional_offer", "product_id": "com.receiptkit.monthly", "offer_id": "WINBACK1", "app_account_token": token,
            ]))
            #expect(answer.status == .ok, "\(answer.text)")
            let json = try answer.json()
            #expect(json["key_id"] as? String == AppleFake.keyId)
            let timestamp = try #require((json["timestamp"] as? NSNumber)?.int64Value)
            #expect(timestamp == Timestamp(AppleFake.now).millisecondsSince1970)
            let nonce = try #require(json["nonce"] as? String)
            #expect(UUID(uuidString: nonce) != nil && nonce == nonce.lowercased())
            let signatureText = try #require(json["signature"] as? String)
            let signature = try #require(Data(base64Encoded: signatureText))
            let payload = [AppleFake.bundleId, AppleFake.keyId, "com.receiptkit.monthly", "WINBACK1", token.lowercased(), nonce, String(timestamp)]
                .joined(separator: "\u{2063}")
            #expect(try AppleFake.key().signingKey.publicKey.isValidDERSignature(Array(signature), for: Array(payload.utf8)))
            #expect(try await Self.opensslVerifies(der: Array(signature), over: Array(payload.utf8)))
            // The same check refuses the signature over anything else: another nonce.
            let other = payload.replacingOccurrences(of: nonce, with: UUID().uuidString.lowercased())
            #expect(try await Self.opensslVerifies(der: Array(signature), over: Array(other.utf8)) == false)
            try await server.post("/v1/offers/signature", Self.body(["type": "promotional_offer", "product_id": "p"]))
                .expectError(.badRequest, "invalid_request")
            try await server.post("/v1/offers/signature", Self.body(["type": "coupon", "product_id": "p"]))
                .expectError(.badRequest, "invalid_request")
        }
    }

    @Test("promotional offer V2: a JWS with aud promotional-offer, kid, bid, productId, offerIdentifier, transactionId")
    func promotionalOfferV2() async throws {
        let fake = try AppleFake.fake([])
        try await AppleFake.withServer(.sqlite, fake: fake) { server in
            let answer = try await server.post("/v1/offers/signature", Self.body([
                "type": "promotional_offer_v2", "product_id": "com.receiptkit.monthly", "offer_id": "WINBACK1", "transaction_id": "2000000100",
            ]))
            #expect(answer.status == .ok, "\(answer.text)")
            let jws = try #require(try answer.json()["jws"] as? String)
            let (header, claims) = try await Self.verifiedClaims(jws)
            #expect(header["alg"] as? String == "ES256" && header["kid"] as? String == AppleFake.keyId)
            #expect(claims["aud"] as? String == "promotional-offer")
            #expect(claims["iss"] as? String == AppleFake.issuerId && claims["bid"] as? String == AppleFake.bundleId)
            #expect(claims["productId"] as? String == "com.receiptkit.monthly" && claims["offerIdentifier"] as? String == "WINBACK1")
            #expect(claims["transactionId"] as? String == "2000000100")
            #expect((claims["iat"] as? NSNumber)?.int64Value == Timestamp(AppleFake.now).secondsSince1970)
        }
    }

    @Test("intro eligibility: as asked, or decided from what the service knows (a free trial in the group makes a customer ineligible)",
          arguments: Backend.available)
    func introEligibility(backend: Backend) async throws {
        let payloads = try Payloads()
        let fake = try AppleFake.fake([])
        try await AppleFake.withServer(backend, fake: fake) { server in
            let start = AppleFake.signedDate - 10 * AppleFake.day
            let trial = try payloads.transaction(
                id: "7000000100", original: "7000000100", purchase: start, expires: start + 7 * AppleFake.day, signed: start, freeTrial: true)
            let stored = try await server.post("/v1/transactions", Self.body(["signed_transaction": trial, "customer_id": "trial-c"]))
            #expect(stored.status == .ok, "\(stored.text)")
            func eligibility(_ members: [String: Any]) async throws -> (allow: Bool?, claims: [String: Any]) {
                let answer = try await server.post("/v1/offers/signature", Self.body(["type": "intro_eligibility"].merging(members) { $1 }))
                #expect(answer.status == .ok, "\(answer.text)")
                let json = try answer.json()
                let jws = try #require(json["jws"] as? String)
                let (_, claims) = try await Self.verifiedClaims(jws)
                #expect(claims["aud"] as? String == "introductory-offer-eligibility")
                #expect(claims["allowIntroductoryOffer"] as? Bool == json["allow_introductory_offer"] as? Bool)
                return (json["allow_introductory_offer"] as? Bool, claims)
            }
            let had = try await eligibility(["product_id": Payloads.productId, "transaction_id": "7000000100"])
            #expect(had.allow == false)
            #expect(had.claims["transactionId"] as? String == "7000000100")
            let byCustomer = try await eligibility(["product_id": Payloads.productId, "transaction_id": "7000000999", "customer_id": "trial-c"])
            #expect(byCustomer.allow == false)
            let fresh = try await eligibility(["product_id": Payloads.productId, "transaction_id": "7000000999"])
            #expect(fresh.allow == true)
            let asked = try await eligibility(["product_id": Payloads.productId, "transaction_id": "7000000100", "allow_introductory_offer": true])
            #expect(asked.allow == true)
            try await server.post("/v1/offers/signature", Self.body(["type": "intro_eligibility", "product_id": "p"]))
                .expectError(.badRequest, "invalid_request")
        }
    }

    @Test("without the In-App Purchase key: 409 reconciliation_off")
    func notConfigured() async throws {
        try await TestServer.run(.sqlite) { server in
            try await server.post("/v1/offers/signature", Self.body(["type": "promotional_offer", "product_id": "p", "offer_id": "o"]))
                .expectError(.conflict, "reconciliation_off")
        }
    }
}
