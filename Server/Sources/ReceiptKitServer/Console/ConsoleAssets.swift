import Hummingbird

/// The console's page, script, style sheet and icon, embedded in the binary (no file beside it,
/// nothing from another origin), each answered with headers that let the page run only its own
/// script and style and never be framed:
///
/// - `Content-Security-Policy`: ``contentSecurityPolicy`` — nothing but this origin's script,
///   style, images and `fetch`, no inline script or style, no `<base>`, no form posting, no
///   framing;
/// - `X-Frame-Options: DENY`, `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer`,
///   `Cross-Origin-Opener-Policy` and `Cross-Origin-Resource-Policy: same-origin`;
/// - `Cache-Control: no-cache`, so that a new server's console is never mixed with an old one's.
enum ConsoleAssets {
    /// An embedded file.
    struct Asset: Sendable {
        let body: String
        let contentType: String
    }

    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// The page. `tokenRequired` tells the script whether to ask for the API token before it
    /// reads anything (a server on loopback without `RECEIPTKIT_API_TOKEN` needs none).
    static func page(tokenRequired: Bool) -> Asset {
        Asset(body: ConsolePage.html(tokenRequired: tokenRequired), contentType: "text/html; charset=utf-8")
    }

    /// The asset of a file name under `/console/`, or `nil`.
    static func asset(named name: String) -> Asset? {
        switch name {
        case "console.js": Asset(body: ConsoleScript.text, contentType: "text/javascript; charset=utf-8")
        case "console.css": Asset(body: ConsoleStyle.text, contentType: "text/css; charset=utf-8")
        case "icon.svg": Asset(body: icon, contentType: "image/svg+xml")
        default: nil
        }
    }

    static let icon = #"""
        <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#1d4ed8"/><path d="M8 21h16M8 15h10M8 9h16" stroke="#fff" stroke-width="3" stroke-linecap="round"/></svg>
        """#

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
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: asset.body)))
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
