import ReceiptKit

/// Recording one verified input, in the transaction that commits it: the whole write path of a
/// notification or a purchase, once for both databases.
///
/// 1. An input of items Apple signed anew that only repeats what is stored is not stored: the
///    later signing is remembered in the copies' rows (``Repeating``) and its customers linked.
/// 2. Its JWS headers are looked up (or stored) once each (``RawCompaction``), and the input
///    stored under its dedup key — or nothing, for a replay.
/// 3. A new input is listed under each key it touches, each key's row made sure of and (on
///    PostgreSQL) locked in key order, and its ledger copies folded in (``Folding``).
/// 4. Its customers are linked, new input or replay.
/// 5. For a new input, what the features derive from it (``StoreFeatures/derivation(of:written:)``:
///    the feed's events, outbox rows and derived records), and the overview's counts
///    (``CountStatements``).
/// 6. With named entitlements, its customers', new input or replay
///    (``StoreFeatures/entitlementDerivation(of:customersOf:written:)``).
struct Recording: RowSteps, Sendable {
    /// What recording did: whether the input was new, what it wrote to the feed, and the JWS
    /// headers it looked up or stored that the directory did not know (remembered once the
    /// transaction has committed).
    struct Result: Sendable {
        var isNew = false
        var commit = FeedCommit()
        var headers: [(segment: [UInt8], header: RawCompaction.Header)] = []
    }

    let input: VerifiedInput
    let dialect: SQLDialect
    /// The features' rules: what a new input derives, and the customers' named entitlements,
    /// derived last.
    let features: any StoreFeatures
    let directory: HeaderDirectory
    private var phase = Phase.start
    private var entitled = false
    private var result = Result()
    /// The headers of ``VerifiedInput/headerSegments`` found so far, in order.
    private var referenced: [RawCompaction.Header] = []
    private var written = WrittenCopies()

    private enum Phase {
        case start
        /// Looking for the input under the dedup key of servers before v11.
        case legacy
        case lockingForRepeats(Int)
        case repeating(Repeating)
        case header(Int, HeaderLookup)
        case inserted
        /// The input's keys listed, and their rows written (and so locked) in key order.
        case keyed
        case folding(Int, Folding)
        case linked
        case deriving(any RowSteps<DerivedWrites> & Sendable)
        case entitling(any RowSteps<DerivedWrites> & Sendable)
        case finished
    }

    /// Where the lookup of a header segment not in the directory stands.
    private enum HeaderLookup {
        case start, selected, inserted, selectedAgain
    }

    init(_ input: VerifiedInput, dialect: SQLDialect, features: any StoreFeatures, directory: HeaderDirectory) {
        self.input = input
        self.dialect = dialect
        self.features = features
        self.directory = directory
    }

    /// The next step: each phase's own method answers it, or moves on to the next phase
    /// (`nil`), which then starts with no rows.
    mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<Result> {
        var rows = rows
        while true {
            let step: RowStep<Result>?
            switch phase {
            case .start: step = start()
            case .legacy: step = legacy(found: !rows.isEmpty)
            case .lockingForRepeats(let index): step = lockForRepeats(index)
            case .repeating(let repeating): step = try repeatOrStore(repeating, rows)
            case .header(let index, let lookup): step = try header(index, lookup, rows)
            case .inserted: step = inserted(rows)
            case .keyed: step = keyed()
            case .folding(let index, let folding): step = try fold(index, folding, rows)
            case .linked: step = linked()
            case .deriving(let derivation): step = try derive(derivation, rows)
            case .entitling(let derivation): step = try entitle(derivation, rows)
            case .finished: step = finish()
            }
            if let step { return step }
            rows = []
        }
    }

    /// First: an input stored under the dedup key of servers before v11 is looked for there.
    private mutating func start() -> RowStep<Result>? {
        if let legacy = input.legacyDedupKey {
            phase = .legacy
            return .fetch(InputStatements.stored.fetch(["dedup_key": .text(legacy)]))
        }
        phase = input.skipsRepeats ? .lockingForRepeats(0) : .header(0, .start)
        return nil
    }

