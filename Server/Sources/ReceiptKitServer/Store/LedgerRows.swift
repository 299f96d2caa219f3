import ReceiptKit

/// A key's ledger kept as rows (from migration v5): every signed copy of every transaction in
/// `transaction_copies`, every copy of renewal info in `renewal_info_copies`, each as ReceiptKit's
/// ``LedgerCopy`` JSON with the few columns a lookup needs beside it. Folding a record inserts its
/// copies — a cost that does not grow with the key's history — and reading a key's state reads the
/// handful of rows that decide it; the rules stay ReceiptKit's (``EntitlementLedger``).
///
/// What the two stores run is written here once, with `?` placeholders (``StoreStatement``), and
/// what they decide between statements is decided here once: each store only fetches the rows a
/// step asks for and executes the writes it plans.
enum LedgerRows {
    /// How many top-ranked candidates are read for a state (``candidates``, ``candidatesKnownAt``):
    /// rule 2 takes the first, unless the second ties with it, and then more might tie — the
    /// state is then evaluated from every copy known at its instant instead.
    static let candidateLimit = 2

    // MARK: Writing a copy

    /// Folding one copy in: the reads it needs, then its writes (``plan(_:latest:same:)``).
    struct Folding: RowSteps {
        let copy: LedgerCopy
        private var phase = Phase.start

        private enum Phase {
            case start
            /// Reading the stored copy of the same transaction signed last.
            case latest
            /// Reading the stored copy signed at the same instant, after `latest`.
            case same(latest: LedgerCopy?)
        }

        init(_ copy: LedgerCopy) {
            self.copy = copy
        }

        mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<[StoreWrite]> {
            let id = copy.originalTransactionId
            switch (copy.kind, phase) {
            case (.renewalInfo, .start):
                phase = .same(latest: nil)
                return .fetch(sameRenewalInfoCopy, sameRenewalInfoValues(copy))
            case (.renewalInfo, _):
                let same = try rows.first.map { try LedgerRows.copy($0[0], kind: .renewalInfo, of: id) }
                return .done(plan(renewalInfo: copy, same: same))
            case (.transaction, .start):
                phase = .latest
                return .fetch(latestTransactionCopy, transactionValues(copy))
            case (.transaction, .latest):
                let latest = try rows.first.map { try LedgerRows.copy($0[1], kind: .transaction, of: id) }
                switch plan(copy, latest: latest) {
                case .write(let writes):
                    return .done(writes)
                case .fetchSame:
                    phase = .same(latest: latest)
                    return .fetch(sameTransactionCopy, transactionValues(copy, signedToo: true))
                }
            case (.transaction, .same(let latest)):
                let same = try rows.first.map { try LedgerRows.copy($0[0], kind: .transaction, of: id) }
                guard case .write(let writes) = plan(copy, latest: latest, same: .some(same)) else {
                    throw StoreError("folding a copy of \(id) asked for the same row twice")
                }
                return .done(writes)
            }
        }
    }

    /// The stored copy of the same transaction signed last, before a new copy is folded in.
    static let latestTransactionCopy = StoreStatement(
        """
        SELECT known_from, copy FROM transaction_copies
        WHERE original_transaction_id = ? AND bundle_id = ? AND environment = ? AND transaction_id = ?
        ORDER BY known_from DESC LIMIT 1
        """, columns: [.integer, .text])

    /// The stored copy of the same transaction signed at the same instant.
    static let sameTransactionCopy = StoreStatement(
        """
        SELECT copy FROM transaction_copies
        WHERE original_transaction_id = ? AND bundle_id = ? AND environment = ? AND transaction_id = ? AND known_from = ?
        """, columns: [.text])

    static let insertTransactionCopy = StoreStatement(
        """
        INSERT INTO transaction_copies
            (original_transaction_id, bundle_id, environment, transaction_id, known_from, is_latest, is_upgraded,
             purchase_date, expires_date, copy)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """)

    static let replaceTransactionCopy = StoreStatement(
        """
        UPDATE transaction_copies SET is_upgraded = ?, purchase_date = ?, expires_date = ?, copy = ?
        WHERE original_transaction_id = ? AND bundle_id = ? AND environment = ? AND transaction_id = ? AND known_from = ?
        """)

    static let demoteTransactionCopy = StoreStatement(
        """
        UPDATE transaction_copies SET is_latest = 0
        WHERE original_transaction_id = ? AND bundle_id = ? AND environment = ? AND transaction_id = ? AND known_from = ?
        """)

