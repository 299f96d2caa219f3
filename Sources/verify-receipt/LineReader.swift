#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads newline-separated records from a file descriptor as they arrive, holding at most one
/// record (bounded by `maximumLength`) in memory.
struct LineReader {
    /// One record read.
    enum Line: Sendable {
        /// The record's bytes, without the newline.
        case bytes([UInt8])
        /// A record longer than the limit: its bytes were skipped; `length` is how many, and
        /// `prefix` holds its first bytes (up to ``prefixLength``), where an id would be.
        case tooLong(length: Int, prefix: [UInt8])
        /// A `--with-ids` line without the tab that separates the id from the input.
        case missingID
    }

    /// How many leading bytes of a too-long record are kept.
    static let prefixLength = 4096

    private let descriptor: Int32
    private let maximumLength: Int
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)
    /// The record being read (see ``readRecord(stoppingAtNewline:)``).
    private var record: [UInt8] = []
    /// The largest record storage kept for reuse; a longer record's storage is released.
    private static let retainedCapacity = 1 << 20
    private var start = 0
    private var end = 0
    private var finished = false

    /// Whether a record's storage is reused for the next one (see ``readRecord(stoppingAtNewline:)``).
    private let reusesStorage: Bool

    /// - Parameters:
    ///   - descriptor: What to read.
    ///   - maximumLength: The longest record kept whole.
    ///   - reusesStorage: Whether the caller lets go of each record before asking for the next
    ///     (one job), so its storage can be reused. Records that live on (in a pipeline) are not
    ///     reused: each gets storage of its own size.
    init(descriptor: Int32, maximumLength: Int, reusesStorage: Bool = false) {
        self.descriptor = descriptor
        self.maximumLength = maximumLength
        self.reusesStorage = reusesStorage
    }

    /// The next record, or `nil` at end of input. A final record without a newline counts.
    ///
    /// - Throws: ``ReadError`` when the descriptor cannot be read.
    mutating func next() throws -> Line? {
        let (line, length, terminated) = try readRecord(stoppingAtNewline: true)
        if length == 0, !terminated { return nil }
        return result(line, length: length)
    }

    /// The next byte, without consuming it, or `nil` at end of input.
    ///
    /// - Throws: ``ReadError`` when the descriptor cannot be read.
    mutating func peek() throws -> UInt8? {
        try ensureBuffered() ? buffer[start] : nil
    }

    /// Everything left, as one record (binary input: a DER receipt file), bounded like a line.
    ///
    /// - Throws: ``ReadError`` when the descriptor cannot be read.
    mutating func rest() throws -> Line {
        let (bytes, length, _) = try readRecord(stoppingAtNewline: false)
        return result(bytes, length: length)
    }

    /// Reads up to the next newline (consumed, not kept) or to the end of input, keeping the
    /// bytes while within the limit and only a prefix past it.
    ///
    /// The bytes are kept in ``record``. With ``reusesStorage``, its storage is reused for the
    /// next record once the caller has let go of the array returned: on one job, lines are not
    /// allocated one by one.
    private mutating func readRecord(stoppingAtNewline: Bool) throws -> (bytes: [UInt8], length: Int, terminated: Bool) {
        record.removeAll(keepingCapacity: reusesStorage && record.capacity <= Self.retainedCapacity)
        var length = 0
        while try ensureBuffered() {
            if stoppingAtNewline, let newline = newlineIndex() {
                length += newline - start
                Self.keep(buffer[start..<newline], into: &record, length: length, limit: maximumLength)
                start = newline + 1
                return (record, length, true)
            }
            length += end - start
            Self.keep(buffer[start..<end], into: &record, length: length, limit: maximumLength)
            start = end
        }
        return (record, length, false)
    }

    /// Makes buffered bytes available, reading more when the buffer is empty; `false` at end of
    /// input.
    private mutating func ensureBuffered() throws -> Bool {
        if start == end, !finished {
            try fill()
            if start == end { finished = true }
        }
        return start < end
    }

    /// Appends `chunk` while the record is within the limit; past it, keeps only the prefix.
    private static func keep(_ chunk: ArraySlice<UInt8>, into line: inout [UInt8], length: Int, limit: Int) {
        if length <= limit {
            line.append(contentsOf: chunk)
        } else if line.count > Self.prefixLength {
            line.removeSubrange(Self.prefixLength...)
        } else if line.count < Self.prefixLength {
            line.append(contentsOf: chunk.prefix(Self.prefixLength - line.count))
        }
    }

    private func result(_ line: [UInt8], length: Int) -> Line {
        length <= maximumLength ? .bytes(line) : .tooLong(length: length, prefix: Array(line.prefix(Self.prefixLength)))
    }

    /// The index of the next newline in the buffered bytes (`memchr`: this scan touches every
    /// input byte).
    private func newlineIndex() -> Int? {
        buffer.withUnsafeBufferPointer { base -> Int? in
            guard let origin = base.baseAddress,
                let found = memchr(origin + start, Int32(UInt8(ascii: "\n")), end - start)
            else { return nil }
            return origin.distance(to: found.assumingMemoryBound(to: UInt8.self))
        }
    }

    private mutating func fill() throws {
        start = 0
        end = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count >= 0 {
                end = count
                return
            }
            if errno == EINTR { continue }
            throw ReadError(errno: errno)
        }
    }
}

/// A failed `read(2)`.
struct ReadError: Error, CustomStringConvertible {
    let errno: Int32
    var description: String { String(cString: strerror(errno)) }
}
