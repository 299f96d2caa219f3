import ReceiptKit

/// A key's ledger kept as rows (from migration v5): every signed copy of every transaction in
/// `transaction_copies`, every copy of renewal info in `renewal_info_copies`, each as ReceiptKit's
/// ``LedgerCopy`` JSON with the few columns a lookup needs beside it; `subscriptions` holds one row
/// per key, naming its transaction copy signed last; `customer_subscriptions` links customers to
/// keys. The steps that fold a copy in (``Folding``), remember a repeat (``Repeating``) and read a
/// state (``Evaluation``) run these statements.
enum LedgerStatements {
    /// How many top-ranked candidates are read for a state (``candidates``, ``candidatesKnownAt``):
    /// rule 2 takes the first, unless the second ties with it, and then more might tie — the
    /// state is then evaluated from every copy known at its instant instead.
    static let candidateLimit = 2

    /// The bindings that find a key's rows: `:original_transaction_id`, `:bundle_id`,
    /// `:environment`.
    static func key(_ key: SubscriptionKey) -> Bindings {
        ["original_transaction_id": .text(key.originalTransactionId), "bundle_id": .text(key.bundleId), "environment": .text(key.environment)]
    }

    /// The bindings that find a key's renewal info rows (renewal infos carry no bundle id):
    /// `:original_transaction_id`, `:environment`.
    static func renewalKey(_ key: SubscriptionKey) -> Bindings {
        ["original_transaction_id": .text(key.originalTransactionId), "environment": .text(key.environment)]
    }

    /// The bindings that find a renewal info copy's rows (as ``renewalKey(_:)``).
    static func renewalKey(of copy: LedgerCopy) -> Bindings {
        ["original_transaction_id": .text(copy.originalTransactionId), "environment": .text(copy.environment)]
    }

    /// The bindings that find the stored copies of a copy's transaction (the key and
    /// `:transaction_id`), and with its signed date (`:known_from`) the one signed then; `nil` for
    /// a copy without a key or transaction id.
    static func transaction(of copy: LedgerCopy, signedToo: Bool = false) -> Bindings? {
        guard let key = copy.key, let id = copy.transactionId else { return nil }
        let bindings = self.key(key) + ["transaction_id": .text(id)]
        return signedToo ? bindings + ["known_from": .integer(copy.knownFrom.millisecondsSince1970)] : bindings
    }

    /// A date column's value: milliseconds, or `Int64.min` for none, so that none sorts first.
    static func instant(_ timestamp: Timestamp?) -> Int64 {
        timestamp?.millisecondsSince1970 ?? Int64.min
    }

    /// A copy's JSON, as its row keeps it: deflated (``StoredJSON``).
    static func json(_ copy: LedgerCopy) -> StoreValue {
        StoredJSON(copy.jsonBytes()).storeValue
    }

    /// Reads a stored copy's JSON.
    ///
    /// - Throws: ``StoreError`` when it does not decode (the store is damaged).
    static func copy(_ json: StoredJSON, kind: LedgerCopy.Kind, of originalTransactionId: String) throws -> LedgerCopy {
        do {
            return try LedgerCopy(jsonBytes: json.bytes, kind: kind)
        } catch {
            throw StoreError.damaged("a stored copy of \(originalTransactionId) does not decode: \(error)")
        }
    }

    // MARK: Transaction copies

    /// The stored copy of a transaction signed last: its signed date and JSON.
    static let latestTransactionCopy = Query(
        """
        SELECT known_from, copy FROM transaction_copies
        WHERE original_transaction_id = :original_transaction_id AND bundle_id = :bundle_id AND environment = :environment
            AND transaction_id = :transaction_id
        ORDER BY known_from DESC LIMIT 1
        """
    ) { (knownFrom: Int64, copy: StoredJSON) in (knownFrom: knownFrom, json: copy) }

    /// The stored copies of a transaction signed last, at most two, latest first.
    static let lastTwoTransactionCopies = Query(
        """
        SELECT known_from, copy FROM transaction_copies
        WHERE original_transaction_id = :original_transaction_id AND bundle_id = :bundle_id AND environment = :environment
            AND transaction_id = :transaction_id
        ORDER BY known_from DESC LIMIT 2
        """
    ) { (knownFrom: Int64, copy: StoredJSON) in (knownFrom: knownFrom, json: copy) }

