/// Which products unlock which named entitlements ("pro", "remove_ads"), and which entitlements
/// each app has: an entitlements file, as `receiptkit-server` (`RECEIPTKIT_ENTITLEMENTS_FILE`) and
/// `verify-receipt --entitlements` read it.
///
/// ```json
/// {"entitlements": {
///    "pro":         {"products": ["com.example.pro.monthly", "com.example.pro.lifetime"]},
///    "remove_ads":  {"products": ["com.example.removeads", "com.example.pro.lifetime"]},
///    "season_pass": {"products": [{"id": "com.example.pass.30d", "duration": "P30D"}]}},
///  "apps": {"com.example.app": ["pro", "remove_ads", "season_pass"]}}
/// ```
///
/// A product may unlock several entitlements. A non-renewing subscription's product names how
/// long one purchase lasts (`duration`, ISO 8601, ``EntitlementDuration``); no other product has
/// one. `apps` is optional: without it every app's purchases unlock every entitlement; with it, a
/// purchase in an app unlocks only the entitlements listed for that app, and every entitlement
/// is listed for some app. ``entitlements(of:at:grants:bundleId:)`` applies the rules
/// (`docs/entitlements.md`).
public struct EntitlementCatalog: Sendable, Hashable {
    /// A product that unlocks an entitlement.
    public struct Product: Sendable, Hashable {
        /// The App Store product id.
        public let id: String
        /// How long one purchase lasts: for a non-renewing subscription only.
        public let duration: EntitlementDuration?

        public init(id: String, duration: EntitlementDuration? = nil) {
            self.id = id
            self.duration = duration
        }
    }

    /// Each entitlement's products, by name.
    public let entitlements: [String: [Product]]
    /// Each app's entitlements, by bundle id; `nil` when the file has no `apps`.
    public let apps: [String: [String]]?
    /// The entitlement names, sorted (by their UTF-8 bytes).
    public let names: [String]
    /// For each product id, the entitlements it unlocks (sorted) and its duration.
    let byProduct: [String: (names: [String], duration: EntitlementDuration?)]

    public static func == (lhs: EntitlementCatalog, rhs: EntitlementCatalog) -> Bool {
        lhs.entitlements == rhs.entitlements && lhs.apps == rhs.apps
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(entitlements)
        hasher.combine(apps)
    }

    /// A catalog from its parts, checked as a file is.
    ///
    /// - Parameters:
    ///   - entitlements: Each entitlement's products, by name.
    ///   - apps: Each app's entitlements, by bundle id, if the catalog restricts them.
    /// - Throws: ``ReceiptKitError`` with code ``ReceiptKitError/Code/invalidEntitlements``.
    public init(entitlements: [String: [Product]], apps: [String: [String]]? = nil) throws(ReceiptKitError) {
        try self.init(checking: entitlements, apps: apps, locate: { _ in nil })
    }