    static let sameRenewalInfoCopy = StoreStatement(
        """
        SELECT copy FROM renewal_info_copies WHERE original_transaction_id = ? AND environment = ? AND known_from = ?
        """, columns: [.text])

    static let insertRenewalInfoCopy = StoreStatement(
        """
        INSERT INTO renewal_info_copies (original_transaction_id, environment, known_from, copy) VALUES (?, ?, ?, ?)
        """)

    static let replaceRenewalInfoCopy = StoreStatement(
        """
        UPDATE renewal_info_copies SET copy = ? WHERE original_transaction_id = ? AND environment = ? AND known_from = ?
        """)

    /// Makes sure a key's row exists (the store locks it before folding on PostgreSQL).
    static let insertSubscription = StoreStatement(
        """
        INSERT INTO subscriptions (original_transaction_id, bundle_id, environment, updated_at) VALUES (?, ?, ?, ?)
        ON CONFLICT DO NOTHING
        """)

    /// Locks a key's row for the rest of the transaction (PostgreSQL; SQLite has one writer).
    static let lockSubscription = StoreStatement(
        """
        SELECT 1 FROM subscriptions WHERE original_transaction_id = ? AND bundle_id = ? AND environment = ? FOR UPDATE
        """, columns: [.integer])

    /// Records the key's copy signed last, when `known_from` is later than the one recorded.
    static let advanceSubscription = StoreStatement(
        """
        UPDATE subscriptions SET updated_at = ?, last_known_from = ?, last_known_transaction_id = ?
        WHERE original_transaction_id = ? AND bundle_id = ? AND environment = ?
            AND (last_known_from IS NULL OR last_known_from < ?)
        """)

    /// What a store does with one transaction copy, given the stored copy of the same transaction
    /// signed last (`latest`) and, when that one was signed at another instant, the stored copy
    /// signed at the same instant as `copy` (`same`, fetched only when this asks for it).
    enum TransactionStep {
        /// Fetch the stored copy signed at the same instant, then ask ``plan(_:latest:same:)``.
        case fetchSame
        /// Execute these writes.
        case write([StoreWrite])
    }

    /// Rule 1 as rows: a copy with a new identity is inserted (the latest of its transaction when
    /// signed after every other, and the one it follows demoted); a copy with a stored identity
    /// replaces the stored one only when ReceiptKit's ``LedgerCopy/supersedes(_:)`` says it wins.
    static func plan(
        _ copy: LedgerCopy, latest: LedgerCopy?, same: LedgerCopy?? = .none
    ) -> TransactionStep {
        guard let key = copy.key, let transactionId = copy.transactionId else { return .write([]) }
        let keyValues: [StoreValue] = [
            .text(key.originalTransactionId), .text(key.bundleId), .text(key.environment), .text(transactionId),
        ]
        let replace = StoreWrite(replaceTransactionCopy, [
            .integer(copy.isUpgraded ? 1 : 0), .integer(instant(copy.purchaseDate)), .integer(instant(copy.expiresDate)),
            .text(String(decoding: copy.jsonBytes(), as: UTF8.self)),
        ] + keyValues + [.integer(copy.knownFrom.millisecondsSince1970)])
        func insert(isLatest: Bool) -> StoreWrite {
            StoreWrite(insertTransactionCopy, keyValues + [
                .integer(copy.knownFrom.millisecondsSince1970), .integer(isLatest ? 1 : 0), .integer(copy.isUpgraded ? 1 : 0),
                .integer(instant(copy.purchaseDate)), .integer(instant(copy.expiresDate)),
                .text(String(decoding: copy.jsonBytes(), as: UTF8.self)),
            ])
        }
        guard let latest else { return .write([insert(isLatest: true)]) }
        if latest.isSameCopy(as: copy) {
            return .write(copy.supersedes(latest) ? [replace] : [])
        }
        if copy.knownFrom > latest.knownFrom {
            return .write([
                StoreWrite(demoteTransactionCopy, keyValues + [.integer(latest.knownFrom.millisecondsSince1970)]),
                insert(isLatest: true),
            ])
        }
        // Signed before the latest: an earlier copy arriving late, kept for `as_of`.
        guard case .some(let same) = same else { return .fetchSame }
        guard let same else { return .write([insert(isLatest: false)]) }
        return .write(copy.supersedes(same) ? [replace] : [])
    }

