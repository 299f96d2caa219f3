import Foundation

/// The number of CPUs this process may run on: its scheduler affinity (`taskset`, a cpuset),
/// which SwiftNIO's own count (the machine's CPUs, or a cgroup quota) does not read. A server
/// started on one core of a larger machine would otherwise run an event loop thread per CPU
/// of the machine on that one core, where they only take turns.
///
/// On Linux the affinity is read from `/proc/self/status` (`Cpus_allowed_list`):
/// `sched_getaffinity` is a GNU extension Swift's Glibc module does not expose.
///
/// - Returns: At least 1, and at most the machine's active CPUs.
package func schedulableProcessorCount() -> Int {
    let active = max(ProcessInfo.processInfo.activeProcessorCount, 1)
    #if os(Linux)
    if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") }),
        let count = cpuListCount(line.dropFirst("Cpus_allowed_list:".count)), count > 0
    {
        return min(count, active)
    }
    #endif
    return active
}

/// The number of CPUs in a Linux CPU list (`0-3,8,10-11`), or `nil` when it does not parse.
package func cpuListCount(_ list: Substring) -> Int? {
    let list = list.trimmingCharacters(in: .whitespaces)
    guard !list.isEmpty else { return nil }
    var count = 0
    for item in list.split(separator: ",", omittingEmptySubsequences: false) {
        let bounds = item.split(separator: "-", omittingEmptySubsequences: false)
            .map { Int($0.trimmingCharacters(in: .whitespaces)) }
        switch bounds.count {
        case 1:
            guard bounds[0] != nil else { return nil }
            count += 1
        case 2:
            guard let low = bounds[0], let high = bounds[1], low <= high else { return nil }
            count += high - low + 1
        default:
            return nil
        }
    }
    return count
}
