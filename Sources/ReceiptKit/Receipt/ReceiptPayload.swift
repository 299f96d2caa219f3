/// Decodes a receipt payload into ``AppReceipt``: the attribute sets, then each known
/// attribute's value by its documented ASN.1 type.
///
/// The payload is covered by the signature, but it is parsed before the chain is validated (its
/// creation date is the validation time), so it is read as strictly as the envelope: DER only,
/// every length checked, and the counts bounded.
enum ReceiptPayload {
    /// The most attributes one attribute set may hold.
    static let maximumAttributes = 200_000
    /// The most in-app purchases a receipt may hold.
    static let maximumPurchases = 100_000

    /// The app attributes ReceiptKit decodes, with their names for error reasons.
    private static let appAttributes = DocumentedAttributes([
        (0, "receipt type"), (1, "app item id"), (2, "bundle id"), (3, "app version"), (4, "opaque value"),
        (5, "SHA-1 hash"), (12, "creation date"), (15, "download id"), (16, "version external identifier"),
        (18, "original purchase date"), (19, "original app version"), (21, "expiration date"),
    ])

    /// The in-app purchase attributes ReceiptKit decodes, with their names for error reasons.
    private static let purchaseAttributes = DocumentedAttributes([
        (1701, "quantity"), (1702, "product id"), (1703, "transaction id"), (1704, "purchase date"),
        (1705, "original transaction id"), (1706, "original purchase date"), (1707, "product type"),
        (1708, "subscription expiration date"), (1711, "web order line item id"), (1712, "cancellation date"),
        (1713, "trial period"), (1719, "introductory offer period"), (1721, "promotional offer id"),
    ])

    /// Decodes a payload.
    ///
    ///     ReceiptPayload ::= SET OF ReceiptAttribute
    ///
    /// Attribute 17 (one per in-app purchase) holds an ``InAppPurchase``; attributes 4 and 5 are
    /// raw bytes; every other documented value is itself DER: UTF8String (0, 2, 3, 19),
    /// IA5String RFC 3339 dates (12, 18, 21; empty means absent), INTEGER (1, 15, 16).
    ///
    /// - Parameter payload: The signed bytes of the envelope.
    /// - Throws: ``ReceiptKitError/Code/malformedReceipt`` naming the attribute, or
    ///   ``ReceiptKitError/Code/inputTooLarge`` beyond the count limits.
    static func decode(_ payload: [UInt8]) throws -> AppReceipt {
        try payload.withUnsafeBufferPointer(decode)
    }

    /// Decodes a payload held in memory the caller keeps alive for the call.
    private static func decode(_ payload: UnsafeBufferPointer<UInt8>) throws -> AppReceipt {
        var values = Attributes(purchaseIndex: nil, documented: appAttributes)
        var purchases: [InAppPurchase] = []
        try readSet(payload, what: "receipt payload") { type, version, value in
            if type == 17 {
                guard purchases.count < maximumPurchases else {
                    throw ReceiptKitError(.inputTooLarge, "the receipt holds more than \(maximumPurchases) in-app purchases")
                }
                purchases.append(try decodePurchase(value, index: purchases.count))
            } else {
                try values.add(type: type, version: version, value: value)
            }
        }
        let bundleIdEncoding = try values.required(2)
        try values.requirePresent(3)
        return AppReceipt(
            rawReceiptType: try values.utf8String(0),
            appItemId: try values.integer(1),
            bundleId: try values.utf8String(2) ?? "",
            applicationVersion: try values.utf8String(3) ?? "",
            opaqueValue: try values.required(4),
            sha1Hash: try values.required(5),
            receiptCreationDate: try values.requiredDate(12),
            downloadId: try values.integer(15),
            versionExternalIdentifier: try values.integer(16),
            inAppPurchases: purchases,
            originalPurchaseDate: try values.date(18),
            originalApplicationVersion: try values.utf8String(19),
            expirationDate: try values.date(21),
            otherAttributes: values.others,
            bundleIdEncoding: bundleIdEncoding)
    }

