import Foundation
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
                return .fetch(Self.storedLedgers.fetch())
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
            throw StoreError.damaged("the stored ledger of \(key) does not decode: \(error)")
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
                return .fetch(FeedStatements.allKeys.fetch())
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
                    let derived = DerivedRecord.baseline(state, lastKnownFrom: evaluation.head.lastKnownFrom, at: instant)
                    return .write([FeedStatements.derivedWrite(evaluation.key, derived, at: instant.millisecondsSince1970)])
                }
            }
        }
    }
}

/// Migration `v12-notification-days`'s rows: the notifications the chart shows — received in the
/// 31 UTC days up to the migration's instant — counted per day and type. They are read newest
/// first down the inputs' primary key, a page at a time, until one received an hour before the
/// first day (receipt times may run out of order with ids by that much): the cost follows a
/// month of inputs, not the whole history.
struct NotificationDaysBackfill: RowSteps, Sendable {
    /// How many days back the counts start: the chart's 30 and today.
    static let days: Int64 = 31
    /// How far out of order receipt times may be against ids.
    static let disorder: Int64 = 3_600_000
    static let pageSize: Int64 = 5_000

    /// A page of notifications below an id, newest first, with their type: read by the database
    /// from a record stored as text (as every server before v12 stored it), by Swift from one
    /// stored deflated (``StoredJSON``).
    static let notifications = Query { dialect in
        """
        SELECT id, received_at, CASE WHEN substr(record, 1, 1) = '~' THEN record END,
            CASE WHEN substr(record, 1, 1) <> '~' THEN \(dialect.jsonText("record", ["notification", "type"])) END
        FROM inputs WHERE kind = 'notification' AND id < :before ORDER BY id DESC LIMIT :limit
        """
    } row: { (id: Int64, receivedAt: Int64, deflated: StoredJSON?, type: String?) in
        (id: id, receivedAt: receivedAt, type: try type ?? deflated.flatMap(notificationType))
    }

    /// The `notification.type` of a record: found by ``JSONMemberScan`` (a month of notifications
    /// is hundreds of thousands at a million subscribers, and a full decoding of each took half the
    /// migration's time again), decoded whole where the scan cannot say.
    private static func notificationType(_ record: StoredJSON) throws -> String? {
        if case .found(let type) = JSONMemberScan.string(at: ["notification", "type"], in: record.bytes) { return type }
        struct Record: Decodable {
            struct Notification: Decodable { let type: String? }
            let notification: Notification?
        }
        do {
            return try JSONDecoder().decode(Record.self, from: Data(record.bytes)).notification?.type
        } catch {
            throw StoreError.damaged("a stored notification's record does not decode: \(error)")
        }
    }

    static let insert = StoreStatement("INSERT INTO notification_days (day, type, count) VALUES (:day, :type, :count)")

    let since: Int64
    private var before = Int64.max
    private var started = false
    private var counts: [Int64: [String: Int64]] = [:]

    init(at instant: Timestamp) {
        since = CountStatements.day(of: instant.millisecondsSince1970) - (Self.days - 1) * CountStatements.millisecondsPerDay
    }

    mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<Void> {
        if started {
            let page = try Self.notifications.decode(rows)
            for notification in page where notification.receivedAt >= since {
                counts[CountStatements.day(of: notification.receivedAt), default: [:]][notification.type ?? "", default: 0] += 1
            }
            let oldest = page.map(\.receivedAt).min() ?? .min
            if let last = page.last, Int64(page.count) == Self.pageSize, oldest >= since - Self.disorder {
                before = last.id
            } else {
                guard !counts.isEmpty else { return .done(()) }
                let writes = counts.sorted { $0.key < $1.key }.flatMap { day, types in
                    types.sorted { $0.key < $1.key }.map {
                        StoreWrite(Self.insert, ["day": .integer(day), "type": .text($0.key), "count": .integer($0.value)])
                    }
                }
                counts = [:]
                return .write(writes)
            }
        }
        started = true
        return .fetch(Self.notifications.fetch(["before": .integer(before), "limit": .integer(Self.pageSize)]))
    }
}

