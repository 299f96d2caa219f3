/// Rule 1 over copies met in any order: of each transaction (and of each subscription's renewal
/// info), the copy that wins — the one no other copy of it ``LedgerCopy/supersedes(_:)`` — each
/// with what it came with (the transaction as a record rendered it, say). The one fold of
/// winning copies, for whoever lists transactions rather than evaluating a state: the same copies
/// in any order, and any number of times, give the same winners.
public struct WinningCopies<Companion> {
    /// What a copy is a copy of: a transaction of a key, or a subscription's renewal info.
    private enum Subject: Hashable {
        case transaction(SubscriptionKey, TransactionID)
        case renewalInfo(RenewalKey)
    }

    private var winners: [Subject: (copy: LedgerCopy, companion: Companion)] = [:]

    /// No copies yet.
    public init() {}

    /// Offers a copy: it becomes the winner of its transaction (or renewal info) unless the
    /// winner so far supersedes it or is the same copy.
    ///
    /// - Returns: Whether the copy is now the winner.
    @discardableResult
    public mutating func offer(_ copy: LedgerCopy, with companion: Companion) -> Bool {
        let subject: Subject
        switch copy.content {
        case .transaction(let key, let transaction): subject = .transaction(key, transaction.id)
        case .renewalInfo(let key, _): subject = .renewalInfo(key)
        }
        if let known = winners[subject], !copy.supersedes(known.copy) { return false }
        winners[subject] = (copy, companion)
        return true
    }

    /// The winning copy of each transaction and renewal info offered, with its companion, in no
    /// particular order.
    public var all: [(copy: LedgerCopy, companion: Companion)] {
        Array(winners.values)
    }

    /// The winning copy of a transaction of a key, with its companion, if any copy of it was
    /// offered.
    public func transaction(_ transactionId: String, of key: SubscriptionKey) -> (copy: LedgerCopy, companion: Companion)? {
        winners[.transaction(key, TransactionID(transactionId))]
    }
}

extension WinningCopies: Sendable where Companion: Sendable {}
