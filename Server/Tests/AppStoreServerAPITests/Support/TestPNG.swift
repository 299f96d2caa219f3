import Foundation

/// Real PNG files for the Retention Messaging tests, made here rather than shipped: a 3840-pixel
/// wide image is large as a fixture, and the dimensions are what the tests vary.
///
/// Greyscale images are 1 bit a pixel, all black, their zlib stream in stored (uncompressed)
/// blocks; every chunk carries its CRC-32, so any PNG decoder reads them.
enum TestPNG {
    /// A PNG of `width` × `height`: 1-bit greyscale by default; `alpha` makes it 8-bit
    /// greyscale with alpha (colour type 4); `transparentColour` adds a `tRNS` chunk.
    static func make(width: Int, height: Int, alpha: Bool = false, transparentColour: Bool = false) -> [UInt8] {
        let (bitDepth, colourType, bytesPerRow): (UInt8, UInt8, Int) = alpha ? (8, 4, 2 * width) : (1, 0, (width + 7) / 8)
        var header: [UInt8] = []
        header += bigEndian(UInt32(width)) + bigEndian(UInt32(height))
        header += [bitDepth, colourType, 0, 0, 0]
        let scanlines = [UInt8](repeating: 0, count: (bytesPerRow + 1) * height)  // filter byte 0, then zeros
        var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        png += chunk("IHDR", header)
        if transparentColour { png += chunk("tRNS", [0, 0]) }
        png += chunk("IDAT", zlibStored(scanlines))
        png += chunk("IEND", [])
        return png
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typed = Array(type.utf8) + data
        return bigEndian(UInt32(data.count)) + typed + bigEndian(crc32(typed))
    }

    /// RFC 1950 around RFC 1951 stored blocks.
    static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let length = min(65_535, data.count - offset)
            let final: UInt8 = offset + length == data.count ? 1 : 0
            out += [final, UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8(~length >> 8 & 0xFF)]
            out += data[offset..<offset + length]
            offset += length
        } while offset < data.count
        var (a, b): (UInt32, UInt32) = (1, 0)
        for byte in data {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return out + bigEndian(b << 16 | a)
    }

    static let crcTable: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        ~bytes.reduce(UInt32.max) { crcTable[Int(($0 ^ UInt32($1)) & 0xFF)] ^ ($0 >> 8) }
    }

    /// Writes `png` into the run's directory and returns the path.
    static func file(_ name: String, _ png: [UInt8]) throws -> String {
        let url = Fixture.directory.appendingPathComponent(name)
        try Data(png).write(to: url)
        return url.path
    }
}
