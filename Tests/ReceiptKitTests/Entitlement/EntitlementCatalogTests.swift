import Foundation
import ReceiptKit
import Testing

/// ``EntitlementCatalog``: an entitlements file read, every mistake in it reported as
/// `invalid_entitlements` naming the line and the member at fault, and what a file says that the
/// products' types contradict.
@Suite("EntitlementCatalog")
struct EntitlementCatalogTests {
    /// The line (from 1) of `text` on which `needle` first appears, so a test's expected line is
    /// read off its own text.
    static func line(of needle: String, in text: String) throws -> Int {
        let range = try #require(text.range(of: needle), "\(needle) is not in the text")
        return text[..<range.lowerBound].reduce(1) { $1 == "\n" ? $0 + 1 : $0 }
    }

    static func read(_ text: String) throws -> EntitlementCatalog {
        try EntitlementCatalog(jsonBytes: Array(text.utf8))
    }

    @Test("the example file: each entitlement's products, durations and apps")
    func example() throws {
        let catalog = try Self.read("""
            {"entitlements": {
               "pro":        {"products": ["com.example.pro.monthly", "com.example.pro.yearly", "com.example.pro.lifetime"]},
               "remove_ads": {"products": ["com.example.removeads", "com.example.pro.lifetime"]},
               "season_pass":{"products": [{"id": "com.example.pass.30d", "duration": "P30D"}]}},
             "apps": {"com.example.app": ["pro", "remove_ads", "season_pass"]}}
            """)
        #expect(catalog.names == ["pro", "remove_ads", "season_pass"])
        #expect(catalog.names(forProductId: "com.example.pro.lifetime") == ["pro", "remove_ads"])
        #expect(catalog.names(forProductId: "com.example.pro.monthly") == ["pro"])
        #expect(catalog.names(forProductId: "com.example.unknown").isEmpty)
        #expect(catalog.duration(ofProductId: "com.example.pass.30d") == (try EntitlementDuration(iso8601: "P30D")))
        #expect(catalog.duration(ofProductId: "com.example.pro.monthly") == nil)
        #expect(catalog.names(forBundleId: "com.example.app") == ["pro", "remove_ads", "season_pass"])
        #expect(catalog.names(forBundleId: "com.example.other").isEmpty)
        #expect(catalog.apps == ["com.example.app": ["pro", "remove_ads", "season_pass"]])
        // The same catalog from its parts.
        let built = try EntitlementCatalog(
            entitlements: [
                "pro": ["com.example.pro.monthly", "com.example.pro.yearly", "com.example.pro.lifetime"].map {
                    EntitlementCatalog.Product(id: $0)
                },
                "remove_ads": [.init(id: "com.example.removeads"), .init(id: "com.example.pro.lifetime")],
                "season_pass": [.init(id: "com.example.pass.30d", duration: try EntitlementDuration(iso8601: "P30D"))],
            ],
            apps: ["com.example.app": ["pro", "remove_ads", "season_pass"]])
        #expect(built == catalog)
        // Without apps, every app's purchases unlock every entitlement.
        let open = try Self.read(#"{"entitlements": {"pro": {"products": []}}}"#)
        #expect(open.apps == nil)
        #expect(open.names(forBundleId: "com.example.any") == ["pro"])
    }

    @Test("names: 1 to 64 letters, digits, _, . and -")
    func names() {
        for name in ["pro", "remove_ads", "tier-2.gold", "A", String(repeating: "x", count: 64)] {
            #expect(EntitlementCatalog.isName(name), "\(name)")
        }
        for name in ["", "pro plan", "pro/plan", "pro\"", "é", String(repeating: "x", count: 65)] {
            #expect(!EntitlementCatalog.isName(name), "\(name)")
        }
    }

    /// A file with one mistake, the member path the reason names, and the text on the line it
    /// names (the first place that text appears).
    struct Mistake: CustomTestStringConvertible, Sendable {
        let what: String
        let text: String
        let path: String
        let lineOf: String
        let why: String

        var testDescription: String { what }
    }

    static let mistakes: [Mistake] = [
        Mistake(what: "an unknown top-level member", text: """
            {"entitlements": {"pro": {"products": ["a"]}},
             "apps": {"com.example.app": ["pro"]},
             "version": 2}
            """, path: "version", lineOf: "\"version\"", why: "the file has no member \"version\""),
        Mistake(what: "an unknown member in an entitlement", text: """
            {"entitlements": {
               "pro": {"products": ["a"],
                       "trial": "P7D"}}}
            """, path: "entitlements.pro.trial", lineOf: "\"trial\"", why: "an entitlement has no member \"trial\""),
        Mistake(what: "an unknown member in a product", text: """
            {"entitlements": {
               "season_pass": {"products": [
                  {"id": "pass.a", "duration": "P30D"},
                  {"id": "pass.b", "length": "P30D"}]}}}
            """, path: "entitlements.season_pass.products[1].length", lineOf: "\"length\"",
            why: "a product has no member \"length\""),
        Mistake(what: "a bad duration, after a good one", text: """
            {"entitlements": {
               "season_pass": {"products": [
                  {"id": "pass.a", "duration": "P30D"},
                  {"id": "pass.b", "duration": "P30X"}]}}}
            """, path: "entitlements.season_pass.products[1].duration", lineOf: "P30X",
            why: "\"P30X\" is not an ISO 8601 duration"),
        Mistake(what: "a duration that is not a string", text: """
            {"entitlements": {
               "season_pass": {"products": [{"id": "pass.a", "duration": 30}]}}}
            """, path: "entitlements.season_pass.products[0].duration", lineOf: "\"duration\"",
            why: "must be an ISO 8601 duration"),
        Mistake(what: "a product's duration given twice differently", text: """
            {"entitlements": {
               "month_pass":  {"products": [{"id": "pass.a", "duration": "P1M"}]},
               "season_pass": {"products": [
                  "pass.c",
                  {"id": "pass.a", "duration": "P30D"}]}}}
            """, path: "entitlements.season_pass.products[1]", lineOf: "\"P30D\"",
            why: "pass.a has another duration (P1M) under month_pass"),
        Mistake(what: "a product with a duration under one entitlement and none under another", text: """
            {"entitlements": {
               "pro":         {"products": ["pass.a"]},
               "season_pass": {"products": [{"id": "pass.a", "duration": "P30D"}]}}}
            """, path: "entitlements.season_pass.products[0]", lineOf: "\"P30D\"",
            why: "pass.a has another duration (none) under pro"),
        Mistake(what: "an app naming an unknown entitlement", text: """
            {"entitlements": {"pro": {"products": ["a"]}},
             "apps": {"com.example.app": [
                "pro",
                "gold"]}}
            """, path: "apps.com.example.app[1]", lineOf: "\"gold\"", why: "\"gold\" is not an entitlement of the file"),
        Mistake(what: "an entitlement no app lists", text: """
            {"entitlements": {
               "pro":        {"products": ["a"]},
               "remove_ads": {"products": ["b"]}},
             "apps": {"com.example.app": ["pro"]}}
            """, path: "entitlements.remove_ads", lineOf: "\"remove_ads\"", why: "no app in \"apps\" lists it"),
        Mistake(what: "an entitlement whose name is also a product id before it", text: """
            {"entitlements": {
               "pro":        {"products": ["extra"]},
               "extra":      {"products": ["b"]}},
             "apps": {"com.example.app": ["pro"]}}
            """, path: "entitlements.extra", lineOf: "\"extra\":", why: "no app in \"apps\" lists it"),
        Mistake(what: "a bad name", text: """
            {"entitlements": {
               "pro": {"products": ["a"]},
               "pro plan": {"products": ["b"]}}}
            """, path: "entitlements.pro plan", lineOf: "\"pro plan\"", why: "is not an entitlement name"),
        Mistake(what: "products that are not an array", text: """
            {"entitlements": {
               "pro": {"products": "a"}}}
            """, path: "entitlements.pro.products", lineOf: "\"products\"", why: "must be an array"),
        Mistake(what: "a product that is neither an id nor an object", text: """
            {"entitlements": {
               "pro": {"products": ["a",
                                    7]}}}
            """, path: "entitlements.pro.products[1]", lineOf: "7]", why: "must be a product id or an object"),
        Mistake(what: "an empty product id", text: """
            {"entitlements": {
               "pro": {"products": ["a", ""]}}}
            """, path: "entitlements.pro.products[1]", lineOf: "\"\"]", why: "a product id is empty"),
        Mistake(what: "apps that is not an object", text: """
            {"entitlements": {"pro": {"products": ["a"]}},
             "apps": ["pro"]}
            """, path: "apps", lineOf: "\"apps\"", why: "must be an object"),
    ]

    @Test("every mistake is invalid_entitlements, naming the line and the member path", arguments: mistakes)
    func mistake(_ mistake: Mistake) throws {
        let line = try Self.line(of: mistake.lineOf, in: mistake.text)
        let error = expectRejection(.invalidEntitlements) { _ = try Self.read(mistake.text) }
        let reason = error?.reason ?? ""
        #expect(reason.hasPrefix("the entitlements file, line \(line), \(mistake.path): "), "\(reason)")
        #expect(reason.contains(mistake.why), "\(reason)")
    }

    @Test("text that is not JSON: the reason names the line and the column")
    func notJSON() throws {
        let text = """
            {"entitlements": {
               "pro": {"products": ["a"]}
               "remove_ads": {"products": ["b"]}}}
            """
        // The comma missing at the end of line 2 is noticed at the next member's name.
        let line = try Self.line(of: "\"remove_ads\"", in: text)
        let error = expectRejection(.invalidEntitlements) { _ = try Self.read(text) }
        #expect(error?.reason.hasPrefix("the entitlements file is not valid JSON: ") == true, "\(error?.reason ?? "")")
        #expect(error?.reason.contains("at line \(line), column ") == true, "\(error?.reason ?? "")")
        for other in ["", "[]", "{\"entitlements\": {}} x", "{\"entitlements\": {\"pro\": {\"products\": []}, \"pro\": {}}}"] {
            expectRejection(.invalidEntitlements) { _ = try Self.read(other) }
        }
    }

    @Test("a file without entitlements, or with them of the wrong type, names the member with no line to point at")
    func missing() throws {
        let missing = expectRejection(.invalidEntitlements) { _ = try Self.read(#"{"apps": {}}"#) }
        #expect(missing?.reason == "the entitlements file, entitlements: is missing: the file names its entitlements there")
        let wrong = expectRejection(.invalidEntitlements) { _ = try Self.read(#"{"entitlements": []}"#) }
        #expect(wrong?.reason == "the entitlements file, line 1, entitlements: must be an object of entitlements by name")
    }

    @Test("a catalog built from its parts is checked as a file is, without lines")
    func builtFromParts() throws {
        let badName = expectRejection(.invalidEntitlements) {
            _ = try EntitlementCatalog(entitlements: ["pro plan": []])
        }
        #expect(badName?.reason.hasPrefix("the entitlements file, entitlements.pro plan: ") == true)
        let unknown = expectRejection(.invalidEntitlements) {
            _ = try EntitlementCatalog(entitlements: ["pro": []], apps: ["com.example.app": ["pro", "gold"]])
        }
        #expect(unknown?.reason.hasPrefix("the entitlements file, apps.com.example.app[1]: ") == true)
    }

    @Test("contradictions: a duration on a product that is not a non-renewing subscription, none on one that is, a consumable")
    func contradictions() throws {
        let catalog = try Self.read("""
            {"entitlements": {
               "pro":         {"products": ["app.monthly", "app.lifetime",
                                            {"id": "app.weekly", "duration": "P7D"}]},
               "remove_ads":  {"products": ["app.removeads", "app.lifetime"]},
               "season_pass": {"products": [{"id": "app.pass.30d", "duration": "P30D"}, "app.pass.legacy"]},
               "bonus":       {"products": ["app.coins"]}}}
            """)
        let found = catalog.contradictions(productTypes: [
            "app.monthly": "auto_renewable_subscription", "app.weekly": "auto_renewable_subscription",
            "app.lifetime": "non_consumable", "app.removeads": "non_consumable",
            "app.pass.30d": "non_renewing_subscription", "app.pass.legacy": "non_renewing_subscription",
            "app.coins": "consumable", "app.unlisted": "consumable",
        ])
        // Sorted by product id: app.coins < app.pass.legacy < app.weekly.
        #expect(found.count == 3, "\(found)")
        guard found.count == 3 else { return }
        #expect(found[0].hasPrefix("app.coins (under bonus) is a consumable"), "\(found[0])")
        #expect(found[1].hasPrefix("app.pass.legacy (under season_pass) is a non-renewing subscription"), "\(found[1])")
        #expect(found[1].contains("\"duration\""))
        #expect(found[2].hasPrefix("app.weekly (under pro) is an auto renewable subscription"), "\(found[2])")
        #expect(found[2].contains("P7D"))
        // A product the archive has not seen, or that agrees with the file, is not named.
        #expect(catalog.contradictions(productTypes: [:]).isEmpty)
        #expect(catalog.contradictions(productTypes: ["app.pass.30d": "non_renewing_subscription",
                                                      "app.lifetime": "non_consumable"]).isEmpty)
        // A product under two entitlements names both.
        let shared = catalog.contradictions(productTypes: ["app.lifetime": "consumable"])
        #expect(shared == ["app.lifetime (under pro, remove_ads) is a consumable, which never entitles: remove it"])
    }
}
