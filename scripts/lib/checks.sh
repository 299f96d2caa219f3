# Sourced by the test scripts: checks that cannot pass without checking.
#
#   counted LABEL COMMAND…
#       Runs a command that runs Swift Testing tests (`swift test --skip-build`, or a built test
#       bundle run directly) and fails unless it passed having run at least one test, read from
#       Swift Testing's closing line ("Test run with N tests … passed"). A run still going after
#       RECEIPTKIT_TEST_RUN_LIMIT seconds (default 1200; the slowest run takes about a minute) is a
#       hang: the step prints each thread's stack (with gdb, when installed), the processes the run
#       started, and the tests that started and did not end, then stops the run and fails — in
#       minutes, not at CI's deadline. Its output is read from a file, not a pipe, so a process
#       the tests left behind holding the output open cannot hold the step.
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
    local log status count pid follower watchdog
    log="$(mktemp /tmp/receiptkit-swift-test.XXXXXX)"
    "$@" >"$log" 2>&1 &
    pid=$!
    tail -n +1 -f --pid="$pid" "$log" &
    follower=$!
    watch_for_hang "$label" "$pid" "$log" &
    watchdog=$!
    set +e
    wait "$pid"
    status=$?
    wait "$watchdog" "$follower"
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

# watch_for_hang LABEL PID LOG: returns once PID has ended; if it is still running after the
# limit, reports the hang and stops PID and every process under it.
watch_for_hang() {
    local label=$1 pid=$2 log=$3 waited=0 tree bundle
    while kill -0 "$pid" 2>/dev/null; do
        if [ "$waited" -ge "${RECEIPTKIT_TEST_RUN_LIMIT:-1200}" ]; then
            # Frozen first (SIGSTOP: nothing more is written, a debugger can still attach), so that
            # the report is the last thing the step prints; then stopped for good.
            tree="$(process_tree "$pid")"
            kill -STOP $(tr , ' ' <<<"$tree") 2>/dev/null || true
            sleep 2  # the follower prints what was written before
            echo "== $label: still running after $waited s: each thread's stack, the processes, the unfinished tests" >&2
            bundle="$(ps -o pid=,args= -p "$tree" | awk '/\.xctest/ { print $1; exit }')"
            if [ -n "$bundle" ] && command -v gdb >/dev/null; then
                timeout 120 gdb -p "$bundle" -batch -ex 'thread apply all bt 25' 2>&1 | grep -E '^(Thread|#)' | cut -c1-240 >&2 || true
            fi
            ps -o pid,ppid,etimes,stat,args -p "$tree" >&2 || true
            unfinished_tests "$log" >&2
            kill -KILL $(tr , ' ' <<<"$tree") 2>/dev/null || true
            echo "$label: FAILED, a hang: stopped after $waited s (RECEIPTKIT_TEST_RUN_LIMIT)" >&2
            return
        fi
        sleep 1
        waited=$((waited + 1))
    done
}

# process_tree PID: PID and every process under it, comma-separated.
process_tree() {
    local tree=$1 child
    for child in $(ps -o pid= --ppid "$1"); do
        tree+=",$(process_tree "$child")"
    done
    echo "$tree"
}

# unfinished_tests LOG: the tests (and test cases) Swift Testing said started and not how they ended.
unfinished_tests() {
    python3 - "$1" <<'PYTHON'
import re, sys
started, ended = [], set()
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    line = line.rstrip("\n")
    if m := re.match(r'^◇ (Test(?: case passing .*? to)? ".*") started\.$', line):
        started.append(m.group(1))
    elif m := re.match(r'^[✔✘➜] (Test ".*?")(?: with \d+ test cases?)? (?:passed|failed|skipped)', line):
        ended.add(m.group(1))
    elif m := re.match(r'^[✔✘] (Test case passing .*? to ".*") (?:passed|failed)', line):
        ended.add(m.group(1))
def test_of(name):
    return re.sub(r'^Test case passing .*? to ', 'Test ', name)
left = [name for name in started if name not in ended and test_of(name) not in ended]
print(f"tests started and not ended ({len(left)}):")
for name in left[:60]:
    print("  " + name)
PYTHON
}

swift_test() {
    local label=$1
    shift
    counted "$label" swift test "$@"
}

# Splits SUITE… [-- ARGUMENTS…] into the arrays SUITES and SUITE_ARGUMENTS.
split_suites() {
    SUITES=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        SUITES+=("$1")
        shift
    done
    [ $# -gt 0 ] && shift
    SUITE_ARGUMENTS=("$@")
}

require_suites() {
    local label=$1
    shift
    split_suites "$@"
    local listing suite
    listing="$(swift test list "${SUITE_ARGUMENTS[@]}")"
    for suite in "${SUITES[@]}"; do
        if ! grep -q "\.$suite/" <<<"$listing"; then
            echo "$label: FAILED, no test suite named $suite (renamed or removed? update the script that names it)" >&2
            exit 1
        fi
    done
}

swift_test_suites() {
    local label=$1
    shift
    require_suites "$label" "$@"
    split_suites "$@"
    local filter
    filter="$(IFS='|'; echo "${SUITES[*]}")"
    swift_test "$label" "${SUITE_ARGUMENTS[@]}" --filter "$filter"
}
