import Foundation
public import AppStoreServerAPI
public import ReceiptKit

/// How the server reaches the App Store Server API to reconcile with Apple: the In-App Purchase
/// key, where to send, how to retry, and how often to look for missed notifications.
///
/// Read from `RECEIPTKIT_APPSTORE_KEY_ID`, `RECEIPTKIT_APPSTORE_ISSUER_ID`,
/// `RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE` (all three, or none: reconciliation is off),
/// `RECEIPTKIT_APPSTORE_API_URL` (default: Apple's URL for `RECEIPTKIT_ENVIRONMENT`) and
/// `RECEIPTKIT_RECONCILE_INTERVAL` (seconds, default 900; `0` turns the periodic run off).
public struct AppStoreAPISettings: Sendable {
    /// The In-App Purchase key the API's bearer tokens are signed with.
    public var key: InAppPurchaseKey
    /// A base URL in place of Apple's (a proxy, a test server), or `nil` for Apple's.
    public var baseURL: String?
    /// How a call to Apple is retried (429 and 5xx honoured with back-off).
    public var retry: AppStoreServerAPIClient.RetryPolicy
    /// How often Get Notification History is asked for what the webhook missed, or `nil` for
    /// never (only `POST /v1/reconcile` runs it).
    public var reconcileInterval: Duration?

    /// Creates settings.
    public init(
        key: InAppPurchaseKey, baseURL: String? = nil, retry: AppStoreServerAPIClient.RetryPolicy = .init(),
        reconcileInterval: Duration? = .seconds(900)
    ) {
        self.key = key
        self.baseURL = baseURL
        self.retry = retry
        self.reconcileInterval = reconcileInterval
    }

    /// The settings the environment names, `nil` when none of the three key variables is set.
    ///
    /// - Throws: ``ConfigurationError`` when only some of them are set, when the key file cannot
    ///   be read or is not a P-256 PKCS #8 key, when the URL is not `http(s)://` without a
    ///   trailing slash, or when the environment has no App Store Server API.
    static func read(_ variables: EnvironmentVariables, environment: AppStoreEnvironment) throws(ConfigurationError) -> AppStoreAPISettings? {
        let names = ["RECEIPTKIT_APPSTORE_KEY_ID", "RECEIPTKIT_APPSTORE_ISSUER_ID", "RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE"]
        let values = names.map { variables.value($0) }
        guard values.contains(where: { $0 != nil }) else {
            if variables.value("RECEIPTKIT_APPSTORE_API_URL") != nil {
                throw ConfigurationError("RECEIPTKIT_APPSTORE_API_URL is set but \(names.joined(separator: ", ")) are not")
            }
            return nil
        }
        let missing = zip(names, values).filter { $0.1 == nil }.map(\.0)
        guard missing.isEmpty, let keyId = values[0], let issuerId = values[1], let path = values[2] else {
            throw ConfigurationError(
                "\(missing.joined(separator: " and ")) \(missing.count == 1 ? "is" : "are") required with the other RECEIPTKIT_APPSTORE_* variables: the In-App Purchase key's id, its issuer id and its .p8 file")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError("RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE: cannot read \(path)")
        }
        guard let pem = String(data: data, encoding: .utf8) else {
            throw ConfigurationError(
                "RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE (\(path)) is not an In-App Purchase key: not PEM text (expected the .p8 file App Store Connect gave)")
        }
        let key: InAppPurchaseKey
        do {
            key = try InAppPurchaseKey(keyId: keyId, issuerId: issuerId, privateKeyPEM: pem)
        } catch let error as ReceiptKitError {
            throw ConfigurationError("RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE (\(path)) is not an In-App Purchase key: \(error.message)")
        } catch {
            throw ConfigurationError("RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE (\(path)) is not an In-App Purchase key: \(error)")
        }
        let baseURL = variables.value("RECEIPTKIT_APPSTORE_API_URL")
        if let baseURL, !(baseURL.hasPrefix("https://") || baseURL.hasPrefix("http://")) || baseURL.hasSuffix("/") {
            throw ConfigurationError(
                "RECEIPTKIT_APPSTORE_API_URL is \"\(baseURL)\"; expected http(s)://host[:port][/path] without a trailing slash")
        }
        switch (environment, baseURL) {
        case (.xcode, _):
            throw ConfigurationError(
                "RECEIPTKIT_APPSTORE_* is set but RECEIPTKIT_ENVIRONMENT is Xcode, which has no App Store Server API")
        case (.localTesting, nil):
            throw ConfigurationError("RECEIPTKIT_APPSTORE_API_URL is required when RECEIPTKIT_ENVIRONMENT is LocalTesting")
        default:
            break
        }
        var interval: Duration? = .seconds(900)
        if let text = variables.value("RECEIPTKIT_RECONCILE_INTERVAL") {
            if text == "0" {
                interval = nil
            } else {
                interval = try variables.seconds("RECEIPTKIT_RECONCILE_INTERVAL")
            }
        }
        return AppStoreAPISettings(key: key, baseURL: baseURL, reconcileInterval: interval)
    }
}