    /// The writes for a renewal info copy, given the stored copy of the same renewal info signed
    /// at the same instant, if any.
    static func plan(renewalInfo copy: LedgerCopy, same: LedgerCopy?) -> [StoreWrite] {
        let json = StoreValue.text(String(decoding: copy.jsonBytes(), as: UTF8.self))
        let identity: [StoreValue] = [
            .text(copy.originalTransactionId), .text(copy.environment), .integer(copy.knownFrom.millisecondsSince1970),
        ]
        guard let same else { return [StoreWrite(insertRenewalInfoCopy, identity + [json])] }
        return copy.supersedes(same) ? [StoreWrite(replaceRenewalInfoCopy, [json] + identity)] : []
    }

    /// The values that find a renewal info copy signed at the same instant as `copy`.
    static func sameRenewalInfoValues(_ copy: LedgerCopy) -> [StoreValue] {
        [.text(copy.originalTransactionId), .text(copy.environment), .integer(copy.knownFrom.millisecondsSince1970)]
    }

    /// The values that find the stored copies of `copy`'s transaction (``latestTransactionCopy``),
    /// and with its signed date the one signed then (``sameTransactionCopy``).
    static func transactionValues(_ copy: LedgerCopy, signedToo: Bool = false) -> [StoreValue] {
        guard let key = copy.key, let id = copy.transactionId else { return [] }
        let values: [StoreValue] = [.text(key.originalTransactionId), .text(key.bundleId), .text(key.environment), .text(id)]
        return signedToo ? values + [.integer(copy.knownFrom.millisecondsSince1970)] : values
    }

    /// The writes that keep a key's row: it exists, and it names the key's transaction copy
    /// signed last among `copies` when that is later than the one it names.
    static func subscriptionWrites(_ key: SubscriptionKey, copies: [LedgerCopy], receivedAt: Int64) -> [StoreWrite] {
        let keyValues: [StoreValue] = [.text(key.originalTransactionId), .text(key.bundleId), .text(key.environment)]
        var writes = [StoreWrite(insertSubscription, keyValues + [.integer(receivedAt)])]
        let last = copies.filter { $0.key == key }.max { ($0.knownFrom, $0.transactionId ?? "") < ($1.knownFrom, $1.transactionId ?? "") }
        if let last, let id = last.transactionId {
            let knownFrom = StoreValue.integer(last.knownFrom.millisecondsSince1970)
            writes.append(StoreWrite(advanceSubscription, [.integer(receivedAt), knownFrom, .text(id)] + keyValues + [knownFrom]))
        }
        return writes
    }

    /// A date column's value: milliseconds, or `Int64.min` for none, so that none sorts first.
    static func instant(_ timestamp: Timestamp?) -> Int64 {
        timestamp?.millisecondsSince1970 ?? Int64.min
    }

    // MARK: Repeats of a stored copy

    /// Whether an event of items Apple signed anew for an answer (``NewEvent/skipsRepeats``)
    /// only repeats what is stored — each of its copies says what the stored copy of the same
    /// transaction (or renewal info) signed last says, and is signed at or after it
    /// (``LedgerCopy/repeats(_:)``) — and if so, the writes that remember the later signing
    /// instead of storing the event. `nil` when a copy says something new (or nothing of it is
    /// stored): the event is then stored as any other.
    ///
    /// A run of copies that repeat one another keeps two rows: its first signing, which
    /// states as of earlier instants need, and its last, which carries the signed date a
    /// state now reads (`last_signed_date`, a renewal info's freshness) and which a copy
    /// arriving late with an earlier signed date cannot pass. The first repeat of a copy is
    /// inserted as a row of its own; each later one re-dates that row. So the copy signed last
    /// of every transaction and renewal info is in the rows with its own signed date, whatever
    /// order the copies arrive in, and a state now is what storing every copy would give.
    /// Costs one read of at most two rows per copy, by primary key.
    struct Repeating: RowSteps {
        let copies: [LedgerCopy]
        let receivedAt: Int64
        private var next = 0
        private var writes: [StoreWrite] = []

        init(_ event: NewEvent) {
            copies = event.copies
            receivedAt = event.receivedAt
        }

        mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<[StoreWrite]?> {
            if next > 0 {
                let copy = copies[next - 1]
                let stored = try rows.map { try LedgerRows.copy($0[1], kind: copy.kind, of: copy.originalTransactionId) }
                guard let planned = plan(repeating: copy, stored: stored, receivedAt: receivedAt) else { return .done(nil) }
                writes += planned
            }
            guard next < copies.count else { return .done(copies.isEmpty ? nil : writes) }
            let copy = copies[next]
            next += 1
            switch copy.kind {
            case .transaction: return .fetch(lastTwoTransactionCopies, transactionValues(copy))
            case .renewalInfo: return .fetch(lastTwoRenewalInfoCopies, renewalValues(copy))
            }
        }
    }

    /// The writes that remember `copy` as a repeat of the stored copies of its transaction (or
    /// renewal info) `stored`, the two signed last, latest first; `nil` when it is not one.
    static func plan(repeating copy: LedgerCopy, stored: [LedgerCopy], receivedAt: Int64) -> [StoreWrite]? {
        guard let latest = stored.first, copy.knownFrom >= latest.knownFrom, copy.repeats(latest) else { return nil }
        if copy.knownFrom == latest.knownFrom { return [] }
        let json = StoreValue.text(String(decoding: copy.jsonBytes(), as: UTF8.self))
        let signed = StoreValue.integer(copy.knownFrom.millisecondsSince1970)
        let latestSigned = StoreValue.integer(latest.knownFrom.millisecondsSince1970)
        let runContinues = stored.count > 1 && stored[1].repeats(latest)
        switch copy.kind {
        case .renewalInfo:
            if runContinues {
                return [StoreWrite(redateRenewalInfoCopy, [signed, json] + renewalValues(copy) + [latestSigned])]
            }
            return plan(renewalInfo: copy, same: nil)
        case .transaction:
            guard let key = copy.key else { return nil }
            let advance = subscriptionWrites(key, copies: [copy], receivedAt: receivedAt)
            if runContinues {
                return [StoreWrite(redateTransactionCopy, [signed, json] + transactionValues(copy) + [latestSigned])] + advance
            }
            guard case .write(let writes) = plan(copy, latest: latest) else { return nil }
            return writes + advance
        }
    }

    /// The stored copies of a transaction signed last, at most two, latest first.
    static let lastTwoTransactionCopies = StoreStatement(
        """
        SELECT known_from, copy FROM transaction_copies
        WHERE original_transaction_id = ? AND bundle_id = ? AND environment = ? AND transaction_id = ?
        ORDER BY known_from DESC LIMIT 2
        """, columns: [.integer, .text])

    /// The stored copies of a subscription's renewal info signed last, at most two, latest first.
    static let lastTwoRenewalInfoCopies = StoreStatement(
        """
        SELECT known_from, copy FROM renewal_info_copies WHERE original_transaction_id = ? AND environment = ?
        ORDER BY known_from DESC LIMIT 2
        """, columns: [.integer, .text])

    /// Moves the last signing of a run of repeats to a later one (its JSON carries the date).
    static let redateTransactionCopy = StoreStatement(
        """
        UPDATE transaction_copies SET known_from = ?, copy = ?
        WHERE original_transaction_id = ? AND bundle_id = ? AND environment = ? AND transaction_id = ? AND known_from = ?
        """)

    static let redateRenewalInfoCopy = StoreStatement(
        """
        UPDATE renewal_info_copies SET known_from = ?, copy = ?
        WHERE original_transaction_id = ? AND environment = ? AND known_from = ?
        """)

    /// The values that find the stored copies of `copy`'s renewal info.
    static func renewalValues(_ copy: LedgerCopy) -> [StoreValue] {
        [.text(copy.originalTransactionId), .text(copy.environment)]
    }

    // MARK: Reading a key

    /// The key's row: the copy signed last (its date and transaction id), the renewal info
    /// signed last, and the state the feed derived last (``FeedRows/derivedColumns``).
    static let head = StoreStatement(
        """
        SELECT s.last_known_from, s.last_known_transaction_id,
            (SELECT MAX(r.known_from) FROM renewal_info_copies r
             WHERE r.original_transaction_id = s.original_transaction_id AND r.environment = s.environment),
            \(FeedRows.derivedColumns.map { "s." + $0 }.joined(separator: ", "))
        FROM subscriptions s WHERE s.original_transaction_id = ? AND s.bundle_id = ? AND s.environment = ?
        """, columns: [.integer, .text, .integer] + FeedRows.derivedColumnTypes)

