import ReceiptKit

/// Erasing a customer in one write transaction (``CustomerErasure`` says what and why):
///
/// 1. Their keys and whether their consent is recorded; neither: `nil`, nothing written.
/// 2. The `appAccountToken`s linked to those keys (ids their transactions carry as one: the
///    customers linked to each key, and its transaction copies searched for them), and the keys
///    linked to each token: every id erased, every key touched.
/// 3. Each key's row locked (`FOR UPDATE`, PostgreSQL) in key order, as recording an input locks
///    it (by its write): an input folding into the key meanwhile writes its events before or after the
///    rewrite, never with the customer read before and written after it.
/// 4. Per key: whether Apple's data carries the customer id itself as an `appAccountToken`, its
///    events, the webhooks carrying them, and the purchases the app reported.
/// 5. The header segments of any such purchase stored compacted that names a customer.
/// 6. The writes: links and consents deleted, events, webhook bodies and purchases rewritten.
struct Erasing: RowSteps, Sendable {
    let customerId: String
    let dialect: SQLDialect
    private var phase = Phase.start
    /// The customer's own keys.
    private var ownKeys: [SubscriptionKey] = []
    /// Every key linked to an erased id, sorted.
    private var keys: [SubscriptionKey] = []
    private var consented = false
    /// The tokens to erase with the customer, in the order found.
    private var tokens: [String] = []
    /// The customers other than this one linked to the own key being searched.
    private var linked: [String] = []
    private var idInAppleData = false
    private var events: [Int64: String] = [:]
    private var deliveries: [Int64: [UInt8]] = [:]
    /// The purchases stored naming a customer, by input id: stored bytes and encoding.
    private var purchases: [Int64: (stored: [UInt8], encoding: Int16)] = [:]
    private var pendingHeaders: [Int64] = []
    private var segments: [Int64: [UInt8]] = [:]

    private enum Phase {
        case start, keys, consent, grants
        case tokens(Int), tokenCopies(Int), tokenKeys(Int)
        case locking(Int), retained(Int), events(Int), deliveries(Int), purchases(Int)
        case header(Int64)
        case written
    }

    init(customerId: String, dialect: SQLDialect) {
        self.customerId = customerId
        self.dialect = dialect
    }

    mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<CustomerErasure.Outcome?> {
        switch phase {
        case .start:
            phase = .keys
            return .fetch(LedgerStatements.keysOfCustomer.fetch(["customer_id": .text(customerId)]))
        case .keys:
            ownKeys = try LedgerStatements.keysOfCustomer.decode(rows).sorted()
            keys = ownKeys
            phase = .consent
            return .fetch(ErasureStatements.consent.fetch(["customer_id": .text(customerId)]))
        case .consent:
            consented = try ErasureStatements.consent.decodeFirst(rows) != nil
            phase = .grants
            return .fetch(EntitlementStatements.grantsOfCustomer.fetch(["customer_id": .text(customerId)]))
        case .grants:
            let granted = !(try EntitlementStatements.grantsOfCustomer.decode(rows)).isEmpty
            guard !ownKeys.isEmpty || consented || granted else { return .done(nil) }
            return try step(.tokens(0))
        case .tokens(let index):
            linked = try LedgerStatements.customersOfKey.decode(rows).filter { $0 != customerId }
            return try step(linked.isEmpty ? .tokens(index + 1) : .tokenCopies(index))
        case .tokenCopies(let index):
            let copies = try ErasureStatements.copiesOfKey.decode(rows)
            for customer in linked where !tokens.contains(customer) && Self.carry(copies, token: customer) {
                tokens.append(customer)
            }
            return try step(.tokens(index + 1))
        case .tokenKeys(let index):
            keys += try LedgerStatements.keysOfCustomer.decode(rows)
            return try step(.tokenKeys(index + 1))
        case .locking(let index):
            return try step(.locking(index + 1))
        case .retained(let index):
            if Self.carry(try ErasureStatements.copiesOfKey.decode(rows), token: customerId) { idInAppleData = true }
            return try step(.events(index))
        case .events(let index):
            let query = Self.customer(of: keys[index]) == nil ? ErasureStatements.eventsOfKey : ErasureStatements.eventsOfCustomer
            for event in try query.decode(rows) { events[event.id] = event.payload }
            return try step(.deliveries(index))
        case .deliveries(let index):
            let query = Self.customer(of: keys[index]) == nil ? ErasureStatements.deliveriesOfKey : ErasureStatements.deliveriesOfCustomer
            for delivery in try query.decode(rows) { deliveries[delivery.id] = delivery.body }
            return try step(.purchases(index))
        case .purchases(let index):
            for purchase in try ErasureStatements.purchasesOfKey.decode(rows) {
                let encoding = Int16(truncatingIfNeeded: purchase.encoding)
                let form = try RawCompaction.inflated(stored: purchase.stored, encoding: encoding)
                guard Self.namesCustomer(form.bytes) else { continue }
                purchases[purchase.id] = (purchase.stored, encoding)
                if form.encoding == .headerReferences { pendingHeaders += try RawCompaction.references(in: form.bytes) }
            }
            return try step(.retained(index + 1))
        case .header(let id):
            if let segment = try InputStatements.header.decodeFirst(rows) { segments[id] = Array(segment.utf8) }
            return try headers()
        case .written:
            return .done(CustomerErasure.Outcome(keys: keys.filter { Self.customer(of: $0) == nil }, idInAppleData: idInAppleData))
        }
    }