/// One string member of valid JSON text (the store's own records, checked by their CRC-32 as they
/// are inflated), at a path of object members, found by walking the text once and building
/// nothing: every other value is skipped (strings with their escapes, objects and arrays by their
/// nesting), and the walk stops at the member. What it cannot answer plainly — text that is not
/// the shape it expects, a member name or the string itself holding an escape — it leaves to a
/// full decoding.
package enum JSONMemberScan {
    package enum Outcome: Equatable {
        /// The member is a string without escapes, or `nil`: it is absent or `null`.
        case found(String?)
        /// Decode the text whole to know.
        case undecided
    }

    package static func string(at path: [String], in json: [UInt8]) -> Outcome {
        json.withUnsafeBufferPointer { bytes in
            var scanner = Scanner(bytes: bytes)
            return scanner.member(path.map { Array($0.utf8) }[...]) ?? .undecided
        }
    }

    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        /// The string at `path` in the object that starts here; `nil` when undecided.
        mutating func member(_ path: ArraySlice<[UInt8]>) -> Outcome? {
            guard let name = path.first, next() == UInt8(ascii: "{") else { return nil }
            index += 1
            if next() == UInt8(ascii: "}") { return .found(nil) }
            while true {
                guard let key = string(), !key.escaped, next() == UInt8(ascii: ":") else { return nil }
                index += 1
                if bytes[key.range].elementsEqual(name) {
                    if path.count > 1 {
                        if next() == UInt8(ascii: "n") { return literal("null") ? .found(nil) : nil }
                        return member(path.dropFirst())
                    }
                    if next() == UInt8(ascii: "n") { return literal("null") ? .found(nil) : nil }
                    guard let value = string(), !value.escaped else { return nil }
                    return .found(String(decoding: bytes[value.range], as: UTF8.self))
                }
                guard skipValue() else { return nil }
                switch next() {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "}"): return .found(nil)
                default: return nil
                }
            }
        }

        /// The next byte that is not whitespace, the index left on it.
        mutating func next() -> UInt8? {
            while index < bytes.count, Self.isWhitespace(bytes[index]) { index += 1 }
            return index < bytes.count ? bytes[index] : nil
        }

        /// The string that starts here: the range of its contents and whether it holds an escape.
        mutating func string() -> (range: Range<Int>, escaped: Bool)? {
            guard next() == UInt8(ascii: "\"") else { return nil }
            let start = index + 1
            var escaped = false
            index = start
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "\""):
                    index += 1
                    return (start..<(index - 1), escaped)
                case UInt8(ascii: "\\"):
                    escaped = true
                    index += 2
                default:
                    index += 1
                }
            }
            return nil
        }

        static func isWhitespace(_ byte: UInt8) -> Bool {
            byte == 0x20 || byte == 0x09 || byte == 0x0a || byte == 0x0d
        }

        mutating func literal(_ word: String) -> Bool {
            let word = Array(word.utf8)
            guard bytes.count - index >= word.count, bytes[index..<(index + word.count)].elementsEqual(word) else { return false }
            index += word.count
            return true
        }

        /// Past the value that starts here: a string, an object or array (its strings skipped
        /// whole, so that brackets inside them do not count), or a number or literal.
        mutating func skipValue() -> Bool {
            switch next() {
            case UInt8(ascii: "\""):
                return string() != nil
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                var depth = 0
                while index < bytes.count {
                    switch bytes[index] {
                    case UInt8(ascii: "\""):
                        guard string() != nil else { return false }
                        continue
                    case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                    case UInt8(ascii: "}"), UInt8(ascii: "]"):
                        depth -= 1
                        if depth == 0 {
                            index += 1
                            return true
                        }
                    default: break
                    }
                    index += 1
                }
                return false
            case nil:
                return false
            default:
                let start = index
                while index < bytes.count, !Self.isWhitespace(bytes[index]),
                    bytes[index] != UInt8(ascii: ","), bytes[index] != UInt8(ascii: "}"), bytes[index] != UInt8(ascii: "]")
                {
                    index += 1
                }
                return index > start
            }
        }
    }
}
