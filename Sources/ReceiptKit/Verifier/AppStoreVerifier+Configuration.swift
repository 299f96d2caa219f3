extension AppStoreVerifier {
    /// What a verifier trusts and checks.
    ///
    /// The claims are a set of apps and a set of environments: a payload is accepted when it
    /// names a configured app (by bundle id, or by App Apple ID where it carries no bundle id)
    /// and declares a configured environment, each found by lookup, so the cost of a check does
    /// not grow with the number of apps. An empty set checks nothing.
    ///
    /// ```swift
    /// let verifier = AppStoreVerifier(.init(
    ///     apps: [.init(bundleId: "com.example.app", appAppleId: 1234567890), .init(bundleId: "com.example.pro")],
    ///     environments: [.production, .sandbox]))
    /// ```
    public struct Configuration: Sendable {
        /// The roots to trust. Defaults to Apple's pinned roots.
        public var anchors: TrustAnchors
        /// The apps whose payloads are accepted; empty: the bundle id and App Apple ID are not
        /// checked. A bundle id listed twice counts once, as first listed.
        ///
        /// A payload that defines a bundle id must carry one of theirs; one that carries an App
        /// Apple ID must carry its app's, and in Production (the payload's environment, or the
        /// only configured one) a missing one is refused when its app has one configured. A
        /// payload that carries an App Apple ID but no bundle id (a realtime request) must carry
        /// one of the configured App Apple IDs.
        ///
        /// - Warning: An app without a bundle id (``App/init(appAppleId:)``) stands for every
        ///   bundle id not listed, and an app without an App Apple ID for every App Apple ID not
        ///   listed: either weakens the check of the other apps' payloads to what it leaves.
        public var apps: [App]
        /// The environments whose payloads are accepted; empty: the environment is not checked.
        public var environments: Set<AppStoreEnvironment>
        /// The instant chains are validated at. Defaults to the payload's signed date.
        public var validationTime: ValidationTime
        /// The largest JWS accepted, in bytes. Defaults to 64 KiB.
        public var maximumJWSSize: Int
        /// The largest legacy receipt accepted, in bytes of DER/BER (its base64 may be a third
        /// longer). Defaults to 1 MiB.
        public var maximumReceiptSize: Int
        /// When set, a legacy receipt's device hash (attribute 5) must match this device.
        public var deviceIdentifier: DeviceIdentifier?

        /// How many validated headers and chains the verifier remembers (each).
        public var cacheCapacity: Int
        /// Whether and how certificates are checked for revocation. Defaults to off: no network.
        public var revocation: RevocationPolicy

        /// The default largest JWS: 64 KiB.
        public static let defaultMaximumJWSSize = 64 * 1024
        /// The default largest legacy receipt: 1 MiB of DER/BER. Apple's receipts grow with every
        /// purchase (a real 187-purchase receipt is 79 KB), so this leaves room for about 2,500.
        public static let defaultMaximumReceiptSize = 1024 * 1024

        /// Creates a configuration for one app in one environment, each claim checked when given.
        ///
        /// - Parameters:
        ///   - anchors: The roots to trust.
        ///   - bundleId: The expected bundle identifier, if checked.
        ///   - appAppleId: The expected App Apple ID, if checked; in
        ///     ``AppStoreEnvironment/production`` a payload without one is refused too.
        ///   - environment: The expected environment, if checked.
        ///   - validationTime: When chains are validated.
        ///   - maximumJWSSize: The largest JWS accepted, in bytes.
        ///   - maximumReceiptSize: The largest legacy receipt accepted, in bytes of DER/BER.
        ///   - deviceIdentifier: The device legacy receipts must have been issued to, if checked.
        ///   - cacheCapacity: How many validated headers and chains to remember (0 disables it).
        ///   - revocation: Whether and how certificates are checked for revocation (off: no network).
        public init(
            anchors: TrustAnchors = .apple, bundleId: String? = nil, appAppleId: Int64? = nil,
            environment: AppStoreEnvironment? = nil, validationTime: ValidationTime = .signedDate,
            maximumJWSSize: Int = defaultMaximumJWSSize, maximumReceiptSize: Int = defaultMaximumReceiptSize,
            deviceIdentifier: DeviceIdentifier? = nil, cacheCapacity: Int = 256, revocation: RevocationPolicy = .off
        ) {
            let app: App? = if let bundleId {
                App(bundleId: bundleId, appAppleId: appAppleId)
            } else {
                appAppleId.map(App.init(appAppleId:))
            }
            self.init(
                anchors: anchors, apps: app.map { [$0] } ?? [], environments: environment.map { [$0] } ?? [],
                validationTime: validationTime, maximumJWSSize: maximumJWSSize, maximumReceiptSize: maximumReceiptSize,
                deviceIdentifier: deviceIdentifier, cacheCapacity: cacheCapacity, revocation: revocation)
        }

        /// Creates a configuration for several apps and environments.
        ///
        /// - Parameters:
        ///   - anchors: The roots to trust.
        ///   - apps: The apps whose payloads are accepted (empty: not checked); see ``apps``.
        ///   - environments: The environments whose payloads are accepted (empty: not checked).
        ///   - validationTime: When chains are validated.
        ///   - maximumJWSSize: The largest JWS accepted, in bytes.
        ///   - maximumReceiptSize: The largest legacy receipt accepted, in bytes of DER/BER.
        ///   - deviceIdentifier: The device legacy receipts must have been issued to, if checked.
        ///   - cacheCapacity: How many validated headers and chains to remember (0 disables it).
        ///   - revocation: Whether and how certificates are checked for revocation (off: no network).
        public init(
            anchors: TrustAnchors = .apple, apps: [App], environments: Set<AppStoreEnvironment> = [],
            validationTime: ValidationTime = .signedDate, maximumJWSSize: Int = defaultMaximumJWSSize,
            maximumReceiptSize: Int = defaultMaximumReceiptSize, deviceIdentifier: DeviceIdentifier? = nil,
            cacheCapacity: Int = 256, revocation: RevocationPolicy = .off
        ) {
            self.anchors = anchors
            self.apps = apps
            self.environments = environments
            self.validationTime = validationTime
            self.maximumJWSSize = maximumJWSSize
            self.maximumReceiptSize = maximumReceiptSize
            self.deviceIdentifier = deviceIdentifier
            self.cacheCapacity = cacheCapacity
            self.revocation = revocation
        }

        // MARK: The single-app form

        /// The bundle id of the one configured app; `nil` when none or several are configured
        /// (read ``apps`` then).
        public var bundleId: String? { apps.count == 1 ? apps[0].bundleId : nil }

        /// The App Apple ID of the one configured app; `nil` when none or several are configured
        /// (read ``apps`` then).
        public var appAppleId: Int64? { apps.count == 1 ? apps[0].appAppleId : nil }

        /// The one configured environment; `nil` when none or several are configured (read
        /// ``environments`` then).
        public var environment: AppStoreEnvironment? { environments.count == 1 ? environments.first : nil }

        // MARK: Reading a configuration from text

        /// The apps of lists written `BUNDLE_ID[:APP_APPLE_ID],…`: `verify-receipt --app`'s values
        /// and `receiptkit-server`'s `RECEIPTKIT_APPS`. Spaces around an item are ignored.
        ///
        /// - Parameter lists: The lists, each one or more items separated by commas.
        /// - Returns: The apps, in the order written.
        /// - Throws: ``ReceiptKitError/Code/unrecognizedInput`` naming the item that is empty, has
        ///   an App Apple ID that is not a positive decimal number, or repeats a bundle id.
        public static func apps(parsing lists: [String]) throws -> [App] {
            var apps: [App] = []
            var seen: Set<String> = []
            for item in items(of: lists) {
                guard let app = App(item) else {
                    throw ReceiptKitError(
                        .unrecognizedInput,
                        "app \"\(item)\" is not BUNDLE_ID or BUNDLE_ID:APP_APPLE_ID (a positive decimal number)")
                }
                guard let bundleId = app.bundleId, seen.insert(bundleId).inserted else {
                    throw ReceiptKitError(.unrecognizedInput, "bundle id \"\(app.bundleId ?? "")\" is given twice")
                }
                apps.append(app)
            }
            return apps
        }

        /// The environments of lists written `Production,Sandbox,…` (`verify-receipt
        /// --environment`'s values and `receiptkit-server`'s `RECEIPTKIT_ENVIRONMENTS`), each as
        /// Apple spells it. Spaces around an item are ignored; an environment may repeat.
        ///
        /// - Parameter lists: The lists, each one or more items separated by commas.
        /// - Returns: The environments.
        /// - Throws: ``ReceiptKitError/Code/unrecognizedInput`` naming an item that is not one.
        public static func environments(parsing lists: [String]) throws -> Set<AppStoreEnvironment> {
            try Set(items(of: lists).map { item in
                guard let environment = AppStoreEnvironment(rawValue: item) else {
                    let known = AppStoreEnvironment.allCases.map(\.rawValue).joined(separator: ", ")
                    throw ReceiptKitError(.unrecognizedInput, "environment \"\(item)\" is not one of \(known)")
                }
                return environment
            })
        }

        /// The items of comma-separated lists, trimmed of spaces.
        private static func items(of lists: [String]) -> [String] {
            lists.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }.map { item in
                guard let first = item.firstIndex(where: { $0 != " " }), let last = item.lastIndex(where: { $0 != " " }) else {
                    return ""
                }
                return String(item[first...last])
            }
        }
    }

    /// One app a verifier accepts payloads of: its bundle id and, when checked, its App Apple ID.
    ///
    /// Written `BUNDLE_ID` or `BUNDLE_ID:APP_APPLE_ID` (its `description`, and what
    /// ``init(_:)`` reads).
    public struct App: Sendable, Hashable, LosslessStringConvertible {
        /// The bundle identifier; `nil` for an app known by its App Apple ID alone.
        public let bundleId: String?
        /// The App Apple ID (Apple's `appAppleId`, the app's Apple ID in App Store Connect), when
        /// checked.
        public let appAppleId: Int64?

        /// An app known by its bundle id and, when checked, its App Apple ID.
        ///
        /// - Parameters:
        ///   - bundleId: The bundle identifier.
        ///   - appAppleId: The App Apple ID, or `nil` not to check it.
        public init(bundleId: String, appAppleId: Int64? = nil) {
            self.bundleId = bundleId
            self.appAppleId = appAppleId
        }

        /// An app known by its App Apple ID alone: what the single-app configuration makes of an
        /// `appAppleId` without a `bundleId`.
        ///
        /// - Warning: It stands for every bundle id not configured (see
        ///   ``Configuration/apps``).
        /// - Parameter appAppleId: The App Apple ID.
        public init(appAppleId: Int64) {
            self.bundleId = nil
            self.appAppleId = appAppleId
        }

        /// Reads `BUNDLE_ID` or `BUNDLE_ID:APP_APPLE_ID`: a bundle id without spaces, commas or
        /// colons, and an App Apple ID of decimal digits greater than zero.
        ///
        /// - Parameter description: The text.
        public init?(_ description: String) {
            let parts = description.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            let bundleId = String(parts[0])
            guard !bundleId.isEmpty, !bundleId.contains(where: { $0 == "," || $0 == ":" || $0.isWhitespace }) else {
                return nil
            }
            guard parts.count == 2 else {
                self.init(bundleId: bundleId)
                return
            }
            guard parts[1].allSatisfy(\.isASCIIDigit), let appAppleId = Int64(parts[1]), appAppleId > 0 else { return nil }
            self.init(bundleId: bundleId, appAppleId: appAppleId)
        }

        /// `BUNDLE_ID`, `BUNDLE_ID:APP_APPLE_ID`, or `:APP_APPLE_ID` for an app known by its App
        /// Apple ID alone.
        public var description: String {
            (bundleId ?? "") + (appAppleId.map { ":\($0)" } ?? "")
        }
    }
}

extension Character {
    /// Whether this is one of the ASCII digits 0 to 9 (`isNumber` takes other scripts' digits too).
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
