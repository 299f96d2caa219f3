import ReceiptKitServer
import Testing

/// Statements' arguments bound by name: the SQL's `:name`s numbered once per database (a name
/// used twice bound once), SQL that is not the store's refused when the statement is made, and a
/// name left unbound, bound twice or not the statement's an error naming the statement and the
/// name — on each database, through its backend's binding.
@Suite("Named bindings")
struct NamedBindingTests {
    @Test("Names become numbered parameters, one number per distinct name, in order of first use")
    func numbering() {
        let statement = StoreStatement(
            """
            SELECT id FROM change_events
            WHERE customer_id = :customer_id AND (CAST(:bundle_id AS TEXT) IS NULL OR bundle_id = :bundle_id) AND id > :after
            """)
        #expect(statement.refusal == nil)
        #expect(statement.names == ["customer_id", "bundle_id", "after"])
        #expect(statement.firstLine == "SELECT id FROM change_events")
        #expect(statement.sqlite.hasSuffix("WHERE customer_id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR bundle_id = ?2) AND id > ?3"))
        #expect(statement.postgres.hasSuffix("WHERE customer_id = $1 AND (CAST($2 AS TEXT) IS NULL OR bundle_id = $2) AND id > $3"))
    }

    @Test("Casts, string literals, quoted identifiers and comments are not read as names")
    func notNames() {
        let statement = StoreStatement(
            """
            SELECT (record::json #>> '{notification,type}'), ':literal', 'it''s :quoted ? $1', "odd:column", x::text -- :comment ?
            FROM t /* :block ? */ WHERE a = :a_1 AND b = :B
            """)
        #expect(statement.refusal == nil)
        #expect(statement.names == ["a_1", "B"])
        #expect(statement.postgres == """
            SELECT (record::json #>> '{notification,type}'), ':literal', 'it''s :quoted ? $1', "odd:column", x::text -- :comment ?
            FROM t /* :block ? */ WHERE a = $1 AND b = $2
            """)
        #expect(statement.sqlite.hasSuffix("WHERE a = ?1 AND b = ?2"))
    }

    @Test("A statement without parameters binds none")
    func noParameters() throws {
        let statement = StoreStatement("SELECT COUNT(*) FROM inputs WHERE kind = 'notification'")
        #expect(statement.names.isEmpty)
        #expect(statement.sqlite == statement.postgres)
        #expect(try statement.values([:]).isEmpty)
    }

    @Test(
        "SQL that still has a positional parameter, or a literal left open, is refused when the statement is made",
        arguments: [
            ("SELECT 1 FROM inputs WHERE dedup_key = ?", "bare ?"),
            ("SELECT 1 FROM inputs WHERE dedup_key = :dedup_key AND id > ?", "bare ?"),
            ("SELECT 1 FROM inputs WHERE id = $1", "positional"),
            ("SELECT 1 FROM inputs WHERE kind = 'notification", "string literal is not closed"),
            ("SELECT 1 FROM inputs /* WHERE kind = :kind", "comment is not closed"),
        ])
    func refused(sql: String, reason: String) throws {
        let statement = StoreStatement(sql)
        let refusal = try #require(statement.refusal)
        #expect(refusal.contains(reason))
        let error = try #require(throws: StoreError.self) { try statement.values(["dedup_key": .text("k")]) }
        #expect(error.description.contains("\"SELECT 1 FROM inputs"))
        #expect(error.description.contains(reason))
    }

    @Test("Each value goes to its name's number, whatever order it is bound in, and a name used twice is bound once")
    func resolving() throws {
        let statement = StoreStatement("UPDATE outbox SET body = :body WHERE id = :id AND :id > 0")
        let values = try statement.values(["id": .integer(7), "body": .bytes([1, 2])])
        #expect(values == [.bytes([1, 2]), .integer(7)])
        let merged: Bindings = ["id": .integer(7)]
        #expect(try statement.values(merged + ["body": .null]) == [.null, .integer(7)])
    }

    @Test("A name left unbound, not the statement's, or bound twice is an error naming the statement and the name")
    func mismatches() throws {
        let statement = StoreStatement(
            """
            UPDATE change_events SET payload = :payload
            WHERE id = :id
            """)
        let missing = try #require(throws: StoreError.self) { try statement.values(["payload": .text("{}")]) }
        #expect(missing.description.contains("\"UPDATE change_events SET payload = :payload\""))
        #expect(missing.description.contains(":id"))
        #expect(missing.description.contains("not bound"))

        let extra = try #require(throws: StoreError.self) {
            try statement.values(["payload": .text("{}"), "id": .integer(1), "customer_id": .text("c")])
        }
        #expect(extra.description.contains("\"UPDATE change_events SET payload = :payload\""))
        #expect(extra.description.contains(":customer_id"))

        // A misspelt name is both: caught however many values are bound.
        let misspelt = try #require(throws: StoreError.self) { try statement.values(["payload": .text("{}"), "ids": .integer(1)]) }
        #expect(misspelt.description.contains(":ids"))

        let twice = try #require(throws: StoreError.self) {
            try statement.values(["payload": .text("{}"), "id": .integer(1)] + ["id": .integer(2)])
        }
        #expect(twice.description.contains(":id"))
        #expect(twice.description.contains("twice"))
    }

    /// A statement both databases run, naming one parameter twice.
    static let echo = StoreStatement("SELECT CAST(:first AS TEXT), CAST(:second AS TEXT), CAST(:first AS TEXT)")

    @Test("Each database binds by name through its backend", arguments: Backend.available)
    func binding(backend: Backend) async throws {
        try await backend.withDatabase { location, searchPath in
            try await withStore(location, searchPath: searchPath) { store in
                let rows = try await store.textRows(of: Self.echo, ["second": .text("b"), "first": .text("a")], columns: 3)
                #expect(rows == [[.text("a"), .text("b"), .text("a")]])
            }
        }
    }

    @Test("Each database refuses, before it runs the statement, a name left unbound or not the statement's", arguments: Backend.available)
    func mismatchedBinding(backend: Backend) async throws {
        try await backend.withDatabase { location, searchPath in
            try await withStore(location, searchPath: searchPath) { store in
                let missing = await #expect(throws: StoreError.self) {
                    try await store.textRows(of: Self.echo, ["first": .text("a")], columns: 3)
                }
                #expect(missing?.description.contains("\"SELECT CAST(:first AS TEXT)") == true)
                #expect(missing?.description.contains(":second") == true)

                let extra = await #expect(throws: StoreError.self) {
                    try await store.textRows(of: Self.echo, ["first": .text("a"), "second": .text("b"), "third": .text("c")], columns: 3)
                }
                #expect(extra?.description.contains(":third") == true)

                let refused = await #expect(throws: StoreError.self) {
                    try await store.textRows(of: StoreStatement("SELECT CAST(? AS TEXT)"), [:], columns: 1)
                }
                #expect(refused?.description.contains("bare ?") == true)
            }
        }
    }
}
