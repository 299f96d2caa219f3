#!/usr/bin/env bash
# Installs what ReceiptKit builds against, if it is missing: OpenSSL 3 (libcrypto) and jansson
# headers, pkg-config, the openssl tool (used by the test-vector scripts), SQLite's headers
# (receiptkit-server's default store, through GRDB) and zlib's (receiptkit-server's HTTP bodies,
# through SwiftNIO, and its stored JSON; every Swift toolchain on Linux needs it too). Debian/Ubuntu.
set -euo pipefail

if pkg-config --exists libcrypto jansson sqlite3 zlib 2>/dev/null && command -v openssl >/dev/null; then
    exit 0
fi
packages=(libssl-dev libjansson-dev libsqlite3-dev zlib1g-dev pkg-config openssl)
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install as root: apt-get install ${packages[*]}" >&2; exit 1; }
    sudo=sudo
else
    sudo=
fi
echo "installing ${packages[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
