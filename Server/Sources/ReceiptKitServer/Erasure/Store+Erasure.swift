/// Erasing a customer (``CustomerErasure``).
extension Store {
    /// Erases a customer id from every table, in one transaction (``Erasing``).
    ///
    /// - Returns: What was erased, or `nil` when no subscription is linked to the id and no
    ///   consent is recorded for it (nothing names it, or a deletion erased it already).
    /// - Throws: ``StoreError`` when the database fails.
    func erase(customerId: String) async throws -> CustomerErasure.Outcome? {
        try await backend.write(Erasing(customerId: customerId, dialect: backend.dialect))
    }
}
