import ReceiptKit

/// What the retention rules read of one subscription, in one snapshot: its state now
/// (``Evaluation``, a few rows whatever its history), then only what the rules need beyond it
/// (``RetentionFacts/Needs``) and only for a subscription the server has stored — the promotional
/// offers redeemed on it and how many times it renewed (the copy signed last of each of its
/// transactions, or only their count), and the storefront of its transaction received last (its
/// inputs read latest first, a page at a time, until one carries a transaction of the key).
struct RetentionReading: RowSteps, Sendable {
    let key: SubscriptionKey
    let instant: Timestamp
    let needs: RetentionFacts.Needs
    private var facts: RetentionFacts
    private var phase: Phase

    /// How many inputs a page of the storefront's search reads.
    static let inputPage = 8

    private enum Phase {
        case evaluating(Evaluation)
        case copies
        case count
        case inputs
    }

    /// - Parameters:
    ///   - key: The subscription the request names.
    ///   - instant: When the request arrived: the state is evaluated then.
    ///   - facts: The request's own facts (its product and locale), completed by the reading.
    ///   - needs: What the rules read beyond the state.
    init(key: SubscriptionKey, at instant: Timestamp, facts: RetentionFacts, needs: RetentionFacts.Needs) {
        self.key = key
        self.instant = instant
        self.facts = facts
        self.needs = needs
        phase = .evaluating(Evaluation(key: key, at: instant))
    }

    mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<RetentionFacts> {
        switch phase {
        case .evaluating(var evaluation):
            switch try evaluation.nested(rows, in: RetentionFacts.self) {
            case .io(let io):
                phase = .evaluating(evaluation)
                return io
            case .done(let state):
                facts.state = state
                guard state != nil else { return .done(facts) }
                return history()
            }
        case .copies:
            var transactions = Set<String>()
            for json in try RetentionStatements.latestCopies.decode(rows) {
                let copy = try LedgerStatements.copy(json, kind: .transaction, of: key.originalTransactionId)
                if let id = copy.transactionId { transactions.insert(id) }
                if let offer = copy.offer, offer.type == "promotional", let id = offer.id { facts.redeemedOffers.insert(id) }
            }
            facts.renewals = max(0, transactions.count - 1)
            return storefront()
        case .count:
            facts.renewals = max(0, (try RetentionStatements.transactionCount.decodeFirst(rows) ?? 0) - 1)
            return storefront()
        case .inputs:
            let inputs = try RetentionStatements.inputsBefore.decode(rows)
            for input in inputs {
                let transactions = try StoredRecord(input).transactions ?? []
                let mine = transactions.filter { $0.originalTransactionId == key.originalTransactionId && $0.storefront != nil }
                if let latest = mine.max(by: { LedgerStatements.instant($0.purchaseDate) < LedgerStatements.instant($1.purchaseDate) }) {
                    facts.storefront = latest.storefront
                    return .done(facts)
                }
            }
            guard inputs.count == Self.inputPage, let last = inputs.last else { return .done(facts) }
            return page(before: last.id)
        }
    }

    /// The history the rules need: the copies when an offer's use is asked (the renewals come
    /// with them), or only their count.
    private mutating func history() -> RowStep<RetentionFacts> {
        if needs.contains(.redeemedOffers) {
            phase = .copies
            return .fetch(RetentionStatements.latestCopies.fetch(LedgerStatements.key(key)))
        }
        if needs.contains(.renewals) {
            phase = .count
            return .fetch(RetentionStatements.transactionCount.fetch(LedgerStatements.key(key)))
        }
        return storefront()
    }

    private mutating func storefront() -> RowStep<RetentionFacts> {
        guard needs.contains(.storefront) else { return .done(facts) }
        return page(before: Int64.max)
    }

    private mutating func page(before id: Int64) -> RowStep<RetentionFacts> {
        phase = .inputs
        return .fetch(RetentionStatements.inputsBefore.fetch(
            LedgerStatements.key(key) + ["before": .integer(id), "limit": .integer(Int64(Self.inputPage))]))
    }
}
