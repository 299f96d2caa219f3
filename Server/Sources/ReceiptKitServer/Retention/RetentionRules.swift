package import AppStoreServerAPI
import Foundation
package import ReceiptKit

/// The operator's rules for Apple's Get Retention Message requests (`RECEIPTKIT_RETENTION_RULES`):
/// an ordered list, the first rule whose conditions all hold answering. Pure: what a request is
/// answered is decided here from its ``RetentionFacts`` alone, read from stored state; nothing
/// asks Apple.
package struct RetentionRules: Sendable {
    /// The rules, in the file's order.
    package let rules: [RetentionRule]

    /// Creates rules.
    package init(_ rules: [RetentionRule]) {
        self.rules = rules
    }

    /// The first rule whose conditions hold for `facts`, and its position (1-based), or `nil`:
    /// no rule answers (Apple then shows the product's default message).
    package func rule(for facts: RetentionFacts) -> (position: Int, rule: RetentionRule)? {
        for (index, rule) in rules.enumerated() where rule.when.holds(for: facts, answer: rule.answer) {
            return (index + 1, rule)
        }
        return nil
    }

    /// What the rules read beyond the request and the subscription's state: each costs a read of
    /// the subscription's history, done only when some rule needs it.
    package var needs: RetentionFacts.Needs {
        rules.reduce(into: RetentionFacts.Needs()) { needs, rule in
            if rule.when.storefronts != nil { needs.insert(.storefront) }
            if rule.when.minimumRenewals != nil { needs.insert(.renewals) }
            if rule.when.offerUsed != nil { needs.insert(.redeemedOffers) }
        }
    }

    /// Whether an answer is signed with the In-App Purchase key.
    package var signsOffers: Bool {
        rules.contains { if case .promotionalOffer = $0.answer { true } else { false } }
    }
}

/// One rule: its conditions and its answer, and the line of the rules file it starts on.
package struct RetentionRule: Sendable {
    /// The line of the file the rule's object starts on.
    package let line: Int
    package let when: RetentionConditions
    package let answer: RetentionAnswer

    /// Creates a rule.
    package init(line: Int, when: RetentionConditions, answer: RetentionAnswer) {
        self.line = line
        self.when = when
        self.answer = answer
    }
}

/// A rule's `when`: every condition given must hold; none given, the rule always answers.
package struct RetentionConditions: Sendable {
    /// `product_id`: the request's product is one of these.
    package var productIds: Set<String>?
    /// `status`: the subscription's status now is one of these (``RetentionStatus/unknown`` for
    /// a subscription the server has not stored).
    package var statuses: Set<RetentionStatus>?
    /// `is_trial`: whether the subscription's current period is a free trial.
    package var isTrial: Bool?
    /// `locale`: language tags, one of which the request's locale is or starts with (`en` holds
    /// for `en-US`; compared without regard to case, `_` read as `-`).
    package var locales: [String]?
    /// `storefront`: the storefront (`USA`, `FRA`, …) of the subscription's transaction received
    /// last is one of these (compared without regard to case).
    package var storefronts: Set<String>?
    /// `min_renewals`: the subscription renewed at least this many times.
    package var minimumRenewals: Int?
    /// `offer_used`: whether the rule's promotional offer was redeemed on the subscription already.
    package var offerUsed: Bool?

    /// Conditions; none by default.
    package init(
        productIds: Set<String>? = nil, statuses: Set<RetentionStatus>? = nil, isTrial: Bool? = nil, locales: [String]? = nil,
        storefronts: Set<String>? = nil, minimumRenewals: Int? = nil, offerUsed: Bool? = nil
    ) {
        self.productIds = productIds
        self.statuses = statuses
        self.isTrial = isTrial
        self.locales = locales
        self.storefronts = storefronts
        self.minimumRenewals = minimumRenewals
        self.offerUsed = offerUsed
    }

    /// Whether every condition given holds. The conditions on the subscription itself
    /// (`is_trial`, `storefront`, `min_renewals`, `offer_used`) hold only for one the server has
    /// stored: of an unknown subscription nothing is known.
    func holds(for facts: RetentionFacts, answer: RetentionAnswer) -> Bool {
        if let productIds, !productIds.contains(facts.productId) { return false }
        if let statuses, !statuses.contains(facts.state.map { RetentionStatus($0.status) } ?? .unknown) { return false }
        if let locales, !locales.contains(where: { Self.locale(facts.locale, isWithin: $0) }) { return false }
        guard isTrial != nil || storefronts != nil || minimumRenewals != nil || offerUsed != nil else { return true }
        guard let state = facts.state else { return false }
        if let isTrial, state.isTrial != isTrial { return false }
        if let storefronts {
            guard let storefront = facts.storefront?.uppercased(), storefronts.contains(storefront) else { return false }
        }
        if let minimumRenewals, (facts.renewals ?? 0) < minimumRenewals { return false }
        if let offerUsed, case .promotionalOffer(_, let offerId, _) = answer {
            if facts.redeemedOffers.contains(offerId) != offerUsed { return false }
        }
        return true
    }

    /// Whether a locale (`en-US`, `en_US`) is the language tag `tag` or within it (`en`, `en-US`):
    /// equal, or starting with it and a `-`, without regard to case.
    static func locale(_ given: String?, isWithin tag: String) -> Bool {
        guard let given else { return false }
        let locale = given.replacingOccurrences(of: "_", with: "-").lowercased()
        let tag = tag.replacingOccurrences(of: "_", with: "-").lowercased()
        return locale == tag || locale.hasPrefix(tag + "-")
    }
}