    /// The stored copy of a transaction signed at an instant.
    static let transactionCopy = Query(
        """
        SELECT copy FROM transaction_copies
        WHERE original_transaction_id = :original_transaction_id AND bundle_id = :bundle_id AND environment = :environment
            AND transaction_id = :transaction_id AND known_from = :known_from
        """
    ) { (copy: StoredJSON) in copy }

    static let insertTransactionCopy = StoreStatement(
        """
        INSERT INTO transaction_copies
            (original_transaction_id, bundle_id, environment, transaction_id, known_from, is_latest, is_upgraded,
             purchase_date, expires_date, copy)
        VALUES (:original_transaction_id, :bundle_id, :environment, :transaction_id, :known_from, :is_latest, :is_upgraded,
            :purchase_date, :expires_date, :copy)
        """)

    static let replaceTransactionCopy = StoreStatement(
        """
        UPDATE transaction_copies SET is_upgraded = :is_upgraded, purchase_date = :purchase_date, expires_date = :expires_date,
            copy = :copy
        WHERE original_transaction_id = :original_transaction_id AND bundle_id = :bundle_id AND environment = :environment
            AND transaction_id = :transaction_id AND known_from = :known_from
        """)

    static let demoteTransactionCopy = StoreStatement(
        """
        UPDATE transaction_copies SET is_latest = 0
        WHERE original_transaction_id = :original_transaction_id AND bundle_id = :bundle_id AND environment = :environment
            AND transaction_id = :transaction_id AND known_from = :known_from
        """)

    /// Moves the last signing of a run of repeats to a later one (its JSON carries the date).
    static let redateTransactionCopy = StoreStatement(
        """
        UPDATE transaction_copies SET known_from = :new_known_from, copy = :copy
        WHERE original_transaction_id = :original_transaction_id AND bundle_id = :bundle_id AND environment = :environment
            AND transaction_id = :transaction_id AND known_from = :known_from
        """)

    // MARK: Renewal info copies

    /// The stored copy of a renewal info signed at an instant.
    static let renewalInfoCopy = Query(
        """
        SELECT copy FROM renewal_info_copies WHERE original_transaction_id = :original_transaction_id
            AND environment = :environment AND known_from = :known_from
        """
    ) { (copy: StoredJSON) in copy }

    /// The stored copies of a subscription's renewal info signed last, at most two, latest first.
    static let lastTwoRenewalInfoCopies = Query(
        """
        SELECT known_from, copy FROM renewal_info_copies WHERE original_transaction_id = :original_transaction_id
            AND environment = :environment
        ORDER BY known_from DESC LIMIT 2
        """
    ) { (knownFrom: Int64, copy: StoredJSON) in (knownFrom: knownFrom, json: copy) }

    static let insertRenewalInfoCopy = StoreStatement(
        """
        INSERT INTO renewal_info_copies (original_transaction_id, environment, known_from, copy)
            VALUES (:original_transaction_id, :environment, :known_from, :copy)
        """)

    static let replaceRenewalInfoCopy = StoreStatement(
        """
        UPDATE renewal_info_copies SET copy = :copy WHERE original_transaction_id = :original_transaction_id
            AND environment = :environment AND known_from = :known_from
        """)

    static let redateRenewalInfoCopy = StoreStatement(
        """
        UPDATE renewal_info_copies SET known_from = :new_known_from, copy = :copy
        WHERE original_transaction_id = :original_transaction_id AND environment = :environment AND known_from = :known_from
        """)

    // MARK: Keys

    /// Makes sure a key's row exists, and locks it for the rest of the transaction on PostgreSQL,
    /// changing nothing in a row that exists: `ON CONFLICT DO UPDATE` locks the row it meets
    /// whether or not its `WHERE` holds (PostgreSQL's INSERT reference), and this one never holds.
    static let ensureSubscription = StoreStatement(
        """
        INSERT INTO subscriptions (original_transaction_id, bundle_id, environment, updated_at)
        VALUES (:original_transaction_id, :bundle_id, :environment, :updated_at)
        ON CONFLICT (original_transaction_id, bundle_id, environment) DO UPDATE SET updated_at = subscriptions.updated_at
        WHERE 1 = 0
        """)

