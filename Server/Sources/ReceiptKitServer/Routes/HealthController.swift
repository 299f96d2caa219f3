import Hummingbird

/// `GET /healthz` (the process answers), `GET /readyz` (the database accepts a write within
/// the readiness timeout; 503 `database_unavailable` otherwise, so that a load balancer sends
/// Apple's retries elsewhere) and `GET /metrics` (Prometheus text).
struct HealthController {
    let environment: RouteEnvironment

    func add(to router: Router<ServerRequestContext>) {
        router.get("healthz") { _, _ in
            Response.json(#"{"status":"ok"}"#)
        }
        router.get("readyz") { _, _ in
            try await environment.ready()
            return Response.json(#"{"status":"ready"}"#)
        }
        router.get("metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: environment.metrics.exposition())))
        }
    }
}
