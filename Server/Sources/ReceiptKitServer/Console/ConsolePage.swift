/// The console's one HTML page: a frame the script fills. No inline script or style (the
/// Content-Security-Policy forbids both); every value the page shows the script puts in as text.
enum ConsolePage {
    static func html(tokenRequired: Bool) -> String {
        #"""
        <!doctype html>
        <html lang="en" data-auth="\#(tokenRequired ? "token" : "none")">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer">
        <title>ReceiptKit console</title>
        <link rel="icon" href="/console/icon.svg" type="image/svg+xml">
        <link rel="stylesheet" href="/console/console.css">
        <script src="/console/console.js" defer></script>
        </head>
        <body>
        <header class="top">
          <a class="brand" href="#/">ReceiptKit</a>
          <form id="search" class="search" role="search" hidden>
            <input id="query" type="search" name="q" autocomplete="off" spellcheck="false"
              placeholder="Customer id, transaction id or appAccountToken" aria-label="Find a customer or a purchase">
            <button type="submit">Find</button>
          </form>
          <button id="signout" class="quiet" type="button" hidden>Sign out</button>
        </header>
        <main>
          <section id="signin" class="card signin" hidden>
            <h1>Sign in</h1>
            <p>Paste the server's API token (<code>RECEIPTKIT_API_TOKEN</code>). This tab keeps it until you close it; it is sent to this server only.</p>
            <form id="signin-form">
              <input id="token" type="password" autocomplete="off" aria-label="API token" required>
              <button type="submit">Sign in</button>
            </form>
            <p id="signin-error" class="error" role="alert"></p>
          </section>
          <div id="view" aria-live="polite"></div>
        </main>
        </body>
        </html>
        """#
    }
}