    /// Locks a key's row for the rest of the transaction (PostgreSQL; SQLite has one writer, and
    /// its steps run this only where ``SQLDialect/locksRows``).
    static let lockSubscription = Query { dialect in
        """
        SELECT 1 FROM subscriptions WHERE original_transaction_id = :original_transaction_id AND bundle_id = :bundle_id
            AND environment = :environment\(dialect.forUpdate)
        """
    } row: { (_: Int64) in () }

    /// Makes sure a key's row exists and records its copy signed last, when `known_from` is later
    /// than the one recorded; locks the row on PostgreSQL, updated or not, as
    /// ``ensureSubscription`` does.
    static let advanceSubscription = StoreStatement(
        """
        INSERT INTO subscriptions (original_transaction_id, bundle_id, environment, updated_at, last_known_from,
            last_known_transaction_id)
        VALUES (:original_transaction_id, :bundle_id, :environment, :updated_at, :last_known_from, :last_known_transaction_id)
        ON CONFLICT (original_transaction_id, bundle_id, environment) DO UPDATE SET
            updated_at = excluded.updated_at, last_known_from = excluded.last_known_from,
            last_known_transaction_id = excluded.last_known_transaction_id
        WHERE subscriptions.last_known_from IS NULL OR subscriptions.last_known_from < excluded.last_known_from
        """)

    /// The write that keeps a key's row, one statement: it exists, it names the key's transaction
    /// copy signed last among `copies` when that is later than the one it names, and (on
    /// PostgreSQL) it is locked until the commit — so that recording, writing its keys in key
    /// order, takes their locks in key order and needs no `SELECT … FOR UPDATE` of its own.
    static func subscriptionWrites(_ key: SubscriptionKey, copies: [LedgerCopy], receivedAt: Int64) -> [StoreWrite] {
        let keyBindings = self.key(key)
        let last = copies.filter { $0.key == key }.max { ($0.knownFrom, $0.transactionId ?? "") < ($1.knownFrom, $1.transactionId ?? "") }
        guard let last, let id = last.transactionId else {
            return [StoreWrite(ensureSubscription, keyBindings + ["updated_at": .integer(receivedAt)])]
        }
        return [
            StoreWrite(advanceSubscription, keyBindings + [
                "updated_at": .integer(receivedAt), "last_known_from": .integer(last.knownFrom.millisecondsSince1970),
                "last_known_transaction_id": .text(id),
            ])
        ]
    }

    /// A key of a row whose first three columns are its original transaction id, bundle id and
    /// environment.
    static func subscriptionKey(_ originalTransactionId: String, _ bundleId: String, _ environment: String) -> SubscriptionKey {
        SubscriptionKey(bundleId: bundleId, environment: environment, originalTransactionId: originalTransactionId)
    }

    /// The keys linked to a customer.
    static let keysOfCustomer = Query(
        """
        SELECT original_transaction_id, bundle_id, environment FROM customer_subscriptions WHERE customer_id = :customer_id
        """, row: subscriptionKey)

    /// The keys of an original transaction id.
    static let keysOfOriginalTransactionId = Query(
        """
        SELECT original_transaction_id, bundle_id, environment FROM subscriptions
            WHERE original_transaction_id = :original_transaction_id
        """, row: subscriptionKey)

    static let insertLink = StoreStatement(
        """
        INSERT INTO customer_subscriptions (customer_id, original_transaction_id, bundle_id, environment, linked_at)
        VALUES (:customer_id, :original_transaction_id, :bundle_id, :environment, :linked_at) ON CONFLICT DO NOTHING
        """)

    /// The customers linked to a key.
    static let customersOfKey = Query(
        """
        SELECT customer_id FROM customer_subscriptions WHERE original_transaction_id = :original_transaction_id
            AND bundle_id = :bundle_id AND environment = :environment
        """
    ) { (customerId: String) in customerId }

    // MARK: Reading a key

