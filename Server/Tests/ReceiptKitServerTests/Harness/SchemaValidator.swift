import Foundation
import OpenAPIKit

/// A JSON value as a body carries it, its kind kept: `true` is not the number 1, and an integer
/// is told from a fraction (JSON Schema's `integer` is a number without one).
enum JSONValue: Sendable, Equatable, Decodable, CustomStringConvertible {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Parses a JSON text.
    ///
    /// - Throws: `DecodingError` when `bytes` is not JSON.
    init(parsing bytes: some Sequence<UInt8>) throws {
        self = try JSONDecoder().decode(JSONValue.self, from: Data(bytes))
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// Equal as JSON Schema compares instances (`enum`, `uniqueItems`): 1 and 1.0 are one number.
    static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.integer(let a), .integer(let b)): a == b
        case (.integer(let a), .number(let b)), (.number(let b), .integer(let a)): Double(a) == b
        case (.number(let a), .number(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a == b
        default: false
        }
    }

    /// The kind, as a violation names it.
    var kind: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .integer: "integer"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    var description: String {
        switch self {
        case .null: "null"
        case .bool(let value): String(value)
        case .integer(let value): String(value)
        case .number(let value): String(value)
        case .string(let value): "\"\(value)\""
        case .array(let items): "[" + items.map(\.description).joined(separator: ",") + "]"
        case .object(let members): "{" + members.keys.sorted().map { "\"\($0)\":\(members[$0]!.description)" }.joined(separator: ",") + "}"
        }
    }
}

/// Checks JSON instances against the JSON Schemas of an OpenAPI 3.1 document, as OpenAPIKit
/// parsed them (OpenAPIKit reads schemas; it does not check instances).
///
/// Checked: the type (`integer` is a number without a fraction; a Boolean is no number), `null`
/// where a schema is nullable (`type: [T, 'null']`) or the null type, `enum`, an object's
/// `properties`, `required` members, `additionalProperties` (`false`, or a schema the members not
/// named must match) and `patternProperties`, an array's `items`, numeric bounds, string and
/// array lengths, `pattern`, `uniqueItems`, `allOf`, `oneOf` (exactly one), `anyOf`, `not`, and
/// `$ref` to the document's components. `format` is an annotation (JSON Schema 2020-12), not
/// checked. A keyword this validator does not know how to check (`prefixItems`) is reported as a
/// violation, never passed over.
struct SchemaValidator: Sendable {
    /// Where `$ref`s point.
    let components: OpenAPI.Components

    /// The ways `instance` breaks `schema`, each as "PATH: what" (PATH a JSON Pointer into the
    /// instance, `/` for the whole); empty when it conforms.
    ///
    /// - Parameters:
    ///   - instance: The value to check.
    ///   - schema: The schema it should conform to.
    ///   - path: The JSON Pointer of `instance` in the document it was read from.
    /// - Returns: The violations, empty when `instance` conforms.
    func violations(of instance: JSONValue, against schema: JSONSchema, at path: String = "") -> [String] {
        let at = path.isEmpty ? "/" : path
        if instance == .null, schema.nullable { return [] }
        var found: [String] = []
        if let allowed = schema.allowedValues {
            let values = allowed.map { try? JSONValue(parsing: JSONEncoder().encode($0)) }
            if values.contains(nil) {
                found.append("\(at): the schema's enum has a value that is not JSON")
            } else if !values.contains(instance) {
                found.append("\(at): \(instance) is not one of the enum's \(values.compactMap { $0?.description }.joined(separator: ", "))")
            }
        }
        switch schema.value {
        case .null:
            if instance != .null { found.append("\(at): \(instance.kind) where the schema allows only null") }
        case .boolean:
            if case .bool = instance {} else { found.append(mismatch(at, instance, "boolean", schema)) }
        case .integer(_, let context):
            switch instance {
            case .integer(let value): found += bounds(at, Double(value), context.numericContext)
            case .number(let value) where value.rounded(.towardZero) == value: found += bounds(at, value, context.numericContext)
            default: found.append(mismatch(at, instance, "integer", schema))
            }
        case .number(_, let context):
            switch instance {
            case .integer(let value): found += bounds(at, Double(value), context)
            case .number(let value): found += bounds(at, value, context)
            default: found.append(mismatch(at, instance, "number", schema))
            }
        case .string(_, let context):
            guard case .string(let value) = instance else {
                found.append(mismatch(at, instance, "string", schema))
                break
            }
            found += string(at, value, context)
        case .object(_, let context):
            guard case .object(let members) = instance else {
                found.append(mismatch(at, instance, "object", schema))
                break
            }
            found += object(path, members, context)
        case .array(_, let context):
            guard case .array(let items) = instance else {
                found.append(mismatch(at, instance, "array", schema))
                break
            }
            found += array(path, items, context)
        case .all(let schemas, _):
            for (index, part) in schemas.enumerated() {
                found += violations(of: instance, against: part, at: path).map { "\($0) (allOf[\(index)])" }
            }
        case .one(let schemas, _):
            let matching = schemas.indices.filter { violations(of: instance, against: schemas[$0], at: path).isEmpty }
            if matching.count != 1 {
                found.append("\(at): \(instance) matches \(matching.count) of oneOf's \(schemas.count) schemas \(matching), not exactly one")
            }
        case .any(let schemas, _):
            if !schemas.contains(where: { violations(of: instance, against: $0, at: path).isEmpty }) {
                found.append("\(at): \(instance) matches none of anyOf's \(schemas.count) schemas")
            }
        case .not(let excluded, _):
            if violations(of: instance, against: excluded, at: path).isEmpty {
                found.append("\(at): \(instance) matches the schema under not")
            }
        case .reference(let reference, _):
            do {
                found += violations(of: instance, against: try components.lookup(reference), at: path)
            } catch {
                found.append("\(at): cannot resolve \(reference.absoluteString): \(error)")
            }
        case .fragment:
            break  // No type: any instance (its enum, if any, was checked above).
        }
        return found
    }

