import Foundation
public import ReceiptKit

/// Where the server listens, what its one shared verifier trusts and checks, where it stores, and
/// the token its API requires.
///
/// ``init(environment:)`` reads it from environment variables:
///
/// | variable | meaning |
/// |---|---|
/// | `RECEIPTKIT_APPS` | your apps, `BUNDLE_ID[:APP_APPLE_ID],…`; the App Apple ID is required for each when Production is served |
/// | `RECEIPTKIT_BUNDLE_ID`, `RECEIPTKIT_APP_APPLE_ID` | one app, in place of `RECEIPTKIT_APPS` |
/// | `RECEIPTKIT_ENVIRONMENTS` | the environments served, a comma list of `Production`, `Sandbox`, `Xcode`, `LocalTesting` |
/// | `RECEIPTKIT_ENVIRONMENT` | one environment, in place of `RECEIPTKIT_ENVIRONMENTS`; `Production` alone serves Sandbox too (App Review, TestFlight), as Apple advises |
/// | `RECEIPTKIT_ROOT_FILE` | root certificates to trust instead of Apple's pins, DER or PEM, comma-separated paths |
/// | `RECEIPTKIT_PIN_SHA256` | SHA-256 fingerprints of roots to trust instead of Apple's pins, comma-separated |
/// | `RECEIPTKIT_DATABASE_URL` | `sqlite:PATH` (default `sqlite:receiptkit.sqlite`) or `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable\|prefer\|require]` |
/// | `RECEIPTKIT_API_TOKEN` | a bearer token of `/v1/*` and `/verifyReceipt`, scope `admin` |
/// | `RECEIPTKIT_API_TOKENS_FILE` | named, scoped tokens (`NAME SCOPE SHA256_HEX` a line), read again on `SIGHUP`; this or `RECEIPTKIT_API_TOKEN` is required unless `HOST` is loopback |
/// | `HOST` | the address to listen on, default `127.0.0.1` |
/// | `PORT` | the port to listen on, default `8080` |
/// | `RECEIPTKIT_REQUEST_TIMEOUT` | seconds one request may take before it is answered 503 `timeout`, default `30` |
/// | `RECEIPTKIT_DATABASE_TIMEOUT` | seconds one store call of a request waits for the database (a connection, a lock, a commit) before the request is answered 503 `database_unavailable`, default `3` |
/// | `RECEIPTKIT_APPSTORE_KEY_ID`, `RECEIPTKIT_APPSTORE_ISSUER_ID`, `RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE` | the In-App Purchase key that reconciles with Apple (all three or none: without them reconciliation is off) |
/// | `RECEIPTKIT_APPSTORE_API_URL` | the App Store Server API's base URL in place of Apple's for Production (of the one environment, when one is served) |
/// | `RECEIPTKIT_APPSTORE_SANDBOX_API_URL` | the same for Sandbox, when several environments are served |
/// | `RECEIPTKIT_RECONCILE_INTERVAL` | seconds between two looks at Get Notification History, default `900`; `0`: only `POST /v1/reconcile` |
/// | `RECEIPTKIT_SWEEP_INTERVAL` | seconds between two looks for changes time alone made (an expiry with no notification), default `60` |
/// | `RECEIPTKIT_WEBHOOK_URL`, `RECEIPTKIT_WEBHOOK_SECRET` | where each event is POSTed, and the key of its signature (both or neither) |
/// | `RECEIPTKIT_WEBHOOK_RETRY_HOURS`, `RECEIPTKIT_WEBHOOK_TIMEOUT` | how long a delivery is retried (default `72` hours), how long one attempt may take (default `10` s) |
/// | `RECEIPTKIT_FORWARD_URLS` | where each verified notification is forwarded, comma-separated |
/// | `RECEIPTKIT_CONSUMPTION_DEFAULT` | the consumption answer sent for consenting customers an hour before the deadline |
/// | `RECEIPTKIT_ENTITLEMENTS_FILE` | the JSON file of named entitlements (``EntitlementsFile``), read again on `SIGHUP` |
/// | `RECEIPTKIT_RETENTION_RULES` | the JSON file of rules that answer Apple's Get Retention Message requests (``RetentionRulesFile``) |
public struct ServerConfiguration: Sendable {
    /// The address the server binds to.
    public var host: String
    /// The port the server binds to (0: any free port).
    public var port: Int
    /// What the shared ``AppStoreVerifier`` trusts and checks: the apps and environments served.
    public var verifier: AppStoreVerifier.Configuration
    /// What the configuration means that a reader of the variables may not expect, said in the
    /// log at start (`RECEIPTKIT_ENVIRONMENT=Production` serving Sandbox too).
    public var notices: [String] = []
    /// Where events, states and customer links are kept.
    public var database: DatabaseLocation
    /// A bearer token of `/v1/*` and `/verifyReceipt` with scope `admin`, or `nil`.
    public var apiToken: String?
    /// `RECEIPTKIT_API_TOKENS_FILE`: the file of named, scoped tokens (their SHA-256), read at
    /// start and on `SIGHUP`, or `nil`. Neither this nor ``apiToken``: no token (loopback only).
    public var apiTokensFile: String?
    /// How long one request may take, reading its body included, before it is answered 503
    /// `timeout`.
    public var requestTimeout: Duration
    /// How long one store call of a request waits for the database before the request is
    /// answered 503 `database_unavailable` (``Store/timeout``).
    public var databaseTimeout: Duration = Store.defaultTimeout
    /// How the server reaches the App Store Server API, or `nil`: reconciliation is off.
    public var appStoreAPI: AppStoreAPISettings?
    /// How the server tells backends what changed (the feed, webhooks).
    public var events: EventSettings
    /// The rules that answer Apple's Get Retention Message requests (`RECEIPTKIT_RETENTION_RULES`),
    /// and the file they were read from; `nil`: every request is answered `{}`.
    package var retention: (rules: RetentionRules, file: String)?
    /// The named entitlements (`RECEIPTKIT_ENTITLEMENTS_FILE`), read at start and on `SIGHUP`;
    /// `nil`: none (the answers have no `entitlements`).
    package var entitlements: EntitlementsFile?