    /// A key's state now, in one statement (one snapshot, one round trip): its row (``KeyHead``),
    /// the top-ranked latest copies of its transactions (``candidateLimit`` of them: rule 2 picks
    /// among them, its last tie-break, the transaction id, being ReceiptKit's), the transaction
    /// copy signed last and the renewal info signed last. Bound: the key (``key(_:)``), whose
    /// original transaction id and environment find its renewal infos too.
    static let current = Query(
        """
        SELECT CAST(0 AS BIGINT), s.last_known_from, s.last_known_transaction_id, NULL,
            (SELECT MAX(r.known_from) FROM renewal_info_copies r
             WHERE r.original_transaction_id = s.original_transaction_id AND r.environment = s.environment),
            \(FeedStatements.derivedColumns.map { "s." + $0 }.joined(separator: ", "))
        FROM subscriptions s WHERE s.original_transaction_id = :original_transaction_id AND s.bundle_id = :bundle_id
            AND s.environment = :environment
        UNION ALL
        SELECT CAST(1 AS BIGINT), c.known_from, c.transaction_id, c.copy, \(nulls)
        FROM (
            SELECT known_from, transaction_id, copy FROM transaction_copies
            WHERE original_transaction_id = :original_transaction_id AND bundle_id = :bundle_id
                AND environment = :environment AND is_latest = 1
            ORDER BY \(rankOrder) LIMIT \(candidateLimit)
        ) c
        UNION ALL
        SELECT CAST(2 AS BIGINT), t.known_from, t.transaction_id, t.copy, \(nulls)
        FROM subscriptions s JOIN transaction_copies t
            ON t.original_transaction_id = s.original_transaction_id AND t.bundle_id = s.bundle_id
            AND t.environment = s.environment AND t.transaction_id = s.last_known_transaction_id
            AND t.known_from = s.last_known_from
        WHERE s.original_transaction_id = :original_transaction_id AND s.bundle_id = :bundle_id AND s.environment = :environment
        UNION ALL
        SELECT CAST(3 AS BIGINT), r.known_from, NULL, r.copy, \(nulls)
        FROM renewal_info_copies r
        WHERE r.original_transaction_id = :original_transaction_id AND r.environment = :environment AND r.known_from = (
            SELECT MAX(m.known_from) FROM renewal_info_copies m
            WHERE m.original_transaction_id = r.original_transaction_id AND m.environment = r.environment)
        """
    ) {
        (part: Int64, knownFrom: Int64?, transactionId: String?, copy: StoredJSON?, lastRenewalInfo: Int64?, status: String?,
         productId: String?, derivedTransactionId: String?, expiresAt: Int64?, willRenew: Bool?, isSubscription: Bool?,
         isFamilyShared: Bool?, nextChangeAt: Int64?, _: Int64?) throws -> CurrentRow in
        switch (part, knownFrom, transactionId, copy) {
        case (0, _, _, _):
            return .head(KeyHead(
                lastTransaction: knownFrom.flatMap { knownFrom in transactionId.map { (knownFrom, $0) } },
                lastRenewalInfo: lastRenewalInfo,
                derived: FeedStatements.derived(
                    status: status, productId: productId, transactionId: derivedTransactionId, expiresAt: expiresAt,
                    willRenew: willRenew, isSubscription: isSubscription, isFamilyShared: isFamilyShared,
                    nextChangeAt: nextChangeAt)))
        case (1, let knownFrom?, let transactionId?, let copy?):
            return .candidate(CandidateRow(json: copy, transactionId: transactionId, knownFrom: knownFrom))
        case (2, _, _, let copy?):
            return .lastTransaction(copy)
        case (3, _, _, let copy?):
            return .lastRenewalInfo(copy)
        default:
            throw StoreError.damaged("a key's current rows hold part \(part) without the columns it has")
        }
    }

    /// The columns of ``current`` a copy's row leaves empty: those of the key's row.
    private static let nulls = Array(repeating: "NULL", count: 1 + FeedStatements.derivedColumns.count).joined(separator: ", ")

    /// A row of ``current``.
    enum CurrentRow: Sendable {
        /// The key's row.
        case head(KeyHead)
        /// A top-ranked latest transaction copy.
        case candidate(CandidateRow)
        /// The JSON of the transaction copy signed last.
        case lastTransaction(StoredJSON)
        /// The JSON of the renewal info signed last.
        case lastRenewalInfo(StoredJSON)
    }

    /// A candidate of ``current`` or ``candidatesKnownAt``: a transaction's latest copy.
    struct CandidateRow: Sendable {
        var json: StoredJSON
        var transactionId: String
        var knownFrom: Int64
    }

