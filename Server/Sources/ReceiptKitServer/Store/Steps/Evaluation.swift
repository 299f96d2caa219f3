import ReceiptKit

/// One key's state at an instant, read from its rows and evaluated by ReceiptKit's
/// ``EntitlementLedger``; `nil` when no transaction of the key is known at that instant.
///
/// When every copy of the key is known at the instant — a state asked for now, the case that
/// matters at scale — the state is decided by a few rows whatever the key's history, read in one
/// statement (``LedgerStatements/current``): the top-ranked latest transaction copies (rule 2
/// picks among them), the copy signed last (the state's `last_signed_date`) and the renewal info
/// signed last (rule 3). At an instant before the key's last copy (an `as_of`), the same few among
/// the copies known then: each transaction's copy signed last by then, ranked, the copy signed
/// last by then, and the renewal info signed last by then. Only when the top two candidates tie is
/// every copy known at the instant read. Either way ReceiptKit evaluates the copies: the rules are
/// not restated here.
struct Evaluation: RowSteps, Sendable {
    /// A state now is one statement (``LedgerStatements/current``); only an `as_of` or a tie
    /// reads again.
    static var usuallyReadOnce: Bool { true }

    let key: SubscriptionKey
    let instant: Timestamp
    /// The copies the running transaction stored: read from here, not decoded from their rows.
    let written: WrittenCopies
    private var phase = Phase.start
    private var copies: [LedgerCopy] = []
    /// The key's row, once read: what the feed compares the evaluated state with.
    private(set) var head = KeyHead()

    /// ``LedgerStatements/current``'s rows, sorted by part.
    private struct Current {
        var head: KeyHead?
        var candidates: [LedgerStatements.CandidateRow] = []
        var lastTransaction: StoredJSON?
        var lastRenewalInfo: StoredJSON?
    }

    private enum Phase {
        case start, current, lastRenewalInfo, allTransactions, allRenewalInfos
        case candidatesAt, lastTransactionAt
    }

    init(key: SubscriptionKey, at instant: Timestamp, written: WrittenCopies = WrittenCopies()) {
        self.key = key
        self.instant = instant
        self.written = written
    }

    mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<SubscriptionState?> {
        let keyBindings = LedgerStatements.key(key)
        let at: Bindings = ["at": .integer(instant.millisecondsSince1970)]
        switch phase {
        case .start:
            phase = .current
            return .fetch(LedgerStatements.current.fetch(keyBindings))
        case .current:
            var current = Current()
            for row in try LedgerStatements.current.decode(rows) {
                switch row {
                case .head(let head): current.head = head
                case .candidate(let candidate): current.candidates.append(candidate)
                case .lastTransaction(let json): current.lastTransaction = json
                case .lastRenewalInfo(let json): current.lastRenewalInfo = json
                }
            }
            guard let head = current.head else { return .done(nil) }
            self.head = head
            guard let last = head.lastKnownFrom, last <= instant.millisecondsSince1970 else {
                phase = .candidatesAt
                return .fetch(LedgerStatements.candidatesKnownAt.fetch(keyBindings + at))
            }
            return try now(current)
        case .candidatesAt:
            let candidates = try self.candidates(LedgerStatements.candidatesKnownAt.decode(rows))
            guard Self.candidatesSuffice(candidates) else { return allCopies() }
            copies = candidates
            phase = .lastTransactionAt
            return .fetch(LedgerStatements.lastTransactionCopyKnownAt.fetch(keyBindings + at))
        case .lastTransactionAt:
            if let row = try LedgerStatements.lastTransactionCopyKnownAt.decodeFirst(rows),
               !hasCopy(row.transactionId, knownFrom: row.knownFrom) {
                copies.append(try copy(row.json, .transaction))
            }
            phase = .lastRenewalInfo
            return .fetch(LedgerStatements.lastRenewalInfoKnownAt.fetch(LedgerStatements.renewalKey(key) + at))
        case .lastRenewalInfo:
            copies += try LedgerStatements.lastRenewalInfoKnownAt.decode(rows).map { try copy($0, .renewalInfo) }
            return .done(evaluate())
        case .allTransactions:
            copies = try LedgerStatements.transactionCopiesKnownAt.decode(rows).map { try copy($0, .transaction) }
            phase = .allRenewalInfos
            return .fetch(LedgerStatements.renewalInfoCopiesKnownAt.fetch(LedgerStatements.renewalKey(key) + at))
        case .allRenewalInfos:
            copies += try LedgerStatements.renewalInfoCopiesKnownAt.decode(rows).map { try copy($0, .renewalInfo) }
            return .done(evaluate())
        }
    }

    /// Whether the top-ranked candidates read decide the state: fewer than the limit were read
    /// (there are no more), or the last one read ranks below the first in rule 2's order
    /// (``LedgerCopy/Rank``), and so does every one not read.
    private static func candidatesSuffice(_ candidates: [LedgerCopy]) -> Bool {
        guard candidates.count == LedgerStatements.candidateLimit, let first = candidates.first, let last = candidates.last else {
            return true
        }
        return first.rank != last.rank
    }

    private func copy(_ json: StoredJSON, _ kind: LedgerCopy.Kind) throws -> LedgerCopy {
        try LedgerStatements.copy(json, kind: kind, of: key.originalTransactionId)
    }

    /// Whether the copies read so far hold the copy of this transaction signed at `knownFrom`.
    private func hasCopy(_ transactionId: String, knownFrom: Int64) -> Bool {
        copies.contains { $0.transactionId == transactionId && $0.knownFrom.millisecondsSince1970 == knownFrom }
    }

    /// Candidates from their rows; a copy this transaction stored is taken from ``written``.
    private func candidates(_ rows: [LedgerStatements.CandidateRow]) throws -> [LedgerCopy] {
        try rows.map { row in
            try written.transaction(row.transactionId, knownFrom: row.knownFrom, of: key) ?? copy(row.json, .transaction)
        }
    }

    /// The state now, from ``LedgerStatements/current``'s rows: the candidates, then the copy
    /// signed last and the renewal info signed last, each unless already among the copies (or
    /// taken from those the running transaction wrote).
    private mutating func now(_ current: Current) throws -> RowStep<SubscriptionState?> {
        let read = try self.candidates(current.candidates)
        guard Self.candidatesSuffice(read) else { return allCopies() }
        copies = read
        if let last = head.lastTransaction, !hasCopy(last.transactionId, knownFrom: last.knownFrom) {
            if let stored = written.transaction(last.transactionId, knownFrom: last.knownFrom, of: key) {
                copies.append(stored)
            } else if let lastTransaction = current.lastTransaction {
                copies.append(try copy(lastTransaction, .transaction))
            }
        }
        if let knownFrom = head.lastRenewalInfo {
            if let stored = written.renewalInfo(of: key, knownFrom: knownFrom) {
                copies.append(stored)
            } else if let lastRenewalInfo = current.lastRenewalInfo {
                copies.append(try copy(lastRenewalInfo, .renewalInfo))
            }
        }
        return .done(evaluate())
    }

    private mutating func allCopies() -> RowStep<SubscriptionState?> {
        phase = .allTransactions
        return .fetch(LedgerStatements.transactionCopiesKnownAt.fetch(
            LedgerStatements.key(key) + ["at": .integer(instant.millisecondsSince1970)]))
    }

    private func evaluate() -> SubscriptionState? {
        var ledger = EntitlementLedger()
        for copy in copies { ledger.insert(copy) }
        return ledger.state(for: key, at: instant)
    }
}
