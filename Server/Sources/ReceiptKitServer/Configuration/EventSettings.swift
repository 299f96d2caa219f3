import Foundation
import ReceiptKit
import ServerSupport

/// How the server tells backends what changed: how often time-caused changes are looked for,
/// where events are sent and signed, where Apple's notifications are forwarded, and how the
/// outbox is retried.
///
/// Read from `RECEIPTKIT_SWEEP_INTERVAL` (seconds, default 60), `RECEIPTKIT_WEBHOOK_URL` and
/// `RECEIPTKIT_WEBHOOK_SECRET` (both or neither), `RECEIPTKIT_WEBHOOK_RETRY_HOURS` (default 72),
/// `RECEIPTKIT_WEBHOOK_TIMEOUT` (seconds, default 10), `RECEIPTKIT_FORWARD_URLS`
/// (comma-separated), `RECEIPTKIT_WEBHOOK_ENVIRONMENTS` (the environments whose events the
/// webhook gets, comma-separated; default all) and `RECEIPTKIT_CONSUMPTION_DEFAULT` (a JSON
/// answer).
public struct EventSettings: Sendable {
    /// How often the keys whose state time may have changed are evaluated again
    /// (``SweepService``): an expiry with no notification is in the feed at most this late.
    public var sweepInterval: Duration
    /// Where each event is POSTed, or `nil` for the feed alone.
    public var webhookURL: String?
    /// What signs each webhook (HMAC-SHA256, ``WebhookSignature``).
    public var webhookSecret: String?
    /// The environments whose events the webhook gets; `nil`: all.
    public var webhookEnvironments: Set<String>?
    /// Where each verified notification is POSTed as Apple sent it.
    public var forwardURLs: [String]
    /// How long a delivery is tried before it is dead-lettered.
    public var retryWindow: Duration
    /// Attempts, back-off and concurrency.
    public var delivery: DeliveryPolicy
    /// The answer sent to a consumption request nobody answered an hour before its deadline,
    /// for customers recorded as consenting; `nil`: none.
    public var consumptionDefault: ConsumptionAnswer?

    /// Creates settings.
    public init(
        sweepInterval: Duration = .seconds(60), webhookURL: String? = nil, webhookSecret: String? = nil, forwardURLs: [String] = [],
        retryWindow: Duration = .seconds(72 * 3600), delivery: DeliveryPolicy = DeliveryPolicy(),
        consumptionDefault: ConsumptionAnswer? = nil
    ) {
        self.consumptionDefault = consumptionDefault
        self.sweepInterval = sweepInterval
        self.webhookURL = webhookURL
        self.webhookSecret = webhookSecret
        self.forwardURLs = forwardURLs
        self.retryWindow = retryWindow
        self.delivery = delivery
    }

    /// The shortest webhook secret accepted, in bytes: 128 bits of a random secret's worth.
    static let minimumSecretLength = 16

    /// Where the store writes outbox rows for.
    var targets: OutboxTargets {
        OutboxTargets(
            webhookURL: webhookURL, webhookEnvironments: webhookEnvironments, forwardURLs: forwardURLs,
            retryWindowMilliseconds: retryWindow.wholeMilliseconds)
    }

