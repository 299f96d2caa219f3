import ReceiptKit

/// Whether an input of items Apple signed anew for an answer (``VerifiedInput/skipsRepeats``)
/// only repeats what is stored — each of its copies says what the stored copy of the same
/// transaction (or renewal info) signed last says, and is signed at or after it
/// (``LedgerCopy/repeats(_:)``) — and if so, the writes that remember the later signing instead
/// of storing the input. `nil` when a copy says something new (or nothing of it is stored): the
/// input is then stored as any other.
///
/// A run of copies that repeat one another keeps two rows: its first signing, which states as of
/// earlier instants need, and its last, which carries the signed date a state now reads
/// (`last_signed_date`, a renewal info's freshness) and which a copy arriving late with an
/// earlier signed date cannot pass. The first repeat of a copy is inserted as a row of its own;
/// each later one re-dates that row. So the copy signed last of every transaction and renewal
/// info is in the rows with its own signed date, whatever order the copies arrive in, and a state
/// now is what storing every copy would give. Costs one read of at most two rows per copy, by
/// primary key.
struct Repeating: RowSteps, Sendable {
    let copies: [LedgerCopy]
    let receivedAt: Int64
    private var next = 0
    private var writes: [StoreWrite] = []

    init(_ input: VerifiedInput) {
        copies = input.copies
        receivedAt = input.receivedAt
    }

    mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<[StoreWrite]?> {
        if next > 0 {
            let copy = copies[next - 1]
            let stored = try decode(rows, of: copy)
            guard let planned = Self.plan(repeating: copy, stored: stored, receivedAt: receivedAt) else { return .done(nil) }
            writes += planned
        }
        guard next < copies.count else { return .done(copies.isEmpty ? nil : writes) }
        let copy = copies[next]
        next += 1
        switch copy.kind {
        case .transaction:
            guard let bindings = LedgerStatements.transaction(of: copy) else { return .done(nil) }
            return .fetch(LedgerStatements.lastTwoTransactionCopies.fetch(bindings))
        case .renewalInfo:
            return .fetch(LedgerStatements.lastTwoRenewalInfoCopies.fetch(LedgerStatements.renewalKey(of: copy)))
        }
    }

    private func decode(_ rows: [[StoreValue]], of copy: LedgerCopy) throws -> [LedgerCopy] {
        let query = copy.kind == .transaction ? LedgerStatements.lastTwoTransactionCopies : LedgerStatements.lastTwoRenewalInfoCopies
        return try query.decode(rows).map { try LedgerStatements.copy($0.json, kind: copy.kind, of: copy.originalTransactionId) }
    }

    /// The writes that remember `copy` as a repeat of the stored copies of its transaction (or
    /// renewal info) `stored`, the two signed last, latest first; `nil` when it is not one.
    static func plan(repeating copy: LedgerCopy, stored: [LedgerCopy], receivedAt: Int64) -> [StoreWrite]? {
        guard let latest = stored.first, copy.knownFrom >= latest.knownFrom, copy.repeats(latest) else { return nil }
        if copy.knownFrom == latest.knownFrom { return [] }
        // The run's last signing (`:known_from`) moves to this copy's (`:new_known_from`).
        let redate: Bindings = [
            "new_known_from": .integer(copy.knownFrom.millisecondsSince1970), "copy": LedgerStatements.json(copy),
            "known_from": .integer(latest.knownFrom.millisecondsSince1970),
        ]
        let runContinues = stored.count > 1 && stored[1].repeats(latest)
        switch copy.kind {
        case .renewalInfo:
            if runContinues {
                return [StoreWrite(LedgerStatements.redateRenewalInfoCopy, redate + LedgerStatements.renewalKey(of: copy))]
            }
            return Folding.plan(renewalInfo: copy, same: nil).writes
        case .transaction:
            guard let key = copy.key, let transaction = LedgerStatements.transaction(of: copy) else { return nil }
            let advance = LedgerStatements.subscriptionWrites(key, copies: [copy], receivedAt: receivedAt)
            if runContinues {
                return [StoreWrite(LedgerStatements.redateTransactionCopy, redate + transaction)]
                    + advance
            }
            guard case .write(let folded) = Folding.plan(copy, latest: latest) else { return nil }
            return folded.writes + advance
        }
    }
}
