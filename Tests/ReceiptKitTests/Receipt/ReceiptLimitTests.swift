import Foundation
import ReceiptKit
import Testing

/// The count limits on what a receipt holds: each is refused with its code before the work it
/// bounds. The receipts are the project's test receipt with one part of its envelope or payload
/// replaced (the signature no longer matters: these limits are checked while parsing).
@Suite("Receipt limits")
struct ReceiptLimitTests {
    /// A DER element: identifier octet and contents, or children for a constructed one.
    indirect enum Node {
        case primitive(tag: UInt8, contents: [UInt8])
        case constructed(tag: UInt8, children: [Node])

        /// Parses definite-length DER.
        static func parse(_ bytes: ArraySlice<UInt8>) throws -> [Node] {
            var nodes: [Node] = []
            var index = bytes.startIndex
            while index < bytes.endIndex {
                let tag = bytes[index]
                var length = Int(bytes[index + 1])
                var start = index + 2
                if length & 0x80 != 0 {
                    let count = length & 0x7F
                    length = bytes[start..<start + count].reduce(0) { $0 << 8 | Int($1) }
                    start += count
                }
                let contents = bytes[start..<start + length]
                // Only these are walked into; OCTET STRING contents stay opaque.
                if tag == 0x30 || tag == 0x31 || tag == 0xA0 {
                    nodes.append(.constructed(tag: tag, children: try parse(contents)))
                } else {
                    nodes.append(.primitive(tag: tag, contents: Array(contents)))
                }
                index = start + length
            }
            return nodes
        }

        var encoded: [UInt8] {
            switch self {
            case .primitive(let tag, let contents): Self.tlv(tag, contents)
            case .constructed(let tag, let children): Self.tlv(tag, children.flatMap(\.encoded))
            }
        }

        static func tlv(_ tag: UInt8, _ contents: [UInt8]) -> [UInt8] {
            let count = contents.count
            if count < 0x80 { return [tag, UInt8(count)] + contents }
            let octets = withUnsafeBytes(of: UInt32(count).bigEndian, Array.init).drop(while: { $0 == 0 })
            return [tag, 0x80 | UInt8(octets.count)] + octets + contents
        }

        /// The node at `path` (child indexes) replaced by `transform(node)`.
        func replacing(_ path: ArraySlice<Int>, _ transform: (Node) -> Node) -> Node {
            guard let first = path.first else { return transform(self) }
            guard case .constructed(let tag, var children) = self else { return self }
            children[first] = children[first].replacing(path.dropFirst(), transform)
            return .constructed(tag: tag, children: children)
        }
    }

    // ContentInfo → [0] → SignedData → { version, digestAlgorithms, encapContentInfo, [0] certificates, signerInfos }
    static let signedData = [1, 0]
    static let payloadPath = signedData + [2, 1, 0]
    static let certificatesPath = signedData + [3]

    static func receipt() throws -> Node {
        let nodes = try Node.parse(ArraySlice(Fixtures.testVector("receipts/receipt-sha256-der.der")))
        return try #require(nodes.first)
    }

    static func verifier(maximumReceiptSize: Int = 64 << 20) throws -> AppStoreVerifier {
        let anchors = try TrustAnchors(rootCertificates: [Fixtures.testVector("receipts/pki/root.der")])
        return AppStoreVerifier(.init(anchors: anchors, maximumReceiptSize: maximumReceiptSize), clock: Fixtures.fixedClock)
    }

    /// An attribute `SEQUENCE { type, version 1, OCTET STRING value }`.
    static func attribute(_ type: Int, _ value: [UInt8]) -> [UInt8] {
        let typeBytes: [UInt8] = type < 0x80 ? [UInt8(type)] : [UInt8(type >> 8), UInt8(type & 0xFF)]
        return Node.tlv(0x30, Node.tlv(0x02, typeBytes) + Node.tlv(0x02, [1]) + Node.tlv(0x04, value))
    }

    static func withPayload(_ payload: [UInt8]) throws -> [UInt8] {
        try receipt().replacing(ArraySlice(payloadPath)) { _ in .primitive(tag: 0x04, contents: payload) }.encoded
    }

    @Test("the rewriter reproduces the receipt byte for byte")
    func roundTrip() throws {
        #expect(try Self.receipt().encoded == Fixtures.testVector("receipts/receipt-sha256-der.der"))
    }

    @Test("more than 200,000 attributes in a set: input_too_large")
    func attributes() throws {
        let one = Self.attribute(9_999, [])
        let payload = Node.tlv(0x31, Array(repeating: one, count: 200_001).flatMap { $0 })
        let error = expectRejection(.inputTooLarge) { _ = try Self.verifier().verifyReceipt(Self.withPayload(payload)) }
        #expect(error?.reason.contains("200000") == true, "\(String(describing: error))")
    }

    @Test("more than 100,000 in-app purchases: input_too_large")
    func purchases() throws {
        let purchase = Self.attribute(17, Node.tlv(0x31,
            Self.attribute(1702, Node.tlv(0x0C, Array("p".utf8)))
            + Self.attribute(1703, Node.tlv(0x0C, Array("1".utf8)))
            + Self.attribute(1704, Node.tlv(0x16, Array("2025-01-01T00:00:00Z".utf8)))))
        let payload = Node.tlv(0x31, Array(repeating: purchase, count: 100_001).flatMap { $0 })
        let error = expectRejection(.inputTooLarge) { _ = try Self.verifier().verifyReceipt(Self.withPayload(payload)) }
        #expect(error?.reason.contains("100000") == true, "\(String(describing: error))")
    }

    @Test("more than 8 certificates: malformed_receipt")
    func certificates() throws {
        let receipt = try Self.receipt().replacing(ArraySlice(Self.certificatesPath)) { node in
            guard case .constructed(let tag, let children) = node else { return node }
            return .constructed(tag: tag, children: Array(repeating: children[0], count: 9))
        }
        let error = expectRejection(.malformedReceipt) { _ = try Self.verifier().verifyReceipt(receipt.encoded) }
        #expect(error?.reason.contains("certificates") == true, "\(String(describing: error))")
    }

    @Test("the size limit applies before any of them")
    func sizeFirst() throws {
        let payload = Node.tlv(0x31, Array(repeating: Self.attribute(9_999, []), count: 200_001).flatMap { $0 })
        expectRejection(.inputTooLarge) { _ = try Self.verifier(maximumReceiptSize: 1 << 20).verifyReceipt(Self.withPayload(payload)) }
    }
}
