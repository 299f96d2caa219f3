// receiptkit-benchmark: measures verify-receipt against this machine's own OpenSSL limits, in one
// run. Usage (from the package root):
//
//     swift run -c release receiptkit-benchmark [--jws N] [--receipts N] [--memory-inputs N] [--repetitions N]
//         [--state-subscriptions N] [--state-renewals N] [--write-archive PATH] [--ocsp N] [--ocsp-only]
//         [--notifications N] [--notifications-only] [--write-notifications PATH] [--write-notification-bodies PATH]
//         [--write-renewal-bodies PATH [--renewal-keys N] [--renewal-first-key N] [--renewal-first N] [--renewal-count N]]
//         [--write-realtime-requests PATH [--realtime-count N] [--renewal-keys N] [--renewal-count N]]
//
// It runs `openssl speed ecdsap256 rsa2048` (single core), then the release `verify-receipt`
// beside this executable over generated batches of the project's own test vectors, and prints
// the rates, the ratios and the targets. Every rate, OpenSSL's included, is the best of
// --repetitions runs (default 3).
//
// Entitlement state: an archive of --state-subscriptions × --state-renewals distinct transactions
// signed under the test PKI (20,000 × 10 by default; `--write-archive PATH` writes it and exits),
// verified with and without --state.
//
// Notifications: --notifications distinct notifications (10,000 by default) signed under the test
// PKI, each a SUBSCRIBED notification with its nested transaction and renewal info: three ES256
// signatures. Their rate on one job is printed as a ratio of OpenSSL's ECDSA verify rate ÷ 3 (the
// three-signature limit), next to the bare transactions' ratio, for the signedPayload JWS alone
// (the target) and as webhook bodies. `--notifications-only` runs just OpenSSL, the typical
// transactions and the notifications; `--write-notifications PATH` (or
// `--write-notification-bodies PATH`) writes the inputs and exits, for scripts/profile-notifications.sh.
// `--write-renewal-bodies PATH` writes the webhook bodies of --renewal-keys daily subscriptions'
// periods --renewal-first ..< + --renewal-count (a SUBSCRIBED, then DID_RENEWs) and exits, for
// Server/scripts/benchmark.sh: the history that makes a subscription old, and its next renewals.
// `--write-realtime-requests PATH` writes --realtime-count Get Retention Message request bodies
// about those subscriptions (and a third as many the server has not seen), signed at the end of
// their --renewal-count periods, and exits, for Server/scripts/benchmark-retention.sh.
//
// Revocation: it issues a leaf whose AIA names a real `openssl ocsp` responder on loopback (a
// throwaway CA under the test PKI's intermediate), and compares --revocation ocsp with
// --revocation off over --ocsp inputs (default 40,000) from that one leaf: one OCSP request per
// run, and a rate within 5%. `--ocsp-only` runs just that part.
import Foundation

#if canImport(Glibc)
import Glibc
#endif