    /// Reads an entitlements file.
    ///
    /// - Parameter bytes: The file's UTF-8 JSON.
    /// - Throws: ``ReceiptKitError`` with code ``ReceiptKitError/Code/invalidEntitlements`` whose
    ///   reason names the line and the member at fault: text that is not JSON, a member the file
    ///   does not define, a value of the wrong type, a duration that is not ISO 8601, a product
    ///   named twice for one entitlement with different durations, or an app naming an
    ///   entitlement the file does not define.
    public init(jsonBytes bytes: [UInt8]) throws(ReceiptKitError) {
        let locate = { (path: [String]) in Self.line(of: path, in: bytes) }
        func invalid(_ path: [String], _ why: String) -> ReceiptKitError {
            Self.error(path: path, line: locate(path), why)
        }
        var entitlements: [String: [Product]] = [:]
        var apps: [String: [String]]?
        do {
            let document = try JSONDocument(
                parsingObject: bytes, code: .invalidEntitlements, what: "the entitlements file", liftingLongStrings: false,
                reportingLines: true)
            try document.withRoot(code: .invalidEntitlements) { root in
                for name in root.memberNames where name != "entitlements" && name != "apps" {
                    throw invalid([name], "the file has no member \"\(name)\" (it has \"entitlements\" and \"apps\")")
                }
                guard let defined = try? root.object("entitlements") else {
                    throw invalid(["entitlements"], root.contains("entitlements")
                        ? "must be an object of entitlements by name" : "is missing: the file names its entitlements there")
                }
                for name in defined.memberNames {
                    let path = ["entitlements", name]
                    guard let entitlement = try? defined.object(JSONKey(name)) else {
                        throw invalid(path, "must be an object with \"products\"")
                    }
                    for member in entitlement.memberNames where member != "products" {
                        throw invalid(path + [member], "an entitlement has no member \"\(member)\" (it has \"products\")")
                    }
                    guard let products = try? entitlement.array("products") else {
                        throw invalid(path + ["products"], "must be an array of product ids or {\"id\", \"duration\"} objects")
                    }
                    var list: [Product] = []
                    for index in 0..<products.count {
                        let elementPath = path + ["products", "[\(index)]"]
                        if products.isString(at: index), let id = try? products.string(at: index) {
                            list.append(Product(id: id))
                            continue
                        }
                        guard let product = try? products.object(at: index) else {
                            throw invalid(elementPath, "must be a product id or an object {\"id\", \"duration\"}")
                        }
                        for member in product.memberNames where member != "id" && member != "duration" {
                            throw invalid(elementPath + [member], "a product has no member \"\(member)\" (it has \"id\" and \"duration\")")
                        }
                        guard let id = try? product.string("id") else {
                            throw invalid(elementPath + ["id"], "must be the product id, a string")
                        }
                        var duration: EntitlementDuration?
                        if product.contains("duration") {
                            guard let text = try? product.string("duration") else {
                                throw invalid(elementPath + ["duration"], "must be an ISO 8601 duration such as P30D, a string")
                            }
                            do {
                                duration = try EntitlementDuration(iso8601: text)
                            } catch {
                                throw invalid(elementPath + ["duration"], (error as? ReceiptKitError)?.reason ?? "\(error)")
                            }
                        }
                        list.append(Product(id: id, duration: duration))
                    }
                    entitlements[name] = list
                }
                if root.contains("apps") {
                    guard let listed = try? root.object("apps") else {
                        throw invalid(["apps"], "must be an object of entitlement names by bundle id")
                    }
                    var byApp: [String: [String]] = [:]
                    for bundleId in listed.memberNames {
                        guard let names = try? listed.strings(JSONKey(bundleId)) else {
                            throw invalid(["apps", bundleId], "must be an array of entitlement names")
                        }
                        byApp[bundleId] = names
                    }
                    apps = byApp
                }
            }
        } catch let error as ReceiptKitError {
            throw error.code == .invalidEntitlements ? error : ReceiptKitError(.invalidEntitlements, error.reason)
        } catch {
            throw ReceiptKitError(.invalidEntitlements, "the entitlements file: \(error)")
        }
        try self.init(checking: entitlements, apps: apps, locate: locate)
    }

    private init(
        checking entitlements: [String: [Product]], apps: [String: [String]]?, locate: ([String]) -> Int?
    ) throws(ReceiptKitError) {
        func invalid(_ path: [String], _ why: String) -> ReceiptKitError {
            Self.error(path: path, line: locate(path), why)
        }
        var byProduct: [String: (names: [String], duration: EntitlementDuration?)] = [:]
        for name in entitlements.keys.sorted(by: Self.precedes) {
            guard Self.isName(name) else {
                throw invalid(["entitlements", name],
                    "\"\(name)\" is not an entitlement name: 1 to 64 of the letters A-Z and a-z, the digits, \"_\", \".\" and \"-\"")
            }
            for (index, product) in entitlements[name, default: []].enumerated() {
                let path = ["entitlements", name, "products", "[\(index)]"]
                guard !product.id.isEmpty else { throw invalid(path, "a product id is empty") }
                if let known = byProduct[product.id] {
                    guard known.duration == product.duration else {
                        throw invalid(path, "\(product.id) has another duration (\(known.duration?.description ?? "none")) under \(known.names.joined(separator: ", ")): one product lasts one length of time")
                    }
                    if known.names.last != name { byProduct[product.id]?.names.append(name) }
                } else {
                    byProduct[product.id] = ([name], product.duration)
                }
            }
        }
        if let apps {
            var named = Set<String>()
            for bundleId in apps.keys.sorted(by: Self.precedes) {
                guard !bundleId.isEmpty else { throw invalid(["apps", bundleId], "a bundle id is empty") }
                for (index, name) in apps[bundleId, default: []].enumerated() {
                    guard entitlements[name] != nil else {
                        throw invalid(["apps", bundleId, "[\(index)]"], "\"\(name)\" is not an entitlement of the file")
                    }
                    named.insert(name)
                }
            }
            for name in entitlements.keys.sorted(by: Self.precedes) where !named.contains(name) {
                let products = entitlements[name, default: []].map(\.id).joined(separator: ", ")
                throw invalid(["entitlements", name],
                    "no app in \"apps\" lists it, so its products (\(products.isEmpty ? "none" : products)) unlock nothing: list it for an app or remove it")
            }
        }
        self.entitlements = entitlements
        self.apps = apps
        self.byProduct = byProduct
        names = entitlements.keys.sorted(by: Self.precedes)
    }

