import Hummingbird

/// `GET /healthz` (the process answers), `GET /readyz` (the database answers a query; 503
/// otherwise) and `GET /metrics` (Prometheus text).
struct HealthController {
    let environment: RouteEnvironment

    func add(to router: Router<ServerRequestContext>) {
        router.get("healthz") { _, _ in
            Response.json(#"{"status":"ok"}"#)
        }
        router.get("readyz") { _, _ in
            try await environment.read { try await environment.store.ping() }
            return Response.json(#"{"status":"ready"}"#)
        }
        router.get("metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: environment.metrics.exposition())))
        }
    }
}
