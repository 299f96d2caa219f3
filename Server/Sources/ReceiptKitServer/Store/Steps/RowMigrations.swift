import ReceiptKit

/// Migration `v5-ledger-copies`'s rows: each key's ledger, stored whole as JSON in
/// `subscriptions.state` by servers before v5, becomes rows of `transaction_copies` and
/// `renewal_info_copies` — the same copies folded by the same rules (``Folding``) — and the key's
/// row names the copy signed last.
struct LedgersToCopies: RowSteps, Sendable {
    private typealias Ledger = (key: SubscriptionKey, copies: [LedgerCopy], updatedAt: Int64)

    private enum Phase {
        case start, read, ledger
        case folding(ArraySlice<LedgerCopy>, Folding)
    }

    private var phase = Phase.start
    private var ledgers: ArraySlice<Ledger> = []

    /// The keys whose ledger is stored whole, with it.
    static let storedLedgers = Query(
        """
        SELECT original_transaction_id, bundle_id, environment, state, updated_at FROM subscriptions
        WHERE state IS NOT NULL
        """
    ) { (originalTransactionId: String, bundleId: String, environment: String, state: String, updatedAt: Int64) in
        (key: LedgerStatements.subscriptionKey(originalTransactionId, bundleId, environment), state: state, updatedAt: updatedAt)
    }

    mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<Void> {
        while true {
            switch phase {
            case .start:
                phase = .read
                return .fetch(Self.storedLedgers.fetch([]))
            case .read:
                ledgers = try Self.storedLedgers.decode(rows).map { ($0.key, try Self.copies($0.state, of: $0.key), $0.updatedAt) }[...]
                phase = .ledger
            case .ledger:
                // The key's row first, then its copies folded one by one.
                guard let ledger = ledgers.popFirst() else { return .done(()) }
                if let first = ledger.copies.first { phase = .folding(ledger.copies[...], Folding(first)) }
                return .write(LedgerStatements.subscriptionWrites(ledger.key, copies: ledger.copies, receivedAt: ledger.updatedAt))
            case .folding(var copies, var folding):
                switch try folding.nested(rows, in: Void.self) {
                case .io(let io):
                    phase = .folding(copies, folding)
                    return io
                case .done(let folded):
                    copies = copies.dropFirst()
                    phase = copies.first.map { .folding(copies, Folding($0)) } ?? .ledger
                    return .write(folded.writes)
                }
            }
        }
    }

    /// The copies of a ledger stored whole (before v5) for `key`: a ledger holds the renewal
    /// infos of every key with the same environment and original transaction id, and its
    /// transactions under their own keys — all of them belong to `key`'s rows.
    private static func copies(_ state: String, of key: SubscriptionKey) throws -> [LedgerCopy] {
        do {
            return try EntitlementLedger(jsonBytes: Array(state.utf8)).copies
        } catch {
            throw StoreError("the stored ledger of \(key) does not decode: \(error)")
        }
    }
}

/// Migration `v8-change-events`'s rows: each key's derived record, evaluated at the migration's
/// instant (``FeedDerivation/baseline(_:lastKnownFrom:at:)``), stored without events.
struct Baselines: RowSteps, Sendable {
    let instant: Timestamp
    private var phase = Phase.start
    private var keys: ArraySlice<SubscriptionKey> = []

    private enum Phase {
        case start, read
        case evaluating(Evaluation?)
    }

    init(at instant: Timestamp) {
        self.instant = instant
    }

    mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<Void> {
        while true {
            switch phase {
            case .start:
                phase = .read
                return .fetch(FeedStatements.allKeys.fetch([]))
            case .read:
                keys = try FeedStatements.allKeys.decode(rows)[...]
                phase = .evaluating(nil)
            case .evaluating(let running):
                guard var evaluation = running ?? keys.popFirst().map({ Evaluation(key: $0, at: instant) }) else { return .done(()) }
                switch try evaluation.nested(running == nil ? [] : rows, in: Void.self) {
                case .io(let io):
                    phase = .evaluating(evaluation)
                    return io
                case .done(let state):
                    phase = .evaluating(nil)
                    let derived = FeedDerivation.baseline(state, lastKnownFrom: evaluation.head.lastKnownFrom, at: instant)
                    return .write([FeedStatements.derivedWrite(evaluation.key, derived, at: instant.millisecondsSince1970)])
                }
            }
        }
    }
}
