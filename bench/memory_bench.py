#!/usr/bin/env python3
"""Peak RSS of one `ampdelta load` as the writer's threads grow, with the writer's memory budget
(`memory_budget_mib`, default 128) and without one (a budget larger than any load needs): the
curve RSS x cores of issue 38, on a machine of any size (threads beyond the cores still hold
what they would on a machine with that many).

The dev server (release build) serves the calibrated `transactions` rows from memory
(`--cache-mib`), pinned with `--server-cpus` when given; each load writes Snappy Parquet to a
fresh table, its rows counted. Medians of --rounds; JSON on stdout (and --json-out).

Usage: bench/memory_bench.py [--rows 2000000] [--rounds 2] [--threads 1,2,4,8] [--plot PNG]
                             [--budgets 128,0] [--server-cpus LIST] [--loader-cpus LIST]
(budget 0: none, i.e. 1 TiB)
"""
import argparse
import json
import os
import pathlib
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
CLI = ROOT / "build/release/tools/ampdelta/ampdelta"
SQL = 'SELECT * FROM "acme/eth_mainnet".transactions'
TXS = 100


def pinned(cmd, cpus):
    return ["taskset", "-c", cpus, *cmd] if cpus else cmd


def load(url, table, threads, budget_mib, cpus):
    config = {"optimize_after_write": False, "writer_threads": threads,
              "memory_budget_mib": budget_mib or (1 << 20)}
    cmd = pinned([str(CLI), "load", "--server", url, "--table", str(table), "--sql", SQL,
                  "--compression", "snappy", "--quiet", "--config", json.dumps(config)], cpus)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace")
    if status != 0:
        raise RuntimeError(f"load failed ({status}): {err[-500:]}")
    return {"seconds": wall, "rss_mib": usage.ru_maxrss / 1024,
            "cpu": usage.ru_utime + usage.ru_stime}


def plot(report: dict, path: str) -> None:
    """Peak RSS against writer threads, a line per budget."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axis = plt.subplots(figsize=(5, 4))
    for budget in sorted({r["budget_mib"] or 0 for r in report["runs"]}, reverse=True):
        points = [r for r in report["runs"] if (r["budget_mib"] or 0) == budget]
        axis.plot([r["writer_threads"] for r in points], [r["peak_rss_mib"] for r in points],
                  marker="o", label=f"budget {budget} MiB" if budget else "no budget")
    axis.axhline(512, color="grey", linestyle="--", linewidth=1, label="512 MiB")
    axis.set(xlabel="writer threads", ylabel="peak RSS (MiB)", ylim=(0, None),
             title=f"One load of {report['rows'] / 1e6:g}M rows")
    axis.grid(True, alpha=0.3)
    axis.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", default="1,2,4,8")
    parser.add_argument("--budgets", default="128,0")
    parser.add_argument("--server-cpus", default=None)
    parser.add_argument("--loader-cpus", default=None)
    parser.add_argument("--json-out", default=None)
    parser.add_argument("--plot", default=None, help="draw RSS x writer threads here (PNG)")
    parser.add_argument("--from-json", default=None, help="plot an earlier report, run nothing")
    args = parser.parse_args()
    if args.from_json:
        plot(json.loads(pathlib.Path(args.from_json).read_text()), args.plot)
        return 0
    blocks = -(-args.rows // TXS)
    rows = blocks * TXS
    work = pathlib.Path(tempfile.mkdtemp(prefix="ampdelta-memory-bench-"))
    server = subprocess.Popen(pinned([str(CLI), "dev-server", "--port", "0", "--blocks",
                                      str(blocks), "--txs-per-block", str(TXS), "--cache-mib",
                                      str(-(-rows // 1024))], args.server_cpus),
                              stdout=subprocess.PIPE, text=True)
    results = []
    try:
        url = server.stdout.readline().split()[-1]
        threading.Thread(target=server.stdout.read, daemon=True).start()
        load(url, work / "warm", 2, 256, args.loader_cpus)  # fills the server's cache
        shutil.rmtree(work / "warm")
        for budget in [int(b) for b in args.budgets.split(",")]:
            for threads in [int(t) for t in args.threads.split(",")]:
                runs = []
                for _ in range(args.rounds):
                    table = work / "t"
                    runs.append(load(url, table, threads, budget, args.loader_cpus))
                    shutil.rmtree(table)
                entry = {"budget_mib": budget or None, "writer_threads": threads,
                         "seconds": round(statistics.median(r["seconds"] for r in runs), 3),
                         "peak_rss_mib": round(statistics.median(r["rss_mib"] for r in runs)),
                         "cpu_seconds": round(statistics.median(r["cpu"] for r in runs), 3)}
                results.append(entry)
                print(f"budget {budget or 'none'} MiB, {threads} writer threads: "
                      f"{entry['seconds']:.2f}s, peak RSS {entry['peak_rss_mib']} MiB",
                      file=sys.stderr)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait()
        shutil.rmtree(work, ignore_errors=True)
    report = {"rows": rows, "cores": os.cpu_count(), "server_cpus": args.server_cpus,
              "loader_cpus": args.loader_cpus, "runs": results}
    text = json.dumps(report, indent=2)
    print(text)
    if args.json_out:
        pathlib.Path(args.json_out).write_text(text + "\n")
    if args.plot:
        plot(report, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