    /// Decodes one in-app purchase.
    ///
    ///     InAppPurchaseReceipt ::= SET OF ReceiptAttribute
    ///
    /// UTF8String: 1702, 1703, 1705, 1721; IA5String dates: 1704, 1706, 1708, 1712; INTEGER: 1701,
    /// 1707, 1711, 1713, 1719.
    private static func decodePurchase(_ value: UnsafeBufferPointer<UInt8>, index: Int) throws -> InAppPurchase {
        var values = Attributes(purchaseIndex: index, documented: purchaseAttributes)
        try readSet(value, what: "in-app purchase \(index)") { type, version, value in
            try values.add(type: type, version: version, value: value)
        }
        try values.requirePresent(1702)
        try values.requirePresent(1703)
        let promotionalOfferId = try values.utf8String(1721)
        return InAppPurchase(
            quantity: try values.integer(1701),
            productId: try values.utf8String(1702) ?? "",
            transactionId: try values.utf8String(1703) ?? "",
            purchaseDate: try values.requiredDate(1704),
            originalTransactionId: try values.utf8String(1705),
            originalPurchaseDate: try values.date(1706),
            rawProductType: try values.integer(1707),
            expiresDate: try values.date(1708),
            webOrderLineItemId: try values.integer(1711),
            cancellationDate: try values.date(1712),
            rawTrialPeriod: try values.integer(1713),
            rawIntroductoryOfferPeriod: try values.integer(1719),
            promotionalOfferId: promotionalOfferId?.isEmpty == true ? nil : promotionalOfferId,
            otherAttributes: values.others)
    }

    /// Reads a SET OF ReceiptAttribute that spans all of `bytes`, calling `body` with each one's
    /// type, version and value (pointing into `bytes`: nothing is copied until it is kept).
    ///
    ///     ReceiptAttribute ::= SEQUENCE {
    ///       type    INTEGER,
    ///       version INTEGER,
    ///       value   OCTET STRING }
    private static func readSet(
        _ bytes: UnsafeBufferPointer<UInt8>, what: String,
        _ body: (_ type: Int64, _ version: Int64, _ value: UnsafeBufferPointer<UInt8>) throws -> Void
    ) throws {
        var top = DERReader(borrowing: bytes, name: what)
        var set = try top.enter(DERReader.Tag.set, what)
        var count = 0
        while !set.isAtEnd {
            guard count < maximumAttributes else {
                throw ReceiptKitError(.inputTooLarge, "\(what) holds more than \(maximumAttributes) attributes")
            }
            // Error reasons are built only on failure: naming every attribute up front cost more
            // than decoding it.
            let type: Int64
            let version: Int64
            let value: UnsafeBufferPointer<UInt8>
            do {
                var sequence = try set.enter(DERReader.Tag.sequence, "ReceiptAttribute")
                type = try DERReader.integer(try sequence.readPrimitive(DERReader.Tag.integer, "type"), "type")
                version = try DERReader.integer(try sequence.readPrimitive(DERReader.Tag.integer, "version"), "version")
                value = try sequence.readPrimitive(DERReader.Tag.octetString, "value")
                try set.leave(sequence)
            } catch let error as ReceiptKitError {
                throw ReceiptKitError(error.code, "\(what), attribute \(count) \(error.reason)", underlyingError: error.underlyingError)
            }
            try body(type, version, value)
            count += 1
        }
        try top.leave(set)
        try top.finish()
    }

    /// The attribute types of one kind of set that ReceiptKit decodes, with their names.
    private struct DocumentedAttributes: Sendable {
        let types: [Int64]
        let names: [String]

        init(_ attributes: [(Int64, String)]) {
            types = attributes.map(\.0)
            names = attributes.map(\.1)
        }

        /// The position of `type` in the list (a dozen entries: a scan beats hashing).
        func index(of type: Int64) -> Int? {
            types.firstIndex(of: type)
        }
    }

