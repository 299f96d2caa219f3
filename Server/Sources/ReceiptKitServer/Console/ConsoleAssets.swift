import Hummingbird

/// The console's page, script modules, style sheet and icon, embedded in the binary (no file
/// beside it, nothing from another origin), each answered with headers that let the page run only
/// its own script and style and never be framed:
///
/// - `Content-Security-Policy`: ``contentSecurityPolicy`` — nothing but this origin's script,
///   style, images and `fetch`, no inline script or style, no `<base>`, no form posting, no
///   framing;
/// - `X-Frame-Options: DENY`, `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer`,
///   `Cross-Origin-Opener-Policy` and `Cross-Origin-Resource-Policy: same-origin`;
/// - `Cache-Control: no-cache`, so that a new server's console is never mixed with an old one's.
///
/// The files are in `Assets/`, embedded at build time by SwiftPM (`resources: [.embedInCode(…)]` in
/// `Package.swift`), which generates `PackageResources`, one `[UInt8]` per file named after it
/// (`console.css` is `PackageResources.console_css`). Only the files ``files`` names are served.
enum ConsoleAssets {
    /// An embedded file, as it is answered.
    struct Asset: Sendable {
        let body: ByteBuffer
        let contentType: String

        init(_ bytes: [UInt8], contentType: String) {
            body = ByteBuffer(bytes: bytes)
            self.contentType = contentType
        }
    }

    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// The page, `Assets/console.html`, whose `data-auth` tells the script whether to ask for the
    /// API token before it reads anything.
    ///
    /// The file says `data-auth="token"`, so that the page as written asks for one; for a server
    /// on loopback without `RECEIPTKIT_API_TOKEN`, which needs none, that one attribute is
    /// answered as `data-auth="none"`. Called once, when the routes are built.
    ///
    /// - Parameter tokenRequired: Whether the API requires a token.
    /// - Returns: The page's answer.
    static func page(tokenRequired: Bool) -> Asset {
        let html = String(decoding: PackageResources.console_html, as: UTF8.self)
        let marker = #"data-auth="token""#
        // The file is compiled in: a page without the switch is a build that must not serve.
        precondition(html.ranges(of: marker).count == 1, "console.html carries \(marker) exactly once")
        let page = tokenRequired ? html : html.replacing(marker, with: #"data-auth="none""#)
        return Asset(Array(page.utf8), contentType: "text/html; charset=utf-8")
    }

    /// The asset of a file name under `/console/`, or `nil` for any name not in ``files``.
    static func asset(named name: String) -> Asset? {
        files[name]
    }

    /// Every file served under `/console/` besides the page: the allow-list.
    static let files: [String: Asset] = [
        "console.css": Asset(PackageResources.console_css, contentType: "text/css; charset=utf-8"),
        "icon.svg": Asset(PackageResources.icon_svg, contentType: "image/svg+xml"),
        // The script: console.mjs, the page's one `<script type="module">`, and the modules it
        // imports, each by `./NAME.mjs` (Server/Tests/ConsoleAssetsTests/modules.test.mjs links
        // them and finds none unused).
        "console.mjs": script(PackageResources.console_mjs),
        "access.mjs": script(PackageResources.access_mjs),
        "api.mjs": script(PackageResources.api_mjs),
        "customer.mjs": script(PackageResources.customer_mjs),
        "dom.mjs": script(PackageResources.dom_mjs),
        "entitlements.mjs": script(PackageResources.entitlements_mjs),
        "find.mjs": script(PackageResources.find_mjs),
        "format.mjs": script(PackageResources.format_mjs),
        "overview.mjs": script(PackageResources.overview_mjs),
        "records.mjs": script(PackageResources.records_mjs),
        "router.mjs": script(PackageResources.router_mjs),
        "scale.mjs": script(PackageResources.scale_mjs),
        "session.mjs": script(PackageResources.session_mjs),
        "state.mjs": script(PackageResources.state_mjs),
        "timeline.mjs": script(PackageResources.timeline_mjs),
    ]

    /// A JavaScript module: `text/javascript`, the type browsers require of a module script.
    private static func script(_ bytes: [UInt8]) -> Asset {
        Asset(bytes, contentType: "text/javascript; charset=utf-8")
    }

    /// An asset's answer, with the security headers.
    static func response(_ asset: Asset) -> Response {
        var headers: HTTPFields = [
            .contentType: asset.contentType,
            .cacheControl: "no-cache",
        ]
        // `HTTPField.Name`, through the one HTTPTypes type Hummingbird exports.
        for (name, value) in securityHeaders {
            if let field = HTTPFields.Element.Name(name) { headers[field] = value }
        }
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: asset.body))
    }

    static let securityHeaders: KeyValuePairs<String, String> = [
        "Content-Security-Policy": contentSecurityPolicy,
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cross-Origin-Opener-Policy": "same-origin",
        "Cross-Origin-Resource-Policy": "same-origin",
    ]
}
