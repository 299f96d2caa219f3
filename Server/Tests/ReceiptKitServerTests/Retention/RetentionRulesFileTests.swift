import AppStoreServerAPI
import Foundation
import ReceiptKit
import ReceiptKitServer
import Testing

/// `RECEIPTKIT_RETENTION_RULES`: the file's rules as written, and each mistake named with its line.
@Suite("The retention rules file")
struct RetentionRulesFileTests {
    static let message = "6b1c9e3a-2f4d-4a5b-8c7d-9e0f1a2b3c01"
    static let other = "6B1C9E3A-2F4D-4A5B-8C7D-9E0F1A2B3C02"

    /// The example of `docs/retention.md`, with test ids.
    static let example = """
        {"rules": [
          {"when": {"status": ["billing_retry", "grace_period"]}, "answer": {"message": "\(message)"}},
          {"when": {"product_id": "com.example.monthly", "is_trial": true},
           "answer": {"promotional_offer": {"message": "\(message)", "offer_id": "TRIAL_SAVE"}}},
          {"when": {"status": ["unknown"]},
           "answer": {"alternate_product": {"message": "\(other)", "product_id": "com.example.yearly"}}}
        ]}
        """

    @Test("the documented example: three rules, their conditions and answers, each with its line")
    func example() throws {
        let rules = try RetentionRulesFile.parse(Self.example, canSign: true)
        #expect(rules.rules.count == 3)
        #expect(rules.rules.map(\.line) == [2, 3, 5])
        #expect(rules.rules[0].when.statuses == [.billingRetry, .gracePeriod])
        #expect(try rules.rules[0].answer == .message(.init(Self.message)))
        #expect(rules.rules[1].when.productIds == ["com.example.monthly"] && rules.rules[1].when.isTrial == true)
        #expect(try rules.rules[1].answer == .promotionalOffer(message: .init(Self.message), offerId: "TRIAL_SAVE", productId: nil))
        #expect(rules.rules[2].when.statuses == [.unknown])
        // A message id is kept in lowercase, as appstore-api uploads it.
        #expect(rules.rules[2].answer.message?.value == Self.other.lowercased())
        #expect(rules.signsOffers && rules.needs.isEmpty)
    }

    @Test("every condition, a list or one product, and what each needs read")
    func everyCondition() throws {
        let rules = try RetentionRulesFile.parse("""
            {"rules": [{"when": {"product_id": ["a", "b"], "status": ["active"], "is_trial": false, "locale": ["en", "pt_BR"],
              "storefront": ["usa", "FRA"], "min_renewals": 3, "offer_used": false},
              "answer": {"promotional_offer": {"message": "\(Self.message)", "offer_id": "o", "product_id": "c"}}},
             {"answer": {"message": "\(Self.message)"}}]}
            """, canSign: true)
        let when = rules.rules[0].when
        #expect(when.productIds == ["a", "b"] && when.statuses == [.active] && when.isTrial == false)
        #expect(when.locales == ["en", "pt_BR"] && when.storefronts == ["USA", "FRA"])
        #expect(when.minimumRenewals == 3 && when.offerUsed == false)
        #expect(rules.needs == [.storefront, .renewals, .redeemedOffers])
        #expect(rules.rules[1].when.productIds == nil && rules.rules[1].when.statuses == nil)
        #expect(try RetentionRulesFile.parse(#"{"rules": []}"#, canSign: false).rules.isEmpty)
    }

    @Test("default_message: the product's default, a message id of none, no signing")
    func defaultMessage() throws {
        let rules = try RetentionRulesFile.parse("""
            {"rules": [{"when": {"status": ["unknown", "expired"]}, "answer": {"default_message": {}}}]}
            """, canSign: false)
        #expect(rules.rules.count == 1 && rules.rules[0].answer == .defaultMessage)
        #expect(rules.rules[0].answer.message == nil && rules.rules[0].answer.kind == "default_message")
        #expect(rules.rules[0].when.statuses == [.unknown, .expired] && !rules.signsOffers)
    }

