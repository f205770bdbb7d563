#!/usr/bin/env python3
"""Streaming benchmarks, in one run (see bench/stream_bench.cc for what the C++ side does):

  latency   ampdelta's commit latency for one-block live microbatches at versions 10, 100,
            1,000, ... up to --commits (must stay flat). The table keeps every checkpoint
            for the 30-day log retention: 100,000 commits need more than 74 GB of disk;
  reorg     undoing a 10-block reorg on a streamed transactions table of --blocks x 100 rows
            (>= 10M rows by default) vs two peers on the same table at the same version:
            deltalake's own DeltaTable.delete(predicate), and the seed's method (read the whole
            table, drop the invalidated batches' rows, write it back with write_deltalake
            (mode="overwrite")). All three must leave identical rows: checked by row count,
            highest block and an order-independent fingerprint of every tx_hash, read back by
            deltalake;
  catch-up  rows/s of a stream catching up vs a batch load of the same range;
  undo-dv   the same streamed table compacted into large files, then a 10-block reorg at the
            head undone with deletion vectors and without (the files holding the reorged
            microbatch rewritten): median undo time of --dv-rounds rounds each, bytes written,
            rows left checked equal.

Usage: bench/stream_bench.py [--commits 10000] [--blocks 100000] [--dv-rounds 5] [--workdir DIR]
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
sys.path.insert(0, str(ROOT / "bench"))
import load_bench  # noqa: E402  (running the Python peers)

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

# deltalake's delete on the table as it was before ampdelta's undo (restored to that version).
DELETE = r"""
import json, sys, time
from deltalake import DeltaTable
path, restore_to, first_invalid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
DeltaTable(path).restore(restore_to)
start = time.perf_counter()
dt = DeltaTable(path)
opened = time.perf_counter()
metrics = dt.delete(f"block_num >= {first_invalid}")
end = time.perf_counter()
print(json.dumps({"seconds": end - start, "delete_seconds": end - opened, "version": dt.version(),
                  "files_removed": metrics.get("num_removed_files"),
                  "files_added": metrics.get("num_added_files"),
                  "rows_removed": metrics.get("num_deleted_rows")}))
"""

# Rows of one version: count, highest block, and the sum (mod 2^64) of every tx_hash's first 8
# bytes, which does not depend on row order or file layout.
FINGERPRINT = r"""
import json, os, sys
import numpy as np, pyarrow as pa, pyarrow.compute as pc
from deltalake import DeltaTable
path, version = sys.argv[1], int(sys.argv[2])
table = DeltaTable(path, version=version).to_pyarrow_dataset().to_table(columns=["block_num", "tx_hash"])
total = np.uint64(0)
for chunk in table["tx_hash"].cast(pa.binary()).chunks:
    offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int32)[chunk.offset:chunk.offset + len(chunk) + 1]
    data = np.frombuffer(chunk.buffers()[2], dtype=np.uint8)[offsets[0]:offsets[-1]]
    total += data.reshape(-1, 32)[:, :8].copy().view("<u8").sum(dtype=np.uint64)
print(json.dumps({"rows": table.num_rows, "max_block": pc.max(table["block_num"]).as_py(),
                  "tx_hash_fingerprint": int(total)}))
sys.stdout.flush()
os._exit(0)  # deltalake can abort the interpreter at exit
"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--blocks", type=int, default=100_000)
    parser.add_argument("--compact", action="store_true",
                        help="latency: compact as a stream does by default (optimize_after_write)")
    parser.add_argument("--checkpoint-interval", type=int, default=0,
                        help="latency: delta.checkpointInterval of the table (default 10)")
    parser.add_argument("--window", type=int, default=50,
                        help="latency: the median over this many commits after each version")
    parser.add_argument("--dv-rounds", type=int, default=5,
                        help="undo-dv: rounds with and without deletion vectors")
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    work = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="ampdelta-stream-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    latency = ["--compact"] if args.compact else []
    if args.checkpoint_interval:
        latency += ["--checkpoint-interval", str(args.checkpoint_interval)]
    out = subprocess.run([str(BENCH), "--dir", str(work), "--commits", str(args.commits),
                          "--blocks", str(args.blocks), "--window", str(args.window), *latency],
                         check=True, capture_output=True, text=True)
    report = json.loads(out.stdout)
    reorg = report["reorg"]
    # The Python loader's undo on the same table, at the version just before ampdelta's undo.
    from deltalake import DeltaTable
    history = DeltaTable(reorg["table"]).history()
    undo_version = next(h["version"] for h in history if h.get("operation") == "DELETE")
    first_invalid = 24_000_000 + args.blocks + 20 - 10  # the 10 reorged live blocks
    ampdelta_rows = load_bench.python_json(FINGERPRINT, reorg["table"], undo_version)
    delete = load_bench.python_json(DELETE, reorg["table"], undo_version - 1, first_invalid)
    delete_rows = load_bench.python_json(FINGERPRINT, reorg["table"], delete["version"])
    rewrite = subprocess.run([sys.executable, "-c", REWRITE, reorg["table"], str(first_invalid),
                              str(undo_version - 1)], check=True, capture_output=True, text=True)
    rewrite_seconds = float(rewrite.stdout.strip().splitlines()[-1])
    rewrite_rows = load_bench.python_json(FINGERPRINT, reorg["table"], DeltaTable(reorg["table"]).version())
    if not ampdelta_rows == delete_rows == rewrite_rows:
        raise RuntimeError(f"the undos disagree: ampdelta {ampdelta_rows}, deltalake delete "
                           f"{delete_rows}, rewrite {rewrite_rows}")
    if ampdelta_rows["max_block"] != first_invalid - 1:
        raise RuntimeError(f"rows of invalidated blocks survived: {ampdelta_rows}")
    report["reorg"]["rows_after_undo"] = ampdelta_rows
    report["reorg"]["deltalake_delete"] = delete
    report["reorg"]["undo_over_delete"] = reorg["undo_seconds"] / delete["delete_seconds"]
    report["reorg"]["python_rewrite_seconds"] = rewrite_seconds
    report["reorg"]["undo_over_rewrite"] = reorg["undo_seconds"] / rewrite_seconds
    dv = subprocess.run([str(BENCH), "--dir", str(work / "undo-dv"), "--only", "undo-dv",
                         "--rounds", str(args.dv_rounds), "--blocks", str(args.blocks)],
                        check=True, capture_output=True, text=True)
    report["undo_dv"] = json.loads(dv.stdout)["undo_dv"]
    report["catch_up"]["stream_over_batch_rows_per_second"] = (
        report["catch_up"]["stream_rows_per_second"] / report["catch_up"]["batch_rows_per_second"])
    if not args.workdir:  # never a directory the user named
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
