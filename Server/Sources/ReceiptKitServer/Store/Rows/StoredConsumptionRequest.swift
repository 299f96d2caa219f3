/// A consumption request as stored.
struct StoredConsumptionRequest: Sendable, Hashable {
    var notificationUUID: String
    var productType: String?
    var deadline: Int64
    var answeredAt: Int64?
    /// The app and environment of the transaction: where the answer is sent.
    var bundleId: String
    var environment: String
}