    /// The columns that keep a transaction copy's ``LedgerCopy/Rank`` (rule 2's order, ReceiptKit's),
    /// and the `ORDER BY` that sorts by it, highest first: not upgraded (0) before upgraded, then
    /// the later purchase, then the later expiry, an absent date as `Int64.min` (lowest, as the
    /// rank has it). The store only sorts by the rank; ReceiptKit defines it, and evaluates the
    /// candidates read (``Evaluation``).
    static let rankOrder = "is_upgraded, purchase_date DESC, expires_date DESC"

    /// A copy's rank columns: `:is_upgraded`, `:purchase_date`, `:expires_date`.
    static func rankBindings(_ copy: LedgerCopy) -> Bindings {
        let rank = copy.rank
        return [
            "is_upgraded": .flag(rank?.isUpgraded ?? false), "purchase_date": .integer(instant(rank?.purchaseDate)),
            "expires_date": .integer(instant(rank?.expiresDate)),
        ]
    }

    /// ``current``'s candidates among the copies known at an instant: of each transaction, the copy signed
    /// last by then.
    static let candidatesKnownAt = Query(
        """
        SELECT c.copy, c.transaction_id, c.known_from FROM transaction_copies c
        WHERE c.original_transaction_id = :original_transaction_id AND c.bundle_id = :bundle_id
            AND c.environment = :environment AND c.known_from = (
            SELECT MAX(d.known_from) FROM transaction_copies d
            WHERE d.original_transaction_id = c.original_transaction_id AND d.bundle_id = c.bundle_id
                AND d.environment = c.environment AND d.transaction_id = c.transaction_id AND d.known_from <= :at)
        ORDER BY \(rankOrder) LIMIT \(candidateLimit)
        """, row: candidateRow)

    @Sendable private static func candidateRow(json: StoredJSON, transactionId: String, knownFrom: Int64) -> CandidateRow {
        CandidateRow(json: json, transactionId: transactionId, knownFrom: knownFrom)
    }

    /// The key's transaction copy signed last by an instant.
    static let lastTransactionCopyKnownAt = Query(
        """
        SELECT known_from, transaction_id, copy FROM transaction_copies
        WHERE original_transaction_id = :original_transaction_id AND bundle_id = :bundle_id AND environment = :environment
            AND known_from <= :at
        ORDER BY known_from DESC, transaction_id DESC LIMIT 1
        """
    ) { (knownFrom: Int64, transactionId: String, copy: StoredJSON) in (knownFrom: knownFrom, transactionId: transactionId, json: copy) }

    /// The key's renewal info signed last by an instant.
    static let lastRenewalInfoKnownAt = Query(
        """
        SELECT copy FROM renewal_info_copies WHERE original_transaction_id = :original_transaction_id
            AND environment = :environment AND known_from <= :at
        ORDER BY known_from DESC LIMIT 1
        """
    ) { (copy: StoredJSON) in copy }

    /// Every copy of the key's transactions known at an instant.
    static let transactionCopiesKnownAt = Query(
        """
        SELECT copy FROM transaction_copies
        WHERE original_transaction_id = :original_transaction_id AND bundle_id = :bundle_id AND environment = :environment
            AND known_from <= :at
        """
    ) { (copy: StoredJSON) in copy }

    /// Every copy of the key's renewal info known at an instant.
    static let renewalInfoCopiesKnownAt = Query(
        """
        SELECT copy FROM renewal_info_copies WHERE original_transaction_id = :original_transaction_id
            AND environment = :environment AND known_from <= :at
        """
    ) { (copy: StoredJSON) in copy }
}

/// A key's row as ``LedgerStatements/current`` reads it.
struct KeyHead: Sendable {
    /// The date and transaction id of the key's transaction copy signed last.
    var lastTransaction: (knownFrom: Int64, transactionId: String)?
    /// The signed date of the key's renewal info signed last.
    var lastRenewalInfo: Int64?
    /// What the feed derived last for the key, and when to look again.
    var derived = DerivedRecord()

    /// When the last copy of the key was signed.
    var lastKnownFrom: Int64? {
        [lastTransaction?.knownFrom, lastRenewalInfo].compactMap { $0 }.max()
    }
}
