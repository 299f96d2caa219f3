import Foundation
import ReceiptKit

/// A grant as support asks for it (the body of `POST /v1/customers/{customer_id}/grants`): an
/// entitlement of the file and exactly one of an expiry in the future, a duration from now and
/// `lifetime`, with an optional reason; checked into the grant to store by
/// ``grant(customerId:catalog:at:by:)``.
struct GrantRequest: Decodable, RequestFields {
    /// The longest reason kept, in characters (Unicode scalars, as JSON Schema counts them).
    static let maximumReasonLength = 1000

    let entitlement: String
    let expiresDate: String?
    let duration: String?
    let lifetime: Bool?
    let reason: String?

    typealias Fields = CodingKeys
    enum CodingKeys: String, CodingKey, CaseIterable {
        case entitlement
        case expiresDate = "expires_date"
        case duration, lifetime, reason
    }

    /// The grant the body asks for, checked.
    ///
    /// - Throws: ``InvalidInput`` naming the member at fault.
    func grant(customerId: String, catalog: EntitlementCatalog, at now: Timestamp, by name: String) throws(InvalidInput) -> StoredGrant {
        guard catalog.names.contains(entitlement) else {
            throw InvalidInput(
                "entitlement is \"\(entitlement)\", which is not an entitlement of RECEIPTKIT_ENTITLEMENTS_FILE (it has \(catalog.names.joined(separator: ", ")))")
        }
        let given = [expiresDate != nil ? "expires_date" : nil, duration != nil ? "duration" : nil, lifetime != nil ? "lifetime" : nil]
            .compactMap { $0 }
        guard given.count == 1 else {
            throw InvalidInput(
                given.isEmpty
                    ? "the body has none of expires_date, duration and lifetime; give one: how long the grant lasts"
                    : "the body has \(given.joined(separator: " and ")); give one of expires_date, duration and lifetime")
        }
        var expiresAt: Int64?
        if let expiresDate {
            guard let instant = Timestamp(rfc3339: expiresDate) else {
                throw InvalidInput("expires_date is \"\(expiresDate)\"; expected an ISO 8601 instant such as 2026-01-01T00:00:00Z")
            }
            guard instant > now else {
                throw InvalidInput("expires_date \(instant.iso8601) is not in the future (now is \(now.iso8601))")
            }
            expiresAt = instant.millisecondsSince1970
        }
        if let duration {
            do {
                expiresAt = try EntitlementDuration(iso8601: duration).added(to: now).millisecondsSince1970
            } catch {
                throw InvalidInput("duration: \(error.reason)")
            }
        }
        if let lifetime, !lifetime {
            throw InvalidInput("lifetime is false; give true for a grant with no end, or expires_date or duration")
        }
        // Characters as JSON Schema's maxLength counts them: Unicode scalars.
        if let reason, reason.unicodeScalars.count > Self.maximumReasonLength {
            throw InvalidInput(
                "reason is \(reason.unicodeScalars.count) characters; at most \(Self.maximumReasonLength) are kept")
        }
        return StoredGrant(
            UUID().uuidString.lowercased(), customerId, entitlement, now.millisecondsSince1970, expiresAt, reason, name, nil, nil)
    }
}
