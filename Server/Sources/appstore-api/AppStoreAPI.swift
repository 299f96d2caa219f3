import AppStoreServerAPI
import ArgumentParser
import Foundation
import ReceiptKit
import ReceiptKitRelease

/// `appstore-api`: Apple's App Store Server API from the command line, every signed answer
/// verified, and the StoreKit signers.
///
/// Signed results are written one verified JWS per line (notifications as webhook bodies), so
/// that `appstore-api history ID | verify-receipt --state -` is a customer's state. Exit 0 when
/// everything verified, 1 when Apple answered but an item was rejected (its field and code on
/// standard error, the item not printed), 2 for an API error, 64 for a usage error.
@main
struct AppStoreAPI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "appstore-api",
        abstract: "Call Apple's App Store Server API and verify everything it answers; sign StoreKit offers.",
        discussion: """
            Credentials come from the options or the environment: APPSTORE_API_KEY_ID, APPSTORE_API_ISSUER_ID, \
            APPSTORE_API_PRIVATE_KEY_FILE, APPSTORE_BUNDLE_ID, APPSTORE_ENVIRONMENT (Production or Sandbox). \
            Signed results print one verified JWS per line, all pages in Apple's order (notifications as \
            {"signedPayload": …} webhook bodies): pipe them into `verify-receipt --state -`. Exit status: 0 all \
            verified, 1 an item was rejected (its field and code on standard error), 2 an API error, 64 usage.
            """,
        version: Release.versionLine,
        subcommands: [
            TransactionCommand.self, HistoryCommand.self, StatusesCommand.self, RefundsCommand.self, OrderCommand.self,
            AppTransactionCommand.self, NotificationsCommand.self, TestNotificationCommand.self, ConsumptionCommand.self,
            SetAppAccountTokenCommand.self, FinishCommand.self, ExtendCommand.self, ExtendAllCommand.self,
            ExtendStatusCommand.self, MessagingCommand.self, SignCommand.self,
        ])

    /// Exit statuses beyond ArgumentParser's own (0 success, 64 usage).
    enum Status {
        /// Apple answered, but an item failed verification.
        static let rejected = ExitCode(1)
        /// The API call failed (an error body, 401, 429, 5xx, no answer).
        static let apiError = ExitCode(2)
        /// A file named on the command line cannot be read (as `verify-receipt`).
        static let cannotRead = ExitCode(66)
    }

    /// Writes one line to standard error.
    static func complain(_ message: String) {
        FileHandle.standardError.write(Data(("appstore-api: " + message + "\n").utf8))
    }
}

/// The key, app and environment, from options or the environment.
struct CredentialOptions: ParsableArguments {
    @Option(name: .customLong("key-id"), help: "The In-App Purchase key's id (or APPSTORE_API_KEY_ID).")
    var keyId: String?

    @Option(name: .customLong("issuer-id"), help: "The issuer id from App Store Connect (or APPSTORE_API_ISSUER_ID).")
    var issuerId: String?

    @Option(name: .customLong("private-key"), help: ArgumentHelp(
        "The key's .p8 file, PKCS #8 PEM (or APPSTORE_API_PRIVATE_KEY_FILE).", valueName: "file"))
    var privateKeyFile: String?

    @Option(name: .customLong("bundle-id"), help: "The app's bundle id (or APPSTORE_BUNDLE_ID).")
    var bundleId: String?

    /// The environment variables, read once at the edge.
    var environmentVariables: [String: String] { ProcessInfo.processInfo.environment }

    func value(_ option: String?, _ variable: String, _ flag: String) throws -> String {
        if let option, !option.isEmpty { return option }
        if let value = environmentVariables[variable], !value.isEmpty { return value }
        throw ValidationError("missing \(flag) (or \(variable))")
    }

    func resolvedBundleId() throws -> String { try value(bundleId, "APPSTORE_BUNDLE_ID", "--bundle-id") }

