import Foundation
import ReceiptKit
import Testing

/// `LedgerCopy.repeats(_:)`: a copy repeats another only when the two differ in their signed
/// date alone, so that a store which keeps one signing of a run of repeats loses nothing a rule
/// reads — a revocation, a renewal, a changed auto-renew status or grace period always differ.
@Suite("Ledger copies that repeat one another")
struct LedgerCopyTests {
    /// The members a rule or the state line reads, which a repeat must carry unchanged: every
    /// member of the stored form but the signed date.
    static let signedDate = "knownFrom"

    @Test("the same copy signed at another instant repeats it, both ways; itself too")
    func signedAgain() throws {
        let ledger = try LedgerJSONTests().fullAndBareLedger()
        #expect(ledger.copies.count == 5)  // three transactions, two renewal infos
        for copy in ledger.copies {
            var object = try LedgerJSONTests.object(copy.jsonBytes())
            object[Self.signedDate] = 1_900_000_000_000
            let later = try LedgerCopy(jsonBytes: LedgerJSONTests.bytes(object), kind: copy.kind)
            #expect(later.knownFrom != copy.knownFrom)
            #expect(later.repeats(copy) && copy.repeats(later), "\(String(decoding: copy.jsonBytes(), as: UTF8.self))")
            #expect(!later.isSameCopy(as: copy))
            #expect(copy.repeats(copy))
        }
    }

    @Test("any other member changed, added or removed: not a repeat", arguments: [false, true])
    func anyOtherMember(signedLater: Bool) throws {
        let ledger = try LedgerJSONTests().fullAndBareLedger()
        var variants = 0
        for copy in ledger.copies {
            let object = try LedgerJSONTests.object(copy.jsonBytes())
            for changed in Self.variants(of: object) {
                var changed = changed
                if signedLater { changed[Self.signedDate] = 1_900_000_000_000 }
                guard let other = try? LedgerCopy(jsonBytes: LedgerJSONTests.bytes(changed), kind: copy.kind) else { continue }
                let text = String(decoding: other.jsonBytes(), as: UTF8.self)
                #expect(!other.repeats(copy) && !copy.repeats(other), "\(text) repeats \(String(decoding: copy.jsonBytes(), as: UTF8.self))")
                variants += 1
            }
        }
        #expect(variants > 40)
    }

    @Test("a copy's offer is the transaction's, read back from its stored form; renewal info has none")
    func offer() throws {
        let ledger = try LedgerJSONTests().fullAndBareLedger()
        var offers: [String: NormalizedTransaction.Offer] = [:]
        for copy in ledger.copies {
            let stored = try LedgerCopy(jsonBytes: copy.jsonBytes(), kind: copy.kind)
            #expect(stored.offer == copy.offer)
            if copy.kind == .renewalInfo { #expect(copy.offer == nil) }
            if let id = copy.transactionId, let offer = copy.offer { offers[id] = offer }
        }
        #expect(offers["5001"]?.type == "promotional" && offers["5001"]?.id == "spring")
        #expect(offers["5004"]?.type == "introductory" && offers["5004"]?.id == "trial")
        #expect(offers["5002"] == nil)
    }

    @Test("a transaction's copy never repeats a renewal info's, nor a copy of another transaction or key")
    func otherThings() throws {
        let ledger = try LedgerJSONTests().fullAndBareLedger()
        let copies = ledger.copies
        for (index, copy) in copies.enumerated() {
            for (otherIndex, other) in copies.enumerated() where otherIndex != index {
                #expect(!copy.repeats(other))
            }
        }
    }

    /// `object` with one member changed, added (when a full copy has it and this one does not)
    /// or removed, for every member but the signed date; nested objects (the key, the offer)
    /// member by member.
    static func variants(of object: [String: Any]) -> [[String: Any]] {
        var variants: [[String: Any]] = []
        let optional: [String: Any] = [
            "purchaseDate": 1_000, "expiresDate": 2_000, "revocationDate": 1_500, "productId": "p",
            "productType": "auto_renewable_subscription", "subscriptionGroupId": "g", "revocationReason": "other",
            "ownershipType": "purchased", "appAccountToken": "6F9619FF-8B86-D011-B42D-00C04FC964FF",
            "gracePeriodExpiresDate": 3_000, "renewalDate": 2_000, "autoRenewStatus": 1, "expirationIntent": 2,
            "autoRenewProductId": "q",
        ]
        let isTransaction = object["transactionId"] != nil
        let transactionOnly: Set<String> = [
            "purchaseDate", "expiresDate", "revocationDate", "productType", "subscriptionGroupId", "revocationReason",
            "ownershipType",
        ]
        let renewalOnly: Set<String> = ["gracePeriodExpiresDate", "renewalDate", "autoRenewStatus", "expirationIntent", "autoRenewProductId"]
        for (name, value) in optional where object[name] == nil {
            guard isTransaction ? !renewalOnly.contains(name) : !transactionOnly.contains(name) else { continue }
            var added = object
            added[name] = value
            variants.append(added)
        }
        for (name, value) in object where name != signedDate {
            for changed in self.changed(value, name: name) {
                var variant = object
                variant[name] = changed
                variants.append(variant)
            }
            if optional[name] != nil || name == "offer" {
                var removed = object
                removed[name] = nil
                variants.append(removed)
            }
        }
        return variants
    }

    /// `value` changed: a string lengthened, a number moved, a Boolean flipped, an object member
    /// by member.
    static func changed(_ value: Any, name: String) -> [Any] {
        if ["isUpgraded", "isInBillingRetryPeriod"].contains(name), let flag = value as? Bool { return [!flag] }
        switch value {
        case let text as String: return [text + "-changed"]
        case let object as [String: Any]:
            return object.flatMap { member, inner in
                changed(inner, name: member).map { replacement in
                    var copy = object
                    copy[member] = replacement
                    return copy as Any
                }
            }
        case let number as NSNumber: return [NSNumber(value: number.int64Value + 1_000)]
        default: return []
        }
    }
}