    /// The latest copies of the key's transactions, those not upgraded first, each group by
    /// `purchaseDate` then `expiresDate`, latest first (rule 2's order, its last tie-break left to
    /// ReceiptKit).
    static let candidates = StoreStatement(
        """
        SELECT copy, is_upgraded, purchase_date, expires_date, transaction_id, known_from FROM transaction_copies
        WHERE original_transaction_id = ? AND bundle_id = ? AND environment = ? AND is_latest = 1
        ORDER BY is_upgraded, purchase_date DESC, expires_date DESC LIMIT \(candidateLimit)
        """, columns: [.text, .integer, .integer, .integer, .text, .integer])

    static let transactionCopy = sameTransactionCopy

    /// ``candidates`` among the copies known at an instant: of each transaction, the copy signed
    /// last by then.
    static let candidatesKnownAt = StoreStatement(
        """
        SELECT c.copy, c.is_upgraded, c.purchase_date, c.expires_date, c.transaction_id, c.known_from FROM transaction_copies c
        WHERE c.original_transaction_id = ? AND c.bundle_id = ? AND c.environment = ? AND c.known_from = (
            SELECT MAX(d.known_from) FROM transaction_copies d
            WHERE d.original_transaction_id = c.original_transaction_id AND d.bundle_id = c.bundle_id
                AND d.environment = c.environment AND d.transaction_id = c.transaction_id AND d.known_from <= ?)
        ORDER BY c.is_upgraded, c.purchase_date DESC, c.expires_date DESC LIMIT \(candidateLimit)
        """, columns: [.text, .integer, .integer, .integer, .text, .integer])

    /// The key's transaction copy signed last by an instant.
    static let lastTransactionCopyKnownAt = StoreStatement(
        """
        SELECT known_from, transaction_id, copy FROM transaction_copies
        WHERE original_transaction_id = ? AND bundle_id = ? AND environment = ? AND known_from <= ?
        ORDER BY known_from DESC, transaction_id DESC LIMIT 1
        """, columns: [.integer, .text, .text])

    /// The key's renewal info signed last by an instant.
    static let lastRenewalInfoKnownAt = StoreStatement(
        """
        SELECT copy FROM renewal_info_copies WHERE original_transaction_id = ? AND environment = ? AND known_from <= ?
        ORDER BY known_from DESC LIMIT 1
        """, columns: [.text])

    static let latestRenewalInfo = StoreStatement(
        """
        SELECT copy FROM renewal_info_copies WHERE original_transaction_id = ? AND environment = ? AND known_from = ?
        """, columns: [.text])

    /// Every copy of the key's transactions known at an instant.
    static let transactionCopiesKnownAt = StoreStatement(
        """
        SELECT copy FROM transaction_copies
        WHERE original_transaction_id = ? AND bundle_id = ? AND environment = ? AND known_from <= ?
        """, columns: [.text])

    /// Every copy of the key's renewal info known at an instant.
    static let renewalInfoCopiesKnownAt = StoreStatement(
        """
        SELECT copy FROM renewal_info_copies WHERE original_transaction_id = ? AND environment = ? AND known_from <= ?
        """, columns: [.text])

    static func keyValues(_ key: SubscriptionKey) -> [StoreValue] {
        [.text(key.originalTransactionId), .text(key.bundleId), .text(key.environment)]
    }

    static func renewalValues(_ key: SubscriptionKey) -> [StoreValue] {
        [.text(key.originalTransactionId), .text(key.environment)]
    }

    /// One key's state at an instant, read from its rows: a store runs each query this asks for
    /// (in one read transaction, so that the rows agree) and hands the rows back, until it has the
    /// state.
    ///
    /// When every copy of the key is known at the instant — a state asked for now, the case
    /// that matters at scale — the state is decided by a few rows whatever the key's history:
    /// the top-ranked latest transaction copies (rule 2 picks among them), the copy signed last
    /// (the state's `last_signed_date`) and the renewal info signed last (rule 3). At an instant
    /// before the key's last copy (an `as_of`), the same few among the copies known then: each
    /// transaction's copy signed last by then, ranked, the copy signed last by then, and the
    /// renewal info signed last by then. Only when the top two candidates tie is every copy known
    /// at the instant read. Either way ReceiptKit's ``EntitlementLedger`` evaluates the copies.
    struct Evaluation: RowSteps {
        let key: SubscriptionKey
        let instant: Timestamp
        /// The copies the running transaction stored: read from here, not decoded from their rows.
        let written: Written
        private var phase = Phase.start
        private var copies: [LedgerCopy] = []
        /// The key's row, once read: what the feed compares the evaluated state with.
        private(set) var head = Head()

