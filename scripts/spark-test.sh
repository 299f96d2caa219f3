#!/usr/bin/env bash
# Tests Examples/spark/verify_archive.py: the PySpark job in Spark local mode over an archive made
# from TestVectors/, record for record against a single-process verify-receipt run.
#
# Installs what it needs when it is missing: a Java runtime (17 or later) with apt-get, as root or
# through sudo, and PySpark (the version in Examples/spark/requirements.txt) with pip into a
# virtual environment in .build-spark/venv (git-ignored; python3-venv comes from apt-get when
# Debian's python3 lacks it). If one of them cannot be installed, says so and skips (exit 0), or
# fails (exit 1) when SPARK_TEST_REQUIRED=1, as CI sets it: there the test must run.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.build-spark/venv
requirements=Examples/spark/requirements.txt

skip() {
    if [ "${SPARK_TEST_REQUIRED:-0}" = 1 ]; then
        echo "spark-test: FAILED, the Spark job could not be tested (SPARK_TEST_REQUIRED=1): $*" >&2
        exit 1
    fi
    echo "spark-test: SKIPPED, the Spark job was not tested: $*" >&2
    exit 0
}

# Whether packages can be installed here (as root, or through passwordless sudo), and how.
if [ "$(id -u)" -eq 0 ]; then
    can_install=yes as_root=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    can_install=yes as_root=(sudo -n)
else
    can_install=no as_root=()
fi
command -v apt-get >/dev/null || can_install=no

apt_install() {
    [ "$can_install" = yes ] || return 1
    echo "spark-test: apt-get install $*" >&2
    # Slim Debian images leave out /usr/share/man, where the JRE's postinst links its man pages.
    "${as_root[@]}" mkdir -p /usr/share/man/man1
    local get=("${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get)
    "${get[@]}" install -y -qq --no-install-recommends "$@" >/dev/null && return 0
    "${get[@]}" update -qq && "${get[@]}" install -y -qq --no-install-recommends "$@" >/dev/null
}

# Why apt_install failed, for a skip message.
cannot_install() {
    if [ "$can_install" = yes ]; then echo "apt-get failed"; else echo "not root, no sudo, or no apt-get"; fi
}

java_major() {
    "${1:-java}" -version 2>&1 | sed -n 's/.* version "\([0-9]*\).*/\1/p' | head -n 1
}

# Spark 4 runs on Java 17 or 21.
ensure_java() {
    local major
    major="$(java_major 2>/dev/null || true)"
    [ -n "$major" ] && [ "$major" -ge 17 ] && return 0
    apt_install openjdk-17-jre-headless || apt_install default-jre-headless ||
        skip "no Java runtime 17 or later, and it cannot be installed here ($(cannot_install)); install openjdk-17-jre-headless and run scripts/spark-test.sh again"
    major="$(java_major 2>/dev/null || true)"
    [ -n "$major" ] && [ "$major" -ge 17 ] && return 0
    # Installed, but an older default java comes first on the PATH.
    local candidate
    for candidate in /usr/lib/jvm/*/bin/java; do
        major="$(java_major "$candidate" 2>/dev/null || true)"
        if [ -n "$major" ] && [ "$major" -ge 17 ]; then
            export JAVA_HOME="${candidate%/bin/java}"
            export PATH="$JAVA_HOME/bin:$PATH"
            return 0
        fi
    done
    skip "a Java runtime 17 or later was installed but cannot be found"
}

# PySpark, pinned, in a virtual environment (Debian's python3 is "externally managed" for pip).
ensure_pyspark() {
    local pinned
    pinned="$(sed -n 's/^pyspark==//p' "$requirements")"
    if [ "$("$venv/bin/python" -c 'import pyspark; print(pyspark.__version__)' 2>/dev/null)" = "$pinned" ]; then
        return 0
    fi
    command -v python3 >/dev/null || apt_install python3 || skip "no python3, and it cannot be installed here ($(cannot_install))"
    python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
        skip "PySpark $pinned needs Python 3.11 or later, and python3 is $(python3 --version 2>&1)"
    rm -rf "$venv"
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
        rm -rf "$venv"
        apt_install python3-venv && python3 -m venv "$venv" ||
            skip "python3 cannot create a virtual environment, and python3-venv cannot be installed here ($(cannot_install))"
    fi
    echo "spark-test: pip install pyspark==$pinned into $venv" >&2
    local start=$SECONDS
    # --use-pep517: PySpark ships a source archive only; build it the current way, quietly.
    if ! "$venv/bin/pip" install --quiet --disable-pip-version-check --use-pep517 -r "$requirements"; then
        rm -rf "$venv"
        skip "pip cannot install pyspark==$pinned here (see its message above: no access to PyPI?)"
    fi
    echo "spark-test: installed in $((SECONDS - start)) s, $(du -sh "$venv" | cut -f1) in $venv" >&2
}

ensure_java
ensure_pyspark
echo "spark-test: $(java -version 2>&1 | head -n 1), PySpark $("$venv/bin/python" -c 'import pyspark; print(pyspark.__version__)'), $("$venv/bin/python" --version)" >&2

swift build -c release --product verify-receipt
export RECEIPTKIT_VERIFY_RECEIPT="$(swift build -c release --show-bin-path)/verify-receipt"
"$venv/bin/python" Examples/spark/test_verify_archive.py
