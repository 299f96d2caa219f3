#!/usr/bin/env bash
# The installable release, and its check (docs/operations.md, Install).
#
#   scripts/release.sh                  builds dist/receiptkit-VERSION-linux-ARCH.tar.gz from HEAD
#                                       and prints its path
#   scripts/release.sh --check TARBALL  checks a tarball as a fresh host would see it
#
# The tarball holds one folder, receiptkit-VERSION-linux-ARCH/: bin/verify-receipt,
# bin/receiptkit-server and bin/appstore-api, built in release with Swift's runtime and
# Foundation linked in (--static-swift-stdlib), so that a host needs only the C libraries
# docs/operations.md names; the systemd unit and the example environment file from packaging/;
# and LICENSE. VERSION is Release.version (Sources/ReceiptKitRelease); ARCH is `uname -m`.
#
# The build is of HEAD, copied into .build-release/source with the commit
# written into Sources/ReceiptKitRelease/BuildCommit.swift, so each command's --version names
# it; uncommitted changes are not in a release. Server/Package.resolved, when scripts/test.sh has
# written it, goes along: the release has the dependencies the tests ran with.
#
# The scratch path is .build-release/build: --static-swift-stdlib changes every compile command
# (the compiler reads the static runtime's modules, which have no Testing module, so the tests
# cannot be built this way), so scripts/test.sh's release build cannot be reused. One build of
# the Server package makes all three commands: verify-receipt is a product of its dependency,
# the root package.
#
# The check unpacks the tarball into an empty directory and fails unless: ldd finds every
# library each command needs and none of Swift's; every library beyond glibc's is named in
# docs/operations.md; each --version prints the tarball's version and HEAD's commit;
# verify-receipt meets ../shared/conformance (Apple's real and mock vectors in ../shared/vectors,
# Apple's roots as pinned in the binary); and receiptkit-server, started from the unpacked folder
# on loopback with a new SQLite database and the test PKI's root, answers /healthz and /readyz,
# stores a notification and exits 0 on SIGTERM.
set -euo pipefail
cd "$(dirname "$0")/.."

commands=(verify-receipt receiptkit-server appstore-api)
scratch="$PWD/.build-release"

fail() {
    echo "release check: FAILED: $*" >&2
    exit 1
}

build() {
    scripts/install-deps.sh
    local commit source bin version arch name stage tarball
    commit="$(git rev-parse --short=12 HEAD)"
    [ -z "$(git status --porcelain --untracked-files=no)" ] ||
        echo "== building commit $commit: the uncommitted changes are not in the release" >&2
    # HEAD's files, through an index of the copy's own (the checkout's index is not touched):
    # only files that changed since the last release build are written, so only they compile.
    source="$scratch/source"
    mkdir -p "$source"
    GIT_INDEX_FILE="$scratch/source.index" git --work-tree="$source" read-tree -u --reset HEAD
    printf '// Written by scripts/release.sh.\nlet buildCommit: String? = "%s"\n' "$commit" \
        >"$source/Sources/ReceiptKitRelease/BuildCommit.swift"
    # The dependencies' versions the tests ran with, when scripts/test.sh has resolved them.
    if [ -f Server/Package.resolved ]; then
        cp Server/Package.resolved "$source/Server/"
    fi

    local swift_build=(swift build -c release --static-swift-stdlib
        --package-path "$source/Server" --scratch-path "$scratch/build")
    for product in "${commands[@]}"; do
        echo "== building $product (release, Swift's runtime linked in, commit $commit)" >&2
        "${swift_build[@]}" --product "$product" >&2
    done
    bin="$("${swift_build[@]}" --show-bin-path)"

    version="$("$bin/verify-receipt" --version)"
    [ "$version" = "${version%% *} (commit $commit)" ] ||
        fail "the built verify-receipt --version says \"$version\", not a version and commit $commit"
    version="${version%% *}"
    arch="$(uname -m)"
    name="receiptkit-$version-linux-$arch"
    stage="$scratch/stage"
    rm -rf "$stage" && mkdir -p "$stage/$name/bin"
    for product in "${commands[@]}"; do
        # Without the debug information (the symbol table stays, so a crash's backtrace still
        # names functions).
        objcopy --strip-debug "$bin/$product" "$stage/$name/bin/$product"
    done
    install -m 0644 "$source/packaging/receiptkit-server.service" \
        "$source/packaging/receiptkit-server.env.example" "$source/LICENSE" "$stage/$name/"

    # The same commit gives the same bytes: entries sorted, owned by root, dated at the commit.
    mkdir -p dist
    tarball="dist/$name.tar.gz"
    tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner \
        --mtime="@$(git log -1 --format=%ct HEAD)" -cf - "$name" | gzip -9n >"$tarball.partial"
    mv "$tarball.partial" "$tarball"
    rm -rf "$stage"
    echo "== $tarball: $(du -h "$tarball" | cut -f1)" >&2
    echo "$tarball"
}

