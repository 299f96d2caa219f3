public import Hummingbird
import Synchronization

/// The request context of every route: Hummingbird's core storage plus ``notes``, where a
/// handler leaves what the request's one log line and its metrics should say.
public struct ServerRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// What the handler found: read by ``RequestLogMiddleware`` once the handler has answered.
    let notes = RequestNotes()

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
    }

    private let values = Mutex(Values())

    func update(_ change: (inout Values) -> Void) {
        values.withLock { change(&$0) }
    }

    var snapshot: Values {
        values.withLock { $0 }
    }
}
