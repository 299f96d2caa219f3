import Foundation
internal import CReceiptKitServerOpenSSL
import NIOConcurrencyHelpers
import ReceiptKit

/// What a token may do. Each scope may do everything the one before it may.
public enum TokenScope: String, Sendable, Hashable, Comparable, CaseIterable {
    /// `GET` routes and the console.
    case read
    /// `read`, plus purchases, consumption answers, consent, syncs and offer signatures.
    case write
    /// `write`, plus reconciling, delivery retries and account deletion.
    case admin

    public static func < (lhs: TokenScope, rhs: TokenScope) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// One API token as the server knows it: its name (for the log), its scope, and the SHA-256 of
/// the token — never the token itself.
public struct APIToken: Sendable, Hashable {
    /// A name for people and the log (`support-staff`, `backend`).
    public let name: String
    public let scope: TokenScope
    /// SHA-256 of the token's bytes.
    let digest: [UInt8]

    /// A token known by its digest.
    public init(name: String, scope: TokenScope, digest: [UInt8]) {
        self.name = name
        self.scope = scope
        self.digest = digest
    }

    /// A token known by its text (`RECEIPTKIT_API_TOKEN`): only its digest is kept.
    public init(name: String, scope: TokenScope, token: String) {
        self.init(name: name, scope: scope, digest: APITokens.sha256(Array(token.utf8)))
    }
}

/// The tokens the API accepts: `RECEIPTKIT_API_TOKEN` (one token, scope `admin`), and those of
/// `RECEIPTKIT_API_TOKENS_FILE`, read again on `SIGHUP` so that a token is rotated with no
/// request refused (both lines in the file while one replaces the other).
///
/// A request's token is hashed and its digest compared with every known digest in constant time:
/// neither the token's value nor which entry it matched shows in the time taken. Tokens are never
/// logged; a token's name is.
public final class APITokens: Sendable {
    /// The fixed tokens (`RECEIPTKIT_API_TOKEN`).
    private let fixed: [APIToken]
    /// The file read on start and on `SIGHUP`, if any.
    let file: String?
    private let fromFile: Locked<[APIToken]>

    /// The tokens of a configuration, the file read now.
    ///
    /// - Throws: ``ConfigurationError`` naming the file and line that is wrong.
    public init(token: String?, file: String?) throws(ConfigurationError) {
        fixed = token.map { [APIToken(name: "RECEIPTKIT_API_TOKEN", scope: .admin, token: $0)] } ?? []
        self.file = file
        fromFile = Locked(try file.map(Self.read) ?? [])
    }

    /// Whether any token is configured (none: the API is open, on loopback only).
    public var isEmpty: Bool {
        fixed.isEmpty && fromFile.withLockedValue { $0.isEmpty }
    }

    /// The tokens known now.
    public var all: [APIToken] {
        fixed + fromFile.withLockedValue { $0 }
    }

    /// Reads the file again; on an error the tokens stay as they were.
    ///
    /// - Returns: How many tokens the file holds now.
    /// - Throws: ``ConfigurationError`` naming the line that is wrong.
    @discardableResult
    public func reload() throws(ConfigurationError) -> Int {
        guard let file else { return 0 }
        let tokens = try Self.read(file)
        fromFile.withLockedValue { $0 = tokens }
        return tokens.count
    }

    /// The token a request presented, if it is one of the known ones.
    func authenticate(_ presented: [UInt8]) -> APIToken? {
        let digest = Self.sha256(presented)
        var found: APIToken?
        for token in all where Self.constantTimeEqual(digest, token.digest) {
            found = token
        }
        return found
    }

    /// `RECEIPTKIT_API_TOKENS_FILE`: one token per line, `NAME SCOPE SHA256_HEX` separated by
    /// white space, `#` starting a comment; the digest in lowercase hex.
    static func read(_ path: String) throws(ConfigurationError) -> [APIToken] {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            throw ConfigurationError("RECEIPTKIT_API_TOKENS_FILE: cannot read \(path) as UTF-8 text")
        }
        return try parse(text, path: path)
    }

    /// The tokens of a file's text.
    package static func parse(_ text: String, path: String) throws(ConfigurationError) -> [APIToken] {
        var tokens: [APIToken] = []
        var names = Set<String>()
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let fields = content.split(whereSeparator: \.isWhitespace)
            guard !fields.isEmpty else { continue }
            let place = "RECEIPTKIT_API_TOKENS_FILE \(path), line \(index + 1)"
            guard fields.count == 3 else {
                throw ConfigurationError("\(place): expected NAME SCOPE SHA256_HEX, found \(fields.count) fields")
            }
            let name = String(fields[0])
            guard let scope = TokenScope(rawValue: String(fields[1])) else {
                throw ConfigurationError("\(place): the scope is \"\(fields[1])\"; expected read, write or admin")
            }
            guard Hex.isLowercase(fields[2], count: 64) else {
                throw ConfigurationError(
                    "\(place): expected the SHA-256 of the token in 64 lowercase hex digits (receiptkit-server token new prints it), not the token")
            }
            guard names.insert(name).inserted else { throw ConfigurationError("\(place): the name \(name) is used twice") }
            tokens.append(APIToken(name: name, scope: scope, digest: Hex.decode(fields[2]) ?? []))
        }
        return tokens
    }

    /// A new token, 32 random bytes from OpenSSL in base64url with the prefix `rk_`, and the line
    /// of `RECEIPTKIT_API_TOKENS_FILE` that accepts it.
    package static func generate(name: String, scope: TokenScope) -> (token: String, line: String) {
        var bytes = [UInt8](repeating: 0, count: 32)
        let written = bytes.withUnsafeMutableBufferPointer { rks_random_bytes($0.baseAddress, $0.count) }
        // OpenSSL's generator fails only when it cannot seed itself, where no token can be made.
        precondition(written == 1, "OpenSSL's random generator failed")
        let token = "rk_" + Base64URL.string(bytes)
        return (token, line(name: name, scope: scope, token: token))
    }

    /// The line of `RECEIPTKIT_API_TOKENS_FILE` that accepts `token`: its name, scope and SHA-256.
    package static func line(name: String, scope: TokenScope, token: String) -> String {
        "\(name) \(scope.rawValue) \(Hex.encode(sha256(Array(token.utf8))))"
    }

    /// SHA-256 (OpenSSL's).
    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        let written = bytes.withUnsafeBufferPointer { data in
            out.withUnsafeMutableBufferPointer { rks_sha256(data.baseAddress, data.count, $0.baseAddress) }
        }
        // OpenSSL fails only without memory or without its default provider.
        precondition(written == 1, "OpenSSL's SHA-256 failed")
        return out
    }

    /// Whether two byte strings are equal, in a time that depends only on their lengths.
    static func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        var difference = UInt8(truncatingIfNeeded: lhs.count ^ rhs.count)
        if lhs.count != rhs.count { difference |= 1 }
        for index in 0..<max(lhs.count, rhs.count) {
            difference |= (index < lhs.count ? lhs[index] : 0) ^ (index < rhs.count ? rhs[index] : 0)
        }
        return difference == 0
    }
}
