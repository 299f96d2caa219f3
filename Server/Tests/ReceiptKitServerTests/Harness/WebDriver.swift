import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import Testing

/// Headless Chromium driven through chromedriver over the W3C WebDriver protocol (JSON over HTTP
/// on loopback), from Debian's `chromium` and `chromium-driver`: no Selenium.
///
/// ``with(width:height:_:)`` starts chromedriver on a free loopback port, opens one session
/// (`--headless=new`, a new temporary profile, `--no-sandbox` since the tests run as root, the
/// browser's own background traffic off) with the browser's console log and its network events
/// recorded, and afterwards ends the session, stops the chromedriver it started (by its PID) and
/// removes the profile.
final class WebDriver: Sendable {
    /// chromedriver and Chromium from Debian's packages.
    static let prerequisite = Prerequisite(
        name: "chromium and chromedriver (Debian's chromium and chromium-driver packages, for the console's browser tests)"
    ) { chromium != nil && chromedriver != nil }

    static let chromium = Tools.path(of: "chromium")
    static let chromedriver = Tools.path(of: "chromedriver")

    private let http: HTTPClient
    private let base: String
    let session: String
    /// The browser's process id, as chromedriver reports it.
    let browserPID: Int32?

    private init(http: HTTPClient, base: String, session: String, browserPID: Int32?) {
        self.http = http
        self.base = base
        self.session = session
        self.browserPID = browserPID
    }