    /// Creates a configuration.
    ///
    /// - Parameters:
    ///   - host: The address to bind to.
    ///   - port: The port to bind to.
    ///   - verifier: What the verifier trusts and checks.
    ///   - database: Where to store.
    ///   - apiToken: A bearer token with scope `admin`, if any.
    ///   - apiTokensFile: The file of named, scoped tokens, if any.
    ///   - requestTimeout: How long a request may take.
    public init(
        host: String = "127.0.0.1", port: Int = 8080, verifier: AppStoreVerifier.Configuration,
        database: DatabaseLocation, apiToken: String?, apiTokensFile: String? = nil, requestTimeout: Duration = .seconds(30),
        appStoreAPI: AppStoreAPISettings? = nil, events: EventSettings = EventSettings()
    ) {
        self.apiTokensFile = apiTokensFile
        self.events = events
        self.host = host
        self.port = port
        self.verifier = verifier
        self.database = database
        self.apiToken = apiToken
        self.requestTimeout = requestTimeout
        self.appStoreAPI = appStoreAPI
    }

    /// Whether ``host`` is a loopback address, where the API may run without a token.
    public var isLoopback: Bool {
        Self.isLoopback(host)
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// Reads the configuration from environment variables (see ``ServerConfiguration``).
    ///
    /// A server must not accept another app's notifications, which Apple signs just as well as
    /// yours: the apps and the environments are required, and, as in Apple's own libraries, each
    /// app's App Apple ID too when Production is served. A server bound to anything but loopback
    /// refuses to start without an API token.
    ///
    /// - Parameter environment: The process environment, or any dictionary in its shape.
    /// - Throws: ``ConfigurationError`` naming the variable that is missing or wrong.
    public init(environment: [String: String]) throws(ConfigurationError) {
        let variables = EnvironmentVariables(environment)
        let (environments, environmentNotice) = try Self.environments(variables)
        let apps = try Self.apps(variables, servingProduction: environments.contains(.production))
        let anchors = try Self.trustAnchors(
            rootFiles: variables.list("RECEIPTKIT_ROOT_FILE"), pins: variables.list("RECEIPTKIT_PIN_SHA256"))
        let database = try DatabaseLocation(url: variables.value("RECEIPTKIT_DATABASE_URL") ?? "sqlite:receiptkit.sqlite")
        let host = variables.value("HOST") ?? "127.0.0.1"
        let port = try variables.port("PORT") ?? 8080
        let requestTimeout = try variables.seconds("RECEIPTKIT_REQUEST_TIMEOUT") ?? .seconds(30)
        let databaseTimeout = try variables.seconds("RECEIPTKIT_DATABASE_TIMEOUT") ?? Store.defaultTimeout
        let apiToken = variables.value("RECEIPTKIT_API_TOKEN")
        let apiTokensFile = variables.value("RECEIPTKIT_API_TOKENS_FILE")
        // Read now, so that a wrong line stops the server at start, naming it.
        let tokens = try APITokens(token: apiToken, file: apiTokensFile)
        if tokens.isEmpty, !Self.isLoopback(host) {
            throw ConfigurationError(
                "RECEIPTKIT_API_TOKEN or RECEIPTKIT_API_TOKENS_FILE is required when HOST (\(host)) is not a loopback address: /v1/* and /verifyReceipt would be open to anyone")
        }
        let appStoreAPI = try AppStoreAPISettings.read(variables, environments: environments)
        let events = try EventSettings.read(variables)
        let retention = try variables.value(RetentionRulesFile.variable).map { file throws(ConfigurationError) in
            // A realtime request names its app by App Apple ID alone: an app without one would
            // stand for every app's requests.
            if let app = apps.first(where: { $0.appAppleId == nil }) {
                throw ConfigurationError(
                    "\(RetentionRulesFile.variable): \(app.bundleId ?? "an app") has no App Apple ID (RECEIPTKIT_APP_APPLE_ID, or BUNDLE_ID:APP_APPLE_ID in RECEIPTKIT_APPS); Apple's Get Retention Message requests name their app by it alone")
            }
            return (try RetentionRulesFile.read(file, canSign: appStoreAPI != nil), file)
        }
        self.init(
            host: host, port: port,
            verifier: .init(anchors: anchors, apps: apps, environments: environments),
            database: database, apiToken: apiToken, apiTokensFile: apiTokensFile, requestTimeout: requestTimeout,
            appStoreAPI: appStoreAPI, events: events)
        notices = environmentNotice.map { [$0] } ?? []
        self.databaseTimeout = databaseTimeout
        self.retention = retention
        entitlements = try variables.value(EntitlementsFile.variable).map { path throws(ConfigurationError) in
            try EntitlementsFile(path: path)
        }
    }

    /// The environments served: `RECEIPTKIT_ENVIRONMENTS`, as listed; or `RECEIPTKIT_ENVIRONMENT`,
    /// where `Production` means Production and Sandbox — Apple reviews a production build with
    /// Sandbox purchases and TestFlight buys in Sandbox, and advises one server to take both — said
    /// in a notice.
    private static func environments(
        _ variables: EnvironmentVariables
    ) throws(ConfigurationError) -> (Set<AppStoreEnvironment>, notice: String?) {
        switch (variables.value("RECEIPTKIT_ENVIRONMENTS"), variables.value("RECEIPTKIT_ENVIRONMENT")) {
        case (.some, .some):
            throw ConfigurationError("RECEIPTKIT_ENVIRONMENTS and RECEIPTKIT_ENVIRONMENT are both set; set one")
        case (let list?, nil):
            let environments: Set<AppStoreEnvironment>
            do {
                environments = try AppStoreVerifier.Configuration.environments(parsing: [list])
            } catch {
                throw ConfigurationError("RECEIPTKIT_ENVIRONMENTS: \(Self.message(error))")
            }
            guard !environments.isEmpty else { throw ConfigurationError("RECEIPTKIT_ENVIRONMENTS is empty; name one or more environments") }
            return (environments, nil)
        case (nil, let name?):
            guard let environment = AppStoreEnvironment(rawValue: name) else {
                throw ConfigurationError("RECEIPTKIT_ENVIRONMENT is \"\(name)\"; expected Production, Sandbox, Xcode or LocalTesting")
            }
            guard environment == .production else { return ([environment], nil) }
            return ([.production, .sandbox], "RECEIPTKIT_ENVIRONMENT=Production serves Sandbox too, as Apple advises: App Review and TestFlight buy in Sandbox. RECEIPTKIT_ENVIRONMENTS=Production refuses Sandbox.")
        case (nil, nil):
            throw ConfigurationError(
                "RECEIPTKIT_ENVIRONMENTS is required: the environments served, Production, Sandbox, Xcode or LocalTesting, comma-separated (or RECEIPTKIT_ENVIRONMENT for one)")
        }
    }

    /// The apps served: `RECEIPTKIT_APPS`, or `RECEIPTKIT_BUNDLE_ID` and `RECEIPTKIT_APP_APPLE_ID`
    /// for one. A server must not accept another app's notifications, which Apple signs just as
    /// well as yours; as in Apple's own libraries, each app's App Apple ID is required when
    /// Production is served.
    private static func apps(_ variables: EnvironmentVariables, servingProduction: Bool) throws(ConfigurationError) -> [AppStoreVerifier.App] {
        if let list = variables.value("RECEIPTKIT_APPS") {
            for legacy in ["RECEIPTKIT_BUNDLE_ID", "RECEIPTKIT_APP_APPLE_ID"] where variables.value(legacy) != nil {
                throw ConfigurationError("RECEIPTKIT_APPS and \(legacy) are both set; give each app in RECEIPTKIT_APPS as BUNDLE_ID:APP_APPLE_ID")
            }
            let apps: [AppStoreVerifier.App]
            do {
                apps = try AppStoreVerifier.Configuration.apps(parsing: [list])
            } catch {
                throw ConfigurationError("RECEIPTKIT_APPS: \(Self.message(error))")
            }
            guard !apps.isEmpty else { throw ConfigurationError("RECEIPTKIT_APPS is empty; name one or more apps, BUNDLE_ID[:APP_APPLE_ID]") }
            if servingProduction, let app = apps.first(where: { $0.appAppleId == nil }) {
                throw ConfigurationError(
                    "RECEIPTKIT_APPS: \(app.bundleId ?? "") has no App Apple ID (write \(app.bundleId ?? ""):APP_APPLE_ID); it is required when Production is served")
            }
            return apps
        }
        guard let bundleId = variables.value("RECEIPTKIT_BUNDLE_ID") else {
            throw ConfigurationError("RECEIPTKIT_APPS is required: your apps, BUNDLE_ID[:APP_APPLE_ID],… (or RECEIPTKIT_BUNDLE_ID for one)")
        }
        let appAppleId = try variables.positiveInteger("RECEIPTKIT_APP_APPLE_ID")
        if appAppleId == nil, servingProduction {
            throw ConfigurationError("RECEIPTKIT_APP_APPLE_ID is required when Production is served")
        }
        return [AppStoreVerifier.App(bundleId: bundleId, appAppleId: appAppleId)]
    }

    /// A ReceiptKit error's reason, or any error's description.
    private static func message(_ error: any Error) -> String {
        (error as? ReceiptKitError)?.reason ?? "\(error)"
    }

    /// Apple's pinned roots, or the roots and pins configured instead of them.
    private static func trustAnchors(rootFiles: [String], pins: [String]) throws(ConfigurationError) -> TrustAnchors {
        guard !rootFiles.isEmpty || !pins.isEmpty else { return TrustAnchors.apple }
        let roots = try rootFiles.map { path throws(ConfigurationError) in
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ConfigurationError("RECEIPTKIT_ROOT_FILE: cannot read \(path)")
            }
            return [UInt8](data)
        }
        do {
            return try TrustAnchors(rootCertificates: roots, pinnedSHA256: pins)
        } catch let error as ReceiptKitError {
            let variable = error.code == .malformedCertificate ? "RECEIPTKIT_ROOT_FILE" : "RECEIPTKIT_PIN_SHA256"
            throw ConfigurationError("\(variable): \(error.message)")
        } catch {
            throw ConfigurationError("RECEIPTKIT_ROOT_FILE or RECEIPTKIT_PIN_SHA256: \(error)")
        }
    }
}