        private enum Phase {
            case start, head, candidates, lastTransaction, lastRenewalInfo, allTransactions, allRenewalInfos
            case candidatesAt, lastTransactionAt
        }

        init(key: SubscriptionKey, at instant: Timestamp, written: Written = Written()) {
            self.key = key
            self.instant = instant
            self.written = written
        }

        mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<SubscriptionState?> {
            switch phase {
            case .start:
                phase = .head
                return .fetch(LedgerRows.head, keyValues(key))
            case .head:
                guard let row = rows.first else { return .done(nil) }
                if let knownFrom = row[0].integer, let id = row[1].text { head.lastTransaction = (knownFrom, id) }
                head.lastRenewalInfo = row[2].integer
                head.derived = FeedRows.derived(row[3...])
                guard let last = head.lastKnownFrom, last <= instant.millisecondsSince1970 else {
                    phase = .candidatesAt
                    return .fetch(LedgerRows.candidatesKnownAt, keyValues(key) + [.integer(instant.millisecondsSince1970)])
                }
                phase = .candidates
                return .fetch(LedgerRows.candidates, keyValues(key))
            case .candidatesAt:
                let candidates = try self.candidates(rows)
                guard candidatesSuffice(candidates) else { return allCopies() }
                copies = candidates.map(\.copy)
                phase = .lastTransactionAt
                return .fetch(LedgerRows.lastTransactionCopyKnownAt, keyValues(key) + [.integer(instant.millisecondsSince1970)])
            case .lastTransactionAt:
                if let row = rows.first, let knownFrom = row[0].integer, let id = row[1].text, !hasCopy(id, knownFrom: knownFrom) {
                    copies.append(try copy(row[2], kind: .transaction, of: key.originalTransactionId))
                }
                phase = .lastRenewalInfo
                return .fetch(LedgerRows.lastRenewalInfoKnownAt, renewalValues(key) + [.integer(instant.millisecondsSince1970)])
            case .candidates:
                let candidates = try self.candidates(rows)
                guard candidatesSuffice(candidates) else { return allCopies() }
                copies = candidates.map(\.copy)
                if let last = head.lastTransaction, !hasCopy(last.transactionId, knownFrom: last.knownFrom) {
                    if let stored = written.transaction(last.transactionId, knownFrom: last.knownFrom, of: key) {
                        copies.append(stored)
                        return lastRenewalInfo()
                    }
                    phase = .lastTransaction
                    return .fetch(LedgerRows.transactionCopy, keyValues(key) + [.text(last.transactionId), .integer(last.knownFrom)])
                }
                return lastRenewalInfo()
            case .lastTransaction:
                copies += try rows.map { try copy($0[0], kind: .transaction, of: key.originalTransactionId) }
                return lastRenewalInfo()
            case .lastRenewalInfo, .allRenewalInfos:
                copies += try rows.map { try copy($0[0], kind: .renewalInfo, of: key.originalTransactionId) }
                return .done(evaluate())
            case .allTransactions:
                copies = try rows.map { try copy($0[0], kind: .transaction, of: key.originalTransactionId) }
                phase = .allRenewalInfos
                return .fetch(LedgerRows.renewalInfoCopiesKnownAt, renewalValues(key) + [.integer(instant.millisecondsSince1970)])
            }
        }

        /// Whether the copies read so far hold the copy of this transaction signed at `knownFrom`.
        private func hasCopy(_ transactionId: String, knownFrom: Int64) -> Bool {
            copies.contains { $0.transactionId == transactionId && $0.knownFrom.millisecondsSince1970 == knownFrom }
        }

        /// Rows of ``candidates`` or ``candidatesKnownAt``; a copy this transaction stored is taken
        /// from ``written``.
        private func candidates(_ rows: [[StoreValue]]) throws -> [Candidate] {
            try rows.map { row in
                let stored = row[4].text.flatMap { id in row[5].integer.flatMap { written.transaction(id, knownFrom: $0, of: key) } }
                return Candidate(
                    copy: try stored ?? copy(row[0], kind: .transaction, of: key.originalTransactionId),
                    rank: (row[1].integer ?? 0, row[2].integer ?? .min, row[3].integer ?? .min))
            }
        }

