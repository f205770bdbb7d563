#!/usr/bin/env python3
"""Parallel backfill throughput, in one run: `ampdelta load --workers N` (N = 1, 2, 4) vs one
`ampdelta load` vs the Python SDK's parallel path, to the local disk and to the S3 emulator.

Every peer loads SELECT * FROM "acme/eth_mainnet".transactions from one release dev server
(100 transactions per block) and writes a Delta table:

  one        `ampdelta load` (one query, one commit, compaction once at the end)
  workers-N  `ampdelta load --workers N` (block partitions of the final blocks, one commit
             each, compaction once; the last 256 blocks through the query's stream)
  …-no-optimize  the same two with `optimize_after_write: false` (local disk only)
  sdk-N      the SDK's ParallelStreamExecutor as amp-protocol.md §3.12 describes it: N threads,
             N partitions of ceil(blocks / N) blocks, each a query with the SDK's filter text
             (`WHERE block_num >= a AND block_num < b`) whose stream is re-chunked into
             10,000-row batches, and for every batch what DeltaLakeLoader._load_batch_impl does:
             write_deltalake(mode="append", schema_mode="merge"), a DeltaTable refresh and
             optimize.compact(). It is slow, so it loads only the first --sdk-rows rows' blocks;
             rows/s are compared. Failed batches (the SDK's lost partitions) are counted, and
             so are the rows its table ends up holding (its concurrent compactions and
             appends duplicate rows).

Each peer is its own process: wall time (start-up included), peak RSS (ru_maxrss), rows/s;
rows written are counted from the table afterwards, and each ampdelta peer's first table is
read back by deltalake and compared, every column, with the rows the server sends
(load_bench's content check). Medians over --rounds rounds. The dev
server and the emulator share the machine's cores with the loaders.

Usage: bench/parallel_bench.py [--rows 1000000] [--rounds 3] [--sdk-rows 100000] [--no-s3]
                               [--no-sdk] [--json-out FILE]
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
import load_bench  # noqa: E402  (the content check)

CLI = ROOT / "build" / "release" / "tools" / "ampdelta" / "ampdelta"
SQL = 'SELECT * FROM "acme/eth_mainnet".transactions'
FIRST = 24_000_000
WORKERS = (1, 2, 4)

SDK_PARALLEL = f"BENCH_DIR = {str(pathlib.Path(__file__).resolve().parent)!r}\n" + r"""
import concurrent.futures, json, sys, time
import pyarrow as pa
sys.path.insert(0, BENCH_DIR)
from amp_flight import do_get
from deltalake import DeltaTable, write_deltalake