check() {
    local tarball=$1
    [ -f "$tarball" ] || fail "no tarball $tarball"
    [ -x ../shared/conformance/run ] ||
        fail "../shared/conformance/run is missing (Apple's real vectors, beside the checkout)"
    local name version commit unpacked
    name="$(basename "$tarball" .tar.gz)"
    [[ "$name" =~ ^receiptkit-([0-9A-Za-z.+-]+)-linux-[a-z0-9_]+$ ]] ||
        fail "$tarball is not named receiptkit-VERSION-linux-ARCH.tar.gz"
    version="${BASH_REMATCH[1]}"
    commit="$(git rev-parse --short=12 HEAD)"
    # Global, as the EXIT trap reads it after check has returned.
    work="$(mktemp -d /tmp/receiptkit-release-check.XXXXXX)"
    server_pid=
    trap 'stop_server; rm -rf "$work"' EXIT

    mkdir "$work/empty"
    tar -xzf "$tarball" -C "$work/empty"
    unpacked="$work/empty/$name"
    local listed
    listed="$(cd "$work/empty" && find . -type f | sort | tr '\n' ' ')"
    echo "== unpacked: $listed" >&2
    for file in bin/verify-receipt bin/receiptkit-server bin/appstore-api \
        receiptkit-server.service receiptkit-server.env.example LICENSE; do
        [ -f "$unpacked/$file" ] || fail "the tarball has no $name/$file"
    done

    echo "== ldd" >&2
    local product libraries library
    for product in "${commands[@]}"; do
        # With no LD_LIBRARY_PATH, as on a host without Swift.
        libraries="$(env -u LD_LIBRARY_PATH ldd "$unpacked/bin/$product")" || fail "ldd $product failed"
        echo "bin/$product:" >&2
        echo "$libraries" >&2
        ! grep 'not found' <<<"$libraries" >&2 || fail "$product needs a library this host lacks"
        ! grep -E 'libswift|libFoundation|lib_Foundation|libdispatch|libBlocksRuntime|libXCTest|libTesting' \
            <<<"$libraries" >&2 || fail "$product loads Swift's runtime from a shared library"
        # Beyond glibc (and the kernel's vDSO), each library must be one the install docs name.
        for library in $(awk '{ print $1 }' <<<"$libraries" | xargs -n1 basename |
            grep -vE '^(linux-vdso|ld-linux.*|libc|libm|libdl|libpthread|librt|libresolv|libutil)\.so'); do
            grep -qF "\`$library\`" docs/operations.md ||
                fail "$product needs $library, which docs/operations.md does not name"
        done
    done

    echo "== --version" >&2
    local line
    for product in "${commands[@]}"; do
        line="$("$unpacked/bin/$product" --version)" || fail "$product --version failed"
        echo "$product --version: $line" >&2
        [ "$line" = "$version (commit $commit)" ] ||
            fail "$product --version says \"$line\", not \"$version (commit $commit)\""
    done

    echo "== ../shared/conformance/run all bin/verify-receipt" >&2
    ../shared/conformance/run all "$unpacked/bin/verify-receipt" >&2 ||
        fail "verify-receipt does not meet ../shared/conformance"

    echo "== receiptkit-server" >&2
    # Port 0: the system picks a free one, which the server's start line names.
    env -i PATH=/usr/bin:/bin HOST=127.0.0.1 PORT=0 \
        RECEIPTKIT_BUNDLE_ID=com.receiptkit.example RECEIPTKIT_ENVIRONMENT=Sandbox \
        RECEIPTKIT_ROOT_FILE="$PWD/TestVectors/pki/root.der" \
        RECEIPTKIT_DATABASE_URL="sqlite:$work/receiptkit.sqlite" \
        "$unpacked/bin/receiptkit-server" 2>"$work/server.log" &
    server_pid=$!
    local port= waited=0
    while [ -z "$port" ]; do
        kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; fail "receiptkit-server exited at start"; }
        [ "$waited" -lt 600 ] || { cat "$work/server.log" >&2; fail "receiptkit-server did not listen within 60 s"; }
        port="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$work/server.log" | head -n 1)"
        [ -n "$port" ] || { sleep 0.1; waited=$((waited + 1)); }
    done
    local base="http://127.0.0.1:$port" answer
    answer="$(curl -fsS --noproxy '*' "$base/healthz")" || fail "GET /healthz failed"
    echo "GET /healthz: $answer" >&2
    [ "$answer" = '{"status":"ok"}' ] || fail "/healthz answered $answer"
    answer="$(curl -fsS --noproxy '*' "$base/readyz")" || fail "GET /readyz failed"
    echo "GET /readyz: $answer" >&2
    [ "$answer" = '{"status":"ready"}' ] || fail "/readyz answered $answer"
    answer="$(curl -fsS --noproxy '*' -H 'Content-Type: application/json' \
        --data-binary @TestVectors/jws/notification-webhook-body.json "$base/appstore/notifications")" ||
        fail "POST /appstore/notifications failed"
    python3 -c 'import json, sys; a = json.loads(sys.argv[1]); sys.exit(0 if a["stored"] is True and a["record"]["status"] == "verified" else 1)' \
        "$answer" || fail "the notification was not stored: $answer"
    echo "POST /appstore/notifications: stored, verified" >&2
    kill -TERM "$server_pid"
    local status=0
    wait "$server_pid" || status=$?
    server_pid=
    [ "$status" -eq 0 ] || { cat "$work/server.log" >&2; fail "receiptkit-server exited $status on SIGTERM"; }
    echo "receiptkit-server: exit status 0 on SIGTERM" >&2
    echo "release check: $tarball passed" >&2
}

# Stops the server this script started, if it is still running, by its PID.
stop_server() {
    if [ -n "${server_pid:-}" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill -KILL "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
}

case "${1:-}" in
"") build ;;
--check)
    [ $# -eq 2 ] || { echo "usage: scripts/release.sh [--check TARBALL]" >&2; exit 64; }
    check "$2"
    ;;
*)
    echo "usage: scripts/release.sh [--check TARBALL]" >&2
    exit 64
    ;;
esac
