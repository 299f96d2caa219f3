extension LedgerCopy {
    /// Rule 2's order among a key's transactions, each by its winning copy, short of its last
    /// tie-break: a transaction not upgraded away before one that was, then the later
    /// `purchaseDate`, then the later `expiresDate` (absent dates first). The current transaction
    /// is the one that ranks highest; among transactions of equal rank, the greater transaction
    /// id (``EntitlementLedger/state(for:at:)``).
    ///
    /// A store that reads a key's top-ranked transactions keeps these three members in columns
    /// and sorts by them as this order does, then lets the ledger decide between transactions of
    /// equal rank.
    public struct Rank: Sendable, Hashable, Comparable {
        /// Whether the transaction was upgraded away (ranks lower).
        public let isUpgraded: Bool
        /// Its purchase date, or `nil` (ranks lowest).
        public let purchaseDate: Timestamp?
        /// Its expiration date, or `nil` (ranks lowest).
        public let expiresDate: Timestamp?

        public static func < (lhs: Rank, rhs: Rank) -> Bool {
            if lhs.isUpgraded != rhs.isUpgraded { return lhs.isUpgraded }
            if lhs.purchaseDate != rhs.purchaseDate { return Timestamp.orderNilFirst(lhs.purchaseDate, rhs.purchaseDate) }
            return Timestamp.orderNilFirst(lhs.expiresDate, rhs.expiresDate)
        }
    }

    /// A transaction copy's rank in rule 2's order; `nil` for renewal info.
    public var rank: Rank? {
        guard case .transaction(_, let copy) = content else { return nil }
        return copy.rank
    }
}

extension LedgerTransaction {
    /// ``LedgerCopy/Rank``.
    var rank: LedgerCopy.Rank {
        LedgerCopy.Rank(isUpgraded: isUpgraded, purchaseDate: purchaseDate, expiresDate: expiresDate)
    }
}
