#!/usr/bin/env python3
"""How a load scales with the machine, in one run: bench/load_bench.py (ampdelta, the Python
stack at its best, the source's drain and the encoder's limit) with the loader pinned to
each of several core counts, and `ampdelta load --workers N` parallel backfills (their final
compaction included) on the loader cores; the dev server always on its own cores.

For each loader core count: each peer's median seconds, CPU per million rows and peak RSS,
and the load's limit (load_bench's report). For each worker count: median seconds, rows/s,
peak RSS, and the files the final compaction stitched; every table's rows are counted from
its Parquet footers. JSON out (--json-out); bench/plot_scaling.py draws it.

On a many-core machine (bench/device/run.sh): --server-cpus 0-3 --loader-cpus 4-15
--core-counts 2,4,8,12. On this project's 2-core machines: --server-cpus 0 --loader-cpus 1
--core-counts 1, and --shared-cpus 0-1 adds the point where server and loader share both.

Usage: bench/scale_cores.py [--rows 2000000] [--rounds 3] [--server-cpus 0-3]
                            [--loader-cpus 4-15] [--core-counts 2,4,8,12] [--shared-cpus CPUS]
                            [--workers 1,2,4,8] [--dataset transactions] [--json-out FILE]
"""
import argparse
import json
import os
import pathlib
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import load_bench  # noqa: E402  (the CLI's path)
import parallel_bench  # noqa: E402  (timed runs with their peak RSS)


def cpu_list(spec: str) -> list[int]:
    """`0-3,8` as [0, 1, 2, 3, 8]."""
    cpus = []
    for part in spec.split(","):
        low, _, high = part.partition("-")
        cpus.extend(range(int(low), int(high or low) + 1))
    return cpus


def cpu_spec(cpus: list[int]) -> str:
    return ",".join(str(c) for c in cpus)


def machine() -> dict:
    model = ""
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "model": model, "system": platform.platform()}


def run_load_bench(args, loader_cpus: str, work: pathlib.Path) -> dict:
    out = work / f"load-{loader_cpus}.json"
    cmd = [sys.executable, str(HERE / "load_bench.py"), "--rows", str(args.rows), "--rounds",
           str(args.rounds), "--peers", args.peers, "--dataset", args.dataset,
           "--server-cpus", args.server_cpus, "--loader-cpus", loader_cpus,
           "--workdir", str(work / "lb"), "--json-out", str(out)]
    print(f"load_bench on cores {loader_cpus}", file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def timed_load(cmd: list, cpus: str) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MiB, stderr) of an `ampdelta load` pinned to `cpus`."""
    seconds, rss, _, err = parallel_bench.timed(["taskset", "-c", cpus, *cmd])
    return seconds, rss, err


def footer_rows(table: pathlib.Path) -> int:
    script = ("import sys, os, pyarrow.parquet as pq\n"
              "from deltalake import DeltaTable\n"
              "n = sum(pq.ParquetFile(f).metadata.num_rows for f in DeltaTable(sys.argv[1]).file_uris())\n"
              "print(n, flush=True)\nos._exit(0)\n")
    done = subprocess.run([sys.executable, "-c", script, str(table)], capture_output=True,
                          text=True, check=True)
    return int(done.stdout.split()[-1])


def run_workers(args, loader_cpus: str, work: pathlib.Path) -> dict:
    per_block = 100
    blocks = -(-args.rows // per_block)
    rows = blocks * per_block
    server = subprocess.Popen(
        ["taskset", "-c", args.server_cpus, str(load_bench.CLI), "dev-server", "--port", "0",
         "--blocks", str(blocks), "--txs-per-block", str(per_block)],
        stdout=subprocess.PIPE, text=True)
    url = server.stdout.readline().split()[-1]
    threading.Thread(target=server.stdout.read, daemon=True).start()
    sql = 'SELECT * FROM "acme/eth_mainnet".transactions'
    results = {}
    try:
        for workers in [int(w) for w in args.workers.split(",")]:
            runs = []
            for _ in range(args.rounds):
                table = work / f"w{workers}"
                shutil.rmtree(table, ignore_errors=True)
                cmd = [str(load_bench.CLI), "load", "--server", url, "--table", str(table),
                       "--sql", sql, "--compression", "snappy", "--workers", str(workers)]
                seconds, rss, err = timed_load(cmd, loader_cpus)
                written = footer_rows(table)
                if written != rows:
                    raise RuntimeError(f"--workers {workers} wrote {written} rows, expected {rows}")
                stitched = re.search(r"optimize_files_stitched=(\d+)", err)
                runs.append({"seconds": seconds, "rss": rss,
                             "stitched": int(stitched.group(1)) if stitched else 0})
                print(f"  --workers {workers}: {seconds:.2f}s, peak RSS {rss:.0f} MiB, "
                      f"stitched {runs[-1]['stitched']} files", file=sys.stderr, flush=True)
                shutil.rmtree(table, ignore_errors=True)
            seconds = statistics.median(r["seconds"] for r in runs)
            results[str(workers)] = {
                "seconds_median": round(seconds, 3),
                "rows_per_second": round(rows / seconds),
                "peak_rss_mib_median": round(statistics.median(r["rss"] for r in runs)),
                "files_stitched": runs[0]["stitched"],
            }
    finally:
        server.terminate()
        server.wait()
    return {"rows": rows, "loader_cpus": loader_cpus, "runs": results}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--server-cpus", default="0-3")
    parser.add_argument("--loader-cpus", default="4-15")
    parser.add_argument("--core-counts", default="2,4,8,12",
                        help="loader core counts: the first N of --loader-cpus")
    parser.add_argument("--shared-cpus", default=None,
                        help="one more load_bench point with server and loader on these cores")
    parser.add_argument("--workers", default="1,2,4,8")
    parser.add_argument("--peers", default="ampdelta,b,drain,encoder,encoder_same")
    parser.add_argument("--dataset", choices=("transactions", "logs"), default="transactions")
    parser.add_argument("--json-out", default=None)
    args = parser.parse_args()
    if shutil.which("taskset") is None:
        sys.exit("taskset is needed to pin the server and the loader")
    loader = cpu_list(args.loader_cpus)
    counts = [int(c) for c in args.core_counts.split(",") if int(c) <= len(loader)]
    work = pathlib.Path(tempfile.mkdtemp(prefix="ampdelta-scale-cores-"))
    report = {"machine": machine(), "rows": args.rows, "rounds": args.rounds,
              "dataset": args.dataset, "server_cpus": args.server_cpus, "load": {},
              "workers": None}
    try:
        for count in counts:
            report["load"][str(count)] = run_load_bench(args, cpu_spec(loader[:count]), work)
        if args.shared_cpus:
            report["shared"] = run_load_bench(args, args.shared_cpus, work)
        if args.workers:
            report["workers"] = run_workers(args, cpu_spec(loader), work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(report, indent=1)
    print(text)
    if args.json_out:
        pathlib.Path(args.json_out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
