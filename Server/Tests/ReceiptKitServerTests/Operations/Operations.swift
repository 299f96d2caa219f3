import Testing

/// What an operator relies on when what is around `receiptkit-server` fails, and its backups
/// (docs/operations.md): the database going away, a full disk, `backup --to`, each under a real
/// webhook load. `swift test --filter Operations` runs them all.
///
/// Serialized, suites included: each measures answers against a bound (5 s), and two loads at
/// once on a 2-core machine would measure each other.
@Suite("Operations", .serialized)
enum Operations {}
