/// Which release an executable is: the version, written here and nowhere else, and the commit
/// it was built from when there is one.
///
/// `verify-receipt`, `receiptkit-server` and `appstore-api` print ``versionLine`` for
/// `--version`; `scripts/release.sh` names the tarball after ``version``.
public enum Release {
    /// The version of ReceiptKit's commands and packages ([Semantic Versioning](https://semver.org)).
    public static let version = "0.1.0"

    /// The commit the executable was built from, its first 12 hex digits: set by
    /// `scripts/release.sh`, which builds a copy of the commit; `nil` for any other build
    /// (`swift build`, `swift run`).
    public static let commit: String? = buildCommit

    /// What `--version` prints: `0.1.0 (commit 0123456789ab)`, or `0.1.0` without a commit.
    public static var versionLine: String {
        commit.map { "\(version) (commit \($0))" } ?? version
    }
}
