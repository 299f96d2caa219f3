import ReceiptKit

/// One change of a customer's named entitlement (``EventType/entitlementActivated`` or
/// ``EventType/entitlementDeactivated``), before its id is known: what ``json(id:)`` renders.
struct EntitlementEvent: Sendable {
    var customerId: String
    /// The entitlement after the change, as ReceiptKit derived it.
    var entitlement: NamedEntitlement
    var cause: EventCause

    var type: EventType { entitlement.isActive ? .entitlementActivated : .entitlementDeactivated }

    /// The app and environment of the purchase that gives (or gave) the entitlement; empty for a
    /// grant, which belongs to no app.
    var bundleId: String { entitlement.key?.bundleId ?? "" }
    var environment: String { entitlement.key?.environment ?? "" }

    /// The event as the feed serves it and a webhook carries it: `{"id", "type", "occurred_at",
    /// "customer_ids", "name", "active", "source", "bundle_id", "environment",
    /// "original_transaction_id", "entitlement", "cause"}`; `entitlement` as
    /// `GET /v1/customers/{id}/entitlements` answers it.
    func json(id: Int64) throws -> String {
        try AnswerEncoder.encode(Payload(event: self, id: id))
    }

    /// The row of `change_events`: the purchase's key, or empty columns for a grant, and the
    /// customer (``FeedStatements/insertCustomerEvent``).
    func write(id: Int64, json: String, recordedAt: Int64) -> StoreWrite {
        StoreWrite(FeedStatements.insertCustomerEvent, [
            "id": .integer(id), "type": .text(type.rawValue), "occurred_at": .integer(entitlement.asOf.millisecondsSince1970),
            "recorded_at": .integer(recordedAt), "original_transaction_id": .text(entitlement.key?.originalTransactionId ?? ""),
            "bundle_id": .text(bundleId), "environment": .text(environment), "payload": .text(json), "customer_id": .text(customerId),
        ])
    }

    private struct Payload: Encodable {
        let event: EntitlementEvent
        let id: Int64

        private enum CodingKeys: String, CodingKey {
            case id, type, occurredAt, customerIds, name, active, source, bundleId, environment
            case originalTransactionId, entitlement, cause
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            let entitlement = event.entitlement
            try container.encode(String(id), forKey: .id)
            try container.encode(event.type.rawValue, forKey: .type)
            try container.encode(entitlement.asOf.iso8601, forKey: .occurredAt)
            try container.encode([event.customerId], forKey: .customerIds)
            try container.encode(entitlement.name, forKey: .name)
            try container.encode(entitlement.isActive, forKey: .active)
            try container.encode(entitlement.source?.rawValue, forKey: .source)
            try container.encode(entitlement.key?.bundleId, forKey: .bundleId)
            try container.encode(entitlement.key?.environment, forKey: .environment)
            try container.encode(entitlement.originalTransactionId, forKey: .originalTransactionId)
            try container.encode(RenderedJSON(entitlement.json()), forKey: .entitlement)
            try container.encode(event.cause, forKey: .cause)
        }
    }
}
