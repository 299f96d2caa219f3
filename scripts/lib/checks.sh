# Sourced by the test scripts: checks that cannot pass without checking.
#
#   counted LABEL COMMAND…
#       Runs a command that runs Swift Testing tests (`swift test`, or a built test bundle run
#       directly) and fails unless it passed having run at least one test, read from Swift
#       Testing's closing line ("Test run with N tests … passed").
#   swift_test LABEL [swift test arguments…]
#       counted LABEL swift test …: SwiftPM exits 0 when a --filter matches nothing.
#   require_suites LABEL SUITE… [-- swift test arguments…]
#       Fails unless each named suite (test type) is among the tests `swift test list` lists: a
#       renamed suite fails, named, instead of silently dropping out of a --filter.
#   swift_test_suites LABEL SUITE… -- [swift test arguments…]
#       require_suites, then swift_test of those suites only.
#   required WHAT
#       For something a step needs that is absent: in CI (CI=true) prints "FAILED … WHAT is
#       missing" and exits 1; elsewhere prints that the step is skipped and returns 1, so that
#       `required … || skip-the-step` reads as what happens.

in_ci() {
    case "${CI:-}" in true | TRUE | True | 1) return 0 ;; *) return 1 ;; esac
}

required() {
    if in_ci; then
        echo "FAILED: $* is missing (CI=true: nothing may be skipped)" >&2
        exit 1
    fi
    echo "SKIPPED: $* is missing" >&2
    return 1
}

counted() {
    local label=$1
    shift
    local log status count
    log="$(mktemp /tmp/receiptkit-swift-test.XXXXXX)"
    set +e
    "$@" 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
    set -e
    count="$(sed -n 's/.*Test run with \([0-9][0-9]*\) tests\{0,1\} .*/\1/p' "$log" | tail -n 1)"
    rm -f "$log"
    if [ "$status" -ne 0 ]; then
        echo "$label: FAILED ($*: exit status $status)" >&2
        exit 1
    fi
    if [ -z "$count" ] || [ "$count" -eq 0 ]; then
        echo "$label: FAILED, no test ran ($*)" >&2
        exit 1
    fi
    echo "$label: $count tests passed" >&2
}

swift_test() {
    local label=$1
    shift
    counted "$label" swift test "$@"
}

require_suites() {
    local label=$1
    shift
    local suites=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        suites+=("$1")
        shift
    done
    [ $# -gt 0 ] && shift
    local listing suite
    listing="$(swift test list "$@")"
    for suite in "${suites[@]}"; do
        if ! grep -q "\.$suite/" <<<"$listing"; then
            echo "$label: FAILED, no test suite named $suite (renamed or removed? update the script that names it)" >&2
            exit 1
        fi
    done
}

swift_test_suites() {
    local label=$1
    shift
    local suites=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        suites+=("$1")
        shift
    done
    [ $# -gt 0 ] && shift
    require_suites "$label" "${suites[@]}" -- "$@"
    local filter
    filter="$(IFS='|'; echo "${suites[*]}")"
    swift_test "$label" "$@" --filter "$filter"
}
