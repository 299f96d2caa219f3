import Foundation

/// Runs `work` over a stream of items on `jobs` threads and hands the results to `deliver` in
/// submission order, on the thread that calls ``finish()`` or ``submit(_:)``.
///
/// Items travel in batches (up to `batchCount` items or `batchBytes` bytes of input), and at most
/// `jobs * 4` batches are in flight: the submitter blocks until the oldest is delivered, so memory
/// does not grow with the number of inputs, whatever their order of completion.
final class OrderedPipeline<Item: Sendable, Result: Sendable>: @unchecked Sendable {
    // @unchecked: every mutable member is guarded by `condition`.
    private let work: @Sendable (Item) -> Result
    private let deliver: (Result) -> Void
    private let condition = NSCondition()
    private let maximumInFlight: Int
    private let batchCount: Int
    private let batchBytes: Int

    private var pending: [(index: Int, items: [Item])] = []
    private var completed: [Int: [Result]] = [:]
    private var nextBatch = 0
    private var nextDelivery = 0
    private var closed = false
    private var current: [Item] = []
    private var currentBytes = 0

    init(jobs: Int, batchCount: Int = 64, batchBytes: Int = 256 * 1024,
         work: @escaping @Sendable (Item) -> Result, deliver: @escaping (Result) -> Void) {
        self.work = work
        self.deliver = deliver
        self.maximumInFlight = max(2, jobs * 4)
        self.batchCount = batchCount
        self.batchBytes = batchBytes
        for _ in 0..<jobs {
            // Each worker holds the pipeline until it exits (a worker may start only after
            // `finish()` has returned and the submitter has dropped its reference); the pipeline
            // holds no thread, so nothing is left in a cycle once they have.
            let thread = Thread { self.runWorker() }
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    /// Adds one item of `size` bytes; may block while too many batches are in flight, and
    /// delivers the results that are ready meanwhile.
    func submit(_ item: Item, size: Int) {
        current.append(item)
        currentBytes += size
        if current.count >= batchCount || currentBytes >= batchBytes {
            flushBatch()
        }
    }

    /// Submits what is left, waits for every result, delivers them, and stops the workers.
    func finish() {
        flushBatch()
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
        deliverReady(untilInFlightBelow: 1)
    }

    private func flushBatch() {
        guard !current.isEmpty else { return }
        let batch = current
        current = []
        currentBytes = 0
        deliverReady(untilInFlightBelow: maximumInFlight)
        condition.lock()
        pending.append((nextBatch, batch))
        nextBatch += 1
        condition.signal()
        condition.unlock()
        deliverReady(untilInFlightBelow: Int.max)
    }

    /// Delivers completed batches in order; blocks until fewer than `limit` batches are in flight.
    private func deliverReady(untilInFlightBelow limit: Int) {
        while true {
            condition.lock()
            while completed[nextDelivery] == nil, nextBatch - nextDelivery >= limit {
                condition.wait()
            }
            guard let results = completed.removeValue(forKey: nextDelivery) else {
                condition.unlock()
                return
            }
            nextDelivery += 1
            condition.unlock()
            results.forEach(deliver)
        }
    }

    private func runWorker() {
        while true {
            condition.lock()
            while pending.isEmpty, !closed {
                condition.wait()
            }
            guard !pending.isEmpty else {
                condition.unlock()
                return
            }
            let (index, items) = pending.removeFirst()
            condition.unlock()
            let results = items.map(work)
            condition.lock()
            completed[index] = results
            condition.broadcast()
            condition.unlock()
        }
    }
}