    /// Stored by a server before v11: a replay, which links its customers.
    private mutating func legacy(found: Bool) -> RowStep<Result>? {
        if found {
            phase = .finished
            return .write(linkWrites())
        }
        phase = input.skipsRepeats ? .lockingForRepeats(0) : .header(0, .start)
        return nil
    }

    /// Its keys' rows locked first, in key order, as a new input locks them, so that another
    /// server folding into them waits.
    private mutating func lockForRepeats(_ index: Int) -> RowStep<Result>? {
        if dialect.locksRows, index < input.orderedKeys.count {
            phase = .lockingForRepeats(index + 1)
            return .fetch(LedgerStatements.lockSubscription.fetch(LedgerStatements.key(input.orderedKeys[index])))
        }
        phase = .repeating(Repeating(input))
        return nil
    }

    /// An input that only repeats what is stored is not stored: its repeats remembered, its
    /// customers linked. Otherwise it is stored, from its headers on.
    private mutating func repeatOrStore(_ repeating: Repeating, _ rows: [[StoreValue]]) throws -> RowStep<Result>? {
        var repeating = repeating
        switch try repeating.nested(rows, in: Result.self) {
        case .io(let io):
            phase = .repeating(repeating)
            return io
        case .done(let writes?):
            phase = .finished
            return .write(writes + linkWrites())
        case .done(nil):
            phase = .header(0, .start)
            return nil
        }
    }

    /// Each JWS header segment: the directory's, the stored one, or stored now (another
    /// transaction may have stored it first: then it is read again); after the last, the input.
    private mutating func header(_ index: Int, _ lookup: HeaderLookup, _ rows: [[StoreValue]]) throws -> RowStep<Result>? {
        guard index < input.headerSegments.count else { return insertInput() }
        let segment = input.headerSegments[index]
        let text = String(decoding: segment, as: UTF8.self)
        if lookup == .start {
            if let header = directory.header(for: segment) {
                referenced.append(header)
                phase = .header(index + 1, .start)
                return nil
            }
            phase = .header(index, .selected)
            return .fetch(InputStatements.headerId.fetch(["segment": .text(text)]))
        }
        if let id = try InputStatements.headerId.decodeFirst(rows) {
            let header = RawCompaction.Header(id: id, segment: segment)
            referenced.append(header)
            result.headers.append((segment, header))
            phase = .header(index + 1, .start)
            return nil
        }
        switch lookup {
        case .selected:
            phase = .header(index, .inserted)
            return .insert(StoreWrite(InputStatements.insertHeader, ["segment": .text(text)]))
        case .inserted:
            // Another transaction stored it first (PostgreSQL waited for it): read it.
            phase = .header(index, .selectedAgain)
            return .fetch(InputStatements.headerId.fetch(["segment": .text(text)]))
        case .start, .selectedAgain:
            throw StoreError("a JWS header was neither inserted nor found")
        }
    }

    /// The input inserted (a new one) or not (a replay: it changes no state, but its customers
    /// are linked); a new one's keys listed and their rows written.
    private mutating func inserted(_ rows: [[StoreValue]]) -> RowStep<Result>? {
        guard let id = rows.first?.first, case .integer(let inputId) = id else {
            phase = .finished
            return .write(linkWrites())
        }
        result.isNew = true
        phase = .keyed
        return .write(keyWrites(inputId: inputId))
    }

    /// The key rows were locked by their writes, in key order: two inputs folding into one key,
    /// on any servers, take turns, and never deadlock. Then each copy is folded in.
    private mutating func keyed() -> RowStep<Result>? {
        guard let first = input.copies.first else {
            phase = .linked
            return .write(linkWrites())
        }
        phase = .folding(0, Folding(first))
        return nil
    }

    /// One copy folded in (``Folding``); after the last, the customers linked.
    private mutating func fold(_ index: Int, _ folding: Folding, _ rows: [[StoreValue]]) throws -> RowStep<Result>? {
        var folding = folding
        switch try folding.nested(rows, in: Result.self) {
        case .io(let io):
            phase = .folding(index, folding)
            return io
        case .done(let folded):
            written.add(input.copies[index], folded)
            let next = index + 1
            phase = next < input.copies.count ? .folding(next, Folding(input.copies[next])) : .linked
            let writes = next < input.copies.count ? folded.writes : folded.writes + linkWrites()
            return writes.isEmpty ? nil : .write(writes)
        }
    }

