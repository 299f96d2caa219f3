/// A JSON text a person wrote, such as a configuration file, with the line each value starts on
/// and its member path, so that a mistake in it is reported where it is:
/// `line 4, rules[1].when.status[0]: …`.
///
/// The text is read as strictly as ReceiptKit reads signed data (jansson, RFC 8259): one value
/// and nothing after it but white space, each member of an object once, no byte-order mark, no
/// `\u0000` in a string, integers within 64 bits, at most ``maximumDepth`` levels deep. Values
/// are plain Swift values, read once; a reader checks them and reports its own mistakes with
/// ``failure(_:)``, at the value's line and path:
///
/// ```swift
/// let root = try LocatedJSON(jsonBytes: Array(text.utf8))
/// guard case .object(let members) = root.value else {
///     throw root.failure("the file is \(root.kindName); expected an object")
/// }
/// ```
///
/// For small files read once (at start); not for request bodies or signed data.
public struct LocatedJSON: Sendable, Hashable {
    /// What a value is.
    public enum Value: Sendable, Hashable {
        /// An object's members, in the order written.
        case object([Member])
        /// An array's elements, in order.
        case array([LocatedJSON])
        /// A string, its escapes decoded.
        case string(String)
        /// A number written without a fraction or an exponent.
        case integer(Int64)
        /// A number written with a fraction or an exponent.
        case real(Double)
        /// `true` or `false`.
        case bool(Bool)
        /// `null`.
        case null
    }

    /// A member of an object: its name, the line its name is on, and its value.
    public struct Member: Sendable, Hashable {
        /// The member's name, its escapes decoded.
        public let name: String
        /// The line (1-based) the member's name is on.
        public let line: Int
        /// The member's value, whose ``LocatedJSON/path`` ends in ``name``.
        public let value: LocatedJSON

        /// A mistake in this member: at the line of its name and the path of its value.
        ///
        /// - Parameter reason: What is wrong.
        public func failure(_ reason: String) -> Failure {
            Failure(line: line, path: value.path, reason: reason)
        }
    }

    /// A mistake in the text: its line, the member path of the value at fault, and what is wrong.
    public struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        /// The line (1-based) of the mistake.
        public let line: Int
        /// The member path of the value at fault (`rules[1].when.status`), empty for the whole
        /// text or where the text is not JSON.
        public let path: String
        /// What is wrong.
        public let reason: String

        /// A mistake at `line` and `path`.
        ///
        /// - Parameters:
        ///   - line: The line (1-based).
        ///   - path: The member path of the value at fault, empty for the whole text.
        ///   - reason: What is wrong.
        public init(line: Int, path: String, reason: String) {
            self.line = line
            self.path = path
            self.reason = reason
        }

        /// `line 4, rules[1].when: reason`, or `line 4: reason` without a path.
        public var description: String {
            path.isEmpty ? "line \(line): \(reason)" : "line \(line), \(path): \(reason)"
        }
    }

    /// What the value is.
    public let value: Value
    /// The line (1-based) the value starts on.
    public let line: Int
    /// The value's member path from the root: names joined by `.`, array indexes in brackets
    /// (`entitlements.pro.products[1]`); empty for the root.
    public let path: String

    /// The deepest nesting read: far beyond any configuration, and well within the stack.
    public static let maximumDepth = 64

    init(_ value: Value, line: Int, path: String) {
        self.value = value
        self.line = line
        self.path = path
    }

    /// A mistake in this value: at its line and path.
    ///
    /// - Parameter reason: What is wrong.
    public func failure(_ reason: String) -> Failure {
        Failure(line: line, path: path, reason: reason)
    }

    /// What the value is, for a reason that names what was expected instead: `an object`,
    /// `an array`, `a string`, `a number`, `true`, `false` or `null`.
    public var kindName: String {
        switch value {
        case .object: "an object"
        case .array: "an array"
        case .string: "a string"
        case .integer, .real: "a number"
        case .bool(let flag): flag ? "true" : "false"
        case .null: "null"
        }
    }

    /// The path of the member `name` of an object at `path`.
    static func path(_ path: String, member name: String) -> String {
        path.isEmpty ? name : "\(path).\(name)"
    }

    /// The line of the value at `parts` below this one (member names, and `[index]`es of
    /// arrays), the line of a member being its name's: where a part is not found, the line of
    /// the deepest part found; `nil` when not even the first is.
    func line(at parts: [String]) -> Int? {
        var current = self
        var line: Int?
        for part in parts {
            switch current.value {
            case .array(let elements):
                guard part.hasPrefix("["), part.hasSuffix("]"), let index = Int(part.dropFirst().dropLast()),
                      elements.indices.contains(index) else { return line }
                current = elements[index]
                line = current.line
            case .object(let members):
                guard let member = members.first(where: { $0.name == part }) else { return line }
                current = member.value
                line = member.line
            default:
                return line
            }
        }
        return line
    }
}