/// The process environment, read variable by variable: a value is trimmed, and an empty one is
/// absent; each reader names the variable and what it expected when the value is wrong.
struct EnvironmentVariables {
    private let environment: [String: String]

    init(_ environment: [String: String]) {
        self.environment = environment
    }

    func value(_ name: String) -> String? {
        guard let text = environment[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        return text
    }

    func required(_ name: String, _ what: String) throws(ConfigurationError) -> String {
        guard let text = value(name) else { throw ConfigurationError("\(name) is required: \(what)") }
        return text
    }

    /// A comma-separated list, its items trimmed, empty ones left out.
    func list(_ name: String) -> [String] {
        (value(name) ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    func positiveInteger(_ name: String) throws(ConfigurationError) -> Int64? {
        guard let text = value(name) else { return nil }
        guard let number = Int64(text), number > 0 else {
            throw ConfigurationError("\(name) is \"\(text)\"; expected a positive integer")
        }
        return number
    }

    func port(_ name: String) throws(ConfigurationError) -> Int? {
        guard let text = value(name) else { return nil }
        guard let number = Int(text), (0...65535).contains(number) else {
            throw ConfigurationError("\(name) is \"\(text)\"; expected a port number, 0 to 65535")
        }
        return number
    }

    /// A duration in seconds, more than 0 and at most a day, to the millisecond.
    func seconds(_ name: String) throws(ConfigurationError) -> Duration? {
        guard let text = value(name) else { return nil }
        guard let seconds = Double(text), seconds.isFinite, seconds > 0, seconds <= 86_400 else {
            throw ConfigurationError(
                "\(name) is \"\(text)\"; expected seconds, more than 0 and at most 86400, such as 30 or 0.5")
        }
        return .milliseconds(max(1, Int64((seconds * 1000).rounded())))
    }
}