    /// The fetch of `next`, or of the phase after it when it has nothing to fetch: the per-token
    /// and per-key phases end past the last token or key.
    private mutating func step(_ next: Phase) throws -> RowStep<CustomerErasure.Outcome?> {
        phase = next
        switch next {
        case .tokens(let index) where index < ownKeys.count:
            return .fetch(LedgerStatements.customersOfKey.fetch(LedgerStatements.key(ownKeys[index])))
        case .tokens:
            return try step(.tokenKeys(0))
        case .tokenKeys(let index) where index < tokens.count:
            return .fetch(LedgerStatements.keysOfCustomer.fetch(["customer_id": .text(tokens[index])]))
        case .tokenKeys:
            // And a stand-in key per erased id: its named entitlements' events (``EntitlementEvent``),
            // which a grant's belong to no purchase, are read by customer.
            keys = Array(Set(keys + ([customerId] + tokens).map(Self.customerKey))).sorted()
            return try step(dialect.locksRows ? .locking(0) : .retained(0))
        case .locking(let index) where index < keys.count:
            return .fetch(LedgerStatements.lockSubscription.fetch(LedgerStatements.key(keys[index])))
        case .locking:
            return try step(.retained(0))
        case .tokenCopies(let index):
            return .fetch(ErasureStatements.copiesOfKey.fetch(LedgerStatements.key(ownKeys[index])))
        case .retained(let index) where index < keys.count:
            return .fetch(ErasureStatements.copiesOfKey.fetch(LedgerStatements.key(keys[index])))
        case .retained:
            pendingHeaders = Array(Set(pendingHeaders)).sorted()
            return try headers()
        case .events(let index):
            if let id = Self.customer(of: keys[index]) { return .fetch(ErasureStatements.eventsOfCustomer.fetch(["customer_id": .text(id)])) }
            return .fetch(ErasureStatements.eventsOfKey.fetch(LedgerStatements.key(keys[index])))
        case .deliveries(let index):
            if let id = Self.customer(of: keys[index]) { return .fetch(ErasureStatements.deliveriesOfCustomer.fetch(["customer_id": .text(id)])) }
            return .fetch(ErasureStatements.deliveriesOfKey.fetch(LedgerStatements.key(keys[index])))
        case .purchases(let index):
            return .fetch(ErasureStatements.purchasesOfKey.fetch(LedgerStatements.key(keys[index])))
        case .start, .keys, .consent, .grants, .header, .written:
            preconditionFailure("not a per-token or per-key phase")
        }
    }

