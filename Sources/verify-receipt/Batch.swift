import ArgumentParser
import Foundation
import ReceiptKit
import ReceiptKitFormats

/// One input with its 1-based number and, with `--with-ids`, the id its line carried.
struct Input: Sendable {
    let number: Int
    let line: LineReader.Line
    let label: InputLabel

    var size: Int {
        switch line {
        case .bytes(let bytes): bytes.count
        case .tooLong, .missingID: 0
        }
    }

    /// An input whose line is `ID<TAB>INPUT`: the id is split off, and a line without a tab
    /// becomes a line the verifier rejects, with a `null` id.
    static func withID(number: Int, line: LineReader.Line) -> Input {
        let tab = UInt8(ascii: "\t")
        switch line {
        case .bytes(let bytes):
            guard let split = bytes.firstIndex(of: tab) else {
                return Input(number: number, line: .missingID, label: InputLabel(number: number, id: nil))
            }
            let id = String(decoding: bytes[..<split], as: UTF8.self)
            return Input(number: number, line: .bytes(Array(bytes[(split + 1)...])), label: InputLabel(number: number, id: id))
        case .tooLong(let length, let prefix):
            let id = prefix.firstIndex(of: tab).map { String(decoding: prefix[..<$0], as: UTF8.self) }
            return Input(number: number, line: .tooLong(length: length, prefix: []), label: InputLabel(number: number, id: id))
        case .missingID:
            return Input(number: number, line: line, label: InputLabel(number: number, id: nil))
        }
    }
}

/// What the summary counts of one input, and with `--state` the record the ledger folds in.
struct Counted: Sendable {
    let verified: Bool
    let errorCode: String?
    let kind: String?
    let environment: String?
    /// The verified record, kept only when `--state` asks for it.
    var record: VerificationRecord? = nil
}

/// One input's rendered output and what the summary counts of it.
struct Rendered: Sendable {
    /// The output's UTF-8 bytes, without its final newline.
    let bytes: [UInt8]
    let counted: Counted
}

/// Turns an outcome into the selected output format.
struct Renderer: Sendable {
    let format: OutputFormat
    let pretty: Bool
    let expectedEnvironment: AppStoreEnvironment?
    /// Whether per-input records are written (not with `--state -`, whose states replace them).
    let writesRecords: Bool
    /// Whether verified records are passed on for `--state`.
    let keepsRecords: Bool

    /// Renders into bytes of its own (for a worker thread).
    func render(_ outcome: VerificationOutcome, label: InputLabel) -> Rendered {
        var bytes: [UInt8] = []
        if format == .json { bytes.reserveCapacity(2048) }
        let counted = render(outcome, label: label, appendingTo: &bytes)
        return Rendered(bytes: bytes, counted: counted)
    }

    /// Renders by appending to `bytes` (the output buffer itself, on one job), without a newline.
    func render(_ outcome: VerificationOutcome, label: InputLabel, appendingTo bytes: inout [UInt8]) -> Counted {
        var verified = outcome.isVerified
        switch format {
        case .json:
            if writesRecords { outcome.appendJSON(label: label, pretty: pretty, to: &bytes) }
        case .csv:
            if writesRecords { bytes.append(contentsOf: outcome.csvRows(label: label).dropLast().utf8) }
        case .verifyreceipt:
            verified = outcome.verifyReceiptStatus(expectedEnvironment: expectedEnvironment) == 0
            if writesRecords {
                bytes.append(contentsOf: outcome.verifyReceiptJSON(
                    expectedEnvironment: expectedEnvironment, requestDate: Timestamp(Date()), pretty: pretty, id: label).utf8)
            }
        }
        switch outcome {
        case .verified(let record):
            return Counted(verified: verified, errorCode: nil, kind: record.kind.rawValue, environment: record.environment,
                           record: keepsRecords ? record : nil)
        case .rejected(let error):
            return Counted(verified: false, errorCode: error.code.rawValue, kind: nil, environment: nil)
        }
    }
}

/// Counts of a batch so far.
struct Tally {
    private(set) var total = 0
    private(set) var rejected = 0
    private var byCode: [String: Int] = [:]
    private var byKind: [String: Int] = [:]
    private var byEnvironment: [String: Int] = [:]
    let start = Date()

    mutating func add(_ rendered: Counted) {
        total += 1
        if !rendered.verified { rejected += 1 }
        if let code = rendered.errorCode { byCode[code, default: 0] += 1 }
        if let kind = rendered.kind { byKind[kind, default: 0] += 1 }
        if rendered.verified || rendered.kind != nil {
            byEnvironment[rendered.environment ?? "(none)", default: 0] += 1
        }
    }

    var rate: Double {
        let elapsed = Date().timeIntervalSince(start)
        return elapsed > 0 ? Double(total) / elapsed : 0
    }

    /// The end-of-run summary.
    func summary() -> String {
        let elapsed = Date().timeIntervalSince(start)
        var lines = ["verify-receipt summary: \(total) inputs in \(String(format: "%.2f", elapsed)) s (\(String(format: "%.0f", rate)) inputs/s)"]
        lines.append("  status: verified \(total - rejected), rejected \(rejected)")
        func section(_ title: String, _ counts: [String: Int]) {
            guard !counts.isEmpty else { return }
            lines.append("  \(title):")
            for (key, count) in counts.sorted(by: { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }) {
                lines.append("    \(key) \(count)")
            }
        }
        section("error code", byCode)
        section("kind", byKind)
        section("environment", byEnvironment)
        return lines.joined(separator: "\n")
    }
}

enum ProgressMode: String, ExpressibleByArgument, CaseIterable {
    case auto
    case always
    case never
}

/// Progress on standard error, at most a few times a second.
final class ProgressReporter {
    private let enabled: Bool
    private var lastReport = Date()
    private var printed = false

    init(mode: ProgressMode) {
        switch mode {
        case .auto: enabled = isatty(2) == 1
        case .always: enabled = true
        case .never: enabled = false
        }
    }

    func update(_ tally: Tally) {
        guard enabled, tally.total % 64 == 0 else { return }
        let now = Date()
        guard now.timeIntervalSince(lastReport) >= 0.5 else { return }
        lastReport = now
        write(tally, final: false)
    }

    func finish(_ tally: Tally) {
        guard enabled, printed || tally.total > 0 else { return }
        write(tally, final: true)
    }

    private func write(_ tally: Tally, final: Bool) {
        printed = true
        let line = "\r\(tally.total) inputs, \(String(format: "%.0f", tally.rate))/s, \(tally.rejected) rejected"
        FileHandle.standardError.write(Data((line + (final ? "\n" : "")).utf8))
    }
}