    /// The settings the environment names.
    ///
    /// - Throws: ``ConfigurationError`` naming a variable whose value is wrong, or the webhook
    ///   URL without its secret (or the secret without the URL).
    static func read(_ variables: EnvironmentVariables) throws(ConfigurationError) -> EventSettings {
        var settings = EventSettings()
        if let interval = try variables.seconds("RECEIPTKIT_SWEEP_INTERVAL") { settings.sweepInterval = interval }
        if let list = variables.value("RECEIPTKIT_WEBHOOK_ENVIRONMENTS") {
            let names = list.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            for name in names where AppStoreEnvironment(rawValue: name) == nil {
                throw ConfigurationError(
                    "RECEIPTKIT_WEBHOOK_ENVIRONMENTS names \"\(name)\"; expected Production, Sandbox, Xcode or LocalTesting, comma-separated")
            }
            settings.webhookEnvironments = Set(names)
        }
        settings.webhookURL = try url(variables.value("RECEIPTKIT_WEBHOOK_URL"), "RECEIPTKIT_WEBHOOK_URL")
        settings.webhookSecret = variables.value("RECEIPTKIT_WEBHOOK_SECRET")
        switch (settings.webhookURL, settings.webhookSecret) {
        case (.some, nil):
            throw ConfigurationError(
                "RECEIPTKIT_WEBHOOK_SECRET is required with RECEIPTKIT_WEBHOOK_URL: every webhook is signed with it (at least \(minimumSecretLength) random bytes, e.g. `openssl rand -hex 32`)")
        case (nil, .some):
            throw ConfigurationError("RECEIPTKIT_WEBHOOK_SECRET is set but RECEIPTKIT_WEBHOOK_URL is not")
        case (.some, let secret?) where secret.utf8.count < minimumSecretLength:
            throw ConfigurationError(
                "RECEIPTKIT_WEBHOOK_SECRET is \(secret.utf8.count) bytes; at least \(minimumSecretLength) are required (e.g. `openssl rand -hex 32`)")
        default:
            break
        }
        settings.forwardURLs = try variables.list("RECEIPTKIT_FORWARD_URLS").map { item throws(ConfigurationError) in
            try url(item, "RECEIPTKIT_FORWARD_URLS") ?? item
        }
        if let text = variables.value("RECEIPTKIT_WEBHOOK_RETRY_HOURS") {
            guard let hours = Double(text), hours.isFinite, hours > 0, hours <= 24 * 365 else {
                throw ConfigurationError("RECEIPTKIT_WEBHOOK_RETRY_HOURS is \"\(text)\"; expected hours, more than 0, such as 72")
            }
            settings.retryWindow = .milliseconds(Int64((hours * 3_600_000).rounded()))
        }
        if let timeout = try variables.seconds("RECEIPTKIT_WEBHOOK_TIMEOUT") { settings.delivery.timeout = timeout }
        if let text = variables.value("RECEIPTKIT_CONSUMPTION_DEFAULT") {
            settings.consumptionDefault = try consumptionAnswer(text)
        }
        return settings
    }

    /// `RECEIPTKIT_CONSUMPTION_DEFAULT`: an answer's JSON without `customer_consented` (the
    /// customer's recorded consent stands for it).
    static func consumptionAnswer(_ text: String) throws(ConfigurationError) -> ConsumptionAnswer {
        let name = "RECEIPTKIT_CONSUMPTION_DEFAULT"
        let answer: ConsumptionAnswer
        do {
            answer = try RequestBody.decode(ConsumptionAnswer.self, from: Array(text.utf8))
            try answer.validate()
        } catch let error as any CallerError {
            throw ConfigurationError(
                "\(name) is not a consumption answer (\(error.message)); expected JSON such as {\"delivery_status\":\"DELIVERED\",\"sample_content_provided\":false,\"refund_preference\":\"DECLINE\"}")
        } catch {
            throw ConfigurationError("\(name) is not a consumption answer (\(error))")
        }
        guard answer.customerConsented == nil else {
            throw ConfigurationError(
                "\(name) must not set customer_consented: the default is sent only for customers whose consent was recorded (PUT /v1/customers/{id}/consumption-consent)")
        }
        return answer
    }

    /// An `http(s)://` URL with a host, or `nil` for none.
    private static func url(_ text: String?, _ name: String) throws(ConfigurationError) -> String? {
        guard let text else { return nil }
        guard let components = URLComponents(string: text), ["http", "https"].contains(components.scheme?.lowercased() ?? ""),
              let host = components.host, !host.isEmpty
        else {
            throw ConfigurationError("\(name) has \"\(text)\"; expected an http:// or https:// URL with a host")
        }
        return text
    }
}