    /// The key, read from its `.p8` file.
    func key() throws -> InAppPurchaseKey {
        let (keyId, signingKey) = try signingKey()
        let issuerId = try value(self.issuerId, "APPSTORE_API_ISSUER_ID", "--issuer-id")
        do {
            return try InAppPurchaseKey(keyId: keyId, issuerId: issuerId, signingKey: signingKey)
        } catch let error as ReceiptKitError {
            throw ValidationError("\(error.code): \(error.message)")
        }
    }

    /// The key id and the private key of its `.p8` file (a promotional offer V1 needs no issuer id).
    func signingKey() throws -> (keyId: String, key: ES256SigningKey) {
        let keyId = try value(self.keyId, "APPSTORE_API_KEY_ID", "--key-id")
        let path = try value(privateKeyFile, "APPSTORE_API_PRIVATE_KEY_FILE", "--private-key")
        guard let data = FileManager.default.contents(atPath: path) else {
            AppStoreAPI.complain("cannot read the private key \(path)")
            throw AppStoreAPI.Status.cannotRead
        }
        do {
            return (keyId, try ES256SigningKey(pemBytes: Array(data)))
        } catch let error as ReceiptKitError {
            throw ValidationError("\(path): \(error.code): \(error.message)")
        }
    }
}

/// What every API subcommand takes: credentials, environment, where to send, what to trust.
struct APIOptions: ParsableArguments {
    @OptionGroup var credentials: CredentialOptions

    @Option(help: "Production or Sandbox (or APPSTORE_ENVIRONMENT).")
    var environment: String?

    @Option(name: .customLong("base-url"), help: ArgumentHelp(
        "Send to this base URL instead of Apple's for the environment (a proxy, a test server).", valueName: "url"))
    var baseURL: String?

    @Option(name: .customLong("root"), help: ArgumentHelp(
        "A trusted root certificate, DER or PEM (repeatable). Replaces Apple's built-in pins.", valueName: "file"))
    var roots: [String] = []

    @Option(name: .customLong("pin-sha256"), help: ArgumentHelp(
        "A trusted root's SHA-256 fingerprint, hex (repeatable). Replaces Apple's built-in pins.", valueName: "hex"))
    var pins: [String] = []

    @Option(name: .customLong("app-apple-id"), help: "Require this App Apple ID in every signed item.")
    var appAppleId: Int64?

    @Option(name: .customLong("max-attempts"), help: "The most requests one call sends, retries included (default 4).")
    var maximumAttempts: Int = 4

    @Option(help: ArgumentHelp("The longest one request may take, in seconds (default 20).", valueName: "seconds"))
    var timeout: Double = 20

    @Option(name: .customLong("overall-timeout"), help: ArgumentHelp(
        "The longest one call may take, retries and waits included, in seconds (default 60).", valueName: "seconds"))
    var overallTimeout: Double = 60

    @Flag(help: "Print Apple's response objects (with the verified items only), one per page, instead of one JWS per line.")
    var json = false

    func resolvedEnvironment() throws -> AppStoreEnvironment {
        let text = try credentials.value(environment, "APPSTORE_ENVIRONMENT", "--environment")
        guard let parsed = AppStoreEnvironment.allCases.first(where: { $0.rawValue.lowercased() == text.lowercased() }) else {
            throw ValidationError("--environment must be Production or Sandbox, not '\(text)'")
        }
        return parsed
    }

    /// The verifier: the roots asked for (Apple's pins by default), the app's bundle id and the
    /// environment, each item validated at its own signed date.
    func verifier(bundleId: String, environment: AppStoreEnvironment) throws -> AppStoreVerifier {
        var configuration = AppStoreVerifier.Configuration(bundleId: bundleId, appAppleId: appAppleId, environment: environment)
        if !roots.isEmpty || !pins.isEmpty {
            let certificates = try roots.map { path -> [UInt8] in
                guard let data = FileManager.default.contents(atPath: path) else {
                    AppStoreAPI.complain("cannot read root certificate \(path)")
                    throw AppStoreAPI.Status.cannotRead
                }
                return Array(data)
            }
            do {
                configuration.anchors = try TrustAnchors(rootCertificates: certificates, pinnedSHA256: pins)
            } catch let error as ReceiptKitError {
                throw ValidationError(error.message)
            }
        }
        return AppStoreVerifier(configuration)
    }

