#!/usr/bin/env bash
# The console's JavaScript, which needs no Swift build: every module of
# Server/Sources/ReceiptKitServer/Console/Assets parsed as an ES module, then the unit tests of
# Server/Tests/ConsoleAssetsTests with Node's own runner (node:test and node:assert, no package),
# which also link the modules from console.mjs. Fails if a module does not parse, a test fails, or
# no test ran.
#
# The modules are .mjs because `node --check` parses a .mjs file as an ES module; a .js file with
# `import` in it, outside a package.json saying "type": "module", Node 20 passes with exit status 0
# without reporting a syntax error in it.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/checks.sh

command -v node >/dev/null || required "node (Node.js 18 or later: the console's JavaScript)" || exit 0

modules=(Server/Sources/ReceiptKitServer/Console/Assets/*.mjs)
for module in "${modules[@]}"; do
    node --check "$module"
done
echo "console JavaScript: ${#modules[@]} modules parse ($(node --version))" >&2

log="$(mktemp /tmp/receiptkit-console-js.XXXXXX)"
trap 'rm -f "$log"' EXIT
node --test --test-reporter=tap Server/Tests/ConsoleAssetsTests/ 2>&1 | tee "$log"
passed="$(sed -n 's/^# pass \([0-9][0-9]*\)$/\1/p' "$log" | tail -n 1)"
if [ -z "$passed" ] || [ "$passed" -eq 0 ]; then
    echo "console JavaScript: FAILED, no test ran" >&2
    exit 1
fi
echo "console JavaScript: $passed tests passed" >&2