    /// Runs `body` with a browser whose window is `width` × `height`.
    static func with<T>(width: Int = 1280, height: Int = 800, _ body: (WebDriver) async throws -> T) async throws -> T {
        guard let chromium, let chromedriver else { throw Prerequisite.Missing(name: prerequisite.name) }
        let profile = FileManager.default.temporaryDirectory.appendingPathComponent("receiptkit-chromium-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: profile) }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: chromedriver)
        process.arguments = ["--port=0", "--allowed-ips=127.0.0.1"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Stopped with SIGKILL: a child that Foundation's Process starts may not act on SIGTERM,
        // and the session is already over (the browser closed) when this runs.
        defer {
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
        let port = try await Self.port(announcedIn: Announcements(reading: output.fileHandleForReading), by: process)
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let base = "http://127.0.0.1:\(port)"
        let capabilities: [String: Any] = [
            "browserName": "chrome",
            "goog:chromeOptions": [
                "binary": chromium,
                "args": [
                    "--headless=new", "--no-sandbox", "--user-data-dir=\(profile.path)", "--window-size=\(width),\(height)",
                    "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--disable-extensions", "--disable-default-apps", "--disable-crash-reporter", "--disable-breakpad",
                    "--hide-scrollbars", "--force-device-scale-factor=1",
                ],
            ] as [String: Any],
            "goog:loggingPrefs": ["browser": "ALL", "performance": "ALL"],
        ]
        let driver: WebDriver
        do {
            let answer = try await Self.call(http, "POST", base + "/session", ["capabilities": ["alwaysMatch": capabilities]])
            let value = try #require(answer as? [String: Any])
            let session = try #require(value["sessionId"] as? String, "no session: \(value)")
            let pid = ((value["capabilities"] as? [String: Any])?["goog:processID"] as? Int).map(Int32.init)
            driver = WebDriver(http: http, base: base + "/session/" + session, session: session, browserPID: pid)
        } catch {
            try? await http.shutdown()
            throw error
        }
        let result: T
        do {
            result = try await body(driver)
        } catch {
            await driver.quit()
            try? await http.shutdown()
            throw error
        }
        await driver.quit()
        try await http.shutdown()
        return result
    }

    /// Ends the session (chromedriver closes the browser it started); if the browser is still
    /// there, stops it by the PID chromedriver reported.
    private func quit() async {
        _ = try? await Self.call(http, "DELETE", base, nil)
        if let browserPID, kill(browserPID, 0) == 0 { kill(browserPID, SIGKILL) }
    }

    /// The port in chromedriver's "started successfully on port N" line, within 30 seconds.
    private static func port(announcedIn announcements: Announcements, by process: Process) async throws -> Int {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline && process.isRunning {
            let text = announcements.text
            if let range = text.range(of: "started successfully on port "), let end = text[range.upperBound...].firstIndex(where: { !$0.isNumber }),
               let port = Int(text[range.upperBound..<end]) {
                return port
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw WebDriverError(message: "chromedriver did not say its port within 30 s: \(announcements.text)")
    }

    /// What chromedriver (and the browser it starts) writes, read to its end by a thread of its
    /// own: a pipe nobody reads fills up and blocks the writer, and a read blocks its thread.
    private final class Announcements: Sendable {
        private let state = NIOLockedValueBox("")

        init(reading handle: FileHandle) {
            Thread { [state] in
                while case let data = handle.availableData, !data.isEmpty {
                    state.withLockedValue { text in
                        if text.utf8.count < 65_536 { text += String(decoding: data, as: UTF8.self) }  // the first lines say the port
                    }
                }
            }.start()
        }

        var text: String { state.withLockedValue { $0 } }
    }

    // MARK: Commands

    /// Sends a command to the session (`path` after `/session/{id}`); its `value`.
    @discardableResult
    func command(_ method: String, _ path: String, _ body: [String: Any]? = nil) async throws -> Any? {
        let answer = try await Self.call(http, method, base + path, body ?? (method == "POST" ? [:] : nil))
        return answer is NSNull ? nil : answer
    }

    private static func call(_ http: HTTPClient, _ method: String, _ url: String, _ body: [String: Any]?) async throws -> Any? {
        var request = HTTPClientRequest(url: url)
        request.method = HTTPMethod(rawValue: method)
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
        }
        let response = try await http.execute(request, timeout: .seconds(60))
        let bytes = try await response.body.collect(upTo: 64 << 20)
        let object = try JSONSerialization.jsonObject(with: Data(bytes.readableBytesView), options: [.fragmentsAllowed]) as? [String: Any]
        let value = object?["value"]
        guard response.status == .ok else {
            let error = value as? [String: Any]
            throw WebDriverError(message: "\(method) \(url): \(error?["error"] ?? response.status) \(error?["message"] ?? "")")
        }
        return value
    }

    func navigate(to url: String) async throws {
        try await command("POST", "/url", ["url": url])
    }

    /// Runs a script in the page (its `return` is the answer).
    @discardableResult
    func execute(_ script: String, _ arguments: [Any] = []) async throws -> Any? {
        try await command("POST", "/execute/sync", ["script": script, "args": arguments])
    }

    /// The element a CSS selector finds first.
    func element(_ selector: String) async throws -> Element {
        let value = try await command("POST", "/element", ["using": "css selector", "value": selector])
        return try Element(value)
    }

    func elements(_ selector: String) async throws -> [Element] {
        let value = try await command("POST", "/elements", ["using": "css selector", "value": selector]) as? [Any] ?? []
        return try value.map(Element.init)
    }

    func click(_ element: Element) async throws {
        try await command("POST", "/element/\(element.id)/click")
    }

    func type(_ text: String, into element: Element) async throws {
        try await command("POST", "/element/\(element.id)/value", ["text": text])
    }

    func text(of element: Element) async throws -> String {
        try await command("GET", "/element/\(element.id)/text") as? String ?? ""
    }

    /// A real click of the mouse at a point of the viewport, in CSS pixels.
    func click(x: Double, y: Double) async throws {
        let pointer: [String: Any] = [
            "type": "pointer", "id": "mouse", "parameters": ["pointerType": "mouse"],
            "actions": [
                ["type": "pointerMove", "duration": 0, "origin": "viewport", "x": Int(x.rounded()), "y": Int(y.rounded())],
                ["type": "pointerDown", "button": 0], ["type": "pointerUp", "button": 0],
            ],
        ]
        try await command("POST", "/actions", ["actions": [pointer]])
        try await command("DELETE", "/actions")
    }

    func setWindow(width: Int, height: Int) async throws {
        try await command("POST", "/window/rect", ["width": width, "height": height])
    }

    /// A PNG of the viewport.
    func screenshot() async throws -> Data {
        let base64 = try #require(try await command("GET", "/screenshot") as? String)
        return try #require(Data(base64Encoded: base64))
    }

    /// The log entries of a type (`browser`: the page's console; `performance`: DevTools events)
    /// since the last call.
    func log(_ type: String) async throws -> [[String: Any]] {
        try await command("POST", "/se/log", ["type": type]) as? [[String: Any]] ?? []
    }

    /// Waits until a script returns something other than `null`, `false` or `undefined`, and
    /// returns it.
    @discardableResult
    func wait(
        for what: String, _ script: String, _ arguments: [Any] = [], timeout: Duration = .seconds(20),
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> Any {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let value = try await execute(script, arguments), !(value is NSNull), (value as? Bool) != false {
                return value
            }
            if ContinuousClock.now > deadline {
                let body = try await execute("return document.body.innerText.slice(0, 2000)") as? String ?? ""
                throw WebDriverError(message: "timed out waiting for \(what); the page says: \(body)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// An element of the page.
    struct Element: Sendable {
        let id: String

        init(_ value: Any?) throws {
            let object = try #require(value as? [String: Any])
            id = try #require(object["element-6066-11e4-a52e-4f735466cecf"] as? String)
        }
    }
}

struct WebDriverError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
