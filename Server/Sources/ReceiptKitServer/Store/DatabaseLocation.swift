import Foundation

/// Where the store lives, from `RECEIPTKIT_DATABASE_URL`.
public enum DatabaseLocation: Sendable, Equatable {
    /// A SQLite file (created when missing), opened in WAL mode.
    case sqlite(path: String)
    /// A PostgreSQL server.
    case postgres(PostgresLocation)

    /// Parses `sqlite:PATH` or `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=…]`
    /// (`postgresql://` too).
    ///
    /// - Parameter url: The URL's text.
    /// - Throws: ``ConfigurationError`` saying what is wrong with it.
    public init(url: String) throws(ConfigurationError) {
        if url.hasPrefix("sqlite:") {
            var path = String(url.dropFirst("sqlite:".count))
            if path.hasPrefix("//") { path.removeFirst(2) }  // sqlite:///abs/path and sqlite://rel/path
            guard !path.isEmpty else {
                throw ConfigurationError("RECEIPTKIT_DATABASE_URL is \"sqlite:\" without a path; expected sqlite:PATH")
            }
            self = .sqlite(path: path)
        } else if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
            self = .postgres(try PostgresLocation(url: url))
        } else {
            throw ConfigurationError("RECEIPTKIT_DATABASE_URL must start with sqlite: or postgres://")
        }
    }
}

/// A PostgreSQL server and database, from a `postgres://` URL.
public struct PostgresLocation: Sendable, Equatable {
    /// The server's host name or address.
    public var host: String
    /// The server's port.
    public var port: Int
    /// The role to log in as.
    public var username: String
    /// Its password, if any.
    public var password: String?
    /// The database.
    public var database: String
    /// The URL's `sslmode`: `disable`, `prefer` (the default) or `require`.
    public var sslMode: String

    init(url: String) throws(ConfigurationError) {
        guard let components = URLComponents(string: url), let host = components.host, !host.isEmpty else {
            throw ConfigurationError("RECEIPTKIT_DATABASE_URL is not a valid postgres:// URL with a host")
        }
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty else {
            throw ConfigurationError("RECEIPTKIT_DATABASE_URL names no database: expected postgres://USER@HOST/DATABASE")
        }
        guard let username = components.user, !username.isEmpty else {
            throw ConfigurationError("RECEIPTKIT_DATABASE_URL names no user: expected postgres://USER@HOST/DATABASE")
        }
        var sslMode = "prefer"
        for item in components.queryItems ?? [] where item.name == "sslmode" {
            guard let mode = item.value, ["disable", "prefer", "require"].contains(mode) else {
                throw ConfigurationError("RECEIPTKIT_DATABASE_URL's sslmode must be disable, prefer or require")
            }
            sslMode = mode
        }
        self.host = host
        self.port = components.port ?? 5432
        self.username = username.removingPercentEncoding ?? username
        self.password = components.password.map { $0.removingPercentEncoding ?? $0 }
        self.database = database.removingPercentEncoding ?? database
        self.sslMode = sslMode
    }
}
