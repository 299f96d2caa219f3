import ArgumentParser
import Foundation
import ReceiptKit
import ReceiptKitFormats
import ReceiptKitRelease

@main
struct VerifyReceipt: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify-receipt",
        abstract: "Verify App Store JWS and legacy receipts offline.",
        discussion: """
            Reads one input per non-empty line from the files given, or from standard input (`-` or \
            no file): a compact JWS, a notification webhook body {"signedPayload": "…"}, a legacy \
            receipt in base64, or a verifyReceipt request body {"receipt-data": "…"}. A file (or \
            standard input) whose first byte is 0x30 is one binary DER/BER receipt. Writes one JSON \
            record per input, in input order. Exit status: 0 when every input verified, 1 when any \
            was rejected, 64 for a usage error, 66 for an unreadable file.
            """,
        version: Release.versionLine)

    @Argument(help: "Input files, one input per line ('-' or none: standard input).")
    var files: [String] = []

    @Option(name: .customLong("root"), help: ArgumentHelp("A trusted root certificate, DER or PEM (repeatable). Replaces Apple's built-in pins.", valueName: "file"))
    var roots: [String] = []

    @Option(name: .customLong("pin-sha256"), help: ArgumentHelp("A trusted root's SHA-256 fingerprint, hex (repeatable). Replaces Apple's built-in pins.", valueName: "hex"))
    var pins: [String] = []

    @Option(help: ArgumentHelp("Validation time: 'signed' (the payload's signed date, default), 'now', or an ISO 8601 instant such as 2025-01-01T00:00:00Z.", valueName: "time"))
    var at: String = "signed"

    @Option(name: .customLong("bundle-id"), help: ArgumentHelp("Accept this app's payloads only (repeatable, or a comma list: each one accepted).", valueName: "id"))
    var bundleIds: [String] = []

    @Option(name: .customLong("app-apple-id"), help: ArgumentHelp("The App Apple ID of the one --bundle-id (or, alone, of any app); for several apps, use --app.", valueName: "n"))
    var appAppleId: Int64?

    @Option(name: .customLong("app"), help: ArgumentHelp("Accept this app's payloads, its App Apple ID checked when given (repeatable, or a comma list).", valueName: "bundle-id[:app-apple-id]"))
    var apps: [String] = []

    @Option(name: .customLong("environment"), help: ArgumentHelp("Accept this environment's payloads only: Production, Sandbox, Xcode or LocalTesting (repeatable, or a comma list).", valueName: "name"))
    var environments: [String] = []

    @Option(help: "Verify every input as this kind: transaction, renewal_info, notification, app_transaction, realtime_request, receipt.")
    var kind: String?

    @Option(name: .customLong("max-jws-size"), help: "The largest JWS accepted, in bytes.")
    var maximumJWSSize: Int = AppStoreVerifier.Configuration.defaultMaximumJWSSize

    @Option(name: .customLong("max-receipt-size"), help: "The largest legacy receipt accepted, in bytes of DER (its base64 may be a third longer).")
    var maximumReceiptSize: Int = AppStoreVerifier.Configuration.defaultMaximumReceiptSize

    @Option(name: .customLong("device-id"), help: ArgumentHelp("Require a legacy receipt's device hash to match this device: a UUID (identifierForVendor) or a 12-hex-digit MAC address.", valueName: "id"))
    var deviceId: String?

    @Option(help: ArgumentHelp("Output format: 'json' (ReceiptKit's record, default), 'verifyreceipt' (the body Apple's verifyReceipt endpoint returns; legacy receipts only) or 'csv' (one row per transaction, with a header row).", valueName: "format"))
    var format: OutputFormat = .json

    @Flag(help: "Indent the JSON output.")
    var pretty = false

    @Option(help: "Verify this many inputs in parallel (default: the number of cores). Output order and bytes do not depend on it.")
    var jobs: Int = ProcessInfo.processInfo.activeProcessorCount

    @Option(help: ArgumentHelp("Progress on standard error while running: auto (when it is a terminal), always or never.", valueName: "when"))
    var progress: ProgressMode = .auto

    @Flag(help: "At the end, print counts by status, error code, kind and environment, and the throughput, on standard error.")
    var summary = false

    @Option(help: ArgumentHelp("Revocation check: off (default; no network), ocsp (OCSP, an unreachable responder is a warning), ocsp-strict (no answer rejects with revocation_unknown) or offline (only --ocsp-cache and --crl).", valueName: "mode"))
    var revocation: String = "off"

    @Option(name: .customLong("ocsp-cache"), help: ArgumentHelp("Keep OCSP answers in this directory, until their nextUpdate, for later runs (and read them in offline mode).", valueName: "dir"))
    var ocspCache: String?

    @Option(name: .customLong("ocsp-timeout"), help: ArgumentHelp("The longest one OCSP exchange may take (default 5).", valueName: "seconds"))
    var ocspTimeout: Double = RevocationPolicy.defaultTimeout

    @Option(name: .customLong("crl"), help: ArgumentHelp("A certificate revocation list, DER or PEM (repeatable); used with any revocation mode.", valueName: "file"))
    var crls: [String] = []

    @Flag(name: .customLong("with-ids"), help: "Each input line is ID<TAB>INPUT; the record (and CSV row) carries \"id\": ID, so results can be joined to their source rows.")
    var withIDs = false

    @Option(name: .customLong("state"), help: ArgumentHelp("At the end, write the entitlement state of every subscription and purchase the verified inputs carry to this file, one JSON object per line, sorted by bundle id, environment and original transaction id ('-': standard output, instead of the per-input records).", valueName: "path"))
    var statePath: String?

    @Option(name: .customLong("as-of"), help: ArgumentHelp("With --state: the instant the state is evaluated at, 'now' (default) or an ISO 8601 instant such as 2025-01-01T00:00:00Z.", valueName: "time"))
    var asOf: String?

    @Option(name: .customLong("entitlements"), help: ArgumentHelp("With --state: after the state lines, one line per app account token with its named entitlements (\"pro\", \"remove_ads\") by this entitlements file, sorted by token; states without a token are in no such line.", valueName: "file"))
    var entitlementsPath: String?

    /// Reads, verifies, writes and counts every input. It is the one place that wires the
    /// command's parts (renderer, pipeline or single job, ledger, progress) together, which is why
    /// it is longer than the parts it calls.
    func run() throws {
        guard jobs >= 1, jobs <= 1024 else { throw ValidationError("--jobs must be between 1 and 1024") }
        let verifier = try makeVerifier()
        let forcedKind = try parseKind()
        let entitlements = try readEntitlements()
        let stateOutput = try openStateOutput(entitlements: entitlements)
        let sources = try openSources()
        let lineLimit = self.lineLimit
        let renderer = Renderer(
            format: format, pretty: pretty, expectedEnvironment: verifier.configuration.environment,
            writesRecords: !(stateOutput?.replacesRecords ?? false), keepsRecords: stateOutput != nil)
        let verifyOne = Self.verification(by: verifier, as: forcedKind, lineLimit: lineLimit)
        let work: @Sendable (Input) -> Rendered = { input in
            renderer.render(verifyOne(input), label: input.label)
        }

        var output = StandardOutput()
        var tally = Tally()
        var ledger = EntitlementLedger()
        let reporter = ProgressReporter(mode: progress)
        if format == .csv, renderer.writesRecords {
            output.write(Array(VerificationOutcome.csvHeader(withIDs: withIDs).joined(separator: ",").utf8))
        }
        let count: (Counted) -> Void = { counted in
            tally.add(counted)
            reporter.update(tally)
            if let record = counted.record { ledger.add(record) }
        }
        let deliver: (Rendered) -> Void = { rendered in
            if renderer.writesRecords { output.write(rendered.bytes) }
            count(rendered.counted)
        }
        let pipeline = jobs > 1 ? OrderedPipeline(jobs: jobs, work: work, deliver: deliver) : nil
        var inputNumber = 0
        func submit(_ line: LineReader.Line) {
            if case .bytes(let bytes) = line,
                bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A }) {
                return
            }
            inputNumber += 1
            let input = withIDs
                ? Input.withID(number: inputNumber, line: line)
                : Input(number: inputNumber, line: line, label: InputLabel(number: inputNumber))
            if let pipeline {
                pipeline.submit(input, size: input.size)
            } else if renderer.writesRecords {
                // One job: render straight into the output buffer.
                count(output.writeLine { renderer.render(verifyOne(input), label: input.label, appendingTo: &$0) })
            } else {
                var nothing: [UInt8] = []
                count(renderer.render(verifyOne(input), label: input.label, appendingTo: &nothing))
            }
        }
        try read(sources, reusesStorage: pipeline == nil, submit: submit) {
            pipeline?.finish()
            output.flush()
        }
        pipeline?.finish()
        output.flush()
        if let stateOutput {
            try stateOutput.write(ledger)
        }
        reporter.finish(tally)
        if summary {
            Self.complain(tally.summary())
            if revocation != "off" {
                Self.complain("  revocation: \(revocation), \(verifier.ocspRequestCount) OCSP requests")
            }
        }
        if tally.rejected > 0 { throw ExitCode(1) }
    }

    /// The longest line read as one input: a line holds a JWS, or a receipt's base64 in a
    /// verifyReceipt request body.
    private var lineLimit: Int {
        max(maximumJWSSize, Base64.paddedLength(ofByteCount: maximumReceiptSize)) + 4096
    }

    /// Verifies one input, or rejects a line that was too long or, with `--with-ids`, had no id.
    private static func verification(
        by verifier: AppStoreVerifier, as forcedKind: PayloadKind?, lineLimit: Int
    ) -> @Sendable (Input) -> VerificationOutcome {
        { input in
            switch input.line {
            case .bytes(let bytes):
                verifier.verify(input: bytes, as: forcedKind)
            case .tooLong(let length, _):
                .rejected(ReceiptKitError(.inputTooLarge, "input is \(length) bytes; the limit is \(lineLimit)"))
            case .missingID:
                .rejected(ReceiptKitError(.unrecognizedInput, "--with-ids expects ID<TAB>INPUT, and this line has no tab"))
            }
        }
    }

    /// Reads every source in order, handing each line (or a binary receipt's whole source) to
    /// `submit`, and closes it. On a read error, calls `stopping` (which drains and flushes what
    /// was already submitted), reports the error and exits with 66.
    private func read(
        _ sources: [InputSource], reusesStorage: Bool, submit: (LineReader.Line) -> Void, stopping: () -> Void
    ) throws {
        for source in sources {
            var reader = LineReader(descriptor: source.descriptor, maximumLength: lineLimit, reusesStorage: reusesStorage)
            defer { source.close() }
            do {
                // With ids, every line starts with its id, so nothing is taken for binary.
                if !withIDs, try reader.peek() == 0x30 {
                    // A DER/BER receipt (a SEQUENCE, 0x30) is binary: the whole source is one input.
                    submit(try reader.rest())
                } else {
                    while let line = try reader.next() {
                        submit(line)
                    }
                }
            } catch {
                stopping()
                Self.complain("verify-receipt: cannot read \(source.name): \(error)")
                throw ExitCode(66)
            }
        }
    }

    private func makeVerifier() throws -> AppStoreVerifier {
        AppStoreVerifier(try makeConfiguration())
    }

    /// The verifier configuration the options ask for: anchors, required claims, validation
    /// time and size limits (the tests build their verifiers with this).
    func makeConfiguration() throws -> AppStoreVerifier.Configuration {
        var configuration = AppStoreVerifier.Configuration(
            maximumJWSSize: maximumJWSSize, maximumReceiptSize: maximumReceiptSize)
        if !roots.isEmpty || !pins.isEmpty {
            let certificates = try roots.map { path -> [UInt8] in
                guard let data = FileManager.default.contents(atPath: path) else {
                    Self.complain("verify-receipt: cannot read root certificate \(path)")
                    throw ExitCode(66)
                }
                return Array(data)
            }
            do {
                configuration.anchors = try TrustAnchors(rootCertificates: certificates, pinnedSHA256: pins)
            } catch let error as ReceiptKitError {
                throw ValidationError(error.message)
            }
        }
        configuration.apps = try makeApps()
        do {
            configuration.environments = try AppStoreVerifier.Configuration.environments(parsing: environments)
        } catch let error as ReceiptKitError {
            throw ValidationError("--environment: \(error.reason)")
        }
        switch at {
        case "signed": configuration.validationTime = .signedDate
        case "now": configuration.validationTime = .now
        default:
            guard let instant = Timestamp(rfc3339: at) else {
                throw ValidationError("--at must be 'signed', 'now' or an ISO 8601 instant such as 2025-01-01T00:00:00Z")
            }
            configuration.validationTime = .fixed(instant)
        }
        guard maximumJWSSize > 0 else { throw ValidationError("--max-jws-size must be positive") }
        guard maximumReceiptSize > 0, maximumReceiptSize <= 1 << 30 else {
            throw ValidationError("--max-receipt-size must be between 1 and 1073741824")
        }
        configuration.revocation = try makeRevocationPolicy()
        if let deviceId {
            guard let device = DeviceIdentifier(deviceId) else {
                throw ValidationError("--device-id must be a UUID (8-4-4-4-12 hex digits) or a MAC address (12 hex digits)")
            }
            configuration.deviceIdentifier = device
        }
        return configuration
    }

    /// The apps `--bundle-id`, `--app` and `--app-apple-id` name: every bundle id once, and
    /// `--app-apple-id` only with at most one `--bundle-id` and no `--app` (the single-app form),
    /// so that it is never a question which app it belongs to.
    private func makeApps() throws -> [AppStoreVerifier.App] {
        if let paired = bundleIds.first(where: { $0.contains(":") }) {
            throw ValidationError("--bundle-id \(paired): give an app with its App Apple ID as --app BUNDLE_ID:APP_APPLE_ID")
        }
        var apps: [AppStoreVerifier.App]
        do {
            apps = try AppStoreVerifier.Configuration.apps(parsing: bundleIds + self.apps)
        } catch let error as ReceiptKitError {
            throw ValidationError("--bundle-id, --app: \(error.reason)")
        }
        if let appAppleId {
            guard self.apps.isEmpty, apps.count <= 1 else {
                throw ValidationError(
                    "--app-apple-id goes with one --bundle-id; for several apps, give each its own as --app BUNDLE_ID:APP_APPLE_ID")
            }
            apps = [apps.first?.bundleId.map { .init(bundleId: $0, appAppleId: appAppleId) } ?? .init(appAppleId: appAppleId)]
        }
        return apps
    }

    /// Reads `--entitlements` before the state file is created, so a bad file is a usage error
    /// that leaves nothing behind.
    private func readEntitlements() throws -> EntitlementsOutput? {
        guard let entitlementsPath else { return nil }
        guard statePath != nil else {
            throw ValidationError("--entitlements applies to --state; give --state PATH too")
        }
        guard let data = FileManager.default.contents(atPath: entitlementsPath) else {
            Self.complain("verify-receipt: cannot read the entitlements file \(entitlementsPath)")
            throw ExitCode(66)
        }
        do {
            return EntitlementsOutput(catalog: try EntitlementCatalog(jsonBytes: Array(data)), path: entitlementsPath)
        } catch {
            throw ValidationError("--entitlements \(entitlementsPath): \(error.reason)")
        }
    }

    /// Parses `--state` and `--as-of`, and creates the state file up front, so an unwritable path
    /// is reported before any input is read.
    private func openStateOutput(entitlements: EntitlementsOutput?) throws -> StateOutput? {
        guard let statePath else {
            if asOf != nil { throw ValidationError("--as-of applies to --state; give --state PATH too") }
            return nil
        }
        let instant: Timestamp
        switch asOf ?? "now" {
        case "now": instant = Timestamp(Date())
        case let text:
            guard let parsed = Timestamp(rfc3339: text) else {
                throw ValidationError("--as-of must be 'now' or an ISO 8601 instant such as 2025-01-01T00:00:00Z")
            }
            instant = parsed
        }
        if statePath == "-" { return StateOutput(descriptor: 1, asOf: instant, entitlements: entitlements) }
        let descriptor = open(statePath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard descriptor >= 0 else {
            Self.complain("verify-receipt: cannot create \(statePath): \(String(cString: strerror(errno)))")
            throw ExitCode(73)
        }
        return StateOutput(descriptor: descriptor, asOf: instant, entitlements: entitlements)
    }

    private func makeRevocationPolicy() throws -> RevocationPolicy {
        guard let mode = RevocationPolicy.Mode(rawValue: revocation) else {
            throw ValidationError("--revocation must be one of \(RevocationPolicy.Mode.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard ocspTimeout > 0, ocspTimeout <= 600 else { throw ValidationError("--ocsp-timeout must be between 0 and 600 seconds") }
        guard mode != .off || (ocspCache == nil && crls.isEmpty) else {
            throw ValidationError("--ocsp-cache and --crl need --revocation ocsp, ocsp-strict or offline")
        }
        if let ocspCache {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: ocspCache, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw ValidationError("--ocsp-cache \(ocspCache) is not a directory")
            }
        }
        let lists = try crls.map { path -> RevocationPolicy.CRL in
            guard let data = FileManager.default.contents(atPath: path) else {
                Self.complain("verify-receipt: cannot read CRL \(path)")
                throw ExitCode(66)
            }
            do {
                return try RevocationPolicy.CRL(contents: Array(data), name: path)
            } catch let error as ReceiptKitError {
                throw ValidationError(error.message)
            }
        }
        return RevocationPolicy(mode: mode, timeout: ocspTimeout, cacheDirectory: ocspCache, crls: lists)
    }

    /// The kind `--kind` forces every input to be read as, or `nil` to detect it.
    func parseKind() throws -> PayloadKind? {
        guard let kind else { return nil }
        guard let parsed = PayloadKind(rawValue: kind) else {
            throw ValidationError("--kind must be one of \(PayloadKind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return parsed
    }

    /// Opens every input up front, so an unreadable file is reported before any output.
    private func openSources() throws -> [InputSource] {
        let names = files.isEmpty ? ["-"] : files
        return try names.map { name in
            if name == "-" { return InputSource(name: "standard input", descriptor: 0) }
            let descriptor = open(name, O_RDONLY)
            guard descriptor >= 0 else {
                Self.complain("verify-receipt: cannot open \(name): \(String(cString: strerror(errno)))")
                throw ExitCode(66)
            }
            return InputSource(name: name, descriptor: descriptor)
        }
    }

    static func complain(_ message: String) {
        FileHandle.standardError.write(Data((message + "\n").utf8))
    }
}

/// What `verify-receipt` prints for each input.
enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
    /// ReceiptKit's normalized record.
    case json
    /// The response body of Apple's verifyReceipt endpoint.
    case verifyreceipt
    /// One CSV row per transaction, with a header row.
    case csv
}

/// An input file or standard input.
struct InputSource {
    let name: String
    let descriptor: Int32

    func close() {
        if descriptor > 0 { _ = Foundation.close(descriptor) }
    }
}

/// The entitlements file `--entitlements` names, read.
struct EntitlementsOutput {
    let catalog: EntitlementCatalog
    /// The file's path, as given.
    let path: String
}

/// Where `--state` writes the states: a file, or standard output in place of the records.
struct StateOutput {
    let descriptor: Int32
    /// The instant the states are evaluated at (`--as-of`).
    let asOf: Timestamp
    /// With `--entitlements`: a line per app account token follows the states.
    let entitlements: EntitlementsOutput?

    /// Whether the states go to standard output, instead of the per-input records.
    var replacesRecords: Bool { descriptor == 1 }

    /// Writes the ledger's states at ``asOf``, one per line, and closes the file; a state at a
    /// time, so a million keys take no more memory than one. With ``entitlements``, the states
    /// that carry an app account token are kept, and after them comes one line per token, sorted
    /// (by their UTF-8 bytes): its customer's entitlements. What the file says that the products'
    /// types contradict is a warning on standard error.
    func write(_ ledger: EntitlementLedger) throws {
        var output = StandardOutput(descriptor: descriptor)
        var customers: [String: [SubscriptionState]] = [:]
        var productTypes: [String: String] = [:]
        for key in ledger.keys {
            guard let state = ledger.state(for: key, at: asOf) else { continue }
            output.writeLine { state.appendJSON(to: &$0) }
            guard entitlements != nil else { continue }
            if let token = state.appAccountToken { customers[token, default: []].append(state) }
            if let product = state.productId, let type = state.productType, productTypes[product] == nil {
                productTypes[product] = type
            }
        }
        if let entitlements {
            for reason in entitlements.catalog.contradictions(productTypes: productTypes) {
                VerifyReceipt.complain("verify-receipt: warning: --entitlements \(entitlements.path): \(reason)")
            }
            for token in customers.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                let answers = entitlements.catalog.entitlements(of: customers[token] ?? [], at: asOf)
                output.writeLine { buffer in
                    JSONWriter.append(to: &buffer, pretty: false) { writer in
                        writer.object { json in
                            json.member("app_account_token", token)
                            json.member("as_of", asOf)
                            json.member("entitled", answers.contains(where: \.isActive))
                            json.member("entitlements") { NamedEntitlement.write(answers, to: &$0) }
                        }
                    }
                }
            }
        }
        output.flush()
        if descriptor != 1 {
            guard output.failed == false, Foundation.close(descriptor) == 0 else {
                VerifyReceipt.complain("verify-receipt: cannot write the state file: \(String(cString: strerror(errno)))")
                throw ExitCode(73)
            }
        }
    }
}

/// Buffered output to a file descriptor (standard output unless told), one record per line.
struct StandardOutput {
    private var buffer: [UInt8] = []
    private let descriptor: Int32
    /// Whether a write failed (a full disk, a closed pipe).
    private(set) var failed = false

    init(descriptor: Int32 = 1) {
        self.descriptor = descriptor
    }

    mutating func write(_ line: [UInt8]) {
        writeLine { $0.append(contentsOf: line) }
    }

    /// Writes the line `body` appends to the buffer, and its newline.
    mutating func writeLine<Result>(_ body: (inout [UInt8]) -> Result) -> Result {
        let result = body(&buffer)
        buffer.append(UInt8(ascii: "\n"))
        if buffer.count >= 1 << 16 { flush() }
        return result
    }

    mutating func flush() {
        var offset = 0
        while offset < buffer.count {
            let written = buffer[offset...].withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, $0.count) }
            if written <= 0 {
                if written < 0, errno == EINTR { continue }
                failed = true
                break
            }
            offset += written
        }
        buffer.removeAll(keepingCapacity: true)
    }
}