    /// The attributes of one set, by type: documented ones decoded on demand, the others kept.
    private struct Attributes {
        /// `nil` for the receipt's own set, else the in-app purchase's position.
        let purchaseIndex: Int?
        let documented: DocumentedAttributes
        /// The value of each documented attribute, by its position in `documented`.
        private var known: [UnsafeBufferPointer<UInt8>?]
        private(set) var others: [ReceiptAttribute] = []

        init(purchaseIndex: Int?, documented: DocumentedAttributes) {
            self.purchaseIndex = purchaseIndex
            self.documented = documented
            self.known = Array(repeating: nil, count: documented.types.count)
        }

        private func name(_ type: Int64) -> String {
            let owner = purchaseIndex.map { "in-app purchase \($0)" } ?? "receipt"
            let name = documented.index(of: type).map { documented.names[$0] } ?? "undocumented"
            return "\(owner) attribute \(type) (\(name))"
        }

        mutating func add(type: Int64, version: Int64, value: UnsafeBufferPointer<UInt8>) throws {
            guard let index = documented.index(of: type) else {
                others.append(ReceiptAttribute(type: type, version: version, value: Array(value)))
                return
            }
            guard known[index] == nil else {
                throw ReceiptKitError(.malformedReceipt, "\(name(type)) appears more than once")
            }
            known[index] = value
        }

        private func value(_ type: Int64) -> UnsafeBufferPointer<UInt8>? {
            documented.index(of: type).flatMap { known[$0] }
        }

        /// Throws unless the attribute is present.
        func requirePresent(_ type: Int64) throws {
            guard value(type) != nil else {
                throw ReceiptKitError(.malformedReceipt, "\(name(type)) is missing")
            }
        }

        /// The raw value of a required attribute.
        func required(_ type: Int64) throws -> [UInt8] {
            guard let value = value(type) else {
                throw ReceiptKitError(.malformedReceipt, "\(name(type)) is missing")
            }
            return Array(value)
        }

        /// The single DER element a value holds, with identifier `tag`.
        private func contents(_ type: Int64, _ tag: UInt8) throws -> UnsafeBufferPointer<UInt8>? {
            guard let value = value(type) else { return nil }
            do {
                var reader = DERReader(borrowing: value, name: "value")
                let contents = try reader.readPrimitive(tag, "value")
                try reader.finish()
                return contents
            } catch let error as ReceiptKitError {
                throw ReceiptKitError(error.code, "\(name(type)) \(error.reason)", underlyingError: error.underlyingError)
            }
        }

        /// A UTF8String value.
        func utf8String(_ type: Int64) throws -> String? {
            guard let contents = try contents(type, DERReader.Tag.utf8String) else { return nil }
            guard let text = String(validating: contents, as: UTF8.self) else {
                throw ReceiptKitError(.malformedReceipt, "\(name(type)) is not valid UTF-8")
            }
            return text
        }

        /// An INTEGER value that fits in 64 bits.
        func integer(_ type: Int64) throws -> Int64? {
            guard let contents = try contents(type, DERReader.Tag.integer) else { return nil }
            do {
                return try DERReader.integer(contents, "value")
            } catch let error as ReceiptKitError {
                throw ReceiptKitError(error.code, "\(name(type)) \(error.reason)")
            }
        }

        /// An IA5String RFC 3339 date; `nil` when absent or empty.
        func date(_ type: Int64) throws -> Timestamp? {
            guard let contents = try contents(type, DERReader.Tag.ia5String), !contents.isEmpty else { return nil }
            guard contents.allSatisfy({ $0 < 0x80 }) else {
                throw ReceiptKitError(.malformedReceipt, "\(name(type)) is not an IA5String")
            }
            guard let date = Timestamp(rfc3339Bytes: contents) else {
                let text = String(decoding: contents, as: UTF8.self)
                throw ReceiptKitError(.malformedReceipt, "\(name(type)) \"\(text)\" is not an RFC 3339 date")
            }
            return date
        }

        /// A date that must be present and non-empty.
        func requiredDate(_ type: Int64) throws -> Timestamp {
            try requirePresent(type)
            guard let date = try date(type) else {
                throw ReceiptKitError(.malformedReceipt, "\(name(type)) is empty")
            }
            return date
        }
    }
}