struct Options {
    var jwsInputs = 100_000
    var receiptInputs = 30_000
    var memoryInputs = 200_000
    /// `--state` is measured on subscriptions × renewals distinct transactions.
    var stateSubscriptions = 20_000
    var stateRenewals = 10
    /// `--write-archive PATH`: write the `--state` archive there and exit, to run by hand.
    var archivePath: String?
    var opensslSeconds = 3
    /// Timed runs per measure; the best counts, for OpenSSL's rates as for verify-receipt's.
    var repetitions = 3
    var ocspInputs = 40_000
    var ocspOnly = false
    var notifications = 10_000
    var notificationsOnly = false
    /// `--write-notifications PATH`: write the notifications there (as JWS, or as webhook bodies
    /// with `--write-notification-bodies`) and exit.
    var notificationsPath: String?
    var notificationBodies = false
    /// `--write-renewal-bodies PATH`: write the notifications of `renewalKeys` subscriptions'
    /// periods `renewalFirst..<renewalFirst + renewalCount` there and exit.
    var renewalsPath: String?
    var renewalKeys = 200
    var renewalFirstKey = 0
    var renewalFirst = 0
    var renewalCount = 241
    /// `--write-realtime-requests PATH`: write `realtimeCount` Get Retention Message requests about
    /// `renewalKeys` subscriptions (and a third as many unknown ones), signed at the end of their
    /// `renewalCount` periods, there and exit.
    var realtimePath: String?
    var realtimeCount = 3000

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let argument = iterator.next() {
            if argument == "--ocsp-only" {
                ocspOnly = true
                continue
            }
            if argument == "--write-archive", let path = iterator.next() {
                archivePath = path
                continue
            }
            if argument == "--notifications-only" {
                notificationsOnly = true
                continue
            }
            if argument == "--write-renewal-bodies", let path = iterator.next() {
                renewalsPath = path
                continue
            }
            if argument == "--write-realtime-requests", let path = iterator.next() {
                realtimePath = path
                continue
            }
            if argument == "--write-notifications" || argument == "--write-notification-bodies", let path = iterator.next() {
                notificationsPath = path
                notificationBodies = argument == "--write-notification-bodies"
                continue
            }
            let value = iterator.next().flatMap(Int.init)
            switch (argument, value) {
            case ("--jws", let value?): jwsInputs = value
            case ("--receipts", let value?): receiptInputs = value
            case ("--memory-inputs", let value?): memoryInputs = value
            case ("--state-subscriptions", let value?) where value >= 1: stateSubscriptions = value
            case ("--state-renewals", let value?) where value >= 1: stateRenewals = value
            case ("--openssl-seconds", let value?): opensslSeconds = value
            case ("--repetitions", let value?) where value >= 1: repetitions = value
            case ("--ocsp", let value?) where value >= 1: ocspInputs = value
            case ("--notifications", let value?) where value >= 1: notifications = value
            case ("--renewal-keys", let value?) where value >= 1: renewalKeys = value
            case ("--renewal-first-key", let value?) where value >= 0: renewalFirstKey = value
            case ("--renewal-first", let value?) where value >= 0: renewalFirst = value
            case ("--renewal-count", let value?) where value >= 1 && value <= 1000: renewalCount = value
            case ("--realtime-count", let value?) where value >= 1: realtimeCount = value
            default:
                FileHandle.standardError.write(Data("usage: receiptkit-benchmark [--jws N] [--receipts N] [--memory-inputs N] [--state-subscriptions N] [--state-renewals N] [--write-archive PATH] [--openssl-seconds N] [--repetitions N] [--ocsp N] [--ocsp-only] [--notifications N] [--notifications-only] [--write-notifications PATH] [--write-notification-bodies PATH] [--write-renewal-bodies PATH [--renewal-keys N] [--renewal-first-key N] [--renewal-first N] [--renewal-count N]] [--write-realtime-requests PATH [--realtime-count N] [--renewal-keys N] [--renewal-count N]]\n".utf8))
                exit(64)
            }
        }
    }
}

/// The outcome of one child process.
struct Run {
    let seconds: Double
    /// User and system CPU time of the child: what the run cost, whatever else the machine ran.
    let cpuSeconds: Double
    let peakResidentBytes: Int
    let status: Int32
}

/// Runs `executable` with `arguments`, standard input from `input`, standard output to /dev/null,
/// and measures its wall time and peak resident memory (from `wait4`'s rusage).
func measure(_ executable: String, _ arguments: [String], input: String) throws -> Run {
    var actions: posix_spawn_file_actions_t = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, input, O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    var start = timespec()
    clock_gettime(CLOCK_MONOTONIC, &start)
    let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
    guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EINVAL) }
    var status: Int32 = 0
    var usage = rusage()
    _ = wait4(pid, &status, 0, &usage)
    var end = timespec()
    clock_gettime(CLOCK_MONOTONIC, &end)
    let seconds = Double(end.tv_sec - start.tv_sec) + Double(end.tv_nsec - start.tv_nsec) / 1e9
    let cpu = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    return Run(seconds: seconds, cpuSeconds: cpu, peakResidentBytes: Int(usage.ru_maxrss) * 1024, status: (status >> 8) & 0xFF)
}