    /// The stand-in key under which an erased id's own events are read: no purchase has an empty
    /// bundle id, so it is no key's.
    static func customerKey(_ customerId: String) -> SubscriptionKey {
        LedgerStatements.subscriptionKey("customer:" + customerId, "", "")
    }

    /// The erased id a stand-in key stands for; `nil` for a purchase's key.
    static func customer(of key: SubscriptionKey) -> String? {
        guard key.bundleId.isEmpty, key.environment.isEmpty, key.originalTransactionId.hasPrefix("customer:") else { return nil }
        return String(key.originalTransactionId.dropFirst("customer:".count))
    }

    /// Whether one of a key's transaction copies carries `token` as its `appAccountToken`.
    private static func carry(_ copies: [StoredJSON], token: String) -> Bool {
        let member = Array((#""appAccountToken":"# + AnswerEncoder.quoted(token)).utf8)
        return copies.contains { $0.bytes.firstRange(of: member) != nil }
    }

    /// The next header to read, or the writes once every one is read.
    private mutating func headers() throws -> RowStep<CustomerErasure.Outcome?> {
        if let id = pendingHeaders.popLast() {
            phase = .header(id)
            return .fetch(InputStatements.header.fetch(["id": .integer(id)]))
        }
        phase = .written
        return .write(try writes())
    }

    /// Whether a purchase's stored bytes, inflated, may name a customer (a body stored whole, as
    /// servers before this one stored it): the JSON member's name appears among their literal
    /// bytes, which header references never hide.
    private static func namesCustomer(_ stored: [UInt8]) -> Bool {
        let name = Array(#""customer_id""#.utf8)
        guard stored.count >= name.count else { return false }
        return (0...(stored.count - name.count)).contains { stored[$0..<($0 + name.count)].elementsEqual(name) }
    }

    /// Every write of the erasure, in a fixed order.
    private func writes() throws -> [StoreWrite] {
        let erased = [customerId] + tokens
        var writes = erased.map { StoreWrite(ErasureStatements.unlink, ["customer_id": .text($0)]) }
        writes += erased.map { StoreWrite(ErasureStatements.deleteConsent, ["customer_id": .text($0)]) }
        writes += erased.flatMap { id in EntitlementStatements.erasures.map { StoreWrite($0, ["customer_id": .text(id)]) } }
        writes += erased.map { StoreWrite(ErasureStatements.forgetEventCustomer, ["customer_id": .text($0)]) }
        let erasedSet = Set(erased)
        for (id, payload) in events.sorted(by: { $0.key < $1.key }) {
            if let redacted = try CustomerErasure.redacting(erasedSet, from: payload) {
                writes.append(StoreWrite(ErasureStatements.updatePayload, ["payload": .text(redacted), "id": .integer(id)]))
            }
        }
        for (id, body) in deliveries.sorted(by: { $0.key < $1.key }) {
            if let redacted = try CustomerErasure.redacting(erasedSet, from: String(decoding: body, as: UTF8.self)) {
                writes.append(StoreWrite(ErasureStatements.updateBody, ["body": .bytes(Array(redacted.utf8)), "id": .integer(id)]))
            }
        }
        let segments = self.segments
        for (id, purchase) in purchases.sorted(by: { $0.key < $1.key }) {
            let body = try RawCompaction.raw(stored: purchase.stored, encoding: purchase.encoding) { _ in segments }
            guard let apple = try CustomerErasure.applePart(of: body) else { continue }
            let stored = RawCompaction.stored(apple, encoding: .verbatim)
            writes.append(StoreWrite(
                ErasureStatements.updateRaw,
                ["raw": .bytes(stored.bytes), "raw_encoding": .integer(Int64(stored.encoding.rawValue)), "id": .integer(id)]))
        }
        return writes
    }
}
