/// The identifier of the device a receipt was issued to: the first input of a receipt's
/// device hash (attribute 5).
///
/// On iOS, iPadOS, tvOS and visionOS it is `identifierForVendor` (a UUID, 16 bytes); on macOS the
/// MAC address of the primary network interface (6 bytes).
public struct DeviceIdentifier: Sendable, Hashable, CustomStringConvertible {
    /// The identifier's bytes, as hashed.
    public let bytes: [UInt8]

    /// Creates an identifier from its bytes.
    ///
    /// - Parameter bytes: 16 bytes of a UUID or 6 of a MAC address (other lengths are hashed as given).
    public init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Parses a UUID (`956328D9-CC6A-47F4-BE40-6953FB0AB6C7`, either case) or a MAC address
    /// (12 hexadecimal digits, optionally in pairs separated by `:` or `-`).
    ///
    /// - Parameter text: The identifier's text.
    /// - Returns: The identifier, or `nil` when `text` is neither.
    public init?(_ text: String) {
        let characters = Array(text.utf8)
        let dash = UInt8(ascii: "-")
        let colon = UInt8(ascii: ":")
        let hexadecimal: String
        if characters.count == 36 {
            let dashes = [8, 13, 18, 23]
            guard dashes.allSatisfy({ characters[$0] == dash }) else { return nil }
            hexadecimal = String(decoding: characters.enumerated().filter { !dashes.contains($0.offset) }.map(\.element),
                                 as: UTF8.self)
            guard hexadecimal.utf8.count == 32 else { return nil }
        } else if characters.count == 12 {
            hexadecimal = text
        } else if characters.count == 17 {
            let separator = characters[2]
            guard separator == colon || separator == dash,
                stride(from: 2, to: 17, by: 3).allSatisfy({ characters[$0] == separator })
            else { return nil }
            hexadecimal = String(decoding: characters.enumerated().filter { $0.offset % 3 != 2 }.map(\.element), as: UTF8.self)
        } else {
            return nil
        }
        guard let bytes = Hex.decode(hexadecimal) else { return nil }
        self.bytes = bytes
    }

    /// The identifier as lowercase hexadecimal.
    public var description: String { Hex.encode(bytes) }
}

extension AppReceipt {
    /// Whether the receipt was issued to `device`: SHA-1 of the device identifier, the opaque
    /// value (attribute 4) and the encoded bundle id (the DER UTF8String of attribute 2) equals
    /// the hash (attribute 5).
    ///
    /// - Parameter device: The device's identifier.
    public func isIssued(to device: DeviceIdentifier) -> Bool {
        let digest = Digest.sha1(device.bytes + opaqueValue + bundleIdEncoding)
        return digest == sha1Hash
    }
}