    private func mismatch(_ at: String, _ instance: JSONValue, _ type: String, _ schema: JSONSchema) -> String {
        "\(at): \(instance.kind) where the schema has \(type)\(schema.nullable ? " or null" : "")"
    }

    private func bounds(_ at: String, _ value: Double, _ context: JSONSchema.NumericContext) -> [String] {
        var found: [String] = []
        if let minimum = context.minimum, value < minimum.value || (minimum.exclusive && value == minimum.value) {
            found.append("\(at): \(value) is below the minimum \(minimum.value)\(minimum.exclusive ? " (exclusive)" : "")")
        }
        if let maximum = context.maximum, value > maximum.value || (maximum.exclusive && value == maximum.value) {
            found.append("\(at): \(value) is above the maximum \(maximum.value)\(maximum.exclusive ? " (exclusive)" : "")")
        }
        if let multiple = context.multipleOf, (value / multiple).rounded(.towardZero) != value / multiple {
            found.append("\(at): \(value) is not a multiple of \(multiple)")
        }
        return found
    }

    private func string(_ at: String, _ value: String, _ context: JSONSchema.StringContext) -> [String] {
        var found: [String] = []
        if value.count < context.minLength { found.append("\(at): \(value.count) characters, fewer than \(context.minLength)") }
        if let maximum = context.maxLength, value.count > maximum { found.append("\(at): \(value.count) characters, more than \(maximum)") }
        if let pattern = context.pattern, !Self.matches(pattern, value) { found.append("\(at): \"\(value)\" does not match \(pattern)") }
        return found
    }

    private func object(_ path: String, _ members: [String: JSONValue], _ context: JSONSchema.ObjectContext) -> [String] {
        let at = path.isEmpty ? "/" : path
        var found: [String] = []
        let missing = context.requiredProperties.filter { members[$0] == nil }
        for name in missing { found.append("\(at): no \(name), which the schema requires") }
        for (name, value) in members.sorted(by: { $0.key < $1.key }) {
            let memberPath = path + "/" + name.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
            var named = false
            if let schema = context.properties[name] {
                named = true
                found += violations(of: value, against: schema, at: memberPath)
            }
            for (pattern, schema) in context.patternProperties where Self.matches(pattern, name) {
                named = true
                found += violations(of: value, against: schema, at: memberPath)
            }
            guard !named else { continue }
            switch context.additionalProperties {
            case .a(false): found.append("\(at): \(name) is not among the schema's properties, and additionalProperties is false")
            case .b(let schema): found += violations(of: value, against: schema, at: memberPath)
            case .a(true), nil: break
            }
        }
        // OpenAPIKit's minProperties is at least the number of required members: once those are
        // all there, only an explicit minimum can be short.
        if missing.isEmpty, members.count < context.minProperties {
            found.append("\(at): \(members.count) members, fewer than \(context.minProperties)")
        }
        if let maximum = context.maxProperties, members.count > maximum { found.append("\(at): \(members.count) members, more than \(maximum)") }
        return found
    }

    private func array(_ path: String, _ items: [JSONValue], _ context: JSONSchema.ArrayContext) -> [String] {
        let at = path.isEmpty ? "/" : path
        var found: [String] = []
        if context.prefixItems != nil { found.append("\(at): the schema has prefixItems, which this validator does not check") }
        if let schema = context.items {
            for (index, item) in items.enumerated() { found += violations(of: item, against: schema, at: "\(path)/\(index)") }
        }
        if items.count < context.minItems { found.append("\(at): \(items.count) items, fewer than \(context.minItems)") }
        if let maximum = context.maxItems, items.count > maximum { found.append("\(at): \(items.count) items, more than \(maximum)") }
        if context.uniqueItems {
            for index in items.indices where items[..<index].contains(items[index]) {
                found.append("\(at): item \(index) repeats an earlier one, and the schema has uniqueItems")
            }
        }
        return found
    }

    /// Whether `pattern` (an ECMA-262 regular expression, unanchored) matches somewhere in `text`.
    private static func matches(_ pattern: String, _ text: String) -> Bool {
        guard let expression = try? NSRegularExpression(pattern: pattern) else { return false }
        return expression.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }
}
