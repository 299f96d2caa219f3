import Foundation
import Hummingbird
import HummingbirdTesting
import ReceiptKit
import ReceiptKitServer
import Testing

/// The console in a real browser — headless Chromium driven over WebDriver — against a server on
/// loopback filled with the customer story: sign in, the overview, search, the customer, the
/// timeline's bars, shadings and marks, a record opened from a mark, the state as of an instant
/// clicked on the axis, a customer id and a product id carrying markup shown as text, a phone's
/// width, named entitlements and a grant made and ended from the customer's page; and all along,
/// no request leaving loopback, no error in the page's console, the token in no URL and no cookie.
///
/// With `RECEIPTKIT_CONSOLE_SCREENSHOTS=DIRECTORY` the test writes the screenshots of
/// `docs/console.md` there (1280×800 and 390 pixels wide).
@Suite("The console in headless Chromium", .serialized, .requires(WebDriver.prerequisite))
struct ConsoleBrowserTests {
    static let screenshots = ProcessInfo.processInfo.environment["RECEIPTKIT_CONSOLE_SCREENSHOTS"].flatMap { $0.isEmpty ? nil : $0 }

    @Test("sign in, overview, find, the customer's timeline, a record, as of an instant, hostile ids as text", arguments: Backend.available)
    func console(backend: Backend) async throws {
        let fixture = try ConsoleFixture()
        let clock = ManualClock(ConsoleFixture.now)
        try await TestServer.run(backend, clock: { clock.now }) { server in
            try await fixture.fill(server, clock: clock)
            // A notification refused a minute later, the newest of the last notifications.
            clock.now = ConsoleFixture.now.addingTimeInterval(60)
            try await server.notify("x.y.z").expectError(.badRequest, "malformed_jws")
            clock.now = ConsoleFixture.now.addingTimeInterval(120)
            let port = try #require(server.client.port)
            let origin = "http://127.0.0.1:\(port)"
            let expected = try await server.get("/v1/subscriptions/7000/timeline").json()
            let overview = try await server.get("/v1/overview").json()
            try await WebDriver.with(width: 1280, height: 800) { browser in
                // The page asks for the token. (What the browser loaded before, its new tab page,
                // is left out of the network log checked at the end.)
                _ = try await browser.log("performance")
                try await browser.navigate(to: origin + "/console/")
                try await browser.wait(for: "the sign-in form", "return !document.getElementById('signin').hidden")
                try await signIn(browser, token: testToken)

                // The overview: subscriptions by status, the chart, the last notifications.
                try await browser.wait(for: "the overview", "return document.querySelector('.count.revoked strong')?.textContent")
                let counts = try await browser.execute(
                    "return [...document.querySelectorAll('.count')].map(c => c.dataset.status + '=' + c.querySelector('strong').textContent)")
                #expect(counts as? [String] == ["active=0", "grace_period=0", "billing_retry=0", "expired=1", "revoked=1"])
                try await browser.wait(for: "the chart", "return document.querySelectorAll('svg.notifications g.bar').length === 30")
                // Each day's bar as the overview's data says: notifications received 3 days apart.
                let totals = try await browser.execute("return [...document.querySelectorAll('svg.notifications g.bar')].map(b => b.dataset.total)")
                let days = try #require((overview["notifications"] as? [String: Any])?["days"] as? [[String: Any]])
                #expect(totals as? [String] == days.map { String($0["total"] as? Int ?? -1) })
                #expect(days.compactMap { $0["total"] as? Int }.filter { $0 > 0 } == Array(repeating: 1, count: 10))
                let results = try await browser.execute("return [...document.querySelectorAll('table.recent .badge')].map(b => b.textContent)")
                #expect(results as? [String] == ["malformed_jws"] + Array(repeating: "verified", count: 10))
                try await shoot(browser, "overview-1280.png")

                // Find the customer: the customer page opens, not entitled (refunded), in red.
                try await find(browser, CustomerStory.customer)
                try await browser.wait(for: "the customer", "return document.querySelector('h1 .customer-id')?.textContent")
                #expect(try await browser.execute("return document.querySelector('h1 .customer-id').textContent") as? String == CustomerStory.customer)
                #expect(try await browser.execute("return document.querySelector('.entitlement').className") as? String == "entitlement not-entitled")
                try await browser.wait(for: "the timeline", "return document.querySelectorAll('svg.timeline rect[data-kind=period]').length")

                // The bars, shadings and marks: count, order on the axis, dates, all as the data says.
                let timeline = try #require((expected["subscriptions"] as? [[String: Any]])?.first)
                let periods = try #require(timeline["periods"] as? [[String: Any]])
                let bars = try await drawn(browser, "rect[data-kind=period]", ["transactionId", "start", "end", "trial"])
                #expect(bars.map { $0["transactionId"] } == periods.map { $0["transaction_id"] as? String })
                #expect(bars.map { $0["start"] } == periods.map { $0["start"] as? String })
                #expect(bars.map { $0["end"] } == periods.map { $0["end"] as? String })
                #expect(bars.map { $0["trial"] } == ["true", "false", "false", "false", "false"])
                let t0 = CustomerStory.start
                let (hour, iso) = (CustomerStory.hour, ConsoleFixture.iso)
                let shades = try await drawn(browser, "rect[data-kind=shade]", ["status", "from", "to"])
                #expect(shades == [
                    ["status": "billing_retry", "from": iso(t0 + 67 * day + hour), "to": iso(t0 + 70 * day)],
                    ["status": "grace_period", "from": iso(t0 + 100 * day + hour), "to": iso(t0 + 103 * day)],
                ])
                let marks = try await drawn(browser, "g[data-kind=mark]", ["mark", "at"])
                #expect(marks == [["mark": "revocation", "at": iso(t0 + 110 * day)]])
                let spans = try await drawn(browser, "rect[data-kind=span]", ["status"])
                #expect(spans.map { $0["status"] } == (timeline["spans"] as? [[String: Any]])?.map { $0["status"] as? String })

                // The refund's mark opens the REFUND notification: its type, chain and JSON.
                try await browser.click(try await browser.element("g[data-kind=mark]"))
                try await browser.wait(for: "the record", "return document.querySelector('.record-panel [data-field=notification_type]')?.textContent")
                #expect(try await browser.execute("return document.querySelector('.record-panel [data-field=notification_type]').textContent") as? String == "REFUND")
                let refund = try #require((timeline["records"] as? [[String: Any]])?.first { $0["notification_type"] as? String == "REFUND" })
                let chain = try #require(refund["chain"] as? [String: Any])
                #expect(try await browser.execute("return document.querySelector('.record-panel [data-field=leaf_sha256]').textContent") as? String == chain["leaf_sha256"] as? String)
                #expect(try await browser.execute("return document.querySelector('.record-panel [data-field=root_sha256]').textContent") as? String == chain["root_sha256"] as? String)
                let json = try await browser.execute("return document.querySelector('.record-panel pre.json').textContent") as? String ?? ""
                #expect(json.contains("\"transaction_id\": \"7005\"") && json.contains("\"type\": \"REFUND\""))
                // A renewal's bar opens the DID_RENEW that carried it.
                try await browser.click(try await browser.element("rect[data-kind=period][data-transaction-id='7002']"))
                try await browser.wait(
                    for: "the renewal's record",
                    "return document.querySelector('.record-panel [data-field=notification_type]')?.textContent === 'DID_RENEW'")

                // The billing retry's shading opens the DID_FAIL_TO_RENEW that started it.
                try await browser.execute("document.querySelector('svg.timeline').scrollIntoView({block: 'center'})")
                let shade = try #require(try await browser.execute("""
                    const box = document.querySelector('rect[data-kind=shade][data-status=billing_retry]').getBoundingClientRect();
                    return [box.left + box.width / 2, box.top + 4];
                    """) as? [Double])
                try await browser.click(x: shade[0], y: shade[1])
                try await browser.wait(
                    for: "the billing retry's record",
                    "return document.querySelector('.record-panel [data-field=notification_type]')?.textContent === 'DID_FAIL_TO_RENEW'")

                // A click on the axis between two paid periods: billing retry, as of that instant.
                try await browser.execute("document.querySelector('svg.timeline').scrollIntoView({block: 'center'})")
                let point = try #require(try await browser.execute("""
                    const end = document.querySelector("rect[data-transaction-id='7003']").getBoundingClientRect();
                    const next = document.querySelector("rect[data-transaction-id='7004']").getBoundingClientRect();
                    const axis = document.querySelector('rect.axis-hit').getBoundingClientRect();
                    return [(end.right + next.left) / 2, axis.top + axis.height / 2];
                    """) as? [Double])
                try await browser.click(x: point[0], y: point[1])
                let asOf = try await browser.wait(
                    for: "the state as of the click", "return document.querySelector('.asof-panel .asof-state')?.dataset.status")
                #expect(asOf as? String == "billing_retry")
                // The instant clicked is between the last period's end and the next one's start.
                let shown = try await browser.execute("return document.querySelector('.asof-panel [data-field=as_of]').textContent") as? String ?? ""
                let instant = try #require(milliseconds(shown.replacingOccurrences(of: " UTC", with: ":00.000Z").replacingOccurrences(of: " ", with: "T")))
                #expect(instant >= t0 + 67 * day && instant < t0 + 70 * day, "\(shown)")
                try await browser.execute("window.scrollTo(0, 0)")
                try await shoot(browser, "customer-1280.png")

                // The same customer on a phone: nothing wider than the screen.
                try await browser.setWindow(width: 390, height: 844)
                try await browser.wait(
                    for: "the timeline redrawn for the width",
                    "return Number(document.querySelector('svg.timeline').getAttribute('width')) <= 390")
                #expect(try await browser.execute("return document.querySelectorAll('svg.timeline rect[data-kind=period]').length") as? Int == 5)
                let width = try await browser.execute("return document.documentElement.scrollWidth") as? Int ?? .max
                #expect(width <= 390)
                try await browser.execute("window.scrollTo(0, 0)")
                try await shoot(browser, "customer-390.png")
                try await browser.setWindow(width: 1280, height: 800)

                // A customer id and a product id carrying markup and quotes: text, never code.
                try await find(browser, ConsoleFixture.hostileCustomer)
                try await browser.wait(for: "the hostile customer", "return document.querySelectorAll('svg.timeline g[data-kind=mark]').length === 2")
                #expect(try await browser.execute("return document.querySelector('h1 .customer-id').textContent") as? String == ConsoleFixture.hostileCustomer)
                #expect(try await browser.execute("return document.querySelector('.subscription h2 .mono').textContent") as? String == ConsoleFixture.hostileProduct)
                let hostileMarks = try await drawn(browser, "g[data-kind=mark]", ["mark"])
                #expect(hostileMarks.map { $0["mark"] } == ["product_change", "auto_renew_off"])
                #expect(try await browser.execute("return typeof window.__receiptkitPwned") as? String == "undefined")
                #expect(try await browser.execute("return document.querySelectorAll('img, b, script:not([src])').length") as? Int == 0)

                // Nothing left loopback; the page logged no error; the token is in no URL or cookie.
                let resources = try await browser.execute(
                    "return performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource')).map(e => e.name)")
                let urls = try #require(resources as? [String])
                #expect(!urls.isEmpty)
                for url in urls { #expect(url.hasPrefix(origin + "/"), "\(url)") }
                // Every request the browser sent (DevTools' Network.requestWillBeSent): those of the
                // console's documents all to the server; none at all over the network elsewhere (the
                // browser's own new tab page loads chrome:// resources from the browser itself).
                let requests = try await browser.log("performance").compactMap { entry -> (url: String, document: String)? in
                    guard let text = entry["message"] as? String,
                          let message = (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])?["message"] as? [String: Any],
                          message["method"] as? String == "Network.requestWillBeSent",
                          let parameters = message["params"] as? [String: Any],
                          let url = (parameters["request"] as? [String: Any])?["url"] as? String else { return nil }
                    return (url, parameters["documentURL"] as? String ?? "")
                }
                let console = requests.filter { $0.document.hasPrefix(origin + "/") }
                #expect(console.count >= urls.count)
                for request in console {
                    #expect(request.url.hasPrefix(origin + "/"), "a request of the console left loopback: \(request.url)")
                }
                for request in requests where ["http", "https", "ws", "wss"].contains(URL(string: request.url)?.scheme ?? "") {
                    #expect(request.url.hasPrefix(origin + "/"), "a request left loopback: \(request.url)")
                    #expect(!request.url.contains(testToken))
                }
                let errors = try await browser.log("browser").filter { ($0["level"] as? String) == "SEVERE" }
                #expect(errors.isEmpty, "\(errors)")
                #expect(try await browser.execute("return document.cookie") as? String == "")
                #expect(try await browser.execute("return location.href.includes(arguments[0])", [testToken]) as? Bool == false)

                // Signing out forgets the token.
                try await browser.click(try await browser.element("#signout"))
                try await browser.wait(for: "the sign-in form again", "return !document.getElementById('signin').hidden")
                #expect(try await browser.execute("return sessionStorage.length") as? Int == 0)
            }
        }
    }

    @Test("a wrong token is refused and asked for again; on loopback without a token the console opens directly")
    func access() async throws {
        try await TestServer.run(.sqlite, now: ConsoleFixture.now) { server in
            let origin = "http://127.0.0.1:\(try #require(server.client.port))"
            try await WebDriver.with { browser in
                try await browser.navigate(to: origin + "/console/")
                try await signIn(browser, token: "not-the-token", expectOverview: false)
                let message = try await browser.wait(
                    for: "the refusal", "return document.getElementById('signin-error').textContent || null")
                #expect((message as? String)?.contains("refused the token") == true)
                #expect(try await browser.execute("return sessionStorage.length") as? Int == 0)
                try await signIn(browser, token: testToken)
                try await browser.wait(for: "the overview", "return document.querySelector('.count.active strong')?.textContent")
            }
        }
        try await TestServer.run(.sqlite, token: nil, now: ConsoleFixture.now) { server in
            let origin = "http://127.0.0.1:\(try #require(server.client.port))"
            try await WebDriver.with { browser in
                try await browser.navigate(to: origin + "/console/")
                try await browser.wait(for: "the overview", "return document.querySelector('.count.active strong')?.textContent")
                #expect(try await browser.execute("return document.getElementById('signin').hidden") as? Bool == true)
                #expect(try await browser.execute("return document.getElementById('signout').hidden") as? Bool == true)
                let errors = try await browser.log("browser").filter { ($0["level"] as? String) == "SEVERE" }
                #expect(errors.isEmpty, "\(errors)")
            }
        }
    }

    @Test("the overview shows what waits to be sent per destination, without its credentials, and what ran out of time")
    func deliveries() async throws {
        let fixture = try ConsoleFixture()
        let clock = ManualClock(ConsoleFixture.now)
        // A receiver that refuses every connection: each event waits, or runs out of time.
        let closedPort = try unusedLoopbackPort()
        let configure: @Sendable (inout ServerConfiguration) -> Void = { configuration in
            configuration.events.webhookURL = "http://user:password@127.0.0.1:\(closedPort)/hooks"
            configuration.events.webhookSecret = "0123456789abcdef0123"
        }
        try await TestServer.run(.sqlite, clock: { clock.now }, configure: configure) { server in
            try await fixture.fill(server, clock: clock)
            let feed = try #require(try await server.get("/v1/events?limit=1000").json()["events"] as? [[String: Any]])
            #expect(!feed.isEmpty)
            let origin = "http://127.0.0.1:\(try #require(server.client.port))"
            try await WebDriver.with { browser in
                try await browser.navigate(to: origin + "/console/")
                try await signIn(browser, token: testToken)
                try await browser.wait(for: "the deliveries", "return document.querySelector('.deliveries table.backlog tbody tr') ? true : null")
                let rows = try #require(try await browser.execute(
                    "return [...document.querySelectorAll('.deliveries table.backlog tbody tr')].map(r => [...r.cells].map(c => c.textContent))")
                    as? [[String]])
                #expect(rows.map { $0.prefix(2) } == [["webhook", "http://127.0.0.1:\(closedPort)/hooks"]])
                let waiting = rows.compactMap { $0.count > 2 ? Int($0[2]) : nil }.reduce(0, +)
                let outOfTime = try #require(try await browser.execute(
                    "return document.querySelector('.deliveries > p:last-child').textContent") as? String)
                #expect(outOfTime.contains("ran out of time"), "\(outOfTime)")
                let failed = try #require(Int(outOfTime.prefix { $0.isNumber }), "\(outOfTime)")
                #expect(waiting > 0)
                #expect(waiting + failed == feed.count)
                let text = try await browser.execute("return document.body.innerText") as? String ?? ""
                #expect(!text.contains("password") && !text.contains("user:"))
                let errors = try await browser.log("browser").filter { ($0["level"] as? String) == "SEVERE" }
                #expect(errors.isEmpty, "\(errors)")
            }
        }
    }

    @Test("a read token: everything readable shows, no action it may not take is drawn, and no request the console makes is refused; write and admin tokens see theirs",
          arguments: Backend.available)
    func readOnly(backend: Backend) async throws {
        let fixture = try ConsoleFixture()
        let clock = ManualClock(ConsoleFixture.now)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("receiptkit-console-tokens-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let tokensFile = directory.appendingPathComponent("tokens").path
        let (readToken, writeToken) = ("rk_console_read_0123456789", "rk_console_write_0123456789")
        try TokenTests.file([("support", .read, readToken), ("backend", .write, writeToken)]).write(toFile: tokensFile, atomically: true, encoding: .utf8)
        // A receiver that refuses every connection: deliveries wait, or run out of time.
        let closedPort = try unusedLoopbackPort()
        let configure: @Sendable (inout ServerConfiguration) -> Void = { configuration in
            configuration.apiTokensFile = tokensFile
            configuration.events.webhookURL = "http://127.0.0.1:\(closedPort)/hooks"
            configuration.events.webhookSecret = "0123456789abcdef0123"
        }
        try await TestServer.run(backend, clock: { clock.now }, configure: configure) { server in
            try await fixture.fill(server, clock: clock)
            // The story's first events ran out of time at their first try: what an admin sends again.
            @Sendable func failed() async throws -> Int {
                ((try await server.get("/v1/overview").json()["deliveries"] as? [String: Any])?["failed"] as? Int) ?? 0
            }
            try await waitUntil("a delivery ran out of time", asking: { try await failed() > 0 })
            let origin = "http://127.0.0.1:\(try #require(server.client.port))"
            let actions = "return [...document.querySelectorAll('[data-action]')].map(b => b.dataset.action)"
            try await WebDriver.with(width: 1280, height: 800) { browser in
                _ = try await browser.log("performance")
                try await browser.navigate(to: origin + "/console/")
                try await signIn(browser, token: readToken)

                // The overview, whole; no action.
                try await browser.wait(for: "the overview", "return document.querySelector('.count.revoked strong')?.textContent")
                try await browser.wait(for: "the chart", "return document.querySelectorAll('svg.notifications g.bar').length === 30")
                try await browser.wait(for: "the deliveries", "return document.querySelector('.deliveries table.backlog tbody tr') ? true : null")
                #expect(try await browser.execute(actions) as? [String] == [])

                // The customer, their timeline and a record; no action.
                try await find(browser, CustomerStory.customer)
                try await browser.wait(for: "the customer", "return document.querySelector('h1 .customer-id')?.textContent")
                try await browser.wait(for: "the timeline", "return document.querySelectorAll('svg.timeline rect[data-kind=period]').length")
                try await browser.click(try await browser.element("g[data-kind=mark]"))
                try await browser.wait(for: "the record", "return document.querySelector('.record-panel [data-field=notification_type]')?.textContent")
                #expect(try await browser.execute(actions) as? [String] == [])
                #expect(try await browser.execute("return document.querySelectorAll('.subscription').length") as? Int == 1)

                // A subscription alone, and a search; no action.
                try await browser.navigate(to: origin + "/console/#/subscription/\(ConsoleFixture.upgradeOriginal)")
                try await browser.wait(for: "the subscription", "return document.querySelector('.subscription h2 .badge')?.textContent")
                try await browser.wait(for: "its timeline", "return document.querySelectorAll('svg.timeline rect[data-kind=period]').length")
                #expect(try await browser.execute(actions) as? [String] == [])
                try await find(browser, ConsoleFixture.token)
                try await browser.wait(for: "the search", "return document.querySelector('#view h1')?.textContent")

                // Every answer the console got, from the browser's own network log: none refused.
                let statuses = try await browser.log("performance").compactMap { entry -> (url: String, status: Int)? in
                    guard let text = entry["message"] as? String,
                          let message = (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])?["message"] as? [String: Any],
                          message["method"] as? String == "Network.responseReceived",
                          let response = (message["params"] as? [String: Any])?["response"] as? [String: Any],
                          let url = response["url"] as? String, url.hasPrefix(origin + "/v1/"),
                          let status = response["status"] as? Int else { return nil }
                    return (url, status)
                }
                for path in ["/v1/token", "/v1/overview", "/v1/search", "/v1/customers/", "/v1/subscriptions/"] {
                    #expect(statuses.contains { $0.url.hasPrefix(origin + path) }, "the console read \(path): \(statuses.map(\.url))")
                }
                let refused = statuses.filter { [401, 403].contains($0.status) }
                #expect(refused.isEmpty, "\(refused)")
                let errors = try await browser.log("browser").filter { ($0["level"] as? String) == "SEVERE" }
                #expect(errors.isEmpty, "\(errors)")

                // A write token may sync; an admin token may also delete and send failed deliveries again.
                for (token, customer, subscription, overviewActions) in [
                    (writeToken, ["sync-customer"], ["sync-subscription"], [String]()),
                    (testToken, ["sync-customer", "delete-customer"], ["sync-subscription"], ["retry-failed"]),
                ] {
                    try await browser.click(try await browser.element("#signout"))
                    try await signIn(browser, token: token)
                    try await browser.wait(for: "the overview", "return document.querySelector('.count.revoked strong')?.textContent")
                    try await browser.wait(for: "the deliveries", "return document.querySelector('.deliveries table.backlog tbody tr') ? true : null")
                    #expect(try await browser.execute(actions) as? [String] == overviewActions)
                    try await find(browser, CustomerStory.customer)
                    try await browser.wait(for: "the customer's actions", "return document.querySelector('[data-action]') ? true : null")
                    #expect(try await browser.execute(actions) as? [String] == customer + subscription)
                }
            }
        }
    }

    @Test("one original transaction id in Production and in Sandbox: found as two, its page a card each saying where, Sandbox marked")
    func bothEnvironments() async throws {
        let t0 = ms("2025-10-01T08:00:00Z")
        let production = try Payloads(environment: "Production")
        let sandbox = try Payloads(environment: "Sandbox")
        let purchases = [
            (try production.transaction(id: "9100", original: "9100", purchase: t0, expires: t0 + 30 * day, signed: t0), "customer"),
            (try sandbox.transaction(id: "9100", original: "9100", purchase: t0, expires: t0 + 30 * day, signed: t0), "reviewer"),
        ]
        let deployment = Vectors.environment.merging(["RECEIPTKIT_ENVIRONMENT": "Production"]) { $1 }
        try await TestServer.run(.sqlite, environment: deployment, now: ConsoleFixture.now) { server in
            for (jws, customer) in purchases {
                let body = String(decoding: try JSONSerialization.data(withJSONObject: ["signed_transaction": jws, "customer_id": customer]), as: UTF8.self)
                let answer = try await server.post("/v1/transactions", body)
                #expect(answer.status == .ok, "\(answer.text)")
            }
            let origin = "http://127.0.0.1:\(try #require(server.client.port))"
            try await WebDriver.with { browser in
                try await browser.navigate(to: origin + "/console/")
                try await signIn(browser, token: testToken)
                try await find(browser, "9100")
                let found = try await browser.wait(
                    for: "two results", "const r = [...document.querySelectorAll('ul.results li')].map(li => li.textContent); return r.length === 2 ? r : null")
                let results = try #require(found as? [String])
                #expect(results.contains { $0.hasSuffix("com.receiptkit.example · Production") }, "\(results)")
                #expect(results.contains { $0.hasSuffix("com.receiptkit.example · Sandbox") }, "\(results)")

                try await browser.click(try await browser.element("ul.results li a"))
                let cards = try await browser.wait(
                    for: "a card per environment",
                    """
                    const cards = [...document.querySelectorAll('section.card.subscription')];
                    return cards.length === 2 ? cards.map(c => [c.dataset.environment, c.querySelector('.badge.environment')?.textContent ?? '']) : null
                    """)
                let pairs = try #require(cards as? [[String]])
                #expect(pairs.sorted { $0[0] < $1[0] } == [["Production", ""], ["Sandbox", "Sandbox"]], "\(pairs)")
                try await browser.wait(
                    for: "both timelines", "return document.querySelectorAll('section.card.subscription svg.timeline').length === 2 ? true : null")
                let errors = try await browser.log("browser").filter { ($0["level"] as? String) == "SEVERE" }
                #expect(errors.isEmpty, "\(errors)")
            }
        }
    }

    @Test("a customer who reached the cancel screen: each retention request on their page, with the answer it got and its rule")
    func retentionRequests() async throws {
        try await Retention.withServer(.sqlite, rules: RetentionEndpointTests.rules) { server, _, _ in
            // alice's free trial (7001): asked about in en-GB, answered the trial's offer; then
            // about another product, which no rule answers.
            try await RetentionEndpointTests.store(server)
            let offered = try await server.post("/appstore/retention", try Retention.request(original: "7001", locale: "en-GB").body, token: nil)
            #expect(offered.status == .ok, "\(offered.text)")
            let other = try Retention.request(original: "7001", product: "com.receiptkit.example.other")
            let none = try await server.post("/appstore/retention", other.body, token: nil)
            #expect(none.status == .ok && none.text == "{}\n", "\(none.text)")

            let origin = "http://127.0.0.1:\(try #require(server.client.port))"
            try await WebDriver.with { browser in
                try await browser.navigate(to: origin + "/console/#/customer/alice")
                try await signIn(browser, token: testToken)
                let found = try await browser.wait(
                    for: "two retention requests",
                    """
                    const rows = [...document.querySelectorAll('section.retention-requests tbody tr')];
                    return rows.length === 2 ? rows.map(r => [...r.cells].map(c => c.textContent)) : null
                    """)
                let rows = try #require(found as? [[String]])
                // Latest first: the other product's request, then the offer; the subscription
                // marked Sandbox, as Apple's requests here are.
                #expect(rows.map { $0[1] } == ["7001 Sandbox", "7001 Sandbox"], "\(rows)")
                #expect(rows[0][2] == "com.receiptkit.example.other" && rows[0][4] == "No rule answered: the product's default message"
                    && rows[0][5] == "—", "\(rows[0])")
                #expect(rows[1][2] == Retention.monthly && rows[1][3] == "en-GB", "\(rows[1])")
                #expect(rows[1][4] == "Offer TRIAL_SAVE on \(Retention.monthly) · message \(Retention.offerMessage)" && rows[1][5] == "rule 2",
                    "\(rows[1])")
                let errors = try await browser.log("browser").filter { ($0["level"] as? String) == "SEVERE" }
                #expect(errors.isEmpty, "\(errors)")
            }
        }
    }

    @Test("named entitlements and grants on the customer's page: a write token grants a month from the form, sees it active, ends it; a refusal's reason shown; a read token sees them with no form")
    func grants() async throws {
        let fixture = try ConsoleFixture()
        let clock = ManualClock(ConsoleFixture.now)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("receiptkit-console-grants-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let tokensFile = directory.appendingPathComponent("tokens").path
        let (readToken, writeToken) = ("rk_console_read_0123456789", "rk_console_write_0123456789")
        try TokenTests.file([("support", .read, readToken), ("backend", .write, writeToken)]).write(toFile: tokensFile, atomically: true, encoding: .utf8)
        // pro from the story's subscription (refunded), remove_ads from a product the customer never bought.
        let catalog = try EntitlementCatalog(entitlements: [
            "pro": [.init(id: Payloads.productId)], "remove_ads": [.init(id: ConsoleFixture.basicProduct)],
        ])
        let configure: @Sendable (inout ServerConfiguration) -> Void = { configuration in
            configuration.apiTokensFile = tokensFile
            configuration.entitlements = EntitlementsFile(path: directory.appendingPathComponent("entitlements.json").path, catalog: catalog)
        }
        try await TestServer.run(.sqlite, clock: { clock.now }, configure: configure) { server in
            try await fixture.fill(server, clock: clock)
            clock.now = ConsoleFixture.now
            let grantsPath = "/v1/customers/\(CustomerStory.customer)/grants"
            let origin = "http://127.0.0.1:\(try #require(server.client.port))"
            let entitlementRows = """
                return [...document.querySelectorAll('section.named-entitlements tbody tr')]
                  .map(r => [r.dataset.entitlement, r.dataset.active, r.querySelector('[data-field=now]').textContent, r.querySelector('[data-field=source]').textContent])
                """
            let grantRows = "return [...document.querySelectorAll('section.grants tbody tr')].map(r => [r.dataset.state, ...[...r.cells].map(c => c.textContent)])"
            let banner = "return document.querySelector('.entitlement .named')?.textContent"
            let reason = #"A month on us <img src=x onerror="window.__receiptkitPwned=4"> "refund dispute""#
            try await WebDriver.with(width: 1280, height: 800) { browser in
                try await browser.navigate(to: origin + "/console/#/customer/\(CustomerStory.customer)")
                try await signIn(browser, token: writeToken)
                try await browser.wait(for: "the named entitlements", "return document.querySelector('section.named-entitlements tbody tr') ? true : null")

                // The refunded subscription last gave pro; nothing ever gave remove_ads; no grant.
                let before = try #require(try await browser.execute(entitlementRows) as? [[String]])
                #expect(before == [
                    ["pro", "false", "Not active ended \(when(CustomerStory.start + 110 * day))", "Subscription 7000 · \(Payloads.productId) · revoked"],
                    ["remove_ads", "false", "Not active never given", "—"],
                ], "\(before)")
                #expect(try await browser.execute(banner) as? String == "No named entitlement is active now.")
                #expect(try await browser.execute("return document.querySelector('section.grants p.muted')?.textContent") as? String
                    == "No grant has been made to this customer.")
                let options = try await browser.execute("return [...document.querySelectorAll('.grant-form select option')].map(o => o.value)")
                #expect(options as? [String] == ["pro", "remove_ads"])

                // A duration the server refuses: its reason under the form, nothing granted.
                try await typeGrantField(browser, "duration", "1 month")
                try await browser.click(try await browser.element(".grant-form button[data-action=grant]"))
                let refusal = try await browser.wait(
                    for: "the refusal", "return document.querySelector('.grant-form .action-status.error')?.textContent")
                #expect((refusal as? String)?.hasPrefix(#"Grant failed: duration: "1 month" is not an ISO 8601 duration"#) == true, "\(refusal)")
                #expect((try await server.get(grantsPath).json()["grants"] as? [Any])?.isEmpty == true)

                // A month of pro, with a reason that carries markup.
                try await browser.click(try await browser.element(".grant-form select option[value=pro]"))
                try await typeGrantField(browser, "duration", "P1M")
                try await typeGrantField(browser, "reason", reason)
                try await browser.click(try await browser.element(".grant-form button[data-action=grant]"))
                try await browser.wait(for: "the grant", "return document.querySelector('section.grants tbody tr[data-state=active]') ? true : null")
                let stored = try #require((try await server.get(grantsPath).json()["grants"] as? [[String: Any]])?.first)
                #expect(stored["expires_date"] as? String == ConsoleFixture.iso(ms("2025-11-15T08:00:00Z")))
                #expect(stored["granted_by"] as? String == "backend" && stored["reason"] as? String == reason)
                let granted = try #require(try await browser.execute(entitlementRows) as? [[String]])
                #expect(granted.first == ["pro", "true", "Active until 2025-11-15 08:00 UTC", "Grant of 2025-10-15 08:00 UTC by backend"],
                    "\(granted)")
                #expect(try await browser.execute(banner) as? String == "Named entitlements active now: pro.")
                let listed = try #require(try await browser.execute(grantRows) as? [[String]])
                #expect(listed == [[
                    "active", "pro", "Active", "Until 2025-11-15 08:00 UTC", "2025-10-15 08:00 UTC by backend", "—", reason, "End",
                ]], "\(listed)")
                #expect(try await browser.execute("return typeof window.__receiptkitPwned") as? String == "undefined")
                #expect(try await browser.execute("return document.querySelectorAll('img, script:not([src])').length") as? Int == 0)
                try await browser.execute("document.querySelector('.entitlement').scrollIntoView()")
                try await shoot(browser, "customer-grants-1280.png")

                // On a phone: nothing wider than the screen.
                try await browser.setWindow(width: 390, height: 844)
                try await browser.wait(
                    for: "the page at 390 pixels", "return document.documentElement.clientWidth <= 390 ? document.documentElement.scrollWidth : null")
                #expect(try await browser.execute("return document.documentElement.scrollWidth") as? Int ?? .max <= 390)
                try await browser.setWindow(width: 1280, height: 800)

                // An hour later, ended: kept, with who ended it and when; pro no longer active.
                clock.now = ConsoleFixture.now.addingTimeInterval(3600)
                try await browser.click(try await browser.element("section.grants button[data-action=end-grant]"))
                try await browser.wait(for: "the grant ended", "return document.querySelector('section.grants tbody tr[data-state=ended]') ? true : null")
                let ended = try #require(try await browser.execute(grantRows) as? [[String]])
                #expect(ended == [[
                    "ended", "pro", "Ended", "Until 2025-11-15 08:00 UTC", "2025-10-15 08:00 UTC by backend", "2025-10-15 09:00 UTC by backend", reason, "",
                ]], "\(ended)")
                let after = try #require(try await browser.execute(entitlementRows) as? [[String]])
                #expect(after.first == ["pro", "false", "Not active ended 2025-10-15 09:00 UTC", "Grant of 2025-10-15 08:00 UTC by backend"], "\(after)")
                #expect(try await browser.execute(banner) as? String == "No named entitlement is active now.")
                let stopped = try #require((try await server.get(grantsPath).json()["grants"] as? [[String: Any]])?.first)
                #expect(stopped["active"] as? Bool == false && stopped["ended_by"] as? String == "backend")

                // The refusal above is the only request that failed.
                let errors = try await browser.log("browser").filter { ($0["level"] as? String) == "SEVERE" }
                    .filter { !(($0["message"] as? String ?? "").contains("\(grantsPath) - Failed to load resource: the server responded with a status of 400")) }
                #expect(errors.isEmpty, "\(errors)")

                // A read token: the entitlements and the grants, no form and no End.
                try await browser.click(try await browser.element("#signout"))
                try await signIn(browser, token: readToken)
                try await find(browser, CustomerStory.customer)
                try await browser.wait(for: "the grants", "return document.querySelector('section.grants tbody tr') ? true : null")
                #expect(try await browser.execute("return document.querySelectorAll('[data-action], .grant-form').length") as? Int == 0)
                #expect((try await browser.execute(grantRows) as? [[String]])?.first?.count == 7)
            }
        }
    }

    // MARK: Steps

    /// Types into a field of the grant form, emptied first.
    private func typeGrantField(_ browser: WebDriver, _ name: String, _ text: String) async throws {
        try await browser.execute("document.querySelector('.grant-form input[name=' + arguments[0] + ']').value = ''", [name])
        try await browser.type(text, into: try await browser.element(".grant-form input[name=\(name)]"))
    }

    /// An instant as the console writes it: `2025-10-15 08:00 UTC`.
    private func when(_ milliseconds: Int64) -> String {
        String(ConsoleFixture.iso(milliseconds).prefix(16)).replacingOccurrences(of: "T", with: " ") + " UTC"
    }

    private func signIn(_ browser: WebDriver, token: String, expectOverview: Bool = true) async throws {
        try await browser.wait(for: "the sign-in form", "return !document.getElementById('signin').hidden")
        let field = try await browser.element("#token")
        try await browser.type(token, into: field)
        try await browser.click(try await browser.element("#signin-form button"))
        if expectOverview {
            try await browser.wait(for: "the console after signing in", "return document.getElementById('signin').hidden")
        }
    }

    private func find(_ browser: WebDriver, _ text: String) async throws {
        let query = try await browser.element("#query")
        try await browser.execute("document.getElementById('query').value = ''")
        try await browser.type(text, into: query)
        try await browser.click(try await browser.element("#search button"))
    }

    /// The `data-` attributes of the elements a selector finds in the timeline, in the order
    /// they stand on the axis (left to right).
    private func drawn(_ browser: WebDriver, _ selector: String, _ names: [String]) async throws -> [[String: String]] {
        let value = try await browser.execute(
            """
            const items = [...document.querySelectorAll('svg.timeline ' + arguments[0])]
              .map(e => [e.getBoundingClientRect().left, arguments[1].map(n => e.dataset[n] ?? null)]);
            items.sort((a, b) => a[0] - b[0]);
            return items.map(i => i[1]);
            """, [selector, names])
        let rows = try #require(value as? [[Any]])
        return rows.map { row in
            Dictionary(uniqueKeysWithValues: zip(names, row).compactMap { name, value in (value as? String).map { (name, $0) } })
        }
    }

    /// Writes a screenshot into `RECEIPTKIT_CONSOLE_SCREENSHOTS`, when set.
    private func shoot(_ browser: WebDriver, _ name: String) async throws {
        guard let directory = Self.screenshots else { return }
        let png = try await browser.screenshot()
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try png.write(to: URL(fileURLWithPath: directory).appendingPathComponent(name))
    }
}
