#!/usr/bin/env python3
"""Streaming benchmarks, in one run (see bench/stream_bench.cc for what the C++ side does):

  latency   ampdelta's commit latency for one-block live microbatches at versions 10, 1,000
            and 10,000 (must stay flat);
  reorg     undoing a 10-block reorg on a streamed transactions table of --blocks x 100 rows
            (>= 10M rows by default) vs the Python loader's method on the same table: read the
            whole table, drop the invalidated batches' rows, write it back as a new version
            (deltalake to_pyarrow_table + write_deltalake(mode="overwrite"));
  catch-up  rows/s of a stream catching up vs a batch load of the same range.

Usage: bench/stream_bench.py [--commits 10000] [--blocks 100000] [--workdir DIR]
"""
import argparse
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BENCH = ROOT / "build/release/bench/stream_bench"

REWRITE = r"""
import sys, time, pyarrow.compute as pc
from deltalake import DeltaTable, write_deltalake
path, first_invalid = sys.argv[1], int(sys.argv[2])
start = time.perf_counter()
dt = DeltaTable(path, version=int(sys.argv[3]))
table = dt.to_pyarrow_table()
table = table.filter(pc.less(table["block_num"], first_invalid))
write_deltalake(path, table, mode="overwrite")
print(time.perf_counter() - start)
"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--blocks", type=int, default=100_000)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    work = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="ampdelta-stream-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    out = subprocess.run([str(BENCH), "--dir", str(work), "--commits", str(args.commits),
                          "--blocks", str(args.blocks)], check=True, capture_output=True, text=True)
    report = json.loads(out.stdout)
    reorg = report["reorg"]
    # The Python loader's undo on the same table, at the version just before ampdelta's undo.
    from deltalake import DeltaTable
    history = DeltaTable(reorg["table"]).history()
    undo_version = next(h["version"] for h in history if h.get("operation") == "DELETE")
    first_invalid = 24_000_000 + args.blocks + 20 - 10  # the 10 reorged live blocks
    rewrite = subprocess.run([sys.executable, "-c", REWRITE, reorg["table"], str(first_invalid),
                              str(undo_version - 1)], check=True, capture_output=True, text=True)
    rewrite_seconds = float(rewrite.stdout.strip().splitlines()[-1])
    report["reorg"]["python_rewrite_seconds"] = rewrite_seconds
    report["reorg"]["undo_over_rewrite"] = reorg["undo_seconds"] / rewrite_seconds
    report["catch_up"]["stream_over_batch_rows_per_second"] = (
        report["catch_up"]["stream_rows_per_second"] / report["catch_up"]["batch_rows_per_second"])
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
