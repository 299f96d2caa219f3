/// What erasing a customer reads and writes (``Erasing``): their links and consent, the links of
/// the `appAccountToken`s their subscriptions carry, and every stored text that names them — the
/// feed's events, the webhooks' bodies, the bodies of purchases stored before their customer id
/// was kept apart from Apple's bytes.
enum ErasureStatements {
    /// Whether a customer's consent to share consumption data is recorded.
    static let consent = Query("SELECT consented FROM consumption_consents WHERE customer_id = :customer_id") { (consented: Bool) in consented }

    /// Every stored copy of a key's transactions, whose `appAccountToken`s (Apple's signed data,
    /// which is kept) tell which linked customer ids are tokens (``VerifiedInput`` linked the
    /// purchase's token as a customer) and whether the customer's id is one. Deflated copies
    /// (``StoredJSON``) are searched once inflated, as SQL cannot.
    static let copiesOfKey = Query(
        """
        SELECT copy FROM transaction_copies WHERE original_transaction_id = :original_transaction_id
            AND bundle_id = :bundle_id AND environment = :environment
        """
    ) { (copy: StoredJSON) in copy }

    /// The feed's events of a key.
    static let eventsOfKey = Query(
        """
        SELECT id, payload FROM change_events WHERE original_transaction_id = :original_transaction_id
            AND bundle_id = :bundle_id AND environment = :environment
        """
    ) { (id: Int64, payload: String) in (id: id, payload: payload) }

    /// The outbox rows (webhooks) carrying an event of a key.
    static let deliveriesOfKey = Query(
        """
        SELECT o.id, o.body FROM change_events e JOIN outbox o ON o.event_id = e.id
        WHERE e.original_transaction_id = :original_transaction_id AND e.bundle_id = :bundle_id AND e.environment = :environment
        """
    ) { (id: Int64, body: [UInt8]) in (id: id, body: body) }

    /// A customer's own events (its named entitlements').
    static let eventsOfCustomer = Query("SELECT id, payload FROM change_events WHERE customer_id = :customer_id") {
        (id: Int64, payload: String) in (id: id, payload: payload)
    }

    /// The outbox rows (webhooks) carrying a customer's own events.
    static let deliveriesOfCustomer = Query(
        "SELECT o.id, o.body FROM change_events e JOIN outbox o ON o.event_id = e.id WHERE e.customer_id = :customer_id"
    ) { (id: Int64, body: [UInt8]) in (id: id, body: body) }

    /// A customer's own events kept, redacted, as no one's: the id is gone from the column too
    /// (`''`, which no customer id is, and not `NULL`, which would give them to the purchase's
    /// other customers).
    static let forgetEventCustomer = StoreStatement("UPDATE change_events SET customer_id = '' WHERE customer_id = :customer_id")

    /// The purchases the app reported under a key (`POST /v1/transactions` with a signed
    /// transaction or a receipt), with their stored bytes.
    static let purchasesOfKey = Query(
        """
        SELECT i.id, i.raw, i.raw_encoding FROM input_subscriptions k JOIN inputs i ON i.id = k.input_id
        WHERE k.original_transaction_id = :original_transaction_id AND k.bundle_id = :bundle_id AND k.environment = :environment
            AND i.source = 'app' AND i.kind IN ('transaction', 'receipt')
        """
    ) { (id: Int64, raw: [UInt8], encoding: Int64) in (id: id, stored: raw, encoding: encoding) }

    /// Unlinks a customer from every key.
    static let unlink = StoreStatement("DELETE FROM customer_subscriptions WHERE customer_id = :customer_id")

    /// Forgets a customer's consent.
    static let deleteConsent = StoreStatement("DELETE FROM consumption_consents WHERE customer_id = :customer_id")

    /// An event's payload rewritten.
    static let updatePayload = StoreStatement("UPDATE change_events SET payload = :payload WHERE id = :id")

    /// An outbox row's body rewritten.
    static let updateBody = StoreStatement("UPDATE outbox SET body = :body WHERE id = :id")

    /// An input's stored bytes rewritten.
    static let updateRaw = StoreStatement("UPDATE inputs SET raw = :raw, raw_encoding = :raw_encoding WHERE id = :id")
}
