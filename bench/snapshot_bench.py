#!/usr/bin/env python3
"""Snapshot open time on a table with many commits: ampdelta vs deltalake, one run.

Builds the table once with bench/snapshot_open (the real commit path, checkpoints every 10
commits), then times opening the latest snapshot with both engines. Prints medians and the
ratio. Usage: bench/snapshot_bench.py [--commits 10000] [--rounds 5]
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--binary", default=str(ROOT / "build/release/bench/snapshot_open"))
    parser.add_argument("--table", default=None, help="reuse/build the table here")
    args = parser.parse_args()

    import deltalake

    table = args.table or tempfile.mkdtemp(prefix="ampdelta-snapshot-bench-") + "/t"
    build_start = time.perf_counter()
    subprocess.run([args.binary, "--table", table, "--commits", str(args.commits), "--iterations", "1"],
                   check=True, stdout=subprocess.DEVNULL)
    print(f"table: {table} ({args.commits} commits, built in {time.perf_counter() - build_start:.1f}s)")

    ours, theirs = [], []
    for _ in range(args.rounds):
        out = subprocess.run([args.binary, "--table", table, "--commits", str(args.commits),
                              "--iterations", "5"], check=True, capture_output=True, text=True)
        opened = json.loads(out.stdout)
        if (opened["files"], opened["version"]) != (args.commits, args.commits - 1):
            raise RuntimeError(f"ampdelta opened {opened['files']} files at version "
                               f"{opened['version']}, expected {args.commits} at {args.commits - 1}")
        ours.append(opened["median_ms"])
        samples = []
        for _ in range(5):
            start = time.perf_counter()
            dt = deltalake.DeltaTable(table)
            n = len(dt.file_uris())
            samples.append((time.perf_counter() - start) * 1000)
        if (n, dt.version()) != (args.commits, args.commits - 1):
            raise RuntimeError(f"deltalake opened {n} files at version {dt.version()}, "
                               f"expected {args.commits} at {args.commits - 1}")
        theirs.append(statistics.median(samples))
    a, d = statistics.median(ours), statistics.median(theirs)
    result = {"commits": args.commits, "ampdelta_median_ms": round(a, 2),
              "deltalake_median_ms": round(d, 2), "deltalake_over_ampdelta": round(d / a, 2)}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    os._exit(status)  # deltalake can abort the interpreter at exit
