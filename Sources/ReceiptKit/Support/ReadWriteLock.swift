#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value guarded by a POSIX read-write lock: many concurrent readers, one writer.
///
/// The caches are read on every input and written almost never, so readers must not serialize.
/// A pthread lock (rather than `Synchronization.Mutex`, whose futex-based ordering thread
/// sanitizer cannot see) also keeps the concurrency tests meaningful under `--sanitize=thread`.
final class ReadWriteLocked<Value>: @unchecked Sendable {
    // @unchecked: `value` is only touched with `lock` held (shared for reads, exclusive for writes).
    private var value: Value
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    init(_ value: Value) {
        self.value = value
        self.lock = .allocate(capacity: 1)
        lock.initialize(to: pthread_rwlock_t())
        let status = pthread_rwlock_init(lock, nil)
        precondition(status == 0, "pthread_rwlock_init failed: \(status)")
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deinitialize(count: 1)
        lock.deallocate()
    }

    /// Runs `body` with shared access.
    func read<Result>(_ body: (borrowing Value) throws -> Result) rethrows -> Result {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body(value)
    }

    /// Runs `body` with exclusive access.
    func write<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body(&value)
    }
}
