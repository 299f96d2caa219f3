import ReceiptKit

/// The JSON the store keeps beside Apple's signed bytes — each input's record, each ledger copy —
/// deflated against a preset dictionary of what such documents share: a 2.1 KB notification record
/// is stored in about 450 bytes, a 460-byte transaction copy in about 190. Every value is derived
/// from the signed bytes, which are kept as received (``RawCompaction``); this form only costs
/// less disk.
///
/// A stored value is text, in the columns that always held these documents (`inputs.record`,
/// `transaction_copies.copy`, `renewal_info_copies.copy`): `~` and the base64url of a format byte
/// (``Format``) and the JSON deflated against the format's dictionary (``Deflate``: its length
/// and CRC-32 are checked as it is read, so a damaged value is an error, never other JSON). A
/// value that does not start with `~` — a row stored by a server before this form, or written by
/// hand — is the JSON itself, which never starts with `~`. Nothing about the schema changes: old and new rows
/// sit side by side, and every statement reads both.
package struct StoredJSON: Sendable, Hashable {
    /// The JSON, as ReceiptKit wrote it.
    package let bytes: [UInt8]

    package var text: String { String(decoding: bytes, as: UTF8.self) }

    package init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    init(_ text: String) {
        self.bytes = Array(text.utf8)
    }

    /// The formats of a stored value, by its first byte. A format is never changed once released:
    /// a new dictionary is a new format, and values keep the one they were written with.
    enum Format: UInt8 {
        /// ``Deflate``'s form against ``StoredJSON/dictionary1``.
        case deflatedWithDictionary1 = 1
    }

    /// The preset dictionary of format 1 (`stored-json-dictionary-1.txt`): words such documents
    /// share, then a notification's record and a renewal info's and a transaction's copies as
    /// ReceiptKit writes them, every value naming an app, a product, a transaction or a customer
    /// left empty — the most common last, nearest to what is deflated and so cheapest to refer to.
    static let dictionary1: [UInt8] = PackageResources.stored_json_dictionary_1_txt

    /// The first character of a deflated value.
    package static let marker = UInt8(ascii: "~")

    /// The text to store: `~` and the base64url of the deflated form.
    package var stored: String {
        String(decoding: [Self.marker] + Base64URL.encode(deflated()), as: UTF8.self)
    }

    /// The value to bind: ``stored``.
    var storeValue: StoreValue { .text(stored) }

    /// The deflated form: the format byte, then ``Deflate``'s form against the format's dictionary.
    package func deflated() -> [UInt8] {
        [Format.deflatedWithDictionary1.rawValue] + Deflate.deflate(bytes, dictionary: Self.dictionary1)
    }

    /// The JSON of a stored value: deflated, or the text of a row stored before this form.
    ///
    /// - Throws: ``StoreError`` when a deflated value is not base64url or does not inflate to
    ///   the bytes it names (``Deflate/inflate(_:dictionary:what:)``).
    package init(stored: String) throws {
        guard stored.utf8.first == Self.marker else {
            self.init(Array(stored.utf8))
            return
        }
        guard let deflated = Base64URL.decode(stored.utf8.dropFirst()) else {
            throw StoreError.damaged("a stored JSON value starts with ~ but is not base64url")
        }
        try self.init(deflated: deflated)
    }

    /// The JSON of a deflated form.
    package init(deflated stored: [UInt8]) throws {
        guard let first = stored.first, Format(rawValue: first) == .deflatedWithDictionary1 else {
            throw StoreError.damaged("a stored JSON value has format \(stored.first.map(String.init) ?? "none"), which this server does not know")
        }
        self.bytes = try Deflate.inflate(stored.dropFirst(), dictionary: Self.dictionary1, what: "a stored JSON value")
    }
}

/// A stored JSON value is a text column, inflated as it is decoded.
extension StoredJSON: StoreColumnType, StoreColumnDecodable {
    static var storeColumn: StoreColumn { .text }

    init?(storeValue: StoreValue) {
        guard case .text(let stored) = storeValue, let json = try? StoredJSON(stored: stored) else { return nil }
        self = json
    }

    static func decode(_ value: StoreValue, column: Int, of sql: String) throws -> StoredJSON {
        guard case .text(let stored) = value else {
            throw StoreError.damaged("column \(column + 1) is \(value.typeName), expected stored JSON text in: \(sql)")
        }
        return try StoredJSON(stored: stored)
    }
}
