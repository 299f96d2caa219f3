import AppStoreServerAPI
import Foundation
package import ReceiptKit

/// The rules file `RECEIPTKIT_RETENTION_RULES` names, read once at start:
///
/// ```json
/// {"rules": [
///   {"when": {"status": ["billing_retry", "grace_period"]}, "answer": {"message": "MESSAGE_UUID"}},
///   {"when": {"product_id": "com.example.monthly", "is_trial": true},
///    "answer": {"promotional_offer": {"message": "MESSAGE_UUID", "offer_id": "TRIAL_SAVE"}}},
///   {"when": {"status": ["unknown"]}, "answer": {"default_message": {}}}
/// ]}
/// ```
///
/// Every mistake stops the server at start, naming the file, the line and what is wrong
/// (`RECEIPTKIT_RETENTION_RULES rules.json, line 3: status names "lapsed"; expected active, …`):
/// a member this reader does not know, a value of the wrong type, an unknown status, a message id
/// that is not a UUID, a rule with no answer or two, `offer_used` without a promotional offer, a
/// promotional offer without the In-App Purchase key that signs it.
package enum RetentionRulesFile {
    /// The variable that names the file.
    static let variable = "RECEIPTKIT_RETENTION_RULES"

    /// The conditions a rule's `when` takes.
    static let conditions = ["product_id", "status", "is_trial", "locale", "storefront", "min_renewals", "offer_used"]
    /// The answers a rule's `answer` takes, one of them.
    static let answers = ["message", "alternate_product", "promotional_offer", "default_message"]

    /// Reads the rules file at `path`.
    ///
    /// - Parameters:
    ///   - path: The file.
    ///   - canSign: Whether the In-App Purchase key is configured, which a promotional offer needs.
    /// - Throws: ``ConfigurationError`` naming the file and the line that is wrong.
    static func read(_ path: String, canSign: Bool) throws(ConfigurationError) -> RetentionRules {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            throw ConfigurationError("\(variable): cannot read \(path) as UTF-8 text")
        }
        do {
            return try parse(text, canSign: canSign)
        } catch {
            throw ConfigurationError("\(variable) \(path), line \(error.line): \(error.reason)")
        }
    }

    /// The rules of a file's text, read by ReceiptKit's ``LocatedJSON`` (jansson).
    ///
    /// - Throws: ``LocatedJSON/Failure`` with the line and the member path that are wrong and why.
    package static func parse(_ text: String, canSign: Bool) throws(LocatedJSON.Failure) -> RetentionRules {
        let root = try LocatedJSON(jsonBytes: Array(text.utf8))
        let members = try object(root, "the file", allowed: ["rules"])
        guard let list = members["rules"] else {
            throw root.failure("the file has no \"rules\": expected {\"rules\": [rule, …]}")
        }
        guard case .array(let elements) = list.value else {
            throw list.failure("\"rules\" is \(list.kindName); expected a list of rules")
        }
        return RetentionRules(try elements.map { element throws(LocatedJSON.Failure) in try rule(element, canSign: canSign) })
    }

    private static func rule(_ value: LocatedJSON, canSign: Bool) throws(LocatedJSON.Failure) -> RetentionRule {
        let members = try object(value, "a rule", allowed: ["when", "answer"])
        guard let answerValue = members["answer"] else {
            throw value.failure("the rule has no \"answer\"")
        }
        let answer = try self.answer(answerValue)
        if case .promotionalOffer = answer, !canSign {
            throw answerValue.failure(
                "a promotional_offer answer is signed with the In-App Purchase key, and it is not configured (RECEIPTKIT_APPSTORE_KEY_ID, RECEIPTKIT_APPSTORE_ISSUER_ID, RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE)")
        }
        var when = RetentionConditions()
        if let conditions = members["when"] {
            for member in try memberList(conditions, "\"when\"", allowed: Self.conditions) {
                try condition(member, into: &when, answer: answer)
            }
        }
        return RetentionRule(line: value.line, when: when, answer: answer)
    }

    private static func condition(
        _ member: LocatedJSON.Member, into when: inout RetentionConditions, answer: RetentionAnswer
    ) throws(LocatedJSON.Failure) {
        let value = member.value
        switch member.name {
        case "product_id":
            if case .string(let product) = value.value {
                when.productIds = [try nonEmpty(product, "product_id", at: value)]
            } else {
                when.productIds = Set(try strings(value, "product_id", what: "a product id or a list of them").map(\.text))
            }
        case "status":
            let names = try strings(value, "status", what: "a list of statuses")
            when.statuses = Set(try names.map { name, element throws(LocatedJSON.Failure) in
                guard let status = RetentionStatus(rawValue: name) else {
                    throw element.failure(
                        "status names \"\(name)\", which is not a state; expected \(RetentionStatus.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                return status
            })
        case "is_trial":
            when.isTrial = try bool(value, "is_trial")
        case "locale":
            let tags = try strings(value, "locale", what: "a list of language tags (en, en-US)")
            for (tag, element) in tags where !isLanguageTag(tag) {
                throw element.failure("locale names \"\(tag)\", which is not a language tag (en, en-US, pt-BR)")
            }
            when.locales = tags.map(\.text)
        case "storefront":
            let codes = try strings(value, "storefront", what: "a list of storefronts (USA, FRA)")
            for (code, element) in codes where !(code.count == 3 && code.allSatisfy { $0.isASCII && $0.isLetter }) {
                throw element.failure(
                    "storefront names \"\(code)\"; expected a three-letter country code, as Apple names storefronts (USA, FRA)")
            }
            when.storefronts = Set(codes.map { $0.text.uppercased() })
        case "min_renewals":
            guard case .integer(let number) = value.value, let count = Int(exactly: number), count >= 0 else {
                throw value.failure("min_renewals must be a whole number, 0 or more")
            }
            when.minimumRenewals = count
        default:  // offer_used
            guard case .promotionalOffer = answer else {
                throw member.failure(
                    "offer_used says whether the rule's promotional offer was redeemed: the rule's answer must be a promotional_offer")
            }
            when.offerUsed = try bool(value, "offer_used")
        }
    }

    private static func answer(_ value: LocatedJSON) throws(LocatedJSON.Failure) -> RetentionAnswer {
        let members = try memberList(value, "\"answer\"", allowed: Self.answers)
        guard members.count == 1, let member = members.first else {
            let reason = members.isEmpty
                ? "the answer is empty; expected one of \(answers.joined(separator: ", "))"
                : "two answers in one rule (\(members.map(\.name).joined(separator: " and "))): a rule answers one"
            throw members.dropFirst().first?.failure(reason) ?? value.failure(reason)
        }
        switch member.name {
        case "message":
            guard case .string(let text) = member.value.value else {
                throw member.value.failure("message is \(member.value.kindName); expected a message id (a UUID)")
            }
            return .message(try uuid(text, "message", at: member.value))
        case "alternate_product":
            let fields = try object(member.value, "alternate_product", allowed: ["message", "product_id"])
            return .alternateProduct(
                message: try messageId(fields, in: member.value, "alternate_product"),
                productId: try string(fields, "product_id", in: member.value, "alternate_product"))
        case "default_message":
            _ = try object(member.value, "default_message", allowed: [])
            return .defaultMessage
        default:  // promotional_offer
            let fields = try object(member.value, "promotional_offer", allowed: ["message", "offer_id", "product_id"])
            let productId = try fields["product_id"].map { value throws(LocatedJSON.Failure) in
                try string(["product_id": value], "product_id", in: member.value, "promotional_offer")
            }
            return .promotionalOffer(
                message: try messageId(fields, in: member.value, "promotional_offer"),
                offerId: try string(fields, "offer_id", in: member.value, "promotional_offer"), productId: productId)
        }
    }

    // MARK: Values

    /// An object's members by name, each one of `allowed`.
    private static func object(
        _ value: LocatedJSON, _ what: String, allowed: [String]
    ) throws(LocatedJSON.Failure) -> [String: LocatedJSON] {
        var members: [String: LocatedJSON] = [:]
        for member in try memberList(value, what, allowed: allowed) { members[member.name] = member.value }
        return members
    }

    /// An object's members in order, each one of `allowed`.
    private static func memberList(
        _ value: LocatedJSON, _ what: String, allowed: [String]
    ) throws(LocatedJSON.Failure) -> [LocatedJSON.Member] {
        guard case .object(let members) = value.value else {
            throw value.failure("\(what) is \(value.kindName); expected an object")
        }
        for member in members where !allowed.contains(member.name) {
            let expected = allowed.isEmpty ? "it takes none: write {}" : "expected \(allowed.joined(separator: ", "))"
            throw member.failure("\(what) has a member \"\(member.name)\"; \(expected)")
        }
        return members
    }

    /// A non-empty list of non-empty strings, each with the value it is, for an error at it.
    private static func strings(
        _ value: LocatedJSON, _ name: String, what: String
    ) throws(LocatedJSON.Failure) -> [(text: String, element: LocatedJSON)] {
        guard case .array(let elements) = value.value, !elements.isEmpty else {
            let found = if case .array = value.value { "an empty list" } else { value.kindName }
            throw value.failure("\(name) is \(found); expected \(what)")
        }
        return try elements.map { element throws(LocatedJSON.Failure) in
            guard case .string(let text) = element.value else {
                throw element.failure("\(name) holds \(element.kindName); expected \(what)")
            }
            return (try nonEmpty(text, name, at: element), element)
        }
    }

    private static func bool(_ value: LocatedJSON, _ name: String) throws(LocatedJSON.Failure) -> Bool {
        guard case .bool(let flag) = value.value else {
            throw value.failure("\(name) is \(value.kindName); expected true or false")
        }
        return flag
    }

    private static func nonEmpty(_ text: String, _ name: String, at value: LocatedJSON) throws(LocatedJSON.Failure) -> String {
        guard !text.isEmpty else { throw value.failure("\(name) is an empty string") }
        return text
    }

    /// A required non-empty string member of an answer.
    private static func string(
        _ fields: [String: LocatedJSON], _ name: String, in object: LocatedJSON, _ what: String
    ) throws(LocatedJSON.Failure) -> String {
        guard let value = fields[name] else { throw object.failure("\(what) has no \(name)") }
        guard case .string(let text) = value.value else {
            throw value.failure("\(what)'s \(name) is \(value.kindName); expected a string")
        }
        return try nonEmpty(text, name, at: value)
    }

    /// An answer's required `message`: a message id.
    private static func messageId(
        _ fields: [String: LocatedJSON], in object: LocatedJSON, _ what: String
    ) throws(LocatedJSON.Failure) -> UUIDString {
        let text = try string(fields, "message", in: object, what)
        return try uuid(text, "\(what)'s message", at: fields["message"] ?? object)
    }

    /// A message id: the UUID it was uploaded under (`appstore-api messaging message upload ID`).
    private static func uuid(_ text: String, _ name: String, at value: LocatedJSON) throws(LocatedJSON.Failure) -> UUIDString {
        guard let id = try? UUIDString(text) else {
            throw value.failure(
                "\(name) is \"\(text)\", which is not a UUID; a message's id is the UUID it was uploaded with")
        }
        return id
    }

    /// A language tag as a locale rule takes it: a language of 2 to 8 letters, then subtags of 1
    /// to 8 letters or digits, each after a `-` (or `_`).
    static func isLanguageTag(_ tag: String) -> Bool {
        let parts = tag.split(separator: "-", omittingEmptySubsequences: false).flatMap {
            $0.split(separator: "_", omittingEmptySubsequences: false)
        }
        guard let language = parts.first, (2...8).contains(language.count), language.allSatisfy({ $0.isASCII && $0.isLetter }) else {
            return false
        }
        return parts.dropFirst().allSatisfy { (1...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } }
    }
}
