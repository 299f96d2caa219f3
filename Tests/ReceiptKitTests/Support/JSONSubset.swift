import Foundation

/// Deep "subset" comparison of JSON values: every member of `expected` must be present in
/// `actual` with an equal value; arrays compare element by element, `expected` elements as
/// subsets. Returns the paths that differ.
func jsonSubsetDifferences(expected: Any, actual: Any, path: String = "$") -> [String] {
    switch expected {
    case let object as [String: Any]:
        guard let actualObject = actual as? [String: Any] else { return ["\(path): expected an object, got \(actual)"] }
        return object.keys.sorted().flatMap { key -> [String] in
            guard let value = actualObject[key] else { return ["\(path).\(key): missing"] }
            return jsonSubsetDifferences(expected: object[key] as Any, actual: value, path: "\(path).\(key)")
        }
    case let array as [Any]:
        guard let actualArray = actual as? [Any], actualArray.count == array.count else {
            return ["\(path): expected \(array.count) elements, got \(actual)"]
        }
        return zip(array, actualArray).enumerated().flatMap { index, pair in
            jsonSubsetDifferences(expected: pair.0, actual: pair.1, path: "\(path)[\(index)]")
        }
    default:
        let lhs = expected as? NSObject
        let rhs = actual as? NSObject
        if expected is NSNull || actual is NSNull {
            return (expected is NSNull && actual is NSNull) ? [] : ["\(path): expected \(expected), got \(actual)"]
        }
        return lhs == rhs ? [] : ["\(path): expected \(expected), got \(actual)"]
    }
}

/// Parses one JSON text (an output record) with Foundation, for assertions.
func parseJSON(_ text: String) throws -> [String: Any] {
    guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
        throw CocoaError(.coderReadCorrupt)
    }
    return object
}
