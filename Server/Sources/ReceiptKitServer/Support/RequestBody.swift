import Foundation
import ReceiptKit

/// A request body read strictly, as ReceiptKit reads signed payloads: one JSON object, each member
/// once (``StrictJSON``) — so that no body means one thing here and another to a proxy or a log
/// that kept the other copy of a member — then decoded into a typed value. Every fault is 400
/// ``InvalidInput`` naming the member (400 `invalid_request`).
///
/// A member is absent or of its type: `null` stands for absent only where the body's type says so
/// (``RequestFields/nullable``, `type: [string, 'null']` in `Server/openapi.yaml`), and a member
/// the type does not know is refused (`additionalProperties: false`), naming the ones it does —
/// so a misspelt optional member is an error, not a silent default.
enum RequestBody {
    static func decode<Value: RequestFields>(_ type: Value.Type, from bytes: [UInt8]) throws(InvalidInput) -> Value {
        do {
            try StrictJSON.checkObject(bytes, what: "the body")
        } catch let error as ReceiptKitError {
            throw InvalidInput(error.message)
        } catch {
            throw InvalidInput("the body is not a JSON object")
        }
        do {
            // One decode: its members checked, then the value read from the same decoder.
            return try JSONDecoder().decode(Checked<Value>.self, from: Data(bytes)).value
        } catch let error as InvalidInput {
            throw error
        } catch let DecodingError.typeMismatch(expected, context) {
            throw InvalidInput("\(name(context.codingPath)) must be \(article(expected))")
        } catch let DecodingError.valueNotFound(expected, context) {
            throw InvalidInput("\(name(context.codingPath)) must be \(article(expected)), not null")
        } catch let DecodingError.keyNotFound(key, context) {
            throw InvalidInput("the body has no \(name(context.codingPath + [key]))")
        } catch let DecodingError.dataCorrupted(context) {
            throw InvalidInput("\(name(context.codingPath)): \(context.debugDescription)")
        } catch {
            throw InvalidInput("the body does not decode: \(error)")
        }
    }

    /// A body's members checked before its value is read: none the type does not know (unless it
    /// ignores others), none `null` but the nullable ones.
    private struct Checked<Checking: RequestFields>: Decodable {
        let value: Checking

        init(from decoder: any Decoder) throws {
            let members = try decoder.container(keyedBy: MemberName.self)
            let names = members.allKeys.sorted { $0.stringValue < $1.stringValue }
            let known = Checking.Fields.allCases.map(\.stringValue)
            if !Checking.othersIgnored, let unknown = names.first(where: { !known.contains($0.stringValue) }) {
                throw InvalidInput("the body has a member \(unknown.stringValue), which is not one of \(known.joined(separator: ", "))")
            }
            for name in names where !Checking.nullable.contains(name.stringValue) {
                if try members.decodeNil(forKey: name) {
                    throw InvalidInput("\(name.stringValue) is null; leave it out, or give a value of its type")
                }
            }
            value = try Checking(from: decoder)
        }
    }

    /// Any member's name.
    private struct MemberName: CodingKey {
        let stringValue: String
        init(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
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

/// A request body's type, as ``RequestBody`` reads it: the members it has, and which of them may
/// be `null`.
protocol RequestFields: Decodable {
    /// Every member of the body.
    associatedtype Fields: CodingKey & CaseIterable
    /// The members that may be `null`, standing for absent; none unless the type says.
    static var nullable: Set<String> { get }
    /// Whether a member not in ``Fields`` is ignored rather than refused (Apple's verifyReceipt
    /// body, which the drop-in reads as Apple did).
    static var othersIgnored: Bool { get }
}

extension RequestFields {
    static var nullable: Set<String> { [] }
    static var othersIgnored: Bool { false }
}