/// A status a rule names: a subscription's (ReceiptKit's ``SubscriptionStatus``), or `unknown`
/// for one the server has not stored.
package enum RetentionStatus: String, Sendable, Hashable, CaseIterable {
    case active
    case gracePeriod = "grace_period"
    case billingRetry = "billing_retry"
    case expired
    case revoked
    case unknown

    init(_ status: SubscriptionStatus) {
        switch status {
        case .active: self = .active
        case .gracePeriod: self = .gracePeriod
        case .billingRetry: self = .billingRetry
        case .expired: self = .expired
        case .revoked: self = .revoked
        }
    }
}

/// A rule's `answer`: one of the three retention messages of Apple's `RealtimeResponseBody`, or
/// the product's default message.
package enum RetentionAnswer: Sendable, Hashable {
    /// `message`: a text message (with its image, if it has one).
    case message(UUIDString)
    /// `alternate_product`: a switch-plan message suggesting `productId`.
    case alternateProduct(message: UUIDString, productId: String)
    /// `promotional_offer`: a message with a promotional offer, signed when answered; of the
    /// request's product unless `productId` names one.
    case promotionalOffer(message: UUIDString, offerId: String, productId: String?)
    /// `default_message`: the default message configured for the request's product and locale
    /// (`appstore-api messaging default set`), which Apple shows when the answer names none: `{}`.
    case defaultMessage

    /// The message the answer names, or `nil`: the product's default.
    package var message: UUIDString? {
        switch self {
        case .message(let message), .alternateProduct(let message, _), .promotionalOffer(let message, _, _): message
        case .defaultMessage: nil
        }
    }

    /// The kind's name, as the rules file and the event write it.
    package var kind: String {
        switch self {
        case .message: "message"
        case .alternateProduct: "alternate_product"
        case .promotionalOffer: "promotional_offer"
        case .defaultMessage: "default_message"
        }
    }
}

/// What a rule may read of a request: the request's own members, and what the server has stored
/// of its subscription.
package struct RetentionFacts: Sendable {
    /// What is read of the subscription's history beyond its state.
    package struct Needs: OptionSet, Sendable, Hashable {
        package let rawValue: Int
        package init(rawValue: Int) { self.rawValue = rawValue }
        /// The storefront of its transaction received last.
        package static let storefront = Needs(rawValue: 1)
        /// How many times it renewed.
        package static let renewals = Needs(rawValue: 2)
        /// The promotional offers redeemed on it.
        package static let redeemedOffers = Needs(rawValue: 4)
    }

    /// The request's product.
    package var productId: String
    /// The request's `userLocale`.
    package var locale: String?
    /// The subscription's state now, or `nil`: the server has not stored it.
    package var state: SubscriptionState?
    /// The storefront of the subscription's transaction received last, when read.
    package var storefront: String?
    /// How many times the subscription renewed — its transactions stored after the first (a
    /// renewal, a change of product) — when read.
    package var renewals: Int?
    /// The identifiers of the promotional offers redeemed on the subscription, when read.
    package var redeemedOffers: Set<String>

    /// Creates facts.
    package init(
        productId: String, locale: String?, state: SubscriptionState?, storefront: String? = nil, renewals: Int? = nil,
        redeemedOffers: Set<String> = []
    ) {
        self.productId = productId
        self.locale = locale
        self.state = state
        self.storefront = storefront
        self.renewals = renewals
        self.redeemedOffers = redeemedOffers
    }
}
