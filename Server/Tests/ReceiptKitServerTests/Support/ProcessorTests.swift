import Foundation
import ReceiptKitServer
import Testing

/// The event loop count the server asks for: the CPUs it may run on, as `nproc` counts them
/// (it reads the scheduler affinity too).
@Suite("Schedulable processors")
struct ProcessorTests {
    @Test("the count is the affinity's, as nproc reports it, and within the machine's CPUs")
    func count() throws {
        let count = schedulableProcessorCount()
        #expect(count >= 1 && count <= ProcessInfo.processInfo.activeProcessorCount)
        let nproc = Process()
        nproc.executableURL = URL(fileURLWithPath: "/usr/bin/nproc")
        // nproc also obeys OpenMP's variables, which say nothing of the affinity.
        nproc.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("OMP_") }
        let output = Pipe()
        nproc.standardOutput = output
        try nproc.run()
        nproc.waitUntilExit()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) == count)
    }
}

extension ProcessorTests {
    @Test("Linux CPU lists are counted, and what does not parse is nil")
    func cpuLists() {
        #expect(cpuListCount("0") == 1)
        #expect(cpuListCount(" 0-3,8,10-11") == 7)
        #expect(cpuListCount("1\t") == 1)
        for bad in ["", "a", "3-1", "1-", "-2", "1-2-3", "1,,2"] {
            #expect(cpuListCount(Substring(bad)) == nil, "\(bad)")
        }
    }
}