/// OpenSSL's own single-core verify rate for `algorithm` (`ecdsap256` or `rsa2048`).
func opensslVerifyRate(_ algorithm: String, seconds: Int) throws -> Double {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["openssl", "speed", "-seconds", String(seconds), algorithm]
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    try process.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    // The last line is e.g. " 256 bits ecdsa (nistp256)   0.0000s   0.0001s  50151.5  16766.3"
    // or "rsa 2048 bits 0.000245s 0.000017s   4073.3  58549.0": verify/s is the last column.
    guard let line = output.split(separator: "\n").last(where: { $0.contains("bits") && !$0.contains("sign/s") }),
        let rate = line.split(separator: " ").last.flatMap({ Double($0) })
    else { throw CocoaError(.fileReadCorruptFile) }
    return rate
}

/// Writes `count` lines cycling through `lines` to a temporary file.
func batchFile(_ name: String, _ lines: [String], count: Int, directory: URL) throws -> String {
    let url = directory.appendingPathComponent(name)
    _ = FileManager.default.createFile(atPath: url.path, contents: nil)
    let handle = try FileHandle(forWritingTo: url)
    var chunk = ""
    for index in 0..<count {
        chunk += lines[index % lines.count]
        chunk += "\n"
        if chunk.utf8.count > 1 << 20 {
            handle.write(Data(chunk.utf8))
            chunk = ""
        }
    }
    handle.write(Data(chunk.utf8))
    try handle.close()
    return url.path
}

func text(_ path: String) throws -> String {
    try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
}

let options = Options(CommandLine.arguments)
let binDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
let root = FileManager.default.currentDirectoryPath
if let archivePath = options.archivePath {
    let count = try TransactionArchive(pki: "\(root)/TestVectors/pki")
        .write(to: archivePath, subscriptions: options.stateSubscriptions, renewals: options.stateRenewals)
    print("wrote \(count) distinct transactions to \(archivePath)")
    exit(0)
}
if let renewalsPath = options.renewalsPath {
    guard options.renewalFirst + options.renewalCount <= 1000 else {
        FileHandle.standardError.write(Data("receiptkit-benchmark: a subscription has at most 1,000 periods here\n".utf8))
        exit(64)
    }
    guard options.renewalFirstKey + options.renewalKeys <= 1_000_000 else {
        FileHandle.standardError.write(Data("receiptkit-benchmark: subscriptions are numbered below 1,000,000 here\n".utf8))
        exit(64)
    }
    let count = try TransactionArchive(pki: "\(root)/TestVectors/pki").writeRenewals(
        to: renewalsPath, keys: options.renewalKeys, firstKey: options.renewalFirstKey, first: options.renewalFirst,
        count: options.renewalCount)
    print("wrote \(count) notifications of \(options.renewalKeys) subscriptions' periods \(options.renewalFirst)..<\(options.renewalFirst + options.renewalCount) to \(renewalsPath)")
    exit(0)
}
if let realtimePath = options.realtimePath {
    guard options.renewalKeys + options.renewalKeys / 3 <= 1_000_000 else {
        FileHandle.standardError.write(Data("receiptkit-benchmark: subscriptions are numbered below 1,000,000 here\n".utf8))
        exit(64)
    }
    // The instant the last of `renewalCount` daily periods from 2024-01-02 ends: inside the test
    // PKI's leaf's validity, which a JWS is verified at its signed date against.
    let signedDate = 1_704_153_600_000 + Int64(options.renewalCount) * 86_400_000
    let count = try TransactionArchive(pki: "\(root)/TestVectors/pki").writeRealtimeRequests(
        to: realtimePath, count: options.realtimeCount, keys: options.renewalKeys, signedDate: signedDate)
    print("wrote \(count) Get Retention Message requests about \(options.renewalKeys + options.renewalKeys / 3) subscriptions to \(realtimePath)")
    exit(0)
}
if let notificationsPath = options.notificationsPath {
    let count = try TransactionArchive(pki: "\(root)/TestVectors/pki")
        .writeNotifications(to: notificationsPath, count: options.notifications, bodies: options.notificationBodies)
    print("wrote \(count) distinct notifications to \(notificationsPath)")
    exit(0)
}
let verifyReceipt = binDirectory.appendingPathComponent("verify-receipt").path
guard FileManager.default.isExecutableFile(atPath: verifyReceipt) else {
    FileHandle.standardError.write(Data("no verify-receipt beside \(CommandLine.arguments[0]): swift build -c release first\n".utf8))
    exit(66)
}
let cores = ProcessInfo.processInfo.activeProcessorCount
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("receiptkit-benchmark-\(getpid())")
try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: directory) }