    /// A file with a mistake on a known line, and the words its reason must hold.
    struct Mistake: Sendable, CustomTestStringConvertible {
        let name: String
        let text: String
        let line: Int
        let words: [String]
        var canSign = true
        var testDescription: String { name }
    }

    static let uuid = message
    static let mistakes: [Mistake] = [
        Mistake(name: "an unknown state", text: """
            {"rules": [
              {"when": {"status": ["active",
                                   "lapsed"]}, "answer": {"message": "\(uuid)"}}]}
            """, line: 3, words: ["\"lapsed\"", "not a state", "billing_retry", "unknown"]),
        Mistake(name: "two answers in one rule", text: """
            {"rules": [{"answer": {
              "message": "\(uuid)",
              "alternate_product": {"message": "\(uuid)", "product_id": "p"}}}]}
            """, line: 3, words: ["two answers in one rule", "message and alternate_product"]),
        Mistake(name: "a message id that is not a UUID", text: """
            {"rules": [

              {"answer": {"message": "MESSAGE_UUID"}}]}
            """, line: 3, words: ["\"MESSAGE_UUID\"", "not a UUID"]),
        Mistake(name: "a promotional offer's message id that is not a UUID", text: """
            {"rules": [{"answer": {"promotional_offer": {
              "message": "6b1c9e3a", "offer_id": "o"}}}]}
            """, line: 2, words: ["promotional_offer's message", "not a UUID"]),
        Mistake(name: "a default message with a member", text: """
            {"rules": [{"answer": {"default_message": {
              "message": "\(uuid)"}}}]}
            """, line: 2, words: ["default_message has a member \"message\""]),
        Mistake(name: "an answer naming none", text: """
            {"rules": [{"answer": {}}]}
            """, line: 1, words: ["the answer is empty"]),
        Mistake(name: "a rule without an answer", text: """
            {"rules": [
              {"when": {"is_trial": true}}]}
            """, line: 2, words: ["no \"answer\""]),
        Mistake(name: "an unknown condition", text: """
            {"rules": [{"when": {
              "country": ["USA"]}, "answer": {"message": "\(uuid)"}}]}
            """, line: 2, words: ["\"country\"", "storefront", "min_renewals"]),
        Mistake(name: "a promotional offer without the In-App Purchase key", text: """
            {"rules": [{"answer": {"message": "\(uuid)"}},
              {"answer":
                {"promotional_offer": {"message": "\(uuid)", "offer_id": "o"}}}]}
            """, line: 3, words: ["In-App Purchase key", "RECEIPTKIT_APPSTORE_KEY_ID"], canSign: false),
        Mistake(name: "offer_used without a promotional offer", text: """
            {"rules": [{"when": {
              "offer_used": true}, "answer": {"message": "\(uuid)"}}]}
            """, line: 2, words: ["offer_used", "promotional_offer"]),
        Mistake(name: "a member given twice", text: """
            {"rules": [{"when": {"is_trial": true,
              "is_trial": false}, "answer": {"message": "\(uuid)"}}]}
            """, line: 2, words: ["not valid JSON", "duplicate object key", "\"is_trial\""]),
        Mistake(name: "JSON that does not parse", text: """
            {"rules": [{"answer": {"message": "\(uuid)"}},
              {"answer": {"message": "\(uuid)"}},,
            ]}
            """, line: 2, words: ["not valid JSON", "unexpected token near ','"]),
        Mistake(name: "a status that is not a list", text: """
            {"rules": [{"when": {"status": "active"}, "answer": {"message": "\(uuid)"}}]}
            """, line: 1, words: ["status is a string", "a list of statuses"]),
        Mistake(name: "min_renewals below zero", text: """
            {"rules": [{"when": {"min_renewals": -1}, "answer": {"message": "\(uuid)"}}]}
            """, line: 1, words: ["min_renewals", "0 or more"]),
        Mistake(name: "a storefront that is not a country code", text: """
            {"rules": [{"when": {"storefront": ["143441"]}, "answer": {"message": "\(uuid)"}}]}
            """, line: 1, words: ["\"143441\"", "three-letter"]),
        Mistake(name: "a locale that is not a language tag", text: """
            {"rules": [{"when": {"locale": ["en US"]}, "answer": {"message": "\(uuid)"}}]}
            """, line: 1, words: ["\"en US\"", "language tag"]),
        Mistake(name: "an alternate product without its product", text: """
            {"rules": [{"answer": {"alternate_product": {"message": "\(uuid)"}}}]}
            """, line: 1, words: ["alternate_product has no product_id"]),
        Mistake(name: "no rules", text: """
            {"rule": []}
            """, line: 1, words: ["\"rule\"", "expected rules"]),
    ]

