public import Hummingbird
import Synchronization

/// The request context of every route: Hummingbird's core storage plus ``notes``, where a
/// handler leaves what the request's one log line and its metrics should say.
public struct ServerRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// What the handler found: read by ``RequestLogMiddleware`` once the handler has answered.
    let notes = RequestNotes()
    /// What the bearer middleware found (``BearerTokenMiddleware``): a route that needs a scope
    /// checks it here, and refuses a request the middleware has not seen.
    var access = Access.unchecked

    /// Who a request is.
    enum Access: Sendable {
        /// The bearer middleware has not seen the request.
        case unchecked
        /// The server has no token (it listens on loopback only): every route is open.
        case open
        /// The request's token.
        case token(APIToken)
    }

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
    }
}

/// What a handler tells the request's log line: the verdict (`verified` or an error code), the
/// notification type, whether the event was a replay. A class, so that the handler and the
/// middleware, which hold copies of the context, share it.
final class RequestNotes: Sendable {
    struct Values: Sendable {
        var verdict: String?
        var notificationType: String?
        var duplicate: Bool?
        var reason: String?
        /// The name of the request's API token.
        var token: String?
    }

    private let values = Mutex(Values())

    func update(_ change: (inout Values) -> Void) {
        values.withLock { change(&$0) }
    }

    var snapshot: Values {
        values.withLock { $0 }
    }
}
