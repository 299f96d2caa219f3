import Hummingbird
import NIOConcurrencyHelpers

/// The methods each route's path is served with, for answering a method the path is not
/// served with: 405 `method_not_allowed` with `Allow` listing the ones it is (RFC 9110, 15.5.6),
/// where the router alone answers 404 as for a path it does not know.
///
/// Filled once, after the router holds every route (``fill(_:)``), before the server accepts a
/// connection; read by ``RequestLogMiddleware`` on each request the router found no route for.
final class RouteMethods: Sendable {
    /// A route's path as segments, each a literal or a capture (`{customer_id}`), and its methods.
    private struct Route: Sendable {
        let segments: [Substring]
        var methods: [String]
    }

    private let routes = Locked<[Route]>([])

    /// Records every route of the router: `(method, path)` as ``BuiltServer/routes`` lists them.
    func fill(_ table: [(method: String, path: String)]) {
        var routes: [Route] = []
        for (method, path) in table {
            let segments = Self.segments(path)
            if let index = routes.firstIndex(where: { $0.segments == segments }) {
                if !routes[index].methods.contains(method) { routes[index].methods.append(method) }
            } else {
                routes.append(Route(segments: segments, methods: [method]))
            }
        }
        self.routes.withLockedValue { $0 = routes }
    }

    /// The methods `path` is served with (sorted, for `Allow`), or `nil` when no route has the
    /// path: then the answer is 404.
    func allowed(on path: String) -> [String]? {
        let segments = Self.segments(path)
        let methods = routes.withLockedValue { routes in
            routes.filter { Self.matches($0.segments, segments) }.flatMap(\.methods)
        }
        guard !methods.isEmpty else { return nil }
        return Set(methods).sorted()
    }

    private static func segments(_ path: String) -> [Substring] {
        path.split(separator: "/", omittingEmptySubsequences: true)
    }

    private static func matches(_ route: [Substring], _ path: [Substring]) -> Bool {
        guard route.count == path.count else { return false }
        return zip(route, path).allSatisfy { pattern, segment in
            (pattern.first == "{" && pattern.last == "}") || pattern == segment
        }
    }
}