        private mutating func lastRenewalInfo() -> RowStep<SubscriptionState?> {
            guard let knownFrom = head.lastRenewalInfo else { return .done(evaluate()) }
            if let stored = written.renewalInfo(of: key, knownFrom: knownFrom) {
                copies.append(stored)
                return .done(evaluate())
            }
            phase = .lastRenewalInfo
            return .fetch(LedgerRows.latestRenewalInfo, renewalValues(key) + [.integer(knownFrom)])
        }

        private mutating func allCopies() -> RowStep<SubscriptionState?> {
            phase = .allTransactions
            return .fetch(LedgerRows.transactionCopiesKnownAt, keyValues(key) + [.integer(instant.millisecondsSince1970)])
        }

        private func evaluate() -> SubscriptionState? {
            var ledger = EntitlementLedger()
            for copy in copies { ledger.insert(copy) }
            return ledger.state(for: key, at: instant)
        }
    }

    /// A key's row as ``head`` reads it.
    struct Head {
        /// The date and transaction id of the key's transaction copy signed last.
        var lastTransaction: (knownFrom: Int64, transactionId: String)?
        /// The signed date of the key's renewal info signed last.
        var lastRenewalInfo: Int64?
        /// What the feed derived last for the key, and when to look again.
        var derived = FeedRows.Derived()

        /// When the last copy of the key was signed.
        var lastKnownFrom: Int64? {
            [lastTransaction?.knownFrom, lastRenewalInfo].compactMap { $0 }.max()
        }
    }

    /// The copies a transaction stored, by the identity of their rows: what a state evaluated in
    /// the same transaction reads from memory instead of decoding its rows' JSON again. Only a
    /// copy whose row holds it — inserted, or replacing the stored one — is here.
    struct Written {
        private var transactions: [TransactionRow: LedgerCopy] = [:]
        private var renewalInfos: [RenewalInfoRow: LedgerCopy] = [:]

        private struct TransactionRow: Hashable {
            var key: SubscriptionKey
            var transactionId: String
            var knownFrom: Int64
        }

        private struct RenewalInfoRow: Hashable {
            var originalTransactionId: String
            var environment: String
            var knownFrom: Int64
        }

        /// Notes `copy` when the writes that folded it in (``Folding``) put it in its row.
        mutating func add(_ copy: LedgerCopy, ifStoredBy writes: [StoreWrite]) {
            let knownFrom = copy.knownFrom.millisecondsSince1970
            switch copy.kind {
            case .transaction:
                guard let key = copy.key, let id = copy.transactionId,
                      writes.contains(where: { $0.statement.sql == insertTransactionCopy.sql || $0.statement.sql == replaceTransactionCopy.sql })
                else { return }
                transactions[TransactionRow(key: key, transactionId: id, knownFrom: knownFrom)] = copy
            case .renewalInfo:
                guard writes.contains(where: { $0.statement.sql == insertRenewalInfoCopy.sql || $0.statement.sql == replaceRenewalInfoCopy.sql })
                else { return }
                renewalInfos[RenewalInfoRow(
                    originalTransactionId: copy.originalTransactionId, environment: copy.environment, knownFrom: knownFrom)] = copy
            }
        }

        fileprivate func transaction(_ id: String, knownFrom: Int64, of key: SubscriptionKey) -> LedgerCopy? {
            transactions.isEmpty ? nil : transactions[TransactionRow(key: key, transactionId: id, knownFrom: knownFrom)]
        }

        fileprivate func renewalInfo(of key: SubscriptionKey, knownFrom: Int64) -> LedgerCopy? {
            renewalInfos.isEmpty
                ? nil
                : renewalInfos[RenewalInfoRow(
                    originalTransactionId: key.originalTransactionId, environment: key.environment, knownFrom: knownFrom)]
        }
    }

    /// A row of ``candidates``.
    struct Candidate {
        var copy: LedgerCopy
        var rank: (isUpgraded: Int64, purchase: Int64, expires: Int64)
    }

    /// Whether the top-ranked candidates read decide the state: fewer than the limit were read
    /// (there are no more), or the last one read ranks below the first (so does every one not
    /// read).
    static func candidatesSuffice(_ candidates: [Candidate]) -> Bool {
        guard candidates.count == candidateLimit, let first = candidates.first, let last = candidates.last else { return true }
        return first.rank != last.rank
    }

