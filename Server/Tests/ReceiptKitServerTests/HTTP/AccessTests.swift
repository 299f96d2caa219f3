import Foundation
import Hummingbird
import HummingbirdTesting
import ReceiptKitServer
import Testing

@Suite("Bearer token, health, readiness, metrics, unknown routes")
struct AccessTests {
    @Test("/v1/* and /verifyReceipt need the exact bearer token; the webhook and health routes do not", arguments: Backend.available)
    func bearerToken(backend: Backend) async throws {
        try await TestServer.run(backend) { server in
            for path in ["/v1/customers/x/entitlements", "/v1/subscriptions/1"] {
                try await server.get(path, token: nil).expectError(.unauthorized, "unauthorized")
                for wrong in ["", "test-token-012345678", "test-token-01234567890", "TEST-TOKEN-0123456789", "x"] {
                    try await server.get(path, token: wrong).expectError(.unauthorized, "unauthorized")
                }
                #expect(try await server.get(path).status != .unauthorized)
            }
            let basic = try await server.client.execute(
                uri: "/v1/customers/x/entitlements", method: .get,
                headers: [.authorization: "Basic dGVzdC10b2tlbi0wMTIzNDU2Nzg5"], body: nil)
            try basic.expectError(.unauthorized, "unauthorized")
            #expect(basic.headers[.wwwAuthenticate] == "Bearer")
            try await server.post("/v1/transactions", "{}", token: nil).expectError(.unauthorized, "unauthorized")
            try await server.post("/verifyReceipt", "{}", token: nil).expectError(.unauthorized, "unauthorized")

            #expect(try await server.get("/healthz", token: nil).json()["status"] as? String == "ok")
            #expect(try await server.get("/readyz", token: nil).json()["status"] as? String == "ready")
            try await server.get("/nowhere", token: nil).expectError(.notFound, "not_found")
        }
    }

    @Test("a method a path is not served with is 405 with Allow listing those it is; an unknown path stays 404", arguments: Backend.available)
    func methodNotAllowed(backend: Backend) async throws {
        try await TestServer.run(backend) { server in
            let cases: [(HTTPRequest.Method, String, String)] = [
                (.patch, "/v1/transactions", "POST"),
                (.delete, "/healthz", "GET"),
                (.init("TRACE")!, "/v1/customers/jane/entitlements", "GET"),
                (.post, "/v1/customers/jane/grants/123", "DELETE"),
                (.put, "/v1/customers/jane", "DELETE"),
                (.get, "/appstore/notifications", "POST"),
            ]
            for (method, path, allowed) in cases {
                // The token is checked only on a route that exists: without one the answer is the same.
                for token in [testToken, nil] {
                    var headers = HTTPFields()
                    if let token { headers[.authorization] = "Bearer \(token)" }
                    let answer = try await server.client.execute(uri: path, method: method, headers: headers, body: nil)
                    try answer.expectError(.methodNotAllowed, "method_not_allowed")
                    #expect(answer.headers[.allow] == allowed, "\(method) \(path)")
                }
            }
            let grants = try await server.client.execute(uri: "/v1/customers/jane/grants", method: .delete, headers: [:], body: nil)
            try grants.expectError(.methodNotAllowed, "method_not_allowed")
            #expect(grants.headers[.allow] == "GET, POST")
            try await server.get("/v1/customers/jane/entitlements/pro/more").expectError(.notFound, "not_found")
            try await server.get("/v1/nowhere").expectError(.notFound, "not_found")
        }
    }

