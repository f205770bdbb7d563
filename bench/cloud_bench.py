#!/usr/bin/env python3
"""Cloud-store benchmarks, in one run, against the S3 emulator (versitygw on 127.0.0.1) and
the local disk, with deltalake writing to the same emulator as the peer:

  commit latency  one-row appends, in-process: ampdelta's `commit_latency` program (local
                  disk and S3) vs deltalake `write_deltalake(mode="append")` in a Python
                  loop (S3); medians of --commits commits, the table-creating one excluded.
  load throughput `ampdelta load` of SELECT * FROM "acme/eth_mainnet".transactions from one
                  dev server to the local disk and to S3, vs the Python path at its best
                  writing to S3 (Flight DoGet, read_all, one write_deltalake): rows/s.
                  The Python peer is timed in-process after its imports (the headline);
                  its process wall time, imports included, is reported beside it.
                  Every table's rows are counted by deltalake each round; in the first
                  round each is also read back and compared, every column, with the rows
                  the server sends (load_bench's content check).

The emulator runs on the same two cores as the writers, so absolute S3 figures are far from
a real service's; the ratios between peers on the same emulator are what this measures.

Usage: bench/cloud_bench.py [--rows 1000000] [--rounds 3] [--commits 50]
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "interop"))
sys.path.insert(0, str(ROOT / "bench"))
import emulator_s3  # noqa: E402
import load_bench  # noqa: E402  (the peers' environment, the content check)

RELEASE = ROOT / "build" / "release"
CLI = RELEASE / "tools" / "ampdelta" / "ampdelta"
COMMIT_LATENCY = RELEASE / "bench" / "commit_latency"
SQL = 'SELECT * FROM "acme/eth_mainnet".transactions'


def start_dev_server(rows: int, txs_per_block: int):
    blocks = max(1, rows // txs_per_block)
    server = subprocess.Popen([str(CLI), "dev-server", "--port", "0", "--blocks", str(blocks),
                               "--txs-per-block", str(txs_per_block)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = server.stdout.readline()
    match = re.search(r"(grpc://127\.0\.0\.1:\d+)", line)
    if not match:
        server.kill()
        raise RuntimeError(f"dev server did not start: {line!r}")
    return server, match.group(1)


def option_args(options: dict) -> list:
    return [arg for key, value in options.items() for arg in ("--storage-option", f"{key}={value}")]


def ampdelta_commit_latency(table: str, commits: int, options: dict) -> dict:
    done = subprocess.run([str(COMMIT_LATENCY), "--table", table, "--commits", str(commits),
                           *option_args(options)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def deltalake_commit_latency(table: str, commits: int, options: dict) -> dict:
    import pyarrow as pa
    from deltalake import write_deltalake

    millis = []
    for i in range(commits):
        batch = pa.table({"block_num": pa.array([i], pa.int64()), "hash": [f"0x{i}"]})
        start = time.perf_counter()
        write_deltalake(table, batch, mode="append", storage_options=options)
        millis.append((time.perf_counter() - start) * 1000)
    millis = sorted(millis[1:])
    return {"table": table, "commits": commits, "median_ms": statistics.median(millis),
            "p90_ms": millis[int(0.9 * (len(millis) - 1))]}


ROWS_OF = r"""
import json, os, sys
from deltalake import DeltaTable
print(DeltaTable(sys.argv[1], storage_options=json.loads(sys.argv[2])).to_pyarrow_dataset().count_rows())
sys.stdout.flush()
os._exit(0)  # deltalake can abort the interpreter at exit
"""


def check_rows(table: str, options: dict, expected: int) -> None:
    """The table holds exactly `expected` rows, counted by deltalake."""
    done = subprocess.run([sys.executable, "-c", ROWS_OF, table, json.dumps(options)],
                          capture_output=True, text=True, check=True)
    rows = int(done.stdout.strip().splitlines()[-1])
    if rows != expected:
        raise RuntimeError(f"{table} holds {rows} rows, expected {expected}")


def ampdelta_load(url: str, table: str, options: dict) -> float:
    start = time.perf_counter()
    subprocess.run([str(CLI), "load", "--server", url, "--table", table, "--sql", SQL,
                    "--mode", "overwrite", "--compression", "snappy",
                    "--config", '{"optimize_after_write": false}', *option_args(options)],
                   capture_output=True, text=True, check=True)
    return time.perf_counter() - start


PYTHON_PEER = r"""
import sys, json, time
sys.path.insert(0, sys.argv[1])
from amp_flight import do_get
from deltalake import write_deltalake, WriterProperties
start = time.perf_counter()
table = do_get(sys.argv[2], sys.argv[3]).read_all()
write_deltalake(sys.argv[4], table, mode="overwrite", storage_options=json.loads(sys.argv[5]),
                writer_properties=WriterProperties(compression="SNAPPY"))