    func client() throws -> AppStoreServerAPIClient {
        guard maximumAttempts >= 1, timeout > 0, overallTimeout > 0 else {
            throw ValidationError("--max-attempts must be at least 1 and the timeouts positive")
        }
        let bundleId = try credentials.resolvedBundleId()
        let environment = try resolvedEnvironment()
        let retry = AppStoreServerAPIClient.RetryPolicy(
            maximumAttempts: maximumAttempts, overallTimeout: .milliseconds(Int64(overallTimeout * 1000)),
            requestTimeout: .milliseconds(Int64(timeout * 1000)))
        do {
            return try AppStoreServerAPIClient(
                configuration: .init(
                    key: credentials.key(), bundleId: bundleId, environment: environment, baseURL: baseURL, retry: retry),
                verifier: verifier(bundleId: bundleId, environment: environment))
        } catch let error as AppStoreServerAPIError {
            throw ValidationError("\(error.code): \(error.reason)")
        }
    }
}

/// Runs one API call: maps its errors to messages and exit statuses, and counts rejected items.
struct Session {
    let client: AppStoreServerAPIClient
    let json: Bool
    private var rejected = 0

    init(_ options: APIOptions) throws {
        self.client = try options.client()
        self.json = options.json
    }

    /// Runs `body`; an API error is reported and exits 2.
    static func run(_ options: APIOptions, _ body: (inout Session) async throws -> Void) async throws {
        var session = try Session(options)
        do {
            try await body(&session)
        } catch let error as AppStoreServerAPIError {
            for item in error.rejected { AppStoreAPI.complain("rejected \(item.field): \(item.error.code): \(item.error.message)") }
            if error.code == .verificationFailed {
                throw AppStoreAPI.Status.rejected
            }
            AppStoreAPI.complain(Self.describe(error))
            throw AppStoreAPI.Status.apiError
        }
        if session.rejected > 0 { throw AppStoreAPI.Status.rejected }
    }

    static func describe(_ error: AppStoreServerAPIError) -> String {
        var text = "\(error.code): \(error.reason)"
        if error.attempts > 1 { text += " (after \(error.attempts) attempts)" }
        return text
    }

    /// Reports items that failed verification; they are never printed.
    mutating func reject(_ items: [RejectedItem]) {
        for item in items {
            AppStoreAPI.complain("rejected \(item.field): \(item.error.code): \(item.error.message)")
        }
        rejected += items.count
    }

    /// Prints one line.
    func line(_ text: String) {
        print(text)
    }

    /// Prints a JSON object on one line, members sorted.
    func object(_ value: [String: Any]) throws {
        line(try Self.jsonText(value))
    }

    /// A webhook body around a notification's JWS.
    func webhookBody(_ signedPayload: String) throws -> String {
        try Self.jsonText(["signedPayload": signedPayload])
    }

    static func jsonText(_ value: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes]), as: UTF8.self)
    }
}

/// Instants on the command line: ISO 8601 / RFC 3339.
func parseInstant(_ text: String, _ option: String) throws -> Timestamp {
    guard let instant = Timestamp(rfc3339: text) else {
        throw ValidationError("\(option) must be an ISO 8601 instant such as 2026-01-01T00:00:00Z, not '\(text)'")
    }
    return instant
}

/// `true` or `false` on the command line.
func parseBool(_ text: String, _ option: String) throws -> Bool {
    switch text.lowercased() {
    case "true": return true
    case "false": return false
    default: throw ValidationError("\(option) must be true or false, not '\(text)'")
    }
}

extension Optional {
    /// The value for JSONSerialization: JSON `null` when absent.
    var orNull: Any { self.map { $0 as Any } ?? NSNull() }
}

extension Optional where Wrapped == Timestamp {
    /// Milliseconds since 1970, as Apple writes instants, or JSON `null`.
    var json: Any { self.map { $0.millisecondsSince1970 as Any } ?? NSNull() }
}
