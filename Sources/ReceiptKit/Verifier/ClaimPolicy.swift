/// The configured claims, checked after the signature: identity (bundle id, then App Apple ID)
/// before environment, as Apple's libraries do, and each only for the payload kinds that
/// define the field (see ``PayloadClaims``).
///
/// The configured apps and environments are sets, and a payload's claims are looked up in them
/// once: the cost of a check does not grow with the number of apps.
struct ClaimPolicy: Sendable {
    typealias App = AppStoreVerifier.App

    /// What a payload's claims matched: the JWS nested in a notification are held to its match.
    struct Match: Sendable {
        /// The configured app, or `nil` when none is configured or the payload names none.
        let app: App?
        /// The raw environment the payload declares.
        let environment: String?
    }

    /// The configured apps, each bundle id once (the first listed).
    private let apps: [App]
    private let appsByBundleId: [String: App]
    private let appsByAppAppleId: [Int64: App]
    /// The first app configured without a bundle id: it stands for every bundle id not listed.
    private let appWithoutBundleId: App?
    /// The first app configured without an App Apple ID: it stands for every App Apple ID not listed.
    private let appWithoutAppAppleId: App?
    /// The configured environments as Apple writes them; empty: not checked.
    private let environments: Set<String>

    /// The policy of a configuration's apps and environments.
    ///
    /// - Parameters:
    ///   - apps: The configured apps (empty: bundle id and App Apple ID not checked).
    ///   - environments: The configured environments (empty: not checked).
    init(apps: [App], environments: Set<AppStoreEnvironment>) {
        var seen: Set<String> = []
        self.apps = apps.filter { app in app.bundleId.map { seen.insert($0).inserted } ?? true }
        appsByBundleId = Dictionary(
            self.apps.compactMap { app in app.bundleId.map { ($0, app) } }, uniquingKeysWith: { first, _ in first })
        appsByAppAppleId = Dictionary(
            self.apps.compactMap { app in app.appAppleId.map { ($0, app) } }, uniquingKeysWith: { first, _ in first })
        appWithoutBundleId = self.apps.first { $0.bundleId == nil }
        appWithoutAppAppleId = self.apps.first { $0.appAppleId == nil }
        self.environments = Set(environments.map(\.rawValue))
    }

    /// Checks `payload` against the configured claims, or, for a JWS nested in a notification,
    /// against the notification's match: the same app and the same environment.
    ///
    /// - Parameters:
    ///   - payload: The payload, authenticated.
    ///   - scope: The match the payload must share (its notification's), or `nil`.
    /// - Returns: What the payload's claims matched.
    /// - Throws: `bundle_id_mismatch`, `app_apple_id_mismatch` or `environment_mismatch`.
    @discardableResult
    func check<Payload: ClaimablePayload>(_ payload: Payload, within scope: Match? = nil) throws -> Match {
        let fields = payload.claims
        let app = try app(of: fields, Payload.kind, within: scope)
        if !environments.isEmpty {
            let declared = fields.environment
            let matches = if let scope { declared == scope.environment } else { declared.map(environments.contains) ?? false }
            if !matches {
                throw ReceiptKitError(
                    .environmentMismatch,
                    "\(Self.what(Payload.kind)) environment is \(Self.quoted(declared)), expected \(environmentList(scope))")
            }
        }
        return Match(app: app, environment: fields.environment)
    }