url, sql, dst, first, last, workers, options = sys.argv[1:8]
first, last, workers, options = int(first), int(last), int(workers), json.loads(options)
BATCH = 10_000  # LoadConfig.batch_size
total = last - first + 1
size = -(-total // workers)
parts = [(first + i * size, min(first + (i + 1) * size, last + 1)) for i in range(workers)]

def load_batch(table):  # DeltaLakeLoader._load_batch_impl with the default config
    write_deltalake(dst, table, mode="append", schema_mode="merge", storage_options=options)
    dt = DeltaTable(dst, storage_options=options)  # _refresh_table_reference
    dt.optimize.compact()  # optimize_after_write=True

def worker(part):
    start, end = part
    reader = do_get(url, f"{sql} WHERE block_num >= {start} AND block_num < {end}")
    rows, failed, pending = 0, 0, []
    def flush(chunks):
        nonlocal rows, failed
        table = pa.Table.from_batches(chunks)
        try:
            load_batch(table)
            rows += table.num_rows
        except Exception:  # the SDK reports the batch as failed and goes on
            failed += 1
    held = 0
    while True:
        try:
            chunk = reader.read_chunk()
        except StopIteration:
            break
        if chunk.data is None or chunk.data.num_rows == 0:
            continue
        data = chunk.data
        while data.num_rows:
            take = min(BATCH - held, data.num_rows)
            pending.append(data.slice(0, take))
            held += take
            data = data.slice(take)
            if held == BATCH:
                flush(pending)
                pending, held = [], 0
    if pending:
        flush(pending)
    return rows, failed

start = time.perf_counter()
with concurrent.futures.ThreadPoolExecutor(workers) as pool:
    results = list(pool.map(worker, parts))
print(json.dumps({"rows": sum(r for r, _ in results), "failed_batches": sum(f for _, f in results),
                  "load_seconds": time.perf_counter() - start}))
"""

COUNT_ROWS = r"""
import json, sys, os
import pyarrow as pa
from deltalake import DeltaTable
dt = DeltaTable(sys.argv[1], storage_options=json.loads(sys.argv[2]))
print(sum(pa.table(dt.get_add_actions(flatten=True)).column("num_records").to_pylist()))
sys.stdout.flush()
os._exit(0)
"""


def timed(cmd: list, env: dict | None = None) -> tuple:
    """(wall seconds, peak RSS MiB, stdout, stderr) of cmd, which must exit 0."""
    os.sync()
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    out, err = "", ""
    # Drain the pipes while waiting: communicate() would hide ru_maxrss.
    import threading
    chunks = {"out": [], "err": []}
    threads = [threading.Thread(target=lambda s, k: chunks[k].append(s.read()), args=(p, k))
               for p, k in ((proc.stdout, "out"), (proc.stderr, "err"))]
    for thread in threads:
        thread.start()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    for thread in threads:
        thread.join()
    out, err = "".join(chunks["out"]), "".join(chunks["err"])
    if status != 0:
        raise RuntimeError(f"{cmd[:3]} failed ({status}): {err[-2000:]}")
    return elapsed, usage.ru_maxrss / 1024.0, out, err


def count_rows(table: str, options: dict) -> int:
    done = subprocess.run([sys.executable, "-c", COUNT_ROWS, table, json.dumps(options)],
                          capture_output=True, text=True, check=True)
    return int(done.stdout.strip())


def option_args(options: dict) -> list:
    return [arg for key, value in options.items() for arg in ("--storage-option", f"{key}={value}")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sdk-rows", type=int, default=100_000)
    parser.add_argument("--txs-per-block", type=int, default=100)
    parser.add_argument("--no-s3", action="store_true")
    parser.add_argument("--no-sdk", action="store_true", help="leave the SDK's peers out")
    parser.add_argument("--json-out", default=None)
    args = parser.parse_args()
    if not CLI.is_file():
        sys.exit(f"{CLI} not built: make build-release")
    blocks = max(1, args.rows // args.txs_per_block)
    rows = blocks * args.txs_per_block
    sdk_blocks = max(1, min(blocks, args.sdk_rows // args.txs_per_block))
    work = pathlib.Path(tempfile.mkdtemp(prefix="ampdelta-parallel-bench-"))
    server = subprocess.Popen([str(CLI), "dev-server", "--port", "0", "--blocks", str(blocks),
                               "--txs-per-block", str(args.txs_per_block)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = re.search(r"(grpc://127\.0\.0\.1:\d+)", server.stdout.readline()).group(1)
    print(f"dev server {url}: {blocks} blocks, {rows} rows; SDK peers: {sdk_blocks} blocks",
          file=sys.stderr)
    results: dict[str, dict[str, list]] = {}

    def record(name: str, seconds: float, rss: float, loaded: int, **extra) -> None:
        entry = results.setdefault(name, {"seconds": [], "rss_mib": [], "rows_per_s": []})
        entry["seconds"].append(seconds)
        entry["rss_mib"].append(rss)
        entry["rows_per_s"].append(loaded / seconds)
        for key, value in extra.items():
            entry.setdefault(key, []).append(value)
        print(f"  {name}: {loaded} rows in {seconds:.2f}s, {loaded / seconds:,.0f} rows/s, "
              f"peak RSS {rss:.0f} MiB {extra or ''}", file=sys.stderr)

    def run_ampdelta(name: str, table: str, options: dict, *extra: str) -> None:
        seconds, rss, out, err = timed([str(CLI), "load", "--server", url, "--table", table,
                                        "--sql", SQL, *option_args(options), *extra])
        loaded = int(re.search(r"Loaded (\d+) rows", out).group(1))
        written = count_rows(table, options)
        if loaded != rows or written != rows:
            raise RuntimeError(f"{name}: loaded {loaded}, table holds {written}, expected {rows}")
        if name not in checked:  # each peer's first table: its rows, every column
            load_bench.check_content(name, load_bench.content(table, "delta", options), source,
                                     own_columns=(load_bench.BATCH_TAG,))
            checked.add(name)
        # Files the final compaction copied rather than rewrote (optimize.h).
        stitched = re.search(r"optimize_files_stitched=(\d+)", err)
        record(name, seconds, rss, rows, files_stitched=int(stitched.group(1)) if stitched else 0)

    checked: set[str] = set()
    source: dict = {}  # the rows the server sends (load_bench.content)

    def run_sdk(name: str, table: str, options: dict, workers: int) -> None:
        seconds, rss, out, _ = timed([sys.executable, "-c", SDK_PARALLEL, url, SQL, table,
                                      str(FIRST), str(FIRST + sdk_blocks - 1), str(workers),
                                      json.dumps(options)])
        info = json.loads(out.strip().splitlines()[-1])
        written = count_rows(table, options)
        record(name, seconds, rss, info["rows"], failed_batches=info["failed_batches"],
               table_rows=written)

    try:
        source.update(load_bench.source_content(url, SQL, work, rows))
        stores = [("local", None)]
        emulator = None
        if not args.no_s3:
            import emulator_s3  # tests/interop: the S3 emulator, only when loading to it
            emulator = emulator_s3.start_s3_emulator()
            s3 = emulator.__enter__()
            s3.create_bucket("bench")
            stores.append(("s3", s3))
        for round_index in range(args.rounds):
            print(f"round {round_index + 1}/{args.rounds}", file=sys.stderr)
            for store_name, s3 in stores:
                options = s3.storage_options() if s3 else {}

                def table(peer: str) -> str:
                    if s3:
                        return f"s3://bench/{peer}-{round_index}"
                    path = work / f"{peer}-{round_index}"
                    shutil.rmtree(path, ignore_errors=True)
                    return str(path)

                run_ampdelta(f"{store_name}/one", table("one"), options)
                for workers in WORKERS:
                    run_ampdelta(f"{store_name}/workers-{workers}", table(f"w{workers}"),
                                 options, "--workers", str(workers))
                if store_name == "local":
                    # The same loads without the compaction at the end.
                    no_optimize = ("--config", '{"optimize_after_write": false}')
                    run_ampdelta("local/one-no-optimize", table("one-n"), options,
                                 *no_optimize)
                    for workers in WORKERS:
                        run_ampdelta(f"local/workers-{workers}-no-optimize",
                                     table(f"w{workers}-n"), options, "--workers",
                                     str(workers), *no_optimize)
                for workers in (() if args.no_sdk else
                                WORKERS if store_name == "local" else (4,)):
                    run_sdk(f"{store_name}/sdk-{workers}", table(f"sdk{workers}"), options,
                            workers)
        if emulator is not None:
            emulator.__exit__(None, None, None)
    finally:
        server.kill()
        shutil.rmtree(work, ignore_errors=True)

    report = {"rows": rows, "sdk_rows": sdk_blocks * args.txs_per_block, "rounds": args.rounds,
              "median": {}}
    for name, entry in results.items():
        report["median"][name] = {key: round(statistics.median(values), 2)
                                  for key, values in entry.items()}
    med = report["median"]
    ratios = {}
    for store_name, _ in (("local", 0), ("s3", 0)):
        one = med.get(f"{store_name}/one")
        if not one:
            continue
        for workers in WORKERS:
            w = med.get(f"{store_name}/workers-{workers}")
            if w:
                ratios[f"{store_name} workers-{workers} / one"] = round(
                    w["rows_per_s"] / one["rows_per_s"], 2)
            sdk = med.get(f"{store_name}/sdk-{workers}")
            if w and sdk:
                ratios[f"{store_name} workers-{workers} / sdk-{workers}"] = round(
                    w["rows_per_s"] / sdk["rows_per_s"], 1)
    for workers in WORKERS:
        one, w = med.get("local/one-no-optimize"), med.get(f"local/workers-{workers}-no-optimize")
        if one and w:
            ratios[f"local workers-{workers} / one, no optimize"] = round(
                w["rows_per_s"] / one["rows_per_s"], 2)
    report["ratios_rows_per_s"] = ratios
    print(json.dumps(report, indent=2))
    if args.json_out:
        pathlib.Path(args.json_out).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