// Inputs: valid transactions signed by the test PKI's one leaf (a repeating chain, as in real
// archives), and a SHA-256 legacy receipt with six in-app purchases.
//
// The JWS target is measured on typical transactions: payloads of 0.5–0.7 KB, the size of real
// ones (Apple's real consumable transaction in ../shared/vectors is 0.4 KB). The test PKI's
// every-field transaction (1.6 KB: every documented member, Advanced Commerce items and refunds
// included) is measured on its own, for reference: parsing the payload with jansson costs about
// 14 ns per byte, so the rate falls as payloads grow.
let typicalJWS = try ["transaction-consumable", "transaction-non-consumable", "transaction-non-renewing"]
    .map { try text("\(root)/TestVectors/jws/\($0).jws") }
let everyFieldJWS = try text("\(root)/TestVectors/jws/transaction-auto-renewable.jws")
let receiptLine = Data(try Data(contentsOf: URL(fileURLWithPath: "\(root)/TestVectors/receipts/receipt-sha256-der.der"))).base64EncodedString()
let jwsTrust = ["--root", "\(root)/TestVectors/pki/root.der"]
let receiptTrust = ["--root", "\(root)/TestVectors/receipts/pki/root.der"]
let mixedTrust = jwsTrust + receiptTrust

print("receiptkit-benchmark on \(cores) cores, \(ProcessInfo.processInfo.operatingSystemVersionString)")

/// The best of `repetitions` timed runs of `verify-receipt` over `file`, after one untimed run
/// that warms the page cache. Other work on the machine only ever slows a run down, so the best
/// run is the closest to what the machine can do; OpenSSL's rates are taken the same way.
func rate(_ arguments: [String], _ file: String, _ count: Int) throws -> (Double, Run) {
    _ = try measure(verifyReceipt, arguments, input: file)
    var best: Run?
    for _ in 0..<options.repetitions {
        let run = try measure(verifyReceipt, arguments, input: file)
        guard run.status == 0 || run.status == 1 else {
            FileHandle.standardError.write(Data("verify-receipt exited \(run.status)\n".utf8))
            OCSPBenchmark.running?.stop()
            exit(1)
        }
        if best.map({ run.seconds < $0.seconds }) ?? true { best = run }
    }
    return (Double(count) / best!.seconds, best!)
}

