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
    private static let appAttributeNames: [Int64: String] = [
        0: "receipt type", 1: "app item id", 2: "bundle id", 3: "app version", 4: "opaque value",
        5: "SHA-1 hash", 12: "creation date", 15: "download id", 16: "version external identifier",
        18: "original purchase date", 19: "original app version", 21: "expiration date",
    ]

    /// The in-app purchase attributes ReceiptKit decodes, with their names for error reasons.
    private static let purchaseAttributeNames: [Int64: String] = [
        1701: "quantity", 1702: "product id", 1703: "transaction id", 1704: "purchase date",
        1705: "original transaction id", 1706: "original purchase date", 1707: "product type",
        1708: "subscription expiration date", 1711: "web order line item id", 1712: "cancellation date",
        1713: "trial period", 1719: "introductory offer period", 1721: "promotional offer id",
    ]

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
        var values = Attributes(owner: "receipt", names: appAttributeNames)
        var purchases: [InAppPurchase] = []
        try readSet(payload, what: "receipt payload") { attribute in
            if attribute.type == 17 {
                guard purchases.count < maximumPurchases else {
                    throw ReceiptKitError(.inputTooLarge, "the receipt holds more than \(maximumPurchases) in-app purchases")
                }
                purchases.append(try decodePurchase(attribute.value, index: purchases.count))
            } else {
                try values.add(attribute)
            }
        }
        let bundleIdEncoding = try values.required(2)
        _ = try values.required(3)
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
    private static func decodePurchase(_ value: [UInt8], index: Int) throws -> InAppPurchase {
        var values = Attributes(owner: "in-app purchase \(index)", names: purchaseAttributeNames)
        try readSet(value, what: "in-app purchase \(index)") { attribute in
            try values.add(attribute)
        }
        _ = try values.required(1702)
        _ = try values.required(1703)
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

    /// Reads a SET OF ReceiptAttribute that spans all of `bytes`, calling `body` for each.
    ///
    ///     ReceiptAttribute ::= SEQUENCE {
    ///       type    INTEGER,
    ///       version INTEGER,
    ///       value   OCTET STRING }
    private static func readSet(
        _ bytes: [UInt8], what: String, _ body: (ReceiptAttribute) throws -> Void
    ) throws {
        var top = DERReader(bytes, name: what)
        var set = try top.enter(DERReader.Tag.set, what)
        var count = 0
        while !set.isAtEnd {
            guard count < maximumAttributes else {
                throw ReceiptKitError(.inputTooLarge, "\(what) holds more than \(maximumAttributes) attributes")
            }
            // Error reasons are built only on failure: naming every attribute up front cost more
            // than decoding it.
            let attribute: ReceiptAttribute
            do {
                var sequence = try set.enter(DERReader.Tag.sequence, "ReceiptAttribute")
                let type = try DERReader.integer(try sequence.readPrimitive(DERReader.Tag.integer, "type"), "type")
                let version = try DERReader.integer(try sequence.readPrimitive(DERReader.Tag.integer, "version"), "version")
                let value = try sequence.readPrimitive(DERReader.Tag.octetString, "value")
                try set.leave(sequence)
                attribute = ReceiptAttribute(type: type, version: version, value: Array(value))
            } catch let error as ReceiptKitError {
                throw ReceiptKitError(error.code, "\(what), attribute \(count) \(error.reason)", underlyingError: error.underlyingError)
            }
            try body(attribute)
            count += 1
        }
        try top.leave(set)
        try top.finish()
    }

    /// The attributes of one set, by type: documented ones decoded on demand, the others kept.
    private struct Attributes {
        let owner: String
        let names: [Int64: String]
        private var known: [Int64: [UInt8]] = [:]
        private(set) var others: [ReceiptAttribute] = []

        init(owner: String, names: [Int64: String]) {
            self.owner = owner
            self.names = names
        }

        private func name(_ type: Int64) -> String {
            "\(owner) attribute \(type) (\(names[type] ?? "undocumented"))"
        }

        mutating func add(_ attribute: ReceiptAttribute) throws {
            guard names[attribute.type] != nil else {
                others.append(attribute)
                return
            }
            guard known[attribute.type] == nil else {
                throw ReceiptKitError(.malformedReceipt, "\(name(attribute.type)) appears more than once")
            }
            known[attribute.type] = attribute.value
        }

        /// The raw value of a required attribute.
        func required(_ type: Int64) throws -> [UInt8] {
            guard let value = known[type] else {
                throw ReceiptKitError(.malformedReceipt, "\(name(type)) is missing")
            }
            return value
        }

        /// The single DER element a value holds, with identifier `tag`.
        private func contents(_ type: Int64, _ tag: UInt8) throws -> ArraySlice<UInt8>? {
            guard let value = known[type] else { return nil }
            do {
                var reader = DERReader(value, name: "value")
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
            let text = String(decoding: contents, as: UTF8.self)
            guard let date = Timestamp(rfc3339: text) else {
                throw ReceiptKitError(.malformedReceipt, "\(name(type)) \"\(text)\" is not an RFC 3339 date")
            }
            return date
        }

        /// A date that must be present and non-empty.
        func requiredDate(_ type: Int64) throws -> Timestamp {
            _ = try required(type)
            guard let date = try date(type) else {
                throw ReceiptKitError(.malformedReceipt, "\(name(type)) is empty")
            }
            return date
        }
    }
}
