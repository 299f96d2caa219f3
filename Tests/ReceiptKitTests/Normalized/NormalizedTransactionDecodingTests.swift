import Foundation
import ReceiptKit
import Testing

/// A record's transactions read back with `NormalizedTransaction`'s `Decodable` conformance.
@Suite("Normalized transactions read back from records")
struct NormalizedTransactionDecodingTests {
    /// A record's `transactions` member.
    private struct Transactions: Decodable {
        let transactions: [NormalizedTransaction]
    }

    /// Every record the project's JWS and receipt vectors verify to.
    static func records() throws -> [VerificationRecord] {
        let verifier = try Fixtures.testVerifier()
        let receiptVerifier = try ReceiptVerificationTests.verifier()
        let jws = try FileManager.default.contentsOfDirectory(atPath: Fixtures.testVectors.appendingPathComponent("jws").path)
            .filter { $0.hasSuffix(".jws") }.sorted()
            .map { try Fixtures.testVector("jws/\($0)") }
        let receipts = try FileManager.default.contentsOfDirectory(atPath: Fixtures.testVectors.appendingPathComponent("receipts").path)
            .filter { $0.hasPrefix("receipt-") && $0.hasSuffix(".der") }.sorted()
            .map { try ReceiptVerificationTests.receipt($0) }
        return (jws.map { verifier.verify(input: $0) } + receipts.map { receiptVerifier.verify(input: $0) }).compactMap {
            if case .verified(let record) = $0 { return record } else { return nil }
        }
    }

    @Test("decoding a rendered record gives back its transactions, equal member for member")
    func roundTrip() throws {
        let records = try Self.records()
        let transactions = records.flatMap(\.transactions)
        // The vectors cover both sources, offers, revocations and every date.
        #expect(Set(transactions.map(\.source)) == [.jws, .receipt])
        #expect(transactions.contains { $0.offer != nil } && transactions.contains { $0.revocationDate != nil })
        #expect(transactions.contains { $0.signedDate != nil && $0.expiresDate != nil })
        for record in records {
            for pretty in [false, true] {
                let decoded = try JSONDecoder().decode(Transactions.self, from: Data(record.json(pretty: pretty).utf8))
                #expect(decoded.transactions == record.transactions, "\(record.kind) \(record.transactions.first?.transactionId ?? "-")")
            }
        }
    }

    @Test("a missing member reads as null; a wrong source, type or date is refused")
    func strictness() throws {
        let minimal = try JSONDecoder().decode(NormalizedTransaction.self, from: Data(#"{"source":"receipt"}"#.utf8))
        #expect(minimal.source == .receipt && minimal.transactionId == nil && minimal.offer == nil && minimal.price == nil)
        let priced = try JSONDecoder().decode(NormalizedTransaction.self, from: Data(
            #"{"source":"jws","price":{"milliunits":9990,"currency":"USD"},"offer":{"type":"offer_code","id":"SPRING","discount_type":"pay_up_front","period":"P1M"}}"#.utf8))
        #expect(priced.price?.milliunits == 9990 && priced.price?.currency == "USD")
        #expect(priced.offer?.discountType == "pay_up_front" && priced.offer?.period == "P1M" && priced.offer?.id == "SPRING")
        for bad in [#"{}"#, #"{"source":"storekit"}"#, #"{"source":"jws","quantity":"1"}"#,
                    #"{"source":"jws","purchase_date":"yesterday"}"#, #"{"source":"jws","purchase_date":1700000000000}"#] {
            #expect(throws: DecodingError.self, "\(bad)") {
                _ = try JSONDecoder().decode(NormalizedTransaction.self, from: Data(bad.utf8))
            }
        }
    }
}
