import AppStoreServerAPI
import Foundation
import ReceiptKit

/// The backend's answer to a consumption request, as `PUT /v1/transactions/{id}/consumption`
/// takes it (Apple's Send Consumption Information v2 fields, in snake_case), and as
/// `RECEIPTKIT_CONSUMPTION_DEFAULT` configures it (without `customer_consented`, which only a
/// customer's recorded consent gives).
public struct ConsumptionAnswer: Sendable, Hashable, Decodable, RequestFields {
    /// Apple's `deliveryStatus` values.
    static let deliveryStatuses: Set<String> = [
        "DELIVERED", "UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_WRONG_ITEM", "UNDELIVERED_SERVER_OUTAGE", "UNDELIVERED_OTHER",
    ]
    /// Apple's `refundPreference` values.
    static let refundPreferences: Set<String> = ["DECLINE", "GRANT_FULL", "GRANT_PRORATED"]

    public var customerConsented: Bool?
    public var deliveryStatus: String
    public var refundPreference: String?
    /// Thousandths of a percent, 0 to 100000.
    public var consumptionPercentage: Int?
    public var sampleContentProvided: Bool

    typealias Fields = CodingKeys
    enum CodingKeys: String, CodingKey, CaseIterable {
        case customerConsented = "customer_consented"
        case deliveryStatus = "delivery_status"
        case refundPreference = "refund_preference"
        case consumptionPercentage = "consumption_percentage"
        case sampleContentProvided = "sample_content_provided"
    }

    /// Checks what Apple checks of the fields alone: each value one Apple knows, and a
    /// percentage only where it means something.
    ///
    /// - Throws: ``InvalidInput`` naming the member.
    func validate() throws(InvalidInput) {
        guard Self.deliveryStatuses.contains(deliveryStatus) else {
            throw InvalidInput(
                "delivery_status is \"\(deliveryStatus)\"; expected one of \(Self.deliveryStatuses.sorted().joined(separator: ", "))")
        }
        if let refundPreference, !Self.refundPreferences.contains(refundPreference) {
            throw InvalidInput(
                "refund_preference is \"\(refundPreference)\"; expected one of \(Self.refundPreferences.sorted().joined(separator: ", "))")
        }
        if let percentage = consumptionPercentage {
            guard (0...100_000).contains(percentage) else {
                throw InvalidInput("consumption_percentage is \(percentage); expected 0 to 100000 (thousandths of a percent)")
            }
            if deliveryStatus != "DELIVERED", percentage != 0 {
                throw InvalidInput("consumption_percentage must be 0 when delivery_status is not DELIVERED (Apple refuses it)")
            }
        }
    }

    /// Checks what depends on the purchase: no percentage for an auto-renewable subscription
    /// (Apple computes it); a percentage strictly between 0 and 100000 for a prorated refund of
    /// anything else.
    ///
    /// - Throws: ``InvalidInput`` naming the member.
    func validate(productType: String?) throws(InvalidInput) {
        let isAutoRenewable = productType == "auto_renewable_subscription"
        if isAutoRenewable, consumptionPercentage != nil {
            throw InvalidInput(
                "consumption_percentage must be left out for an auto-renewable subscription: Apple computes it from the time used")
        }
        if !isAutoRenewable, refundPreference == "GRANT_PRORATED" {
            guard let percentage = consumptionPercentage, percentage > 0, percentage < 100_000 else {
                throw InvalidInput(
                    "refund_preference GRANT_PRORATED needs a consumption_percentage between 1 and 99999 for this purchase")
            }
        }
    }

    /// Apple's body for this answer, with the customer's consent.
    var appleRequest: ConsumptionRequest {
        ConsumptionRequest(
            customerConsented: true, consumptionPercentage: consumptionPercentage.map { Int32($0) }, deliveryStatus: deliveryStatus,
            refundPreference: refundPreference, sampleContentProvided: sampleContentProvided)
    }

    /// The JSON stored with the request and sent to Apple: ``appleRequest`` in Apple's members.
    func appleJSON() throws -> [UInt8] {
        Array(try JSONEncoder().encode(appleRequest))
    }

    /// Reads back ``appleJSON()`` (an outbox row's body).
    static func apple(_ bytes: [UInt8]) -> ConsumptionRequest? {
        struct Stored: Decodable {
            var consumptionPercentage: Int32?
            var deliveryStatus: String
            var refundPreference: String?
            var sampleContentProvided: Bool
        }
        guard let stored = try? JSONDecoder().decode(Stored.self, from: Data(bytes)) else { return nil }
        return ConsumptionRequest(
            customerConsented: true, consumptionPercentage: stored.consumptionPercentage, deliveryStatus: stored.deliveryStatus,
            refundPreference: stored.refundPreference, sampleContentProvided: stored.sampleContentProvided)
    }
}
