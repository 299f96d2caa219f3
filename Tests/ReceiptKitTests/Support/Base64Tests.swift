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
}
