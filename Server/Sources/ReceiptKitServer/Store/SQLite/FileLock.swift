#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive advisory lock on a file (`flock(2)`), held for the time of a closure: the
/// kernel releases it when the descriptor is closed, so also when the process dies, however it
/// dies. Two descriptors of the file exclude each other even within one process (an `flock` is
/// held by an open file description, not by a process).
///
/// The file is created when missing and never removed: removing it while another process waits
/// on, or holds, its descriptor would let a third lock a new file of the same name.
enum FileLock {
    /// Runs `body` holding the lock on the file at `path`, or answers `nil` at once when another
    /// descriptor holds it.
    ///
    /// - Throws: ``StoreError`` when the file cannot be opened or locked; whatever `body` throws.
    static func withLock<T>(at path: String, _ body: () async throws -> T) async throws -> T? {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StoreError("cannot open the lock file \(path): \(String(cString: strerror(errno)))")
        }
        // Closing the descriptor releases the lock.
        defer { close(descriptor) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let error = errno
            if error == EWOULDBLOCK { return nil }
            throw StoreError("cannot lock \(path): \(String(cString: strerror(error)))")
        }
        return try await body()
    }
}