    @Test("a mistake is refused with its line and what is wrong", arguments: mistakes)
    func refused(_ mistake: Mistake) throws {
        let failure = try #require(throws: LocatedJSON.Failure.self) {
            try RetentionRulesFile.parse(mistake.text, canSign: mistake.canSign)
        }
        #expect(failure.line == mistake.line, "\(failure.reason)")
        for word in mistake.words { #expect(failure.reason.contains(word), "\(failure.reason)") }
    }

    @Test("the configuration names the variable, the file and the line")
    func configuration() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("retention-rules-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("rules.json").path
        try Data(Self.mistakes[0].text.utf8).write(to: URL(fileURLWithPath: file))
        let error = try #require(throws: ConfigurationError.self) {
            try ServerConfiguration(environment: Vectors.environment.merging(["RECEIPTKIT_RETENTION_RULES": file]) { $1 })
        }
        #expect(error.message.hasPrefix("RECEIPTKIT_RETENTION_RULES \(file), line 3: status names \"lapsed\""), "\(error.message)")
        // Without the In-App Purchase key, the example's promotional offer stops the server.
        try Data(Self.example.utf8).write(to: URL(fileURLWithPath: file))
        let unsigned = try #require(throws: ConfigurationError.self) {
            try ServerConfiguration(environment: Vectors.environment.merging(["RECEIPTKIT_RETENTION_RULES": file]) { $1 })
        }
        #expect(unsigned.message.hasPrefix("RECEIPTKIT_RETENTION_RULES \(file), line 4: a promotional_offer answer"), "\(unsigned.message)")
        let missing = try #require(throws: ConfigurationError.self) {
            try ServerConfiguration(environment: Vectors.environment.merging(["RECEIPTKIT_RETENTION_RULES": file + ".missing"]) { $1 })
        }
        #expect(missing.message.contains("cannot read"))
        // An app served without its App Apple ID would stand for every app's requests.
        var unnamed = Vectors.environment
        unnamed["RECEIPTKIT_APP_APPLE_ID"] = nil
        unnamed["RECEIPTKIT_RETENTION_RULES"] = file
        let anyApp = try #require(throws: ConfigurationError.self) { try ServerConfiguration(environment: unnamed) }
        #expect(anyApp.message.hasPrefix("RECEIPTKIT_RETENTION_RULES: com.receiptkit.example has no App Apple ID"), "\(anyApp.message)")
        unnamed["RECEIPTKIT_RETENTION_RULES"] = nil
        #expect(throws: Never.self) { try ServerConfiguration(environment: unnamed) }
    }

    @Test("receiptkit-server exits 78 naming the file, the line and the reason", arguments: [0, 1, 2])
    func executable(mistake: Int) async throws {
        let mistake = Self.mistakes[mistake]
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("retention-rules-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("rules.json").path
        try Data(mistake.text.utf8).write(to: URL(fileURLWithPath: file))
        var environment = Vectors.environment
        environment["RECEIPTKIT_RETENTION_RULES"] = file
        environment["RECEIPTKIT_DATABASE_URL"] = "sqlite:\(directory.appendingPathComponent("store.sqlite").path)"
        environment["PORT"] = "0"
        let result = try await Tools.run(ServerProcess.executable.path, [], environment: environment)
        #expect(result.status == 78, "\(result.text)")
        #expect(result.text.contains("RECEIPTKIT_RETENTION_RULES \(file), line \(mistake.line): "), "\(result.text)")
        for word in mistake.words { #expect(result.text.contains(word), "\(result.text)") }
        // Stopped at start: no database was made.
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("store.sqlite").path))
    }
}