/// Notifications, one job: distinct ones (a repeated notification would be the same work, but no
/// webhook sees one twice), as a ratio of the three-signature limit, OpenSSL's ECDSA verify rate
/// ÷ 3, next to the bare transactions' ratio measured in the same run.
func measureNotifications(ecdsa: Double, transactions: Double) throws -> [(String, Double, Double)] {
    let jwsFile = directory.appendingPathComponent("notifications.txt").path
    let count = try TransactionArchive(pki: "\(root)/TestVectors/pki")
        .writeNotifications(to: jwsFile, count: options.notifications, bodies: false)
    // The same notifications as webhook bodies, {"signedPayload":"…"}.
    let bodies = try String(contentsOfFile: jwsFile, encoding: .utf8).split(separator: "\n")
        .map { "{\"signedPayload\":\"\($0)\"}" }
    let bodyFile = try batchFile("notification-bodies.jsonl", bodies, count: bodies.count, directory: directory)
    let limit = ecdsa / 3
    let (notifications1, _) = try rate(jwsTrust + ["--jobs", "1"], jwsFile, count)
    let (bodies1, _) = try rate(jwsTrust + ["--jobs", "1"], bodyFile, count)
    print(String(format: "notifications, 1 job:    %10.0f /s (%d distinct, 3 signatures each: ratio %.2f of ECDSA verify / 3)",
                 notifications1, count, notifications1 / limit))
    print(String(format: "  as webhook bodies:     %10.0f /s (ratio %.2f of ECDSA verify / 3, for reference)", bodies1, bodies1 / limit))
    print(String(format: "  bare transactions:     %10.0f /s (ratio %.2f of ECDSA verify, the same run)", transactions, transactions / ecdsa))
    return [("notifications 1 job / (openssl ecdsap256 verify / 3)", notifications1 / limit, 0.75)]
}