    /// Reads a stored copy's JSON.
    static func copy(_ json: String?, kind: LedgerCopy.Kind, of originalTransactionId: String) throws -> LedgerCopy {
        do {
            return try LedgerCopy(jsonBytes: Array((json ?? "").utf8), kind: kind)
        } catch {
            throw StoreError("a stored copy of \(originalTransactionId) does not decode: \(error)")
        }
    }

    /// A copy's JSON read from a row.
    static func copy(_ value: StoreValue?, kind: LedgerCopy.Kind, of originalTransactionId: String) throws -> LedgerCopy {
        try copy(value?.text, kind: kind, of: originalTransactionId)
    }

    // MARK: Events and links

    /// Which events touched which key.
    static let insertEventKey = StoreStatement(
        """
        INSERT INTO event_subscriptions (original_transaction_id, bundle_id, environment, event_id) VALUES (?, ?, ?, ?)
        """)

    static let insertLink = StoreStatement(
        """
        INSERT INTO customer_subscriptions (customer_id, original_transaction_id, bundle_id, environment, linked_at)
        VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
        """)

    /// The writes that record an event's keys (each gets its row, and the event is listed
    /// under it) — for a new event only.
    static func keyWrites(_ event: NewEvent, eventId: Int64) -> [StoreWrite] {
        event.orderedKeys.flatMap { key in
            [StoreWrite(insertEventKey, keyValues(key) + [.integer(eventId)])]
                + subscriptionWrites(key, copies: event.copies, receivedAt: event.receivedAt)
        }
    }

    /// The writes that link an event's customers, new event or replay.
    static func linkWrites(_ event: NewEvent) -> [StoreWrite] {
        event.orderedLinks.map { link in
            StoreWrite(insertLink, [.text(link.customerId)] + keyValues(link.key) + [.integer(event.receivedAt)])
        }
    }

    /// The events listed under a key.
    static let eventsOfKey = StoreStatement(
        """
        SELECT e.id, e.kind, e.record, e.received_at
        FROM event_subscriptions k JOIN events e ON e.id = k.event_id
        WHERE k.original_transaction_id = ? AND k.bundle_id = ? AND k.environment = ?
        """, columns: [.integer, .text, .text, .integer])

    /// The events of the rows of ``eventsOfKey`` (one array per key), each once, in the order
    /// they were stored.
    static func events(_ rowsPerKey: [[[StoreValue]]]) -> [StoredEvent] {
        var events: [Int64: StoredEvent] = [:]
        for row in rowsPerKey.joined() {
            guard let id = row[0].integer else { continue }
            events[id] = StoredEvent(kind: row[1].text ?? "", record: row[2].text ?? "", receivedAt: row[3].integer ?? 0)
        }
        return events.sorted { $0.key < $1.key }.map(\.value)
    }

    static let keysOfCustomer = StoreStatement(
        """
        SELECT original_transaction_id, bundle_id, environment FROM customer_subscriptions WHERE customer_id = ?
        """, columns: [.text, .text, .text])

    static let keysOfOriginalTransactionId = StoreStatement(
        """
        SELECT original_transaction_id, bundle_id, environment FROM subscriptions WHERE original_transaction_id = ?
        """, columns: [.text, .text, .text])

    /// The keys of rows of ``keysOfCustomer`` or ``keysOfOriginalTransactionId``, in
    /// ``SubscriptionKey``'s order (the byte order of UTF-8, whatever the database's collation).
    static func keys(_ rows: [[StoreValue]]) -> [SubscriptionKey] {
        rows.map { row in
            SubscriptionKey(bundleId: row[1].text ?? "", environment: row[2].text ?? "", originalTransactionId: row[0].text ?? "")
        }.sorted()
    }
}

/// What a store does next for a ``RowSteps``.
enum RowStep<Result> {
    /// Run this query and hand its rows to the next call.
    case fetch(StoreStatement, [StoreValue])
    /// Run these writes in order, then make the next call with no rows (a later step reads what
    /// they wrote).
    case write([StoreWrite])
    /// Finished.
    case done(Result)
}

/// A piece of store logic decided once for both databases, as a sequence of reads (and writes
/// that later reads depend on): each store runs the statements it asks for (``SQLiteStore``
/// synchronously in GRDB's transaction, ``PostgresStore`` on its connection) until it is done.
protocol RowSteps {
    associatedtype Result
    /// The next step, given the rows of the query the last step asked for (none at the first
    /// call).
    mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<Result>
}
