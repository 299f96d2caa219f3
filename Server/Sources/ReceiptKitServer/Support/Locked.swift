package import NIOConcurrencyHelpers

/// A value behind a lock: pthread's, through SwiftNIO's `NIOLockedValueBox`. Used for the state
/// the server's concurrency tests run under the thread sanitizer (group commit, timeouts, the
/// header directory): the sanitizer follows pthread mutexes, but not the futex behind Swift's
/// `Synchronization.Mutex` on Linux, which it reports as racing with itself.
package typealias Locked = NIOLockedValueBox
