#!/usr/bin/env bash
# The benchmark set on a many-core machine, from a payload bench/device/pack.sh made.
# Run from the repository root with D = the folder holding payload.tar.xz and this script;
# results land under $OUT (JSON, and the logs of each step).
#   scale.json  bench/scale_cores.py: one load on 2/4/8/12 loader cores against the Python
#               stack at its best, the source's drain and the encoder's limit; parallel
#               backfills with 1/2/4/8 workers (dev server on cores 0-3, loaders on 4-15)
#   logs.json   bench/load_bench.py --dataset logs on every loader core
#   events.json bench/events_bench.py (decoded events) on every loader core
# Environment: ROWS (2000000), ROUNDS (3), PAYLOAD (/tmp/p), SERVER (0-3), LOADER (4-15),
# COUNTS (2,4,8,12: loader core counts).
set -u
D=${D:?set D to the folder with payload.tar.xz}
OUT=${OUT:-/tmp/out}; ROWS=${ROWS:-2000000}; ROUNDS=${ROUNDS:-3}
export PAYLOAD=${PAYLOAD:-/tmp/p}
cores=$(nproc)
SERVER=${SERVER:-0-3}; LOADER=${LOADER:-4-$((cores - 1))}
mkdir -p "$OUT" "$PAYLOAD"
t0=$(date +%s); step() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc "$D/payload.tar.xz" | tar xf - -C "$PAYLOAD" || { echo "unpack failed"; exit 1; }
step "unpacked; $cores cores"; lscpu | grep -E "Model name|^CPU\(s\)" ; free -g | head -2
export PYTHONPATH=$PAYLOAD/site${PYTHONPATH:+:$PYTHONPATH}
B=$PAYLOAD/proj/bench
python3 -c "import pyarrow, pyarrow.flight, deltalake; print('pyarrow', pyarrow.__version__, 'deltalake', deltalake.__version__)" || exit 1
$PAYLOAD/proj/build/release/tools/ampdelta/ampdelta --version || { echo "ampdelta does not start"; exit 1; }
command -v taskset >/dev/null || { echo "no taskset"; exit 1; }
counts=${COUNTS:-2,4,8,12}
step "scale_cores rows=$ROWS rounds=$ROUNDS server=$SERVER loader=$LOADER"
python3 $B/scale_cores.py --rows "$ROWS" --rounds "$ROUNDS" --server-cpus "$SERVER" \
  --loader-cpus "$LOADER" --core-counts "$counts" --workers 1,2,4,8 \
  --json-out "$OUT/scale.json" > /dev/null 2> "$OUT/scale.err"
echo "scale rc=$?"; tail -5 "$OUT/scale.err"
step "logs"
python3 $B/load_bench.py --rows "$ROWS" --rounds "$ROUNDS" --dataset logs \
  --peers ampdelta,b,drain,encoder,encoder_same --server-cpus "$SERVER" --loader-cpus "$LOADER" \
  --json-out "$OUT/logs.json" > /dev/null 2> "$OUT/logs.err"
echo "logs rc=$?"; tail -3 "$OUT/logs.err"
step "decoded events"
taskset -c "$LOADER" python3 $B/events_bench.py --rounds "$ROUNDS" \
  --json-out "$OUT/events.json" > /dev/null 2> "$OUT/events.err"
echo "events rc=$?"; tail -3 "$OUT/events.err"
step "all done"
