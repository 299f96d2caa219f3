/// A PNG image that meets what Apple's Upload Image requires of its size — checked here, before
/// anything is sent, so that a wrong file is refused with the rule it breaks rather than with
/// Apple's bare `InvalidImageError`.
///
/// Apple's rules ("Upload Image", Retention Messaging API 1.4 and later): a PNG without
/// transparency; a ``ImageSize/fullSize`` image is 3840 pixels wide and 160 to 2160 pixels high,
/// a ``ImageSize/bulletPoint`` image 1024 × 1024 pixels. (Apple's 1.0 documentation said
/// 3840 × 2160 for every image; 1.4 widened the height and added bullet points.) Apple documents
/// no limit in bytes. Apple still reviews each image: a checked image can be rejected later
/// (``ImageState/rejected``).
///
/// Only the PNG's structure is read — the signature, the `IHDR` chunk, and the chunk headers up
/// to the first `IDAT` (a `tRNS` chunk, which makes colours transparent, must come before it);
/// the pixels are Apple's to decode:
///
/// ```
/// PNG      = signature chunk*                 ; signature: 89 50 4E 47 0D 0A 1A 0A
/// chunk    = length:UInt32BE type:4 data:length crc:4
/// IHDR     = width:UInt32BE height:UInt32BE bitDepth:1 colourType:1
///            compression:1 filter:1 interlace:1      ; the first chunk, 13 bytes of data
/// colourType 4 (grey + alpha), 6 (RGB + alpha): an alpha channel
/// ```
public struct RetentionImage: Sendable, Hashable {
    /// The PNG file's bytes, sent as they are (`Content-Type: image/png`).
    public let png: [UInt8]
    /// The size it was checked for, sent as `imageSize`.
    public let size: ImageSize
    /// Its width in pixels.
    public let width: Int
    /// Its height in pixels.
    public let height: Int

    /// The widths and heights Apple accepts for each size.
    static func dimensions(of size: ImageSize) -> (width: ClosedRange<Int>, height: ClosedRange<Int>) {
        switch size {
        case .fullSize: (3840...3840, 160...2160)
        case .bulletPoint: (1024...1024, 1024...1024)
        }
    }

    /// The PNG signature.
    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// Checks `png` against Apple's rules for `size`.
    ///
    /// - Parameters:
    ///   - png: A PNG file's bytes.
    ///   - size: What the image is for.
    /// - Throws: ``AppStoreServerAPIError`` `invalid_image`, naming the rule: not a PNG, a
    ///   truncated PNG, an alpha channel or a `tRNS` chunk (transparency), or dimensions outside
    ///   the size's.
    public init(png: [UInt8], size: ImageSize) throws {
        func refuse(_ reason: String) -> AppStoreServerAPIError {
            AppStoreServerAPIError(.invalidImage, reason)
        }
        guard png.starts(with: Self.signature) else {
            throw refuse("not a PNG: the file does not start with the PNG signature (Apple's Upload Image takes PNG only)")
        }
        var chunks = PNGChunks(png)
        guard let header = try chunks.next(), header.type == "IHDR", header.data.count == 13 else {
            throw refuse("not a PNG: its first chunk is not a 13-byte IHDR")
        }
        let width = Int(Self.uint32(png, at: header.data.lowerBound))
        let height = Int(Self.uint32(png, at: header.data.lowerBound + 4))
        let colourType = png[header.data.lowerBound + 9]
        if colourType == 4 || colourType == 6 {
            throw refuse(
                "the PNG has an alpha channel (colour type \(colourType)); Apple requires an image without transparency: "
                    + "export it without alpha")
        }
        while let chunk = try chunks.next(), chunk.type != "IDAT", chunk.type != "IEND" {
            if chunk.type == "tRNS" {
                throw refuse("the PNG has a tRNS chunk (transparent colours); Apple requires an image without transparency")
            }
        }
        let allowed = Self.dimensions(of: size)
        guard allowed.width.contains(width), allowed.height.contains(height) else {
            let rule = switch size {
            case .fullSize: "3840 pixels wide and 160 to 2160 pixels high"
            case .bulletPoint: "1024 × 1024 pixels"
            }
            throw refuse("a \(size.rawValue) image is \(rule) (Apple's Upload Image); this PNG is \(width) × \(height)")
        }
        self.png = png
        self.size = size
        self.width = width
        self.height = height
    }

    static func uint32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }
}

/// The chunks of a PNG after its signature, each bounds-checked against the file.
private struct PNGChunks {
    struct Chunk {
        let type: String
        /// Where the chunk's data lies in the file.
        let data: Range<Int>
    }

    let bytes: [UInt8]
    var offset = RetentionImage.signature.count

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The next chunk, or `nil` at the end of the file.
    ///
    /// - Throws: ``AppStoreServerAPIError`` `invalid_image` for a chunk that runs past the end.
    mutating func next() throws -> Chunk? {
        guard offset < bytes.count else { return nil }
        guard bytes.count - offset >= 12 else {
            throw AppStoreServerAPIError(.invalidImage, "the PNG is truncated: a chunk header at byte \(offset) runs past the end")
        }
        let length = Int(RetentionImage.uint32(bytes, at: offset))
        let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
        let start = offset + 8
        guard length <= bytes.count - start - 4 else {
            throw AppStoreServerAPIError(
                .invalidImage, "the PNG is truncated: its \(type) chunk at byte \(offset) says \(length) bytes, past the end")
        }
        offset = start + length + 4
        return Chunk(type: type, data: start..<start + length)
    }
}