print(json.dumps({"rows": table.num_rows, "seconds": time.perf_counter() - start}))
sys.stdout.flush()
import os
os._exit(0)  # deltalake can abort the interpreter at exit
"""


def deltalake_load(url: str, table: str, options: dict) -> tuple[float, float]:
    """(seconds after the peer's imports, the process's wall seconds)."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", PYTHON_PEER, str(ROOT / "bench"), url, SQL,
                           table, json.dumps(options)], capture_output=True, text=True, check=True,
                          env=load_bench.peer_env())
    wall = time.perf_counter() - start
    return json.loads(done.stdout.strip().splitlines()[-1])["seconds"], wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--commits", type=int, default=50)
    parser.add_argument("--txs-per-block", type=int, default=100)
    args = parser.parse_args()
    for binary in (CLI, COMMIT_LATENCY):
        if not binary.is_file():
            sys.exit(f"{binary} not built: make build-release")

    work = pathlib.Path(tempfile.mkdtemp(prefix="ampdelta-cloud-bench-"))
    report = {"rows": args.rows, "rounds": args.rounds, "commits": args.commits}
    server, url = start_dev_server(args.rows, args.txs_per_block)
    served = max(1, args.rows // args.txs_per_block) * args.txs_per_block  # start_dev_server's blocks
    try:
        with emulator_s3.start_s3_emulator() as s3:
            s3.create_bucket("bench")
            options = s3.storage_options()
            latency = {
                "ampdelta_local": ampdelta_commit_latency(str(work / "latency"), args.commits, {}),
                "ampdelta_s3": ampdelta_commit_latency("s3://bench/latency-ampdelta",
                                                       args.commits, options),
                "deltalake_s3": deltalake_commit_latency("s3://bench/latency-deltalake",
                                                         args.commits, options),
            }
            report["commit_latency_ms"] = {k: round(v["median_ms"], 2) for k, v in latency.items()}
            report["commit_latency_p90_ms"] = {k: round(v["p90_ms"], 2) for k, v in latency.items()}
            report["commit_latency_ratio_deltalake_s3_over_ampdelta_s3"] = round(
                latency["deltalake_s3"]["median_ms"] / latency["ampdelta_s3"]["median_ms"], 2)

            # deltalake_s3 is timed after its imports; deltalake_s3_process includes them.
            times = {"ampdelta_local": [], "ampdelta_s3": [], "deltalake_s3": [],
                     "deltalake_s3_process": []}
            source = load_bench.source_content(url, SQL, work, served)
            for round_index in range(args.rounds):
                os.sync()
                times["ampdelta_local"].append(ampdelta_load(url, str(work / "load"), {}))
                times["ampdelta_s3"].append(ampdelta_load(url, "s3://bench/load-ampdelta", options))
                after_imports, wall = deltalake_load(url, "s3://bench/load-deltalake", options)
                times["deltalake_s3"].append(after_imports)
                times["deltalake_s3_process"].append(wall)
                check_rows(str(work / "load"), {}, served)
                check_rows("s3://bench/load-ampdelta", options, served)
                check_rows("s3://bench/load-deltalake", options, served)
                if round_index == 0:  # the rows themselves, every column, read by deltalake
                    for name, table, store in (("ampdelta_local", str(work / "load"), {}),
                                               ("ampdelta_s3", "s3://bench/load-ampdelta", options),
                                               ("deltalake_s3", "s3://bench/load-deltalake", options)):
                        load_bench.check_content(name, load_bench.content(table, "delta", store),
                                                 source)
            medians = {k: statistics.median(v) for k, v in times.items()}
            report["load_seconds_median"] = {k: round(v, 2) for k, v in medians.items()}
            report["load_rows_per_second"] = {k: round(served / v) for k, v in medians.items()}
            report["load_ratio_deltalake_s3_over_ampdelta_s3"] = round(
                medians["deltalake_s3"] / medians["ampdelta_s3"], 2)
            report["load_ratio_ampdelta_s3_over_local"] = round(
                medians["ampdelta_s3"] / medians["ampdelta_local"], 2)
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
