package import ReceiptKit

/// Apple's inputs and the states they decide.
extension Store {
    /// Stores a verified input and, if it is new, folds its ledger copies into its keys (a cost
    /// that does not grow with a key's history) and writes the feed's events it causes; adds its
    /// customer links in any case. One transaction (``Recording``).
    ///
    /// Stops waiting after ``timeout``, throwing ``StoreError``, or as soon as the calling task is
    /// cancelled (a request's timeout), throwing `CancellationError`, even while the database
    /// still waits for a lock or a connection; the write may then still commit, which is
    /// harmless (the client retries, and a replay changes nothing).
    ///
    /// - Returns: `true` when the input is new, `false` when its dedup key was already stored (a
    ///   replay, which changes no state) or when it only repeats what is stored
    ///   (``VerifiedInput/skipsRepeats``).
    /// - Throws: ``StoreError`` when the database fails or does not answer within ``timeout``;
    ///   `CancellationError`.
    package func record(_ input: VerifiedInput) async throws -> Bool {
        let recording = Recording(input, dialect: backend.dialect, features: features, directory: headers)
        let recorded: Recording.Result
        do {
            recorded = try await backend.record(recording, deadline: timeout.map { ContinuousClock.now + $0 })
        } catch let error as StoreError {
            throw error
        } catch let error as CancellationError {
            throw error
        } catch {
            throw StoreError(String(describing: error))
        }
        headers.remember(recorded.headers)
        features.tell(recorded.commit)
        return recorded.isNew
    }

    /// The keys linked to a customer, sorted.
    package func keys(customerId: String) async throws -> [SubscriptionKey] {
        try await backend.rows(LedgerStatements.keysOfCustomer, ["customer_id": .text(customerId)]).sorted()
    }

    /// The keys with this original transaction id (one per bundle id and environment), sorted.
    package func keys(originalTransactionId: String) async throws -> [SubscriptionKey] {
        try await backend.rows(LedgerStatements.keysOfOriginalTransactionId, ["original_transaction_id": .text(originalTransactionId)]).sorted()
    }

    /// The keys of the transactions with this transaction id (a renewal's, say), sorted.
    package func keys(transactionId: String) async throws -> [SubscriptionKey] {
        try await backend.rows(ConsoleStatements.keysOfTransactionId, ["transaction_id": .text(transactionId)]).sorted()
    }

    /// A key's state at an instant, evaluated by ReceiptKit's ``EntitlementLedger`` from the stored
    /// copies that decide it (``Evaluation``), read in one snapshot; `nil` when no transaction of
    /// the key is known at that instant.
    package func state(of key: SubscriptionKey, at instant: Timestamp) async throws -> SubscriptionState? {
        try await backend.read(Evaluation(key: key, at: instant))
    }

    /// The state now or as of an instant of every key linked to a customer that has one, sorted
    /// by key.
    package func states(customerId: String, at instant: Timestamp) async throws -> [SubscriptionState] {
        try await states(of: keys(customerId: customerId), at: instant)
    }

    /// The state of every key with this original transaction id that has one, sorted by key.
    package func states(originalTransactionId: String, at instant: Timestamp) async throws -> [SubscriptionState] {
        try await states(of: keys(originalTransactionId: originalTransactionId), at: instant)
    }

    private func states(of keys: [SubscriptionKey], at instant: Timestamp) async throws -> [SubscriptionState] {
        var states: [SubscriptionState] = []
        for key in keys {
            if let state = try await state(of: key, at: instant) { states.append(state) }
        }
        return states
    }

    /// The stored inputs that touched any of these keys (their transactions' or renewal info's
    /// key), each once, in the order they were stored.
    package func inputs(touching keys: some Sequence<SubscriptionKey>) async throws -> [StoredInput] {
        let perKey = try await backend.read(EachQueryStep(InputStatements.inputsOfKey, Set(keys).map(LedgerStatements.key)))
        var inputs: [Int64: StoredInput] = [:]
        for input in perKey.joined() { inputs[input.id] = input }
        return inputs.values.sorted { $0.id < $1.id }
    }

    /// The raw bytes of the input with this dedup key, exactly as received (to pass on what Apple
    /// sent, byte for byte), or `nil` when no such input is stored.
    package func raw(dedupKey: String) async throws -> [UInt8]? {
        try await backend.read(RawReading(dedupKey: dedupKey))
    }

    /// The number of stored inputs, or of those with the given dedup keys (for tests).
    package func inputCount(dedupKeys: [String]?) async throws -> Int {
        guard let dedupKeys else { return Int(try await backend.first(InputStatements.count) ?? 0) }
        return try await backend.read(EachQueryStep(InputStatements.stored, dedupKeys.map { ["dedup_key": .text($0)] })).filter { !$0.isEmpty }.count
    }
}
