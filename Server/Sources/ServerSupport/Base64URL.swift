/// base64url (RFC 4648, section 5) without padding, as JWS segments are written.
package enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// `bytes` in base64url, without padding.
    package static func encode(_ bytes: some Collection<UInt8>) -> [UInt8] {
        let bytes = Array(bytes)
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let remaining = bytes.count - index
            let first = UInt32(bytes[index])
            let second = remaining > 1 ? UInt32(bytes[index + 1]) : 0
            let third = remaining > 2 ? UInt32(bytes[index + 2]) : 0
            let group = first << 16 | second << 8 | third
            output.append(alphabet[Int(group >> 18 & 63)])
            output.append(alphabet[Int(group >> 12 & 63)])
            if remaining > 1 { output.append(alphabet[Int(group >> 6 & 63)]) }
            if remaining > 2 { output.append(alphabet[Int(group & 63)]) }
            index += min(3, remaining)
        }
        return output
    }
}

extension Base64URL {
    /// `bytes` in base64url, without padding, as text.
    package static func string(_ bytes: some Collection<UInt8>) -> String {
        String(decoding: encode(bytes), as: UTF8.self)
    }
}
