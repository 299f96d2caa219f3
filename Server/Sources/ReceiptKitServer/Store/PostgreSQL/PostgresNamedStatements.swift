import PostgresNIO

/// A statement of the store's that PostgreSQL keeps prepared on each connection: parsed and
/// planned on the connection's first use of it, then only bound and run (postgres-nio's
/// `PostgresPreparedStatement`, which the connection keeps by ``name`` until it closes). Every
/// other statement is sent unnamed, parsed and planned each time it runs.
///
/// Named here are the statements of every read of a key, of a customer's named entitlements and
/// of every search, where planning
/// costs more than running: the four-part `UNION ALL` of a key's current rows
/// (``LedgerStatements/current``) took 1.36 ms a run planned each time against 0.17 ms prepared
/// (`pgbench -M extended` against `-M prepared`, one client, a database of 50,000 keys).
protocol PostgresNamedStatement: Sendable {
    /// The name the statement is prepared as, unique among the store's.
    static var name: String { get }
    /// The statement.
    static var statement: StoreStatement { get }
}

enum PostgresNamedStatements {
    enum Current: PostgresNamedStatement {
        static let name = "receiptkit_current", statement = LedgerStatements.current.statement
    }
    enum KeysOfOriginalTransactionId: PostgresNamedStatement {
        static let name = "receiptkit_keys_of_original_transaction_id", statement = LedgerStatements.keysOfOriginalTransactionId.statement
    }
    enum KeysOfCustomer: PostgresNamedStatement {
        static let name = "receiptkit_keys_of_customer", statement = LedgerStatements.keysOfCustomer.statement
    }
    enum KeysOfTransactionId: PostgresNamedStatement {
        static let name = "receiptkit_keys_of_transaction_id", statement = ConsoleStatements.keysOfTransactionId.statement
    }

    /// What an app's poll of a named entitlement reads first (``Store/entitlementSources(customerId:at:namedProductsOf:)``).
    enum SourcesOfCustomer: PostgresNamedStatement {
        static let name = "receiptkit_sources_of_customer", statement = EntitlementStatements.sourcesOfCustomer.statement
    }

    static let all: [any PostgresNamedStatement.Type] = [
        Current.self, KeysOfOriginalTransactionId.self, KeysOfCustomer.self, KeysOfTransactionId.self, SourcesOfCustomer.self,
    ]

    /// Each named statement by its PostgreSQL text.
    static let byText: [String: any PostgresNamedStatement.Type] = Dictionary(
        uniqueKeysWithValues: all.map { ($0.statement.postgres, $0) })
}

/// A named statement with its values bound, as postgres-nio runs one.
struct PostgresNamed<Statement: PostgresNamedStatement>: PostgresPreparedStatement {
    typealias Row = PostgresRow

    static var name: String { Statement.name }
    static var sql: String { Statement.statement.postgres }

    let bindings: PostgresBindings

    func makeBindings() -> PostgresBindings { bindings }
    func decodeRow(_ row: PostgresRow) -> PostgresRow { row }
}
