/// Bytes in lowercase hexadecimal, two digits a byte.
package enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// `bytes` in lowercase hexadecimal.
    package static func lowercase(_ bytes: some Sequence<UInt8>) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Whether `text` is lowercase hexadecimal of exactly `count` characters.
    package static func isLowercase(_ text: some StringProtocol, count: Int) -> Bool {
        text.utf8.count == count && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}