    /// The configured app a payload's claims name, checking its bundle id and App Apple ID.
    private func app(of fields: PayloadClaims, _ kind: PayloadKind, within scope: Match?) throws -> App? {
        guard !apps.isEmpty else { return nil }
        if case .some(let bundleId) = fields.bundleId {
            guard let app = bundleId.flatMap({ appsByBundleId[$0] }) ?? appWithoutBundleId,
                scope == nil || app == scope?.app
            else {
                throw ReceiptKitError(
                    .bundleIDMismatch,
                    "\(Self.what(kind)) bundle id is \(Self.quoted(bundleId)), expected \(bundleIdList(scope))")
            }
            if case .some(let actual) = fields.appAppleId, let expected = app.appAppleId {
                if let actual, actual != expected {
                    throw ReceiptKitError(
                        .appAppleIDMismatch, "\(Self.what(kind)) appAppleId is \(actual), expected \(expected)\(name(of: app))")
                }
                if actual == nil, isProduction(fields.environment, scope) {
                    throw ReceiptKitError(
                        .appAppleIDMismatch,
                        "\(Self.what(kind)) has no appAppleId; a Production verifier expects \(expected)\(name(of: app))")
                }
            }
            return app
        }
        if case .some(let appAppleId) = fields.appAppleId {
            // A payload known by its App Apple ID alone (a realtime request).
            if let app = appAppleId.flatMap({ appsByAppAppleId[$0] }) ?? appWithoutAppAppleId {
                return app
            }
            if appAppleId != nil || isProduction(fields.environment, scope) {
                let expected = appAppleIdList()
                throw ReceiptKitError(
                    .appAppleIDMismatch,
                    appAppleId.map { "\(Self.what(kind)) appAppleId is \($0), expected \(expected)" }
                        ?? "\(Self.what(kind)) has no appAppleId; a Production verifier expects \(expected)")
            }
            return nil
        }
        // Renewal info names no app: its notification's, or the only one configured.
        return scope?.app ?? (apps.count == 1 ? apps[0] : nil)
    }

    /// Whether a payload is checked as a Production verifier checks it: Production is configured,
    /// and the payload declares it (or its notification does), or it is the only one configured.
    private func isProduction(_ environment: String?, _ scope: Match?) -> Bool {
        let production = AppStoreEnvironment.production.rawValue
        guard environments.contains(production) else { return false }
        if let scope { return scope.environment == production }
        return environment == production || environments.count == 1
    }

    /// The bundle ids a payload may carry, for a reason: `"A"`, `one of "A", "B"`, or the
    /// notification's.
    private func bundleIdList(_ scope: Match?) -> String {
        if let scope {
            return scope.app?.bundleId.map { "\(Self.quoted($0)), the notification's" } ?? "the notification's app"
        }
        let bundleIds = apps.compactMap(\.bundleId)
        return bundleIds.count == 1 ? Self.quoted(bundleIds[0]) : "one of " + bundleIds.map(Self.quoted).joined(separator: ", ")
    }

    /// The App Apple IDs a payload known by its App Apple ID alone may carry, for a reason.
    private func appAppleIdList() -> String {
        let ids = apps.compactMap(\.appAppleId)
        return ids.count == 1 ? "\(ids[0])" : "one of " + ids.map(String.init).joined(separator: ", ")
    }

    /// ` for "BUNDLE_ID"` when several apps are configured, so that a reason names the app.
    private func name(of app: App) -> String {
        guard apps.count > 1, let bundleId = app.bundleId else { return "" }
        return " for \(Self.quoted(bundleId))"
    }

    /// The environments a payload may declare, for a reason, in Apple's order: `"Production"`,
    /// `one of "Production", "Sandbox"`, or the notification's.
    private func environmentList(_ scope: Match?) -> String {
        if let scope { return "\(Self.quoted(scope.environment)), the notification's" }
        let names = AppStoreEnvironment.allCases.map(\.rawValue).filter(environments.contains)
        return names.count == 1 ? Self.quoted(names[0]) : "one of " + names.map(Self.quoted).joined(separator: ", ")
    }

    /// How reasons name a kind: its raw value in words ("renewal info", "app transaction").
    private static func what(_ kind: PayloadKind) -> String {
        kind.rawValue.split(separator: "_").joined(separator: " ")
    }

    private static func quoted(_ value: String?) -> String {
        value.map { "\"\($0)\"" } ?? "absent"
    }
}