    @Test("a body member the route does not know, or null where it is not nullable, is 400 naming it", arguments: Backend.available)
    func strictBodies(backend: Backend) async throws {
        try await TestServer.run(backend) { server in
            let unknown = try await server.post("/v1/transactions", #"{"signed_transaction": "x", "customerId": "jane"}"#)
            try unknown.expectError(.badRequest, "invalid_request")
            #expect(try unknown.errorMessage().contains("customerId"))
            let null = try await server.put("/v1/customers/jane/consumption-consent", #"{"consented": null}"#)
            try null.expectError(.badRequest, "invalid_request")
            #expect(try null.errorMessage().contains("consented is null"))
            // customer_id is nullable (null links the purchase to its appAccountToken): the body
            // passes the reading and fails only verification.
            try await server.post("/v1/transactions", #"{"signed_transaction": "x", "customer_id": null}"#)
                .expectError(.badRequest, "malformed_jws")
            let long = String(repeating: "é", count: 257)
            try await server.get("/v1/customers/\(long)/entitlements".addingPercentEncoding(withAllowedCharacters: .urlPathAllowed)!)
                .expectError(.badRequest, "invalid_request")
            #expect(try await server.get("/v1/customers/\(String(repeating: "é", count: 256))/entitlements"
                .addingPercentEncoding(withAllowedCharacters: .urlPathAllowed)!).status == .ok)
            try await server.get("/v1/customers/a%00b/entitlements").expectError(.badRequest, "invalid_request")
        }
    }

    @Test("without a token the server refuses to start unless bound to loopback")
    func tokenRequired() throws {
        var environment = Vectors.environment
        environment["HOST"] = "0.0.0.0"
        #expect(throws: ConfigurationError.self) { try ServerConfiguration(environment: environment) }
        environment["RECEIPTKIT_API_TOKEN"] = "secret"
        #expect(try ServerConfiguration(environment: environment).apiToken == "secret")
        environment["HOST"] = "127.0.0.1"
        environment["RECEIPTKIT_API_TOKEN"] = nil
        #expect(try ServerConfiguration(environment: environment).apiToken == nil)
    }

    @Test("RECEIPTKIT_DATABASE_URL: sqlite:PATH or postgres://…, anything else refused")
    func databaseURL() throws {
        #expect(try DatabaseLocation(url: "sqlite:/tmp/a.sqlite") == .sqlite(path: "/tmp/a.sqlite"))
        #expect(try DatabaseLocation(url: "sqlite:data/a.sqlite") == .sqlite(path: "data/a.sqlite"))
        guard case .postgres(let location) = try DatabaseLocation(url: "postgres://rk:p%40ss@db.local:6543/receipts?sslmode=disable")
        else {
            Issue.record("not postgres")
            return
        }
        #expect(location.host == "db.local")
        #expect(location.port == 6543)
        #expect(location.username == "rk")
        #expect(location.password == "p@ss")
        #expect(location.database == "receipts")
        #expect(location.sslMode == "disable")
        for bad in ["mysql://x/y", "sqlite:", "postgres://host/db", "postgres://user@host", "postgres://u@h/d?sslmode=maybe"] {
            #expect(throws: ConfigurationError.self, "\(bad)") { try DatabaseLocation(url: bad) }
        }
    }

    @Test("/metrics counts requests by route and status, verifications by result, notifications by type", arguments: Backend.available)
    func metrics(backend: Backend) async throws {
        let p = try Payloads()
        let t0 = ms("2025-06-01T12:00:00Z")
        let jws = try p.notification(
            type: "SUBSCRIBED", subtype: "RESUBSCRIBE", signed: t0,
            transaction: p.transaction(id: "9001", original: "9001", purchase: t0, expires: t0 + day, signed: t0), renewalInfo: nil)
        // A character inside the signature changed, not its last: the last carries unused bits,
        // and a nonzero one there is malformed base64url (ending "AA", the signature became "BB").
        var characters = Array(jws)
        let changed = characters.count - 10
        characters[changed] = characters[changed] == "A" ? "B" : "A"
        let tampered = String(characters)
        try await TestServer.run(backend) { server in
            #expect(try await server.notify(jws).status == .ok)
            #expect(try await server.notify(tampered).status == .badRequest)
            _ = try await server.get("/v1/subscriptions/9001")
            let response = try await server.get("/metrics", token: nil)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType]?.hasPrefix("text/plain") == true)
            let text = response.text
            #expect(text.contains(#"receiptkit_notifications_total{type="SUBSCRIBED",bundle_id="com.receiptkit.example",environment="Sandbox"} 1"#), "\(text)")
            #expect(text.contains(#"receiptkit_verifications_total{result="verified",bundle_id="com.receiptkit.example",environment="Sandbox"} 1"#))
            #expect(text.contains(#"receiptkit_verifications_total{result="invalid_signature",bundle_id="-",environment="-"} 1"#))
            #expect(text.contains(#"receiptkit_http_requests_total{route="/appstore/notifications",method="POST",status="200"} 1"#))
            #expect(text.contains(#"receiptkit_http_requests_total{route="/appstore/notifications",method="POST",status="400"} 1"#))
            #expect(text.contains(#"receiptkit_http_requests_total{route="/v1/subscriptions/{original_transaction_id}",method="GET",status="200"} 1"#))
            #expect(text.contains(#"receiptkit_http_request_duration_seconds_count{route="/appstore/notifications"} 2"#))
            #expect(text.contains(#"receiptkit_http_request_duration_seconds_bucket{route="/appstore/notifications",le="+Inf"} 2"#))
        }
    }
}

@Suite("PostgreSQL")
struct PostgresAvailabilityTests {
    /// Skipped without `RECEIPTKIT_TEST_POSTGRES_URL` outside CI: every store test then ran on
    /// SQLite only.
    @Test(
        "the suite's PostgreSQL runs",
        .requires(.postgres))
    func available() async throws {
        try await Backend.postgres.withDatabase { location, searchPath in
            try await withStore(location, searchPath: searchPath) { store in
                try await store.migrate()
                try await store.migrate()  // a second server starting: nothing to do
                try await store.ping()
                #expect(try await store.inputCount(dedupKeys: nil) == 0)
            }
        }
    }
}