    /// The entitlements an app's purchases unlock: those `apps` lists for it, or every one when
    /// the file has no `apps`; sorted.
    ///
    /// - Parameter bundleId: The app's bundle id.
    public func names(forBundleId bundleId: String) -> [String] {
        guard let apps else { return names }
        return (apps[bundleId] ?? []).sorted(by: Self.precedes)
    }

    /// The entitlements a product unlocks, sorted (none when the file does not name it).
    public func names(forProductId productId: String) -> [String] {
        byProduct[productId]?.names ?? []
    }

    /// How long one purchase of a product lasts, when the file gives it a duration.
    public func duration(ofProductId productId: String) -> EntitlementDuration? {
        byProduct[productId]?.duration
    }

    /// What the file says that the products' types contradict: a duration on a product that is
    /// not a non-renewing subscription, none on one that is, or a consumable (which never
    /// entitles). The file cannot know a product's type; a store or an archive that has seen the
    /// product can, and checks it with this.
    ///
    /// - Parameter productTypes: Each product's type as the transaction record normalizes it
    ///   (`auto_renewable_subscription`, `non_renewing_subscription`, `non_consumable`,
    ///   `consumable`), by product id.
    /// - Returns: One reason per product at fault, sorted by product id; empty when none is.
    public func contradictions(productTypes: [String: String]) -> [String] {
        byProduct.keys.sorted(by: Self.precedes).compactMap { id in
            guard let type = productTypes[id], let entry = byProduct[id] else { return nil }
            let names = entry.names.joined(separator: ", ")
            switch (type, entry.duration) {
            case ("non_renewing_subscription", nil):
                return "\(id) (under \(names)) is a non-renewing subscription: give it a \"duration\" such as P30D, or it never entitles"
            case ("non_renewing_subscription", _):
                return nil
            case ("consumable", _):
                return "\(id) (under \(names)) is a consumable, which never entitles: remove it"
            case (_, let duration?):
                let kind = type.replacingUnderscores
                let article = kind.first.map { "aeiou".contains($0) } == true ? "an" : "a"
                return "\(id) (under \(names)) is \(article) \(kind), which lasts as Apple says, not for \(duration): remove its \"duration\""
            default:
                return nil
            }
        }
    }

    /// The error of a member at `path`, naming its line when known.
    private static func error(path: [String], line: Int?, _ why: String) -> ReceiptKitError {
        let member = path.reduce(into: "") { text, part in
            text += part.hasPrefix("[") || text.isEmpty ? part : ".\(part)"
        }
        let place = line.map { "line \($0), " } ?? ""
        return ReceiptKitError(.invalidEntitlements, "the entitlements file, \(place)\(member): \(why)")
    }

    /// The line on which the member at `path` (names and `[index]`es) starts, found by reading
    /// the text as a ``LocatedJSON``: where a part is not found, the line of the deepest part
    /// found; `nil` when not even the first is, or when the text is not JSON.
    static func line(of path: [String], in bytes: [UInt8]) -> Int? {
        (try? LocatedJSON(jsonBytes: bytes))?.line(at: path)
    }

    /// Whether `name` can name an entitlement: 1 to 64 ASCII letters, digits, `_`, `.` and `-`,
    /// so that it is a JSON member and a path segment as it stands.
    public static func isName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count) && name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
        }
    }

    /// Names in byte order of their UTF-8, as the state lines are sorted.
    static func precedes(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
    }
}

extension String {
    /// `non_consumable` as `non consumable`, for a sentence.
    fileprivate var replacingUnderscores: String {
        String(map { $0 == "_" ? " " : $0 })
    }
}
