import ReceiptKitServer
import Testing

/// What keeps one server from sending a row twice at once: the rows a claim answers are
/// attempted unless this server is attempting them already, or an attempt at them ended while
/// the claim ran (the claim read them before that attempt recorded its outcome).
@Suite("Deliveries in flight")
struct InFlightDeliveriesTests {
    /// One claim answering `ids`, with `meanwhile` run while it reads the outbox.
    static func claim(
        _ ids: [Int64], in deliveries: inout InFlightDeliveries, meanwhile: (inout InFlightDeliveries) -> Void = { _ in }
    ) -> [Int64] {
        deliveries.claimStarted()
        meanwhile(&deliveries)
        return deliveries.admit(ids, id: { $0 })
    }

    @Test("a row a claim answers again while its attempt runs is not attempted a second time; the others are")
    func answeredWhileRunning() {
        var deliveries = InFlightDeliveries()
        #expect(Self.claim([7], in: &deliveries) == [7])
        #expect(Self.claim([7, 8], in: &deliveries) == [8])
        #expect(deliveries.count == 2)
    }

    @Test("a row whose attempt ended while a claim ran is not attempted from that claim's answer")
    func endedDuringClaim() {
        var deliveries = InFlightDeliveries()
        #expect(Self.claim([7, 8], in: &deliveries) == [7, 8])
        #expect(Self.claim([7, 9], in: &deliveries, meanwhile: { $0.ended(7) }) == [9])
        #expect(deliveries.count == 2)
    }

    @Test("a row whose attempt ended before a claim started is attempted again when that claim answers it (its next attempt is due)")
    func endedBeforeClaim() {
        var deliveries = InFlightDeliveries()
        #expect(Self.claim([7], in: &deliveries) == [7])
        deliveries.ended(7)
        #expect(deliveries.count == 0)
        #expect(Self.claim([7], in: &deliveries) == [7])
        // What ended during an earlier claim does not hold back a later one.
        #expect(Self.claim([], in: &deliveries, meanwhile: { $0.ended(7) }) == [])
        #expect(Self.claim([7], in: &deliveries) == [7])
    }
}