var checks: [(String, Double, Double)] = []
if options.notificationsOnly {
    let jwsFile = try batchFile("jws.txt", typicalJWS, count: options.jwsInputs, directory: directory)
    let ecdsa = try (0..<options.repetitions).map { _ in try opensslVerifyRate("ecdsap256", seconds: options.opensslSeconds) }.max()!
    print(String(format: "openssl speed ecdsap256 verify: %10.0f /s (1 core; %.0f /s for three)", ecdsa, ecdsa / 3))
    let (jws1, _) = try rate(jwsTrust + ["--jobs", "1"], jwsFile, options.jwsInputs)
    checks += [("JWS 1 job (typical) / openssl ecdsap256 verify", jws1 / ecdsa, 0.75)]
    checks += try measureNotifications(ecdsa: ecdsa, transactions: jws1)
} else if !options.ocspOnly {
    let jwsFile = try batchFile("jws.txt", typicalJWS, count: options.jwsInputs, directory: directory)
    let everyFieldFile = try batchFile("jws-every-field.txt", [everyFieldJWS], count: options.jwsInputs / 2, directory: directory)
    let receiptFile = try batchFile("receipts.txt", [receiptLine], count: options.receiptInputs, directory: directory)
    let memoryFile = try batchFile(
        "memory.txt", typicalJWS + [everyFieldJWS, receiptLine, "not a jws"], count: options.memoryInputs, directory: directory)

    let ecdsa = try (0..<options.repetitions).map { _ in try opensslVerifyRate("ecdsap256", seconds: options.opensslSeconds) }.max()!
    let rsa = try (0..<options.repetitions).map { _ in try opensslVerifyRate("rsa2048", seconds: options.opensslSeconds) }.max()!
    print(String(format: "openssl speed ecdsap256 verify: %10.0f /s (1 core)", ecdsa))
    print(String(format: "openssl speed rsa2048 verify:   %10.0f /s (1 core)", rsa))

    let (jws1, _) = try rate(jwsTrust + ["--jobs", "1"], jwsFile, options.jwsInputs)
    let (everyField1, _) = try rate(jwsTrust + ["--jobs", "1"], everyFieldFile, options.jwsInputs / 2)
    let (jwsAll, _) = try rate(jwsTrust + ["--jobs", String(cores)], jwsFile, options.jwsInputs)
    let (receipts1, _) = try rate(receiptTrust + ["--jobs", "1"], receiptFile, options.receiptInputs)
    let (receiptsAll, _) = try rate(receiptTrust + ["--jobs", String(cores)], receiptFile, options.receiptInputs)
    let memoryRun = try measure(verifyReceipt, mixedTrust + ["--jobs", "2"], input: memoryFile)

    print(String(format: "JWS, 1 job:              %10.0f /s (typical transactions, 0.5-0.7 KB payloads)", jws1))
    print(String(format: "JWS, 1 job, every field: %10.0f /s (1.6 KB payload; ratio %.2f, for reference)", everyField1, everyField1 / ecdsa))
    print(String(format: "JWS, %d jobs:             %10.0f /s", cores, jwsAll))
    print(String(format: "receipts, 1 job:         %10.0f /s", receipts1))
    print(String(format: "receipts, %d jobs:        %10.0f /s", cores, receiptsAll))
    print(String(format: "%d mixed inputs, 2 jobs: peak RSS %.1f MiB in %.1f s", options.memoryInputs,
                 Double(memoryRun.peakResidentBytes) / 1_048_576, memoryRun.seconds))

    checks += try measureNotifications(ecdsa: ecdsa, transactions: jws1)
    checks += [
        ("JWS 1 job (typical) / openssl ecdsap256 verify", jws1 / ecdsa, 0.75),
        ("JWS \(cores) jobs / JWS 1 job", jwsAll / jws1, cores >= 2 ? 1.7 : 1.0),
        ("receipts 1 job / openssl rsa2048 verify", receipts1 / rsa, 0.25),
        ("peak RSS MiB, \(options.memoryInputs) inputs, 2 jobs (at most)", Double(memoryRun.peakResidentBytes) / 1_048_576, 64),
    ]

    // Entitlement state: distinct transactions (duplicates would cost the ledger nothing), with and
    // without --state, alternating run by run; CPU time is the measure that holds on a shared machine.
    let stateFile = directory.appendingPathComponent("archive.txt").path
    let stateInputs = try TransactionArchive(pki: "\(root)/TestVectors/pki")
        .write(to: stateFile, subscriptions: options.stateSubscriptions, renewals: options.stateRenewals)
    let archiveArguments = jwsTrust + ["--jobs", String(cores)]
    let statePath = directory.appendingPathComponent("state.jsonl").path
    var plain: Run?
    var withState: Run?
    _ = try measure(verifyReceipt, archiveArguments, input: stateFile)
    for _ in 0..<options.repetitions {
        let off = try measure(verifyReceipt, archiveArguments, input: stateFile)
        let on = try measure(verifyReceipt, archiveArguments + ["--state", statePath, "--as-of", "2025-06-01T00:00:00Z"],
                             input: stateFile)
        guard off.status == 0, on.status == 0 else {
            FileHandle.standardError.write(Data("verify-receipt exited \(off.status) / \(on.status)\n".utf8))
            exit(1)
        }
        if plain.map({ off.cpuSeconds < $0.cpuSeconds }) ?? true { plain = off }
        if withState.map({ on.cpuSeconds < $0.cpuSeconds }) ?? true { withState = on }
    }
    let stateKeys = (try? String(contentsOfFile: statePath, encoding: .utf8))?.split(separator: "\n").count ?? 0
    let plainRun = plain!
    let stateRun = withState!
    print(String(format: "%d distinct transactions, %d jobs: %.0f /s wall, %.0f /CPU-s, peak RSS %.1f MiB",
                 stateInputs, cores, Double(stateInputs) / plainRun.seconds, Double(stateInputs) / plainRun.cpuSeconds,
                 Double(plainRun.peakResidentBytes) / 1_048_576))
    print(String(format: "  with --state: %.0f /s wall, %.0f /CPU-s, %d keys, peak RSS %.1f MiB",
                 Double(stateInputs) / stateRun.seconds, Double(stateInputs) / stateRun.cpuSeconds, stateKeys,
                 Double(stateRun.peakResidentBytes) / 1_048_576))
    checks += [
        ("--state CPU time / without, \(stateInputs) transactions (at most)", stateRun.cpuSeconds / plainRun.cpuSeconds, 1.10),
        ("--state peak RSS MiB, \(stateInputs) transactions (at most)", Double(stateRun.peakResidentBytes) / 1_048_576, 64),
    ]
}

