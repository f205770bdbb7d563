#!/usr/bin/env python3
"""How a batch load's cost grows with its size: `ampdelta load` of 1M, 4M, 16M and 32M rows of the
calibrated synthetic chain's transactions from one dev server per size, with the Python path at
its best (DoGet + read_all + one write_deltalake, bench/load_bench.py's peer b) beside it up to
--python-max-rows (it holds the whole result in memory).

For each size: seconds, rows/s, CPU seconds per million rows and peak RSS (ru_maxrss of the
loading process) of each peer, the row count read back through deltalake's log replay (at the
smallest size also every column of each peer's first table, compared with the server's). The goal
is a flat memory curve: ampdelta's peak RSS within 1.2x across sizes and at most 512 MiB.

Usage: bench/scale_bench.py [--sizes 1000000,4000000,16000000,32000000] [--rounds 1]
                            [--python-max-rows 4000000] [--json-out FILE]
"""
import argparse
import json
import pathlib
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import load_bench  # noqa: E402  (peers, timing and row counting)

TXS_PER_BLOCK = 100


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000000,4000000,16000000,32000000")
    parser.add_argument("--rounds", type=load_bench.positive_int, default=1)
    parser.add_argument("--python-max-rows", type=int, default=4_000_000)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--json-out", default=None)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    work = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="ampdelta-scale-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    points = []
    for size in sizes:
        blocks = -(-size // TXS_PER_BLOCK)
        rows = blocks * TXS_PER_BLOCK
        server = subprocess.Popen(
            [str(load_bench.CLI), "dev-server", "--port", "0", "--blocks", str(blocks),
             "--txs-per-block", str(TXS_PER_BLOCK)], stdout=subprocess.PIPE, text=True)
        try:
            url = server.stdout.readline().split()[-1]
            threading.Thread(target=server.stdout.read, daemon=True).start()
            peers = ["ampdelta"] + (["b"] if rows <= args.python_max_rows else [])
            # At the smallest size each peer's first table is compared, every column, with the
            # rows the server sends (the larger ones would not fit the reader's memory).
            source = (load_bench.source_content(url, load_bench.SQL, work, rows)
                      if size == min(sizes) else None)
            for name in peers:
                runs = []
                for _ in range(args.rounds):
                    target = work / f"out-{name}"
                    shutil.rmtree(target, ignore_errors=True)
                    log_dir = work / f"log-{name}"
                    log_dir.mkdir(exist_ok=True)
                    if name == "ampdelta":
                        cmd = [str(load_bench.CLI), "load", "--server", url, "--table", str(target),
                               "--sql", load_bench.SQL, "--mode", "append", "--compression", "snappy",
                               "--config", '{"optimize_after_write": false}']
                    else:
                        cmd = [load_bench.PYTHON, "-c", load_bench.SDK_BEST, url, load_bench.SQL,
                               str(target)]
                    run = load_bench.timed(cmd, log_dir, server.pid)
                    out = run.pop("stdout")
                    if name == "b":
                        info = load_bench.last_json(out)
                        run["seconds"], run["load_cpu"] = info["load_seconds"], info["load_cpu_seconds"]
                    else:
                        run["seconds"], run["load_cpu"] = run["wall"], run["cpu"]
                    written = load_bench.rows_in(target, delta=True)
                    if written != rows:
                        raise RuntimeError(f"{name} wrote {written} rows at size {rows}")
                    if source is not None and not runs:
                        load_bench.check_content(name, load_bench.content(target, "delta"), source)
                    run["output_mib"] = load_bench.du(target) / 2**20
                    shutil.rmtree(target, ignore_errors=True)
                    runs.append(run)
                point = {
                    "peer": name, "rows": rows,
                    "seconds": round(statistics.median(r["seconds"] for r in runs), 3),
                    "cpu_seconds_per_million_rows": round(
                        statistics.median(r["load_cpu"] for r in runs) / (rows / 1e6), 3),
                    "server_cpu_seconds": round(statistics.median(r["server_cpu"] for r in runs), 3),
                    "peak_rss_mib": round(statistics.median(r["rss"] for r in runs)),
                    "output_mib": round(runs[0]["output_mib"], 1),
                }
                point["rows_per_second"] = round(rows / point["seconds"])
                points.append(point)
                print(f"{name} {rows:,} rows: {point['seconds']:.2f}s, {point['rows_per_second']:,} rows/s, "
                      f"peak RSS {point['peak_rss_mib']} MiB", file=sys.stderr)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait()
    ours = [p["peak_rss_mib"] for p in points if p["peer"] == "ampdelta"]
    report = {"points": points,
              "ampdelta_peak_rss_max_over_min": round(max(ours) / min(ours), 3) if ours else None,
              "ampdelta_peak_rss_max_mib": max(ours) if ours else None}
    load_bench.emit_report(report, args.json_out)
    if not args.workdir:  # never a directory the user named
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
