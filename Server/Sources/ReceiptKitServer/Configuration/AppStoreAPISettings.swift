import Foundation
public import AppStoreServerAPI
public import ReceiptKit

/// How the server reaches the App Store Server API to reconcile with Apple: the In-App Purchase
/// key, where to send, how to retry, and how often to look for missed notifications.
///
/// One key serves every app of the team (each call's token names its app, `bid`), and each
/// environment has its own base URL.
///
/// Read from `RECEIPTKIT_APPSTORE_KEY_ID`, `RECEIPTKIT_APPSTORE_ISSUER_ID`,
/// `RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE` (all three, or none: reconciliation is off),
/// `RECEIPTKIT_APPSTORE_API_URL` and `RECEIPTKIT_APPSTORE_SANDBOX_API_URL` (default: Apple's URL of
/// each environment) and `RECEIPTKIT_RECONCILE_INTERVAL` (seconds, default 900; `0` turns the
/// periodic run off).
public struct AppStoreAPISettings: Sendable {
    /// The In-App Purchase key the API's bearer tokens are signed with.
    public var key: InAppPurchaseKey
    /// Base URLs in place of Apple's (a proxy, a test server), by environment; an environment
    /// not named here is Apple's.
    public var baseURLs: [AppStoreEnvironment: String]
    /// How a call to Apple is retried (429 and 5xx honoured with back-off).
    public var retry: AppStoreServerAPIClient.RetryPolicy
    /// How often Get Notification History is asked for what the notification endpoint missed, or `nil` for
    /// never (only `POST /v1/reconcile` runs it).
    public var reconcileInterval: Duration?

    /// Creates settings.
    public init(
        key: InAppPurchaseKey, baseURLs: [AppStoreEnvironment: String] = [:], retry: AppStoreServerAPIClient.RetryPolicy = .init(),
        reconcileInterval: Duration? = .seconds(900)
    ) {
        self.key = key
        self.baseURLs = baseURLs
        self.retry = retry
        self.reconcileInterval = reconcileInterval
    }

    /// The environments among `served` that have an App Store Server API: Production and Sandbox
    /// always (Apple's), LocalTesting with a URL of its own; Xcode none.
    public func environments(among served: Set<AppStoreEnvironment>) -> [AppStoreEnvironment] {
        served.filter { $0 == .production || $0 == .sandbox || ($0 == .localTesting && baseURLs[.localTesting] != nil) }
            .sorted { $0.rawValue > $1.rawValue }  // Production, then Sandbox, then LocalTesting
    }

    /// The settings the environment names, `nil` when none of the three key variables is set.
    ///
    /// With one environment served, `RECEIPTKIT_APPSTORE_API_URL` is that environment's URL; with
    /// several, Production's, and `RECEIPTKIT_APPSTORE_SANDBOX_API_URL` Sandbox's.
    ///
    /// - Throws: ``ConfigurationError`` when only some of them are set, when the key file cannot
    ///   be read or is not a P-256 PKCS #8 key, when a URL is not `http(s)://` without a trailing
    ///   slash, or when no environment served has an App Store Server API.
    static func read(_ variables: EnvironmentVariables, environments: Set<AppStoreEnvironment>) throws(ConfigurationError) -> AppStoreAPISettings? {
        let names = ["RECEIPTKIT_APPSTORE_KEY_ID", "RECEIPTKIT_APPSTORE_ISSUER_ID", "RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE"]
        let values = names.map { variables.value($0) }
        guard values.contains(where: { $0 != nil }) else {
            for url in ["RECEIPTKIT_APPSTORE_API_URL", "RECEIPTKIT_APPSTORE_SANDBOX_API_URL"] where variables.value(url) != nil {
                throw ConfigurationError("\(url) is set but \(names.joined(separator: ", ")) are not")
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
        var baseURLs: [AppStoreEnvironment: String] = [:]
        for name in ["RECEIPTKIT_APPSTORE_API_URL", "RECEIPTKIT_APPSTORE_SANDBOX_API_URL"] {
            guard let url = variables.value(name) else { continue }
            guard url.hasPrefix("https://") || url.hasPrefix("http://"), !url.hasSuffix("/") else {
                throw ConfigurationError("\(name) is \"\(url)\"; expected http(s)://host[:port][/path] without a trailing slash")
            }
            if name == "RECEIPTKIT_APPSTORE_SANDBOX_API_URL" {
                guard environments.contains(.sandbox) else {
                    throw ConfigurationError("RECEIPTKIT_APPSTORE_SANDBOX_API_URL is set but Sandbox is not served")
                }
                baseURLs[.sandbox] = url
            } else if environments.count == 1, let only = environments.first {
                baseURLs[only] = url
            } else {
                baseURLs[.production] = url
            }
        }
        if environments.count > 1, environments.contains(.localTesting) {
            throw ConfigurationError(
                "RECEIPTKIT_APPSTORE_* with LocalTesting needs LocalTesting served alone (RECEIPTKIT_ENVIRONMENTS=LocalTesting), with RECEIPTKIT_APPSTORE_API_URL")
        }
        if environments == [.localTesting], baseURLs[.localTesting] == nil {
            throw ConfigurationError("RECEIPTKIT_APPSTORE_API_URL is required when LocalTesting is served")
        }
        if environments == [.xcode] {
            throw ConfigurationError("RECEIPTKIT_APPSTORE_* is set but the only environment served is Xcode, which has no App Store Server API")
        }
        var interval: Duration? = .seconds(900)
        if let text = variables.value("RECEIPTKIT_RECONCILE_INTERVAL") {
            if text == "0" {
                interval = nil
            } else {
                interval = try variables.seconds("RECEIPTKIT_RECONCILE_INTERVAL")
            }
        }
        return AppStoreAPISettings(key: key, baseURLs: baseURLs, reconcileInterval: interval)
    }
}
