#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Which release an executable is: the version, written here and nowhere else, and the commit
/// it was built from when there is one.
///
/// `verify-receipt`, `receiptkit-server` and `appstore-api` print ``versionLine`` for
/// `--version`; `scripts/release.sh` names the tarball after ``version``.
public enum Release {
    /// The version of ReceiptKit's commands and packages ([Semantic Versioning](https://semver.org)).
    public static let version = "0.1.0"

    /// The commit the executable was built from, its first 12 hex digits: linked in by
    /// `scripts/release.sh` (``commitSymbol``); `nil` for any other build (`swift build`,
    /// `swift run`).
    public static let commit: String? = linkedCommit()

    /// What `--version` prints: `0.1.0 (commit 0123456789ab)`, or `0.1.0` without a commit.
    public static var versionLine: String {
        commit.map { "\(version) (commit \($0))" } ?? version
    }

    /// The C string `scripts/release.sh` defines in an object of its own when it links a release
    /// (`const char receiptkit_release_commit[] = "…"`) and exports from the executable: the
    /// commit is stamped at link time, so that the objects the test suites ran are the objects
    /// released, compiled once.
    static let commitSymbol = "receiptkit_release_commit"

    /// The commit the executable's own symbol table names, if it has the symbol and it holds 12
    /// lowercase hex digits.
    private static func linkedCommit() -> String? {
        #if canImport(Glibc) || canImport(Musl) || canImport(Darwin)
        // The executable itself: its exported symbols, not a library's.
        guard let executable = dlopen(nil, RTLD_LAZY) else { return nil }
        defer { dlclose(executable) }
        guard let symbol = dlsym(executable, commitSymbol) else { return nil }
        let text = String(cString: symbol.assumingMemoryBound(to: CChar.self))
        guard text.utf8.count == 12, text.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            return nil
        }
        return text
        #else
        return nil
        #endif
    }
}
