import Foundation
import ReceiptKit
import Testing

/// The strict base64 decoder against Foundation's encoder, at every length and every position
/// of a bad character: one canonical spelling per byte string, nothing else.
@Suite("Base64 decoding")
struct Base64Tests {
    static func urlEncoded(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func bytes(_ count: Int, seed: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: ($0 &* 131 &+ seed &* 17) ^ ($0 >> 3)) }
    }

    @Test("every length decodes back to its bytes, in both alphabets")
    func roundTrip() {
        for count in 0..<80 {
            for seed in 0..<4 {
                let bytes = Self.bytes(count, seed: seed)
                #expect(Base64.decode(Array(Self.urlEncoded(bytes).utf8), alphabet: .urlNoPadding) == bytes)
                #expect(Base64.decode(Array(Data(bytes).base64EncodedString().utf8), alphabet: .standardPadded) == bytes)
            }
        }
    }

    @Test("a character outside the alphabet at any position is refused")
    func badCharacter() {
        for count in 1..<40 {
            let text = Array(Self.urlEncoded(Self.bytes(count, seed: 1)).utf8)
            for position in text.indices {
                for bad in Array("+/=. \n\0é".utf8) {
                    var broken = text
                    broken[position] = bad
                    #expect(Base64.decode(broken, alphabet: .urlNoPadding) == nil, "\(count) bytes, \(bad) at \(position)")
                }
            }
        }
    }

    @Test("non-zero unused bits in the last character are refused")
    func unusedBits() {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        for count in 1..<20 where count % 3 != 0 {
            var text = Array(Self.urlEncoded(Self.bytes(count, seed: 2)).utf8)
            let last = text.count - 1
            let value = alphabet.firstIndex(of: text[last])!
            text[last] = alphabet[value + 1]
            #expect(Base64.decode(text, alphabet: .urlNoPadding) == nil, "\(count) bytes")
        }
        // A length of 1 modulo 4 is never an encoding.
        #expect(Base64.decode(Array("QUJDR".utf8), alphabet: .urlNoPadding) == nil)
    }

    @Test("16-character blocks decoded with SIMD give the scalar decoder's bytes, at every length")
    func vectorizedLengths() {
        for count in 0..<160 {
            let bytes = Self.bytes(count, seed: count)
            for (text, alphabet) in [
                (Array(Self.urlEncoded(bytes).utf8), Base64.Alphabet.urlNoPadding),
                (Array(Data(bytes).base64EncodedString().utf8), .standardPadded),
            ] {
                #expect(Base64.decode(text, alphabet: alphabet) == bytes, "\(count) bytes, \(alphabet)")
                #expect(Base64.decode(text, alphabet: alphabet, vectorized: false) == bytes, "\(count) bytes, \(alphabet)")
            }
        }
    }

    @Test("every byte at every position of three blocks: SIMD and scalar agree, valid or not")
    func vectorizedEveryByte() {
        // 48 characters (36 bytes): three whole blocks, so every position is in one.
        let bytes = Self.bytes(36, seed: 5)
        for (text, alphabet) in [
            (Array(Self.urlEncoded(bytes).utf8), Base64.Alphabet.urlNoPadding),
            (Array(Data(bytes).base64EncodedString().utf8), .standardPadded),
        ] {
            #expect(text.count == 48)
            for position in text.indices {
                for byte in UInt8.min...UInt8.max {
                    var changed = text
                    changed[position] = byte
                    let vectorized = Base64.decode(changed, alphabet: alphabet)
                    let scalar = Base64.decode(changed, alphabet: alphabet, vectorized: false)
                    #expect(vectorized == scalar, "\(alphabet): byte \(byte) at \(position)")
                }
            }
        }
    }

    @Test("every character of each alphabet decodes to its value in a SIMD block")
    func vectorizedAlphabet() {
        let url = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        let standard = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        // The 64 characters in order are the 48 bytes whose 6-bit groups count 0 to 63.
        var expected: [UInt8] = []
        for group in stride(from: 0, to: 64, by: 4) {
            let bits = UInt32(group) << 18 | UInt32(group + 1) << 12 | UInt32(group + 2) << 6 | UInt32(group + 3)
            expected += [UInt8(bits >> 16), UInt8(truncatingIfNeeded: bits >> 8), UInt8(truncatingIfNeeded: bits)]
        }
        #expect(Base64.decode(url, alphabet: .urlNoPadding) == expected)
        #expect(Base64.decode(standard, alphabet: .standardPadded) == expected)
        #expect(Base64.decode(url, alphabet: .standardPadded) == nil)
        #expect(Base64.decode(standard, alphabet: .urlNoPadding) == nil)
    }
}

/// The public encoders beside the decoder: base64url against Foundation at every length, its
/// strict decoding, and hexadecimal.
@Suite("Base64URL and Hex")
struct Base64URLHexTests {
    @Test("base64url encodes as Foundation does, without padding, and decodes back")
    func base64URLRoundTrip() {
        for count in 0..<70 {
            let bytes = Base64Tests.bytes(count, seed: 3)
            let text = Base64URL.string(bytes)
            #expect(text == Base64Tests.urlEncoded(bytes), "\(count) bytes")
            #expect(Base64URL.encode(bytes) == Array(text.utf8))
            #expect(Base64URL.decode(text.utf8) == bytes, "\(count) bytes")
            #expect(Base64URL.decode(Array(text.utf8)[...]) == bytes, "\(count) bytes")
        }
    }

    @Test("base64url decoding refuses padding, the standard alphabet, a dangling character and set unused bits")
    func base64URLStrict() {
        #expect(Base64URL.decode("-_8".utf8) == [0xFB, 0xFF])
        for text in ["-_8=", "+/8", "QUJDR", "-_9", "QQ==", "QR", " QQ"] {
            #expect(Base64URL.decode(text.utf8) == nil, "\(text)")
        }
        #expect(Base64URL.decode("".utf8) == [])
    }

    @Test("hex: lowercase out, either case in, a strict lowercase check")
    func hex() {
        #expect(Hex.encode([0x00, 0x0A, 0xFF, 0x7B]) == "000aff7b")
        #expect(Hex.decode("000aff7b") == [0x00, 0x0A, 0xFF, 0x7B])
        #expect(Hex.decode("000AFF7B"[...]) == [0x00, 0x0A, 0xFF, 0x7B])
        for text in ["0", "0g", "0a ", "+1"] { #expect(Hex.decode(text) == nil, "\(text)") }
        #expect(Hex.isLowercase("000aff7b", count: 8))
        #expect(!Hex.isLowercase("000AFF7B", count: 8))
        #expect(!Hex.isLowercase("000aff7b", count: 6))
        #expect(!Hex.isLowercase("000aff7g", count: 8))
    }
}
