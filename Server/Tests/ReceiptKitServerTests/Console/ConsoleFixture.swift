import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// What the console's tests fill a server with: the customer story (``CustomerStory``), and a
/// second customer whose id and whose product id carry markup and quotes, who upgraded to that
/// product and then turned auto-renew off.
struct ConsoleFixture: Sendable {
    /// The server's clock: after both stories.
    static let now = Date(timeIntervalSince1970: Double(ms("2025-10-15T08:00:00Z")) / 1000)
    /// A customer id meant to run as script if the console ever put it in as markup.
    static let hostileCustomer = #"<script>window.__receiptkitPwned=1</script>"'><img src=x onerror="window.__receiptkitPwned=2">"#
    /// A product id (Apple's, so untrusted text too) meant to do the same.
    static let hostileProduct = #"com.receiptkit.example.<b>"pro"</b><img src=y onerror=window.__receiptkitPwned=3>"#
    static let basicProduct = "com.receiptkit.example.basic.monthly"
    /// The second customer's subscription and its `appAccountToken`.
    static let upgradeOriginal = "8000"
    static let token = "6f1c0b0e-3b7a-4f7c-9a55-0d7e3c2b1a90"
    /// When the second customer subscribes; the upgrade is 14 days later, auto-renew is turned
    /// off 25 days later.
    static let u0 = ms("2025-07-01T09:00:00Z")

    let story: CustomerStory
    /// The basic product, posted by the backend with the hostile customer id.
    let basic: String
    /// The basic product's copy signed at the upgrade, `isUpgraded`, posted by the backend.
    let basicUpgraded: String
    /// `DID_CHANGE_RENEWAL_PREF`/`UPGRADE` with the hostile product's transaction.
    let upgrade: String
    /// `DID_CHANGE_RENEWAL_STATUS`/`AUTO_RENEW_DISABLED`.
    let autoRenewOff: String

    init() throws {
        let p = try Payloads()
        story = try CustomerStory(p)
        let (u0, original, token) = (Self.u0, Self.upgradeOriginal, Self.token)
        basic = try p.transaction(
            id: "8000", original: original, purchase: u0, expires: u0 + 30 * day, signed: u0, token: token, product: Self.basicProduct)
        basicUpgraded = try p.transaction(
            id: "8000", original: original, purchase: u0, expires: u0 + 30 * day, signed: u0 + 14 * day, token: token,
            product: Self.basicProduct, upgraded: true)
        let pro = try p.transaction(
            id: "8001", original: original, purchase: u0 + 14 * day, expires: u0 + 44 * day, signed: u0 + 14 * day, token: token,
            product: Self.hostileProduct)
        upgrade = try p.notification(
            type: "DID_CHANGE_RENEWAL_PREF", subtype: "UPGRADE", signed: u0 + 14 * day, transaction: pro,
            renewalInfo: p.renewalInfo(original: original, signed: u0 + 14 * day, product: Self.hostileProduct))
        autoRenewOff = try p.notification(
            type: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", signed: u0 + 25 * day, transaction: pro,
            renewalInfo: p.renewalInfo(original: original, signed: u0 + 25 * day, autoRenew: false, product: Self.hostileProduct))
    }

    /// The notifications stored, by type.
    static let notificationTypes = [
        "DID_CHANGE_RENEWAL_PREF": 1, "DID_CHANGE_RENEWAL_STATUS": 1, "DID_FAIL_TO_RENEW": 2, "DID_RENEW": 4, "REFUND": 1,
        "SUBSCRIBED": 1,
    ]

    /// Posts everything, each answered 200: the story's notifications, the hostile customer's
    /// purchases through `POST /v1/transactions` and their notifications. With a clock, the
    /// notifications are received 3 days apart, the last one now (when they are received
    /// changes no state, only the overview's chart).
    func fill(_ server: TestServer, clock: ManualClock? = nil) async throws {
        let notifications = story.notifications + [upgrade, autoRenewOff]
        for (index, jws) in notifications.enumerated() {
            clock?.now = Self.now.addingTimeInterval(-Double(3 * (notifications.count - 1 - index)) * 86_400)
            let answer = try await server.notify(jws)
            #expect(answer.status == .ok, "\(answer.text)")
        }
        for jws in [basic, basicUpgraded] {
            let body = try JSONSerialization.data(withJSONObject: ["signed_transaction": jws, "customer_id": Self.hostileCustomer])
            let answer = try await server.post("/v1/transactions", String(decoding: body, as: UTF8.self))
            #expect(answer.status == .ok, "\(answer.text)")
        }
    }

    /// An instant's text as the server writes it (ISO 8601 UTC with milliseconds).
    static func iso(_ milliseconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }
}
