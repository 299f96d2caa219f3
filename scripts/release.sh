#!/usr/bin/env bash
# The installable release, and its check (docs/operations.md, Install).
#
#   scripts/release.sh                      builds dist/receiptkit-VERSION-linux-ARCH.tar.gz from
#                                           HEAD and prints its path
#   scripts/release.sh --from-test-builds   the same from the release builds scripts/test.sh
#                                           made of a clean checkout (.build, Server/.build):
#                                           nothing compiled again (CI)
#   scripts/release.sh --check TARBALL      checks a tarball as a fresh host would see it
#
# The tarball holds one folder, receiptkit-VERSION-linux-ARCH/: bin/verify-receipt,
# bin/receiptkit-server and bin/appstore-api, built in release with Swift's runtime and
# Foundation linked in, so that a host needs only the C libraries docs/operations.md names; the
# systemd unit and the example environment file from packaging/; and LICENSE. VERSION is
# Release.version (Sources/ReceiptKitRelease); ARCH is `uname -m`.
#
# Compiled once, linked twice. The commands are compiled as any release build is: from a copy of
# HEAD in .build-release/source, so that uncommitted changes are not in a release, or, with
# --from-test-builds, the very objects the release test suites ran. Each is then linked again by
# the command SwiftPM linked it with (from its build manifest, release.yaml) with -static-stdlib
# added, which takes Swift's runtime and Foundation from their static archives, and two objects:
#   - the runtime probe, an empty file importing the runtime's modules compiled against their
#     static form, whose autolink entries name the archives those need (objects compiled against
#     the shared form name only each module's own library);
#   - the commit, `const char receiptkit_release_commit[]`, exported, which Release.commit reads
#     from the executable's symbols: --version names the commit with no source file written.
# (`swift build --static-swift-stdlib` would compile everything a second time: it changes every
# compile command; and it cannot build the tests, as the static runtime has no Testing module.)
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

# link_static PRODUCT BUILD_PATH OUTPUT OBJECTS...: PRODUCT linked again from the release build
# in BUILD_PATH (a scratch path), with Swift's runtime and OBJECTS linked in.
link_static() {
    python3 - "$@" <<'PY' >&2
import json, pathlib, shlex, subprocess, sys
product, build_path, output, *objects = sys.argv[1:]
manifest = pathlib.Path(build_path, "release.yaml")
if not manifest.is_file():
    sys.exit(f"release.sh: {build_path} has no release build (no {manifest})")
# llbuild's manifest: a command's name on a line of its own, its arguments on a later `args:`
# line as a JSON list.
lines = manifest.read_text().splitlines()
name = next((i for i, line in enumerate(lines)
             if line.startswith(f'  "C.{product}-') and line.endswith('-release.exe":')), None)
if name is None:
    sys.exit(f"release.sh: {manifest} does not link {product}")
args_line = next(line.strip() for line in lines[name + 1:] if line.strip().startswith("args:"))
args = json.loads(args_line[len("args:"):])
link_list = next((a[1:] for a in args if a.startswith("@") and a.endswith("Objects.LinkFileList")), None)
if link_list is None or not pathlib.Path(link_list).is_file() or "-o" not in args:
    sys.exit(f"release.sh: {product}'s link command in {manifest} is not one this script knows")
# One object a line, quoted as a shell word when its path has a space.
objects_linked = [shlex.split(line)[0] for line in pathlib.Path(link_list).read_text().splitlines() if line.strip()]
missing = [o for o in objects_linked if not pathlib.Path(o).is_file()]
if missing:
    sys.exit(f"release.sh: {product} is not built in {build_path} ({missing[0]} is missing)")
args[args.index("-o") + 1] = output
args += ["-static-stdlib", *objects, "-Xlinker", "--export-dynamic-symbol=receiptkit_release_commit"]
sys.exit(subprocess.run(args).returncode)
PY
}

build() {
    local from_tests=$1
    scripts/install-deps.sh
    local commit bin version arch name stage tarball product source
    commit="$(git rev-parse --short=12 HEAD)"
    # Each command's release build: its scratch path.
    local -A build_path
    if [ "$from_tests" = yes ]; then
        [ -z "$(git status --porcelain --untracked-files=no)" ] ||
            fail "--from-test-builds needs a clean checkout: the builds must be of HEAD, commit $commit"
        build_path[verify-receipt]="$PWD/.build"
        build_path[receiptkit-server]="$PWD/Server/.build"
        build_path[appstore-api]="$PWD/Server/.build"
        source="$PWD"
    else
        [ -z "$(git status --porcelain --untracked-files=no)" ] ||
            echo "== building commit $commit: the uncommitted changes are not in the release" >&2
        # HEAD's files, through an index of the copy's own (the checkout's index is not touched):
        # only files that changed since the last release build are written, so only they compile.
        source="$scratch/source"
        mkdir -p "$source"
        GIT_INDEX_FILE="$scratch/source.index" git --work-tree="$source" read-tree -u --reset HEAD
        # The dependencies' versions the tests ran with, when scripts/test.sh has resolved them.
        if [ -f Server/Package.resolved ]; then
            cp Server/Package.resolved "$source/Server/"
        fi
        for product in "${commands[@]}"; do
            echo "== building $product (release, commit $commit)" >&2
            swift build -c release --package-path "$source/Server" --scratch-path "$scratch/build" \
                --product "$product" >&2
            build_path[$product]="$scratch/build"
        done
    fi

    local link="$scratch/link"
    rm -rf "$link" && mkdir -p "$link"
    printf 'import Foundation\nimport FoundationEssentials\nimport Dispatch\nimport Synchronization\n' \
        >"$link/RuntimeProbe.swift"
    swiftc -static-stdlib -parse-as-library -module-name RuntimeProbe -c "$link/RuntimeProbe.swift" \
        -o "$link/runtime-probe.o"
    printf 'const char receiptkit_release_commit[] = "%s";\n' "$commit" >"$link/commit.c"
    # The toolchain's own clang, beside swiftc (through any symlink to it).
    "$(dirname "$(readlink -f "$(command -v swiftc)")")/clang" -c "$link/commit.c" -o "$link/commit.o"
    for product in "${commands[@]}"; do
        echo "== linking $product with Swift's runtime (${build_path[$product]}, commit $commit)" >&2
        link_static "$product" "${build_path[$product]}" "$link/$product" "$link/runtime-probe.o" "$link/commit.o" ||
            fail "linking $product failed"
    done
    bin="$link"

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

usage="usage: scripts/release.sh [--from-test-builds | --check TARBALL]"
case "${1:-}" in
"") build no ;;
--from-test-builds)
    [ $# -eq 1 ] || { echo "$usage" >&2; exit 64; }
    build yes
    ;;
--check)
    [ $# -eq 2 ] || { echo "$usage" >&2; exit 64; }
    check "$2"
    ;;
*)
    echo "$usage" >&2
    exit 64
    ;;
esac
