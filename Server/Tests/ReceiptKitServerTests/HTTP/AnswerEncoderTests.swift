import Foundation
import ReceiptKitServer
import Testing

/// How every answer is written: snake_case members in the order encoded, `nil` as `null`,
/// ReceiptKit's rendered JSON embedded whole, strings escaped.
@Suite("AnswerEncoder")
struct AnswerEncoderTests {
    struct Inner: Encodable {
        let leafSHA256: String
        let count: Int64
    }

    struct Sample: Encodable {
        let customerId: String
        let notificationUUID: String?
        let entitled: Bool
        let lagSeconds: Int?
        let items: [Inner]
        let rendered: RenderedJSON
        let tags: [String]
    }

    @Test("members in snake_case and in the order encoded; nil as null; rendered JSON embedded; strings escaped")
    func sample() throws {
        let answer = Sample(
            customerId: "a\"b\\c\n\u{01}é", notificationUUID: nil, entitled: true, lagSeconds: nil,
            items: [Inner(leafSHA256: "ff", count: -3)], rendered: RenderedJSON(#"{"x":[1,2]}"#), tags: [])
        let text = try AnswerEncoder.encode(answer)
        #expect(text == #"{"customer_id":"a\"b\\c\n\u0001é","notification_uuid":null,"entitled":true,"lag_seconds":null,"items":[{"leaf_sha256":"ff","count":-3}],"rendered":{"x":[1,2]},"tags":[]}"#)
        // And it is JSON that any parser reads back.
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(object["customer_id"] as? String == "a\"b\\c\n\u{01}é")
        #expect(object["notification_uuid"] is NSNull)
    }

    @Test("snake_case: words at lower-to-upper boundaries and before the last capital of a run", arguments: [
        ("customerId", "customer_id"), ("notificationUUID", "notification_uuid"), ("rootSHA256", "root_sha256"),
        ("HTTPStatus", "http_status"), ("oldestPendingSeconds", "oldest_pending_seconds"), ("as_of", "as_of"), ("id", "id"),
        ("receipt-data", "receipt-data"), ("value2Go", "value2_go"),
        // Beyond ASCII, by Unicode's properties.
        ("prixÉtéTTC", "prix_été_ttc"),
    ])
    func snakeCase(key: String, expected: String) {
        #expect(AnswerEncoder.snakeCase(key) == expected)
    }

    @Test("a value JSON cannot hold is an error, not text")
    func nonFinite() {
        struct Bad: Encodable { let value: Double }
        #expect(throws: EncodingError.self) { try AnswerEncoder.encode(Bad(value: .infinity)) }
        #expect(throws: EncodingError.self) { try AnswerEncoder.encode(Bad(value: .nan)) }
    }
}