    /// Last: the feed's counter, which the derivation takes only when there are events, stays
    /// locked until the commit.
    private mutating func linked() -> RowStep<Result>? {
        phase = .deriving(features.derivation(of: input, written: written))
        return nil
    }

    /// What the features derive from a new input; then the notification counted (last: see
    /// ``CountStatements``).
    private mutating func derive(_ derivation: any RowSteps<DerivedWrites> & Sendable, _ rows: [[StoreValue]]) throws -> RowStep<Result>? {
        let next = try advance(derivation, rows, resuming: Phase.deriving)
        guard case .done(let derived) = next else { return next.io }
        result.commit = derived.commit
        phase = .finished
        let counted = input.kind == "notification"
            ? [CountStatements.notificationWrite(type: input.cause.notificationType, receivedAt: input.receivedAt)] : []
        return .write(derived.writes + counted)
    }

    /// The customers' named entitlements derived.
    private mutating func entitle(_ derivation: any RowSteps<DerivedWrites> & Sendable, _ rows: [[StoreValue]]) throws -> RowStep<Result>? {
        let next = try advance(derivation, rows, resuming: Phase.entitling)
        guard case .done(let derived) = next else { return next.io }
        result.commit.merge(derived.commit)
        phase = .finished
        return derived.writes.isEmpty ? nil : .write(derived.writes)
    }

    /// Advances a features' derivation, keeping it in the phase `resuming` makes while it asks
    /// for I/O.
    private mutating func advance(
        _ derivation: any RowSteps<DerivedWrites> & Sendable, _ rows: [[StoreValue]],
        resuming: (any RowSteps<DerivedWrites> & Sendable) -> Phase
    ) throws -> Nested<DerivedWrites, Result> {
        var derivation = derivation
        let next = try derivation.nested(rows, in: Result.self)
        if case .io = next { phase = resuming(derivation) }
        return next
    }

    /// Whatever the input did (a new purchase, or a replay that links a customer to a key), its
    /// customers' named entitlements are derived last; then recording is done.
    private mutating func finish() -> RowStep<Result>? {
        if !entitled {
            entitled = true
            if let derivation = features.entitlementDerivation(of: input, customersOf: result.isNew ? input.orderedKeys : [], written: written) {
                phase = .entitling(derivation)
                return nil
            }
        }
        return .done(result)
    }

    /// Stores the input, its raw bytes with their headers replaced by references when it carries
    /// any.
    private mutating func insertInput() -> RowStep<Result>? {
        let compacted = RawCompaction.compact(input.raw, headers: referenced)
        let raw = RawCompaction.stored(compacted ?? input.raw, encoding: compacted == nil ? .verbatim : .headerReferences)
        phase = .inserted
        return .insert(StoreWrite(InputStatements.insert, [
            "dedup_key": .text(input.dedupKey), "kind": .text(input.kind), "raw": .bytes(raw.bytes),
            "raw_encoding": .integer(Int64(raw.encoding.rawValue)), "record": StoredJSON(input.record).storeValue,
            "received_at": .integer(input.receivedAt), "source": .text(input.cause.source.rawValue),
        ]))
    }

    /// The writes that record a new input's keys, in key order: each is listed under it and gets
    /// its row, which the write locks on PostgreSQL
    /// (``LedgerStatements/subscriptionWrites(_:copies:receivedAt:)``).
    private func keyWrites(inputId: Int64) -> [StoreWrite] {
        input.orderedKeys.flatMap { key in
            [StoreWrite(InputStatements.insertInputKey, LedgerStatements.key(key) + ["input_id": .integer(inputId)])]
                + LedgerStatements.subscriptionWrites(key, copies: input.copies, receivedAt: input.receivedAt)
        }
    }

    /// The writes that link the input's customers, new input or replay.
    private func linkWrites() -> [StoreWrite] {
        input.orderedLinks.map { link in
            StoreWrite(
                LedgerStatements.insertLink,
                ["customer_id": .text(link.customerId), "linked_at": .integer(input.receivedAt)] + LedgerStatements.key(link.key))
        }
    }
}
