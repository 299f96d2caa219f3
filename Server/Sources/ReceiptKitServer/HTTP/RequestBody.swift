import Foundation
import ReceiptKit

/// A request body read strictly, as ReceiptKit reads signed payloads: one JSON object, each member
/// once (``StrictJSON``) — so that no body means one thing here and another to a proxy or a log
/// that kept the other copy of a member — then decoded into a typed value. Every fault is 400
/// `invalid_request` naming the member.
enum RequestBody {
    static func decode<Value: Decodable>(_ type: Value.Type, from bytes: [UInt8]) throws(APIError) -> Value {
        do {
            try StrictJSON.checkObject(bytes, what: "the body")
        } catch let error as ReceiptKitError {
            throw APIError.invalidRequest(error.message)
        } catch {
            throw APIError.invalidRequest("the body is not a JSON object")
        }
        do {
            return try JSONDecoder().decode(Value.self, from: Data(bytes))
        } catch let DecodingError.typeMismatch(expected, context) {
            throw APIError.invalidRequest("\(name(context.codingPath)) must be \(article(expected))")
        } catch let DecodingError.valueNotFound(expected, context) {
            throw APIError.invalidRequest("\(name(context.codingPath)) must be \(article(expected)), not null")
        } catch let DecodingError.keyNotFound(key, context) {
            throw APIError.invalidRequest("the body has no \(name(context.codingPath + [key]))")
        } catch let DecodingError.dataCorrupted(context) {
            throw APIError.invalidRequest("\(name(context.codingPath)): \(context.debugDescription)")
        } catch {
            throw APIError.invalidRequest("the body does not decode: \(error)")
        }
    }

    /// A member's path as the body spells it (`customer_id`, `items[2].id`).
    private static func name(_ path: [any CodingKey]) -> String {
        var text = ""
        for key in path {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += (text.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return text.isEmpty ? "the body" : text
    }

    private static func article(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        case is Int.Type, is Int64.Type: "an integer"
        default: "a \(type)"
        }
    }
}
