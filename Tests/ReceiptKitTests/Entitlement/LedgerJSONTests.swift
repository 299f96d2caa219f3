import Foundation
import ReceiptKit
import ReceiptKitTestSupport
import Testing

/// `jsonBytes()` and `init(jsonBytes:)`: the same JSON as the ledger's `Codable` form through
/// Foundation, both ways, for every member present, absent or `null`; and a specific
/// `malformed_ledger` for every text it must not read.
@Suite("Entitlement ledger JSON")
struct LedgerJSONTests {
    let history: PurchaseHistory

    init() throws {
        history = try PurchaseHistory()
    }

    /// The members the `Codable` form requires; every other member is optional.
    static let requiredMembers: Set<String> = [
        "key", "bundleId", "environment", "originalTransactionId", "transactionId", "knownFrom", "isUpgraded",
        "isInBillingRetryPeriod",
    ]

    // MARK: Round trips

    @Test("random histories: bytes read back equal, JSONDecoder agrees, JSONEncoder's bytes read back, same members",
          arguments: 0..<16)
    func randomHistories(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let records = try history.randomHistory(&random).map(history.record)
        let ledger = EntitlementLedger.folding(records)
        try Self.expectCompatible(ledger)
        #expect(EntitlementLedger.folding(records.reversed()).jsonBytes() == ledger.jsonBytes(),
                "equal ledgers give equal bytes")
        let decoded = try EntitlementLedger(jsonBytes: ledger.jsonBytes())
        let days: [Double] = [-1, 5, 33, 70, 120]
        #expect(EntitlementLedgerTests.lines(decoded, at: days) == EntitlementLedgerTests.lines(ledger, at: days))
    }

    @Test("a subscription growing to 24 renewals, each with its renewal info: compatible at every size")
    func growingSubscription() throws {
        var ledger = EntitlementLedger()
        for month in 0..<24 {
            // Twenty-day periods: 24 of them stay inside the test leaf's validity.
            let start = Double(month * 20)
            ledger.add(try history.record(history.notificationJWS(
                type: "DID_RENEW", signed: start,
                transaction: history.transactionJWS(
                    id: "\(7000 + month)", original: "7000", purchased: start, expires: start + 20, signed: start,
                    appAccountToken: "6F9619FF-8B86-D011-B42D-00C04FC964FF"),
                renewalInfo: history.renewalInfoJWS(original: "7000", signed: start, renewal: start + 20))))
            try Self.expectCompatible(ledger)
            let stored = try Self.object(ledger.jsonBytes())
            #expect((stored["transactions"] as? [Any])?.count == month + 1)
            #expect((stored["renewal_infos"] as? [Any])?.count == month + 1)
        }
    }

    @Test("an empty ledger")
    func empty() throws {
        let bytes = EntitlementLedger().jsonBytes()
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"version":1,"transactions":[],"renewal_infos":[]}"#)
        try Self.expectCompatible(EntitlementLedger())
    }

    @Test("every optional member written when present and left out when absent, as JSONEncoder does")
    func everyOptional() throws {
        let ledger = try fullAndBareLedger()
        try Self.expectCompatible(ledger)
        let stored = try Self.object(ledger.jsonBytes())
        let transactions = try #require(stored["transactions"] as? [[String: Any]])
        let renewalInfos = try #require(stored["renewal_infos"] as? [[String: Any]])
        let full = try #require(transactions.first { $0["transactionId"] as? String == "5001" })
        let bare = try #require(transactions.first { $0["transactionId"] as? String == "5002" })
        #expect(Set(full.keys) == [
            "key", "transactionId", "knownFrom", "purchaseDate", "expiresDate", "revocationDate", "isUpgraded",
            "productId", "productType", "subscriptionGroupId", "revocationReason", "ownershipType", "offer",
            "appAccountToken",
        ])
        let trial = try #require(transactions.first { $0["transactionId"] as? String == "5004" })
        #expect(Set((trial["offer"] as? [String: Any] ?? [:]).keys) == ["type", "id", "discountType", "period"])
        #expect(Set(bare.keys) == ["key", "transactionId", "knownFrom", "isUpgraded"])
        #expect(bare["knownFrom"] as? Int64 == Int64.min, "no signed date: known since always")
        let fullInfo = try #require(renewalInfos.first { $0["originalTransactionId"] as? String == "5001" })
        let bareInfo = try #require(renewalInfos.first { $0["originalTransactionId"] as? String == "5002" })
        #expect(Set(fullInfo.keys) == [
            "environment", "originalTransactionId", "knownFrom", "gracePeriodExpiresDate", "renewalDate",
            "autoRenewStatus", "expirationIntent", "isInBillingRetryPeriod", "productId", "autoRenewProductId",
            "appAccountToken",
        ])
        #expect(Set(bareInfo.keys) == ["environment", "originalTransactionId", "knownFrom", "isInBillingRetryPeriod"])
    }

    @Test("each member absent, then null: read exactly when JSONDecoder reads it, to the same ledger")
    func eachMemberAbsentOrNull() throws {
        let encoded = try Self.object(JSONEncoder().encode(try fullAndBareLedger()))
        var variants = 0
        for (path, name) in Self.memberPaths(of: encoded) {
            for replacement in [nil, NSNull()] as [Any?] {
                let bytes = try Self.bytes(Self.replacing(path, in: encoded, with: replacement))
                let foundation = try? JSONDecoder().decode(EntitlementLedger.self, from: Data(bytes))
                let what = "\(path.map { "\($0)" }.joined(separator: ".")) \(replacement == nil ? "absent" : "null")"
                if Self.requiredMembers.contains(name) {
                    #expect(foundation == nil, "JSONDecoder read \(what)")
                    let error = expectRejection(.malformedLedger) { _ = try EntitlementLedger(jsonBytes: bytes) }
                    #expect(error?.reason.contains("'\(Self.jsonPath(path))' is missing or null") == true,
                            "\(what): \(String(describing: error))")
                } else {
                    let ours = try EntitlementLedger(jsonBytes: bytes)
                    #expect(foundation == ours, "\(what)")
                }
                variants += 1
            }
        }
        #expect(variants > 80)
    }

    @Test("each member of the wrong JSON type: rejected by both, and here with the member named")
    func eachMemberOfWrongType() throws {
        let encoded = try Self.object(JSONEncoder().encode(try fullAndBareLedger()))
        var variants = 0
        for (path, name) in Self.memberPaths(of: encoded) {
            let value = Self.value(at: path, in: encoded)
            let wrong: [Any] =
                if ["isUpgraded", "isInBillingRetryPeriod"].contains(name) { ["true", 1] }
                else if value is [String: Any] { ["x", 1, [] as [Any]] }
                else if value is String { [12, true, ["x"]] }
                else { ["12", true, 1.5] }
            for replacement in wrong {
                let bytes = try Self.bytes(Self.replacing(path, in: encoded, with: replacement))
                let what = "\(Self.jsonPath(path)) = \(replacement)"
                #expect((try? JSONDecoder().decode(EntitlementLedger.self, from: Data(bytes))) == nil,
                        "JSONDecoder read \(what)")
                let error = expectRejection(.malformedLedger) { _ = try EntitlementLedger(jsonBytes: bytes) }
                #expect(error?.reason.contains("member '\(Self.jsonPath(path))' must be") == true,
                        "\(what): \(String(describing: error))")
                variants += 1
            }
        }
        #expect(variants > 100)
    }

    @Test("strings with escapes, NUL, DEL, non-ASCII and long text, and Int64 extremes, read as Foundation reads them")
    func unusualValues() throws {
        var encoded = try Self.object(JSONEncoder().encode(try fullAndBareLedger()))
        let text = "a\u{0}b\"c\\d/e\u{7F}f\u{1}\n\té€😀 " + String(repeating: "long/", count: 20)
        encoded = try Self.replacing(["transactions", 0, "productId"], in: encoded, with: text)
        encoded = try Self.replacing(["transactions", 0, "key", "bundleId"], in: encoded, with: text)
        encoded = try Self.replacing(["transactions", 0, "offer", "id"], in: encoded, with: "")
        encoded = try Self.replacing(["transactions", 0, "expiresDate"], in: encoded, with: Int64.max)
        encoded = try Self.replacing(["renewal_infos", 0, "autoRenewStatus"], in: encoded, with: Int32.min)
        encoded = try Self.replacing(["renewal_infos", 0, "appAccountToken"], in: encoded, with: text)
        let bytes = try Self.bytes(encoded)
        let ours = try EntitlementLedger(jsonBytes: bytes)
        #expect(ours == (try JSONDecoder().decode(EntitlementLedger.self, from: Data(bytes))))
        try Self.expectCompatible(ours)
        let written = try Self.object(ours.jsonBytes())
        let productIds = (written["transactions"] as? [[String: Any]] ?? []).compactMap { $0["productId"] as? String }
        #expect(productIds.contains(text))
    }

    @Test("members this format does not define are ignored, as JSONDecoder ignores them")
    func unknownMembers() throws {
        let ledger = try fullAndBareLedger()
        var encoded = try Self.object(ledger.jsonBytes())
        encoded["comment"] = "kept by someone else"
        encoded = try Self.replacing(["transactions", 0, "futureMember"], in: encoded, with: ["a": 1])
        #expect(try EntitlementLedger(jsonBytes: Self.bytes(encoded)) == ledger)
    }

    // MARK: Rejections

    @Test("every truncation of a stored ledger is malformed_ledger: not valid JSON")
    func truncated() throws {
        let bytes = try fullAndBareLedger().jsonBytes()
        for length in 0..<bytes.count {
            let error = expectRejection(.malformedLedger) { _ = try EntitlementLedger(jsonBytes: Array(bytes[..<length])) }
            #expect(error?.reason.hasPrefix("entitlement ledger is not valid JSON") == true,
                    "\(length): \(String(describing: error))")
        }
    }

    @Test("a duplicate member, at the top or in a copy, is malformed_ledger")
    func duplicateMember() throws {
        let text = String(decoding: try fullAndBareLedger().jsonBytes(), as: UTF8.self)
        for (original, duplicated) in [
            (#"{"version":1,"#, #"{"version":1,"version":1,"#),
            (#""isUpgraded":false"#, #""isUpgraded":false,"isUpgraded":true"#),
            (#""isInBillingRetryPeriod":true"#, #""isInBillingRetryPeriod":true,"isInBillingRetryPeriod":true"#),
        ] {
            #expect(text.contains(original))
            let bytes = Array(text.replacingOccurrences(of: original, with: duplicated).utf8)
            let error = expectRejection(.malformedLedger) { _ = try EntitlementLedger(jsonBytes: bytes) }
            #expect(error?.reason.contains("duplicate object key") == true, "\(String(describing: error))")
        }
    }

    @Test("top-level members of the wrong type, or not an object, are malformed_ledger with the reason")
    func wrongTopLevel() {
        let cases: [(String, String)] = [
            (#"{"version":"1","transactions":[],"renewal_infos":[]}"#, "member 'version' must be an integer, found a string"),
            (#"{"version":1.0,"transactions":[],"renewal_infos":[]}"#, "member 'version' must be an integer, found a fractional number"),
            (#"{"version":1,"transactions":{},"renewal_infos":[]}"#, "member 'transactions' must be an array, found an object"),
            (#"{"version":1,"transactions":[1],"renewal_infos":[]}"#, "element 0 of 'transactions' must be an object"),
            (#"{"version":1,"transactions":[],"renewal_infos":null}"#, "member 'renewal_infos' is missing or null"),
            (#"{"transactions":[],"renewal_infos":[]}"#, "member 'version' is missing or null"),
            (#"[]"#, "entitlement ledger is not a JSON object"),
            ("\u{FEFF}{}", "entitlement ledger starts with a byte-order mark"),
        ]
        for (text, reason) in cases {
            let error = expectRejection(.malformedLedger) { _ = try EntitlementLedger(jsonBytes: Array(text.utf8)) }
            #expect(error?.reason == reason, "\(text)")
        }
    }

    @Test("a format version other than 1 is malformed_ledger, as JSONDecoder rejects it")
    func unknownVersion() throws {
        let text = String(decoding: try fullAndBareLedger().jsonBytes(), as: UTF8.self)
        for version in [0, 2, -1] {
            let bytes = Array(text.replacingOccurrences(of: #"{"version":1,"#, with: #"{"version":\#(version),"#).utf8)
            let error = expectRejection(.malformedLedger) { _ = try EntitlementLedger(jsonBytes: bytes) }
            #expect(error?.reason == "entitlement ledger format \(version) is not 1")
            #expect((try? JSONDecoder().decode(EntitlementLedger.self, from: Data(bytes))) == nil)
        }
    }

    // MARK: Helpers

    /// A ledger with two keys: one whose transaction and renewal info carry every member the
    /// ledger keeps, one whose carry only what the ledger cannot do without.
    func fullAndBareLedger() throws -> EntitlementLedger {
        var ledger = EntitlementLedger()
        ledger.add(try history.record(history.notificationJWS(
            type: "REFUND", signed: 12,
            transaction: history.transactionJWS(
                id: "5001", original: "5001", purchased: 1, expires: 31, signed: 12, revoked: 11, revocationReason: 1,
                upgraded: true, offerType: 2, offerDiscountType: "PAY_AS_YOU_GO", offerId: "spring",
                appAccountToken: "6F9619FF-8B86-D011-B42D-00C04FC964FF"),
            renewalInfo: history.sign([
                "originalTransactionId": "5001", "environment": history.environment,
                "productId": PurchaseHistory.monthly, "autoRenewProductId": PurchaseHistory.yearly,
                "autoRenewStatus": 0, "expirationIntent": 2, "isInBillingRetryPeriod": true,
                "gracePeriodExpiresDate": PurchaseHistory.day(37).millisecondsSince1970,
                "renewalDate": PurchaseHistory.day(31).millisecondsSince1970,
                "appAccountToken": "6F9619FF-8B86-D011-B42D-00C04FC964FF",
                "signedDate": PurchaseHistory.day(12).millisecondsSince1970,
            ]))))
        // The builder writes no offer period: a renewal with one, signed as Apple writes it.
        ledger.add(try history.record(history.sign([
            "transactionId": "5004", "originalTransactionId": "5001", "bundleId": PurchaseHistory.bundleId,
            "environment": history.environment, "productId": PurchaseHistory.monthly,
            "type": "Auto-Renewable Subscription", "purchaseDate": PurchaseHistory.day(31).millisecondsSince1970,
            "expiresDate": PurchaseHistory.day(61).millisecondsSince1970, "offerType": 1,
            "offerDiscountType": "FREE_TRIAL", "offerPeriod": "P1W", "offerIdentifier": "trial",
            "signedDate": PurchaseHistory.day(31).millisecondsSince1970,
        ])))
        ledger.add(try history.record(history.sign([
            "transactionId": "5002", "bundleId": PurchaseHistory.bundleId, "environment": history.environment,
        ])))
        ledger.add(try history.record(history.sign([
            "originalTransactionId": "5002", "environment": history.environment,
            "signedDate": PurchaseHistory.day(3).millisecondsSince1970,
        ])))
        return ledger
    }

    /// Expects `ledger`'s bytes to read back equal through both decoders, JSONEncoder's bytes to
    /// read back equal here, and both texts to hold the same members with the same values.
    static func expectCompatible(_ ledger: EntitlementLedger, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let bytes = ledger.jsonBytes()
        #expect(try EntitlementLedger(jsonBytes: bytes) == ledger, sourceLocation: sourceLocation)
        #expect(try JSONDecoder().decode(EntitlementLedger.self, from: Data(bytes)) == ledger,
                sourceLocation: sourceLocation)
        let foundation = try JSONEncoder().encode(ledger)
        #expect(try EntitlementLedger(jsonBytes: Array(foundation)) == ledger, sourceLocation: sourceLocation)
        let ours = try canonical(bytes)
        let theirs = try canonical(Array(foundation))
        #expect(ours == theirs, sourceLocation: sourceLocation)
        #expect(bytes.starts(with: Array(#"{"version":1,"#.utf8)), sourceLocation: sourceLocation)
    }

    /// JSON text re-serialized with sorted keys, to compare members and values whatever the order.
    static func canonical(_ bytes: [UInt8]) throws -> String {
        let value = try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
        return String(decoding: try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys]), as: UTF8.self)
    }

    static func object(_ bytes: some Sequence<UInt8>) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    static func bytes(_ object: [String: Any]) throws -> [UInt8] {
        Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    /// Every member of every copy (and of its key and offer), as a path and the member's name.
    static func memberPaths(of encoded: [String: Any]) -> [([AnyHashable], String)] {
        var paths: [([AnyHashable], String)] = []
        for list in ["transactions", "renewal_infos"] {
            for (index, copy) in (encoded[list] as? [[String: Any]] ?? []).enumerated() {
                for (name, value) in copy {
                    paths.append(([list, index, name], name))
                    for inner in (value as? [String: Any] ?? [:]).keys {
                        paths.append(([list, index, name, inner], inner))
                    }
                }
            }
        }
        return paths.sorted { jsonPath($0.0) < jsonPath($1.0) }
    }

    /// A path as the ledger's error reasons name it: `transactions[0].key.bundleId`.
    static func jsonPath(_ path: [AnyHashable]) -> String {
        path.reduce("") { text, step in
            if let index = step as? Int { return "\(text)[\(index)]" }
            return text.isEmpty ? "\(step)" : "\(text).\(step)"
        }
    }

    static func value(at path: [AnyHashable], in object: Any) -> Any? {
        guard let step = path.first else { return object }
        if let index = step as? Int, let array = object as? [Any] { return value(at: Array(path.dropFirst()), in: array[index]) }
        if let name = step as? String, let dictionary = object as? [String: Any], let member = dictionary[name] {
            return value(at: Array(path.dropFirst()), in: member)
        }
        return nil
    }

    /// `object` with the member at `path` set to `value`, or removed when `value` is `nil`.
    static func replacing(_ path: [AnyHashable], in object: [String: Any], with value: Any?) throws -> [String: Any] {
        try #require(replacing(path[...], in: object as Any, with: value) as? [String: Any])
    }

    private static func replacing(_ path: ArraySlice<AnyHashable>, in object: Any, with value: Any?) -> Any? {
        guard let step = path.first else { return value }
        if let index = step as? Int, var array = object as? [Any] {
            array[index] = replacing(path.dropFirst(), in: array[index], with: value) as Any
            return array
        }
        guard let name = step as? String, var dictionary = object as? [String: Any] else { return object }
        if path.count == 1 {
            dictionary[name] = value
        } else if let member = dictionary[name] {
            dictionary[name] = replacing(path.dropFirst(), in: member, with: value)
        }
        return dictionary
    }
}
