import ReceiptKit

/// Folding one ledger copy into its key's rows: the reads it needs, then its writes. A cost that
/// does not grow with the key's history: nothing is read but the stored copies of the same
/// transaction (or renewal info) signed last and signed at the same instant.
///
/// Rule 1 as rows: a copy with a new identity is inserted (the latest of its transaction when
/// signed after every other, and the one it follows demoted); a copy with a stored identity
/// replaces the stored one only when ReceiptKit's ``LedgerCopy/supersedes(_:)`` says it wins.
struct Folding: RowSteps, Sendable {
    /// What folding did: its writes, and whether they put the copy in its row (inserted, or
    /// replacing the stored one), so that a state read in the same transaction takes it from
    /// memory (``WrittenCopies``).
    struct Result: Sendable {
        var writes: [StoreWrite] = []
        var stored = false
    }

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

    mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<Result> {
        let id = copy.originalTransactionId
        switch (copy.kind, phase) {
        case (.renewalInfo, .start):
            phase = .same(latest: nil)
            return .fetch(LedgerStatements.renewalInfoCopy.fetch(
                LedgerStatements.renewalKey(of: copy) + ["known_from": .integer(copy.knownFrom.millisecondsSince1970)]))
        case (.renewalInfo, _):
            let same = try LedgerStatements.renewalInfoCopy.decodeFirst(rows).map { try LedgerStatements.copy($0, kind: .renewalInfo, of: id) }
            return .done(Self.plan(renewalInfo: copy, same: same))
        case (.transaction, .start):
            guard let bindings = LedgerStatements.transaction(of: copy) else { return .done(Result()) }
            phase = .latest
            return .fetch(LedgerStatements.latestTransactionCopy.fetch(bindings))
        case (.transaction, .latest):
            let latest = try LedgerStatements.latestTransactionCopy.decodeFirst(rows).map {
                try LedgerStatements.copy($0.json, kind: .transaction, of: id)
            }
            switch Self.plan(copy, latest: latest) {
            case .write(let result):
                return .done(result)
            case .fetchSame:
                phase = .same(latest: latest)
                return .fetch(LedgerStatements.transactionCopy.fetch(LedgerStatements.transaction(of: copy, signedToo: true) ?? [:]))
            }
        case (.transaction, .same(let latest)):
            let same = try LedgerStatements.transactionCopy.decodeFirst(rows).map { try LedgerStatements.copy($0, kind: .transaction, of: id) }
            guard case .write(let result) = Self.plan(copy, latest: latest, same: .some(same)) else {
                throw StoreError.damaged("folding a copy of \(id) asked for the same row twice")
            }
            return .done(result)
        }
    }

    /// What to do with one transaction copy, given the stored copy of the same transaction signed
    /// last (`latest`) and, when that one was signed at another instant, the stored copy signed
    /// at the same instant as `copy` (`same`, fetched only when this asks for it).
    enum Plan {
        /// Fetch the stored copy signed at the same instant, then plan again.
        case fetchSame
        /// Execute these writes.
        case write(Result)
    }

    static func plan(_ copy: LedgerCopy, latest: LedgerCopy?, same: LedgerCopy?? = .none) -> Plan {
        guard let transaction = LedgerStatements.transaction(of: copy) else { return .write(Result()) }
        let signed: Bindings = ["known_from": .integer(copy.knownFrom.millisecondsSince1970)]
        let columns = LedgerStatements.rankBindings(copy) + ["copy": LedgerStatements.json(copy)]
        let replace = Result(writes: [StoreWrite(LedgerStatements.replaceTransactionCopy, columns + transaction + signed)], stored: true)
        func insert(isLatest: Bool) -> StoreWrite {
            StoreWrite(LedgerStatements.insertTransactionCopy, transaction + signed + ["is_latest": .flag(isLatest)] + columns)
        }
        guard let latest else { return .write(Result(writes: [insert(isLatest: true)], stored: true)) }
        if latest.isSameCopy(as: copy) {
            return .write(copy.supersedes(latest) ? replace : Result())
        }
        if copy.knownFrom > latest.knownFrom {
            let demote = StoreWrite(
                LedgerStatements.demoteTransactionCopy, transaction + ["known_from": .integer(latest.knownFrom.millisecondsSince1970)])
            return .write(Result(writes: [demote, insert(isLatest: true)], stored: true))
        }
        // Signed before the latest: an earlier copy arriving late, kept for `as_of`.
        guard case .some(let same) = same else { return .fetchSame }
        guard let same else { return .write(Result(writes: [insert(isLatest: false)], stored: true)) }
        return .write(copy.supersedes(same) ? replace : Result())
    }

    /// The writes for a renewal info copy, given the stored copy of the same renewal info signed
    /// at the same instant, if any.
    static func plan(renewalInfo copy: LedgerCopy, same: LedgerCopy?) -> Result {
        let identity = LedgerStatements.renewalKey(of: copy) + ["known_from": .integer(copy.knownFrom.millisecondsSince1970)]
        let json: Bindings = ["copy": LedgerStatements.json(copy)]
        guard let same else {
            return Result(writes: [StoreWrite(LedgerStatements.insertRenewalInfoCopy, identity + json)], stored: true)
        }
        guard copy.supersedes(same) else { return Result() }
        return Result(writes: [StoreWrite(LedgerStatements.replaceRenewalInfoCopy, json + identity)], stored: true)
    }
}

/// The copies a transaction stored, by the identity of their rows: what a state evaluated in the
/// same transaction reads from memory instead of decoding its rows' JSON again. Only a copy whose
/// row holds it — inserted, or replacing the stored one — is here.
struct WrittenCopies: Sendable {
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

    /// Notes `copy` when folding it in put it in its row.
    mutating func add(_ copy: LedgerCopy, _ folded: Folding.Result) {
        guard folded.stored else { return }
        let knownFrom = copy.knownFrom.millisecondsSince1970
        switch copy.kind {
        case .transaction:
            guard let key = copy.key, let id = copy.transactionId else { return }
            transactions[TransactionRow(key: key, transactionId: id, knownFrom: knownFrom)] = copy
        case .renewalInfo:
            renewalInfos[RenewalInfoRow(
                originalTransactionId: copy.originalTransactionId, environment: copy.environment, knownFrom: knownFrom)] = copy
        }
    }

    func transaction(_ id: String, knownFrom: Int64, of key: SubscriptionKey) -> LedgerCopy? {
        transactions.isEmpty ? nil : transactions[TransactionRow(key: key, transactionId: id, knownFrom: knownFrom)]
    }

    func renewalInfo(of key: SubscriptionKey, knownFrom: Int64) -> LedgerCopy? {
        renewalInfos.isEmpty
            ? nil
            : renewalInfos[RenewalInfoRow(originalTransactionId: key.originalTransactionId, environment: key.environment, knownFrom: knownFrom)]
    }
}
