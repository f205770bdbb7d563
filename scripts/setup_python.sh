#!/usr/bin/env bash
# Create/refresh the Python virtualenv for interop tests at .deps/venv
# (packages pinned in requirements-test.txt) and pre-fetch the delta-spark
# jars into the project-local Ivy cache .deps/ivy2, so tests never resolve
# jars themselves.
#
# Idempotent and quick when already done:
#   - pip runs only when sha256(requirements-test.txt) + python version differ
#     from the stamp .deps/venv/.requirements.sha256;
#   - the jar pre-fetch runs only when the pyspark/delta-spark pins differ
#     from the stamp .deps/ivy2/.prefetch.stamp.
#
# Env: PYTHON (default python3, >= 3.10), JAVA_HOME (optional; Java >= 17).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PYTHON="${PYTHON:-python3}"
REQ=requirements-test.txt
VENV=.deps/venv
IVY=.deps/ivy2
PIP_STAMP="$VENV/.requirements.sha256"
JAR_STAMP="$IVY/.prefetch.stamp"
VPY="$VENV/bin/python"

log() { printf '[setup_python] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

start=$SECONDS
[[ -f $REQ ]] || die "$REQ not found in $ROOT"

# --- 1. virtualenv ----------------------------------------------------------
if [[ -e $VPY ]] && ! "$VPY" -c 'import sys' 2>/dev/null; then
    log "venv at $VENV is broken (its python no longer runs); recreating"
    rm -rf "$VENV"
fi
if [[ ! -x $VPY ]]; then
    "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
        || die "$PYTHON is $("$PYTHON" --version 2>&1); need >= 3.10"
    log "creating venv $VENV ($("$PYTHON" --version 2>&1))"
    mkdir -p .deps
    "$PYTHON" -m venv "$VENV"
fi

# --- 2. packages ------------------------------------------------------------
pip_key="$(sha256sum "$REQ" | cut -d' ' -f1) $("$VPY" -c 'import platform; print(platform.python_version())')"
if [[ -f $PIP_STAMP && "$(cat "$PIP_STAMP")" == "$pip_key" ]]; then
    log "packages up to date ($REQ unchanged)"
else
    log "installing $REQ into $VENV (first time: ~40 s, ~450 MB download)"
    rm -f "$PIP_STAMP"
    # PIP_CONSTRAINT also reaches pip's isolated build env, pinning the
    # setuptools/wheel used to build the pyspark sdist.
    PIP_CONSTRAINT="$ROOT/$REQ" PIP_DISABLE_PIP_VERSION_CHECK=1 \
        "$VPY" -m pip install --no-input --quiet -r "$REQ"
    "$VPY" -m pip check >&2 || die "pip check failed"
    printf '%s\n' "$pip_key" > "$PIP_STAMP"
    log "packages installed"
fi

# --- 3. delta-spark jars (Ivy, from Maven Central) ---------------------------
jar_key="$(grep -E '^(pyspark|delta-spark)==' "$REQ" | sort | tr '\n' ' ')"
if [[ -f $JAR_STAMP && "$(cat "$JAR_STAMP")" == "$jar_key" ]]; then
    log "delta-spark jars already in $IVY"
else
    java_bin="${JAVA_HOME:+$JAVA_HOME/bin/}java"
    command -v "$java_bin" >/dev/null || die "java not found (Spark needs Java >= 17)"
    java_major="$("$java_bin" -version 2>&1 | sed -nE '1s/.*version "([0-9]+).*/\1/p')"
    [[ ${java_major:-0} -ge 17 ]] || die "Spark 4 needs Java >= 17; $java_bin is ${java_major:-unknown}"
    log "pre-fetching delta-spark jars into $IVY and smoke-testing Spark (Java $java_major; ~20 s)"
    mkdir -p "$IVY"
    rm -f "$JAR_STAMP"
    prefetch_log="$IVY/prefetch.log"
    if ! SPARK_LOCAL_IP=127.0.0.1 "$VPY" - >"$prefetch_log" 2>&1 <<'EOF'
import sys, tempfile
sys.path.insert(0, "tests/interop")
import readers

spark = readers.spark_session()
with tempfile.TemporaryDirectory(prefix="ampdelta-prefetch-") as d:
    spark.range(3).write.format("delta").save(d)
    n = readers.read_spark(d).num_rows
    assert n == 3, n
print("spark+delta smoke test ok")
EOF
    then
        tail -n 40 "$prefetch_log" >&2
        die "Spark/delta jar pre-fetch failed (full log: $prefetch_log)"
    fi
    printf '%s\n' "$jar_key" > "$JAR_STAMP"
    log "delta-spark jars cached"
fi

log "done in $((SECONDS - start))s: $VENV ready"
