/// Hexadecimal, two digits a byte: lowercase as fingerprints and digests are printed and pinned.
///
/// ```swift
/// Hex.encode([0x0A, 0xFF])           // "0aff"
/// Hex.decode("0AFF")                 // [0x0A, 0xFF]
/// Hex.isLowercase("0aff", count: 4)  // true
/// ```
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// Encodes `bytes` as lowercase hexadecimal.
    ///
    /// - Parameter bytes: The bytes to encode.
    /// - Returns: Two lowercase digits a byte.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        // An array first, so the loop is the one compiled for arrays here (see Base64URL.encode).
        let bytes = Array(bytes)
        var output = [UInt8]()
        output.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            output.append(digits[Int(byte >> 4)])
            output.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes hexadecimal text, its letters in either case.
    ///
    /// Where only lowercase may be accepted (a digest an operator pins), check the text with
    /// ``isLowercase(_:count:)`` first.
    ///
    /// - Parameter text: The text.
    /// - Returns: Its bytes, or `nil` when it is not an even number of hexadecimal digits.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var output = [UInt8]()
        output.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = value(utf8[index]), let low = value(utf8[index + 1]) else { return nil }
            output.append(high << 4 | low)
            index += 2
        }
        return output
    }

    /// Whether `text` is exactly `count` lowercase hexadecimal digits (`0-9`, `a-f`).
    ///
    /// - Parameters:
    ///   - text: The text.
    ///   - count: How many digits it must have.
    public static func isLowercase(_ text: some StringProtocol, count: Int) -> Bool {
        text.utf8.count == count && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}
