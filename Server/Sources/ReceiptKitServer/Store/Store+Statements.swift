/// One statement run as given, for tests of how a statement's values are bound by name through
/// each backend (``StoreStatement/values(_:)``); the store's own operations run its statements
/// only through their steps.
extension Store {
    /// The rows of one statement that only reads, each of its `columns` cells read as text.
    ///
    /// - Throws: ``StoreError`` when `bindings` do not bind the statement's names, as the store's
    ///   own statements would.
    package func textRows(of statement: StoreStatement, _ bindings: Bindings, columns: Int) async throws -> [[StoreValue]] {
        try await backend.query(Fetch(statement: statement, columns: Array(repeating: .text, count: columns), bindings: bindings))
    }
}
