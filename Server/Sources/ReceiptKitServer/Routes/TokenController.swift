import Hummingbird

/// `GET /v1/token`: the request's own token, `{"name", "scope"}` — what the console asks to show
/// only what the token may do. On a server without tokens, `{"name": null, "scope": "admin"}`.
struct TokenController {
    func add(to group: RouterGroup<ServerRequestContext>) {
        group.route(.get, "token", scope: .read) { _, context in
            switch context.access {
            case .token(let token): return try Response.json(TokenAnswer(name: token.name, scope: token.scope.rawValue))
            default: return try Response.json(TokenAnswer(name: nil, scope: TokenScope.admin.rawValue))
            }
        }
    }
}

/// A token's name and scope (never the token).
struct TokenAnswer: Encodable {
    let name: String?
    let scope: String
}