/// Prints each check against its target, removes the scratch directory and exits, non-zero when a
/// target is missed.
func finish(_ checks: [(String, Double, Double)]) -> Never {
    var failed = false
    for (name, value, target) in checks {
        let atMost = name.contains("at most")
        let ok = atMost ? value <= target : value >= target
        failed = failed || !ok
        let label = name.padding(toLength: 62, withPad: " ", startingAt: 0)
        print("\(ok ? "PASS" : "FAIL") \(label) \(String(format: "%8.2f", value)) (target \(atMost ? "<=" : ">=") \(String(format: "%.2f", target)))")
    }
    // exit() skips the `defer` above: remove the scratch directory (and the throwaway CA's keys) first.
    try? FileManager.default.removeItem(at: directory)
    exit(failed ? 1 : 0)
}
if options.notificationsOnly { finish(checks) }

// Revocation: --revocation ocsp against a real responder on loopback, 40k inputs from one leaf.
let ocsp = try OCSPBenchmark(root: root, directory: directory, typicalJWS: typicalJWS)
let ocspFile = try batchFile("jws-ocsp.txt", ocsp.tokens, count: options.ocspInputs, directory: directory)
let ocspTrust = jwsTrust + ["--jobs", String(cores)]
// Off and on alternate, run by run, so load from elsewhere on the machine hits both alike; the
// best run of each counts, as everywhere above.
var bestOff = Double.infinity
var bestOn = Double.infinity
var bestOffCPU = Double.infinity
var bestOnCPU = Double.infinity
var offRequests = 0
var onRequests = 0
for _ in 0...options.repetitions {
    var before = ocsp.responderRequests
    let off = try measure(verifyReceipt, ocspTrust + ["--revocation", "off"], input: ocspFile)
    offRequests += ocsp.responderRequests - before
    before = ocsp.responderRequests
    let on = try measure(verifyReceipt, ocspTrust + ["--revocation", "ocsp"], input: ocspFile)
    onRequests += ocsp.responderRequests - before
    guard off.status == 0, on.status == 0 else {
        FileHandle.standardError.write(Data("verify-receipt exited \(off.status) / \(on.status)\n".utf8))
        ocsp.stop()
        try? FileManager.default.removeItem(at: directory)
        exit(1)
    }
    bestOff = min(bestOff, off.seconds)
    bestOn = min(bestOn, on.seconds)
    bestOffCPU = min(bestOffCPU, off.cpuSeconds)
    bestOnCPU = min(bestOnCPU, on.cpuSeconds)
}
let ocspOff = Double(options.ocspInputs) / bestOff
let ocspOn = Double(options.ocspInputs) / bestOn
let ocspOffCPU = Double(options.ocspInputs) / bestOffCPU
let ocspOnCPU = Double(options.ocspInputs) / bestOnCPU
// Each run is a new process with no cache directory: one request per run, never one per input.
let requestsPerRun = Double(onRequests) / Double(options.repetitions + 1)
let summary = try ocsp.summary(verifyReceipt, ocspTrust + ["--revocation", "ocsp", "--summary"], input: ocspFile)
print(String(format: "JWS, %d jobs, %d inputs from one leaf, --revocation off:  %8.0f /s wall, %8.0f /CPU-s (%d OCSP requests)",
             cores, options.ocspInputs, ocspOff, ocspOffCPU, offRequests))
print(String(format: "JWS, %d jobs, %d inputs from one leaf, --revocation ocsp: %8.0f /s wall, %8.0f /CPU-s (%.0f OCSP request per run)",
             cores, options.ocspInputs, ocspOn, ocspOnCPU, requestsPerRun))
ocsp.stop()
print(String(format: "--revocation ocsp / off, wall time: %.2f (best of %d alternating runs each)", ocspOn / ocspOff,
             options.repetitions + 1))
print("verify-receipt --summary: \(summary)")
checks += [
    // CPU time is the measure that holds on a shared machine; the wall-time ratio is printed above.
    ("--revocation ocsp / off, one leaf, per CPU-second", ocspOnCPU / ocspOffCPU, 0.95),
    ("OCSP requests per run of \(options.ocspInputs) inputs (at most)", requestsPerRun, 1),
]
finish(checks)
