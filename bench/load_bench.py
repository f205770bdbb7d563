#!/usr/bin/env python3
"""End-to-end load throughput, in one run: `ampdelta load` vs the Python SDK's Delta Lake path vs a raw
Parquet write of the same Flight stream (the limit).

Every peer runs the same query, SELECT * FROM "acme/eth_mainnet".transactions, against one ampdelta
dev server started once per run, and writes snappy Parquet to local disk:

  ampdelta  `ampdelta load ... --mode append --compression snappy --config '{"optimize_after_write": false}'`
  a         the SDK's Delta Lake loader as it runs by default: Flight DoGet, the stream re-chunked into
            10,000-row batches (LoadConfig.batch_size), and for every batch what DeltaLakeLoader.
            _load_batch_impl does: write_deltalake(dir, batch, mode="append", schema_mode="merge"),
            DeltaTable(dir) refresh, then DeltaTable.optimize.compact() (optimize_after_write=True,
            the default). Slow, so it stops after --sdk-default-max-rows rows and its time is
            extrapolated to the full row count (see the report's "a_measured").
  b         the same Python path at its best: DoGet, reader.read_all(), then ONE write_deltalake of
            the whole table with WriterProperties(compression="SNAPPY"); no compaction.
  c         the limit: DoGet, each chunk written as it arrives by pyarrow.parquet.ParquetWriter (snappy).

Each peer is its own process (its peak RSS is ru_maxrss from os.wait4) and its time is the wall time of
that process, start-up included. Each round runs the selected peers back to back; the report gives
medians and rows/s ratios.

Usage: bench/load_bench.py [--rows 2000000] [--rounds 3] [--peers ampdelta,a,b,c]
                           [--sdk-default-max-rows 200000] [--workdir DIR]
"""
import argparse
import json
import os
import pathlib
import re
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
PYTHON = sys.executable
SQL = 'SELECT * FROM "acme/eth_mainnet".transactions'
PEERS = ("ampdelta", "a", "b", "c")
SDK_BATCH_SIZE = 10_000  # amp.loaders.types.LoadConfig.batch_size default

# Shared by the Python peers: the SDK's Client.get_sql, GetFlightInfo with an Any-packed
# arrow.flight.protocol.sql.CommandStatementQuery, then DoGet of the first endpoint.
PRELUDE = f"BENCH_DIR = {str(pathlib.Path(__file__).resolve().parent)!r}\n" + r"""
import json, sys, time
import pyarrow as pa
import pyarrow.flight as flight
sys.path.insert(0, BENCH_DIR)
from amp_flight import do_get

def chunks(reader):
    while True:
        try:
            chunk = reader.read_chunk()
        except StopIteration:
            return
        if chunk.data is not None and chunk.data.num_rows:
            yield chunk.data
"""

# (a) The SDK's default: one write_deltalake + refresh + compact per 10,000-row batch.
SDK_DEFAULT = PRELUDE + r"""
from deltalake import DeltaTable, write_deltalake
url, sql, dst, cap, batch_size, batching = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
stats = {"rows": 0, "batches": 0, "write_seconds": 0.0, "compact_seconds": 0.0, "batch_seconds": []}

def load_batch(batch):  # DeltaLakeLoader._load_batch_impl with the default config
    t0 = time.perf_counter()
    table = pa.Table.from_batches([batch])
    write_deltalake(dst, table, mode="append", partition_by=None, schema_mode="merge", storage_options={})
    t1 = time.perf_counter()
    dt = DeltaTable(dst, storage_options={})  # _refresh_table_reference
    dt.version()
    dt.optimize.compact()  # _perform_post_write_optimizations: optimize_after_write=True
    t2 = time.perf_counter()
    stats["rows"] += batch.num_rows
    stats["batches"] += 1
    stats["write_seconds"] += t1 - t0
    stats["compact_seconds"] += t2 - t1
    stats["batch_seconds"].append(t2 - t0)

start = time.perf_counter()
reader = do_get(url, sql)
taken = 0
buffered = None  # rows received but not yet loaded (rechunk mode)
stopped_early = False
for chunk in chunks(reader):
    if taken + chunk.num_rows >= cap:
        chunk = chunk.slice(0, cap - taken)
        stopped_early = True
    taken += chunk.num_rows
    if batching == "server":
        # Client._load_table -> DataLoader.load_table: table.to_batches(max_chunksize=batch_size),
        # which splits the server's chunks but never merges them.
        for offset in range(0, chunk.num_rows, batch_size):
            load_batch(chunk.slice(offset, batch_size))
    else:
        piece = pa.Table.from_batches([chunk])
        buffered = piece if buffered is None else pa.concat_tables([buffered, piece])
        while buffered.num_rows >= batch_size:
            load_batch(buffered.slice(0, batch_size).combine_chunks().to_batches()[0])
            buffered = buffered.slice(batch_size)
    if stopped_early:
        break
if buffered is not None and buffered.num_rows:
    load_batch(buffered.combine_chunks().to_batches()[0])
if stopped_early:
    reader.cancel()
stats["load_seconds"] = time.perf_counter() - start
stats["stopped_early"] = stopped_early
bs = stats.pop("batch_seconds")
stats["first_batch_seconds"] = bs[0] if bs else 0.0
stats["last_batch_seconds"] = bs[-1] if bs else 0.0
print(json.dumps(stats))
"""

# (b) read_all, then one write of the whole table.
SDK_BEST = PRELUDE + r"""
from deltalake import WriterProperties, write_deltalake
url, sql, dst = sys.argv[1:4]
start = time.perf_counter()
table = do_get(url, sql).read_all()
write_deltalake(dst, table, mode="append", schema_mode="merge",
                writer_properties=WriterProperties(compression="SNAPPY"))
print(json.dumps({"rows": table.num_rows, "load_seconds": time.perf_counter() - start}))
"""

# (c) the limit: the stream straight into one Parquet file.
PARQUET = PRELUDE + r"""
import pyarrow.parquet as pq
url, sql, dst = sys.argv[1:4]
start = time.perf_counter()
reader = do_get(url, sql)
rows = 0
with pq.ParquetWriter(dst, reader.schema, compression="snappy") as writer:
    for batch in chunks(reader):
        writer.write_batch(batch)
        rows += batch.num_rows
print(json.dumps({"rows": rows, "load_seconds": time.perf_counter() - start}))
"""


def timed(cmd: list, log_dir: pathlib.Path) -> tuple:
    """Runs cmd; returns (wall seconds, peak RSS MiB, stdout)."""
    out_path, err_path = log_dir / "stdout", log_dir / "stderr"
    # Start every peer with no dirty pages left by the one before: otherwise the kernel's
    # write-back of the previous peer's output runs (and is paid for) during this one.
    os.sync()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if status != 0:
        raise RuntimeError(f"{cmd[0]} {cmd[1][:40]!r}... failed ({proc.returncode}): "
                           f"{err_path.read_text(errors='replace')[-2000:]}")
    return elapsed, usage.ru_maxrss / 1024.0, out_path.read_text(errors="replace")


def du(path: pathlib.Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def rows_in(path: pathlib.Path, delta: bool) -> int:
    """Rows in the written output, from the Parquet footers of the live files."""
    import pyarrow.parquet as pq
    if not delta:
        return pq.ParquetFile(path).metadata.num_rows
    from deltalake import DeltaTable
    return sum(pq.ParquetFile(f).metadata.num_rows for f in DeltaTable(str(path)).file_uris())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peers", default=",".join(PEERS),
                        help="comma-separated subset of ampdelta,a,b,c")
    parser.add_argument("--sdk-default-max-rows", type=int, default=200_000,
                        help="peer a stops after this many rows; its time is extrapolated")
    parser.add_argument("--sdk-default-batching", choices=("rechunk", "server"), default="rechunk",
                        help="peer a: rechunk = exact 10,000-row batches (default); server = the server's "
                             "chunks split to at most 10,000 rows, as the SDK's table.to_batches(max_chunksize) does")
    parser.add_argument("--txs-per-block", type=int, default=100)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--keep", action="store_true", help="keep the written tables")
    args = parser.parse_args()
    peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    unknown = [p for p in peers if p not in PEERS]
    if unknown or not peers:
        parser.error(f"--peers: unknown {unknown}; choose from {','.join(PEERS)}")

    work = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="ampdelta-load-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    blocks = -(-args.rows // args.txs_per_block)
    rows = blocks * args.txs_per_block
    sdk_cap = min(args.sdk_default_max_rows, rows)

    server = subprocess.Popen([str(CLI), "dev-server", "--port", "0", "--blocks", str(blocks),
                               "--txs-per-block", str(args.txs_per_block)],
                              stdout=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().split()[-1]
        # Keep draining the server's stdout so it can never block on a full pipe.
        threading.Thread(target=server.stdout.read, daemon=True).start()
        print(f"dev server {url}: {blocks} blocks x {args.txs_per_block} txs = {rows} rows; "
              f"workdir {work}", file=sys.stderr)

        seconds = {p: [] for p in peers}   # wall seconds of the run (a: extrapolated to `rows`)
        memory = {p: [] for p in peers}
        sizes = {}
        a_runs = []
        for round_index in range(args.rounds):
            for name in peers:
                if server.poll() is not None:
                    raise RuntimeError("the dev server exited")
                target = work / f"out-{name}"
                shutil.rmtree(target, ignore_errors=True)
                log_dir = work / f"log-{name}"
                log_dir.mkdir(exist_ok=True)
                delta = name != "c"
                if name == "ampdelta":
                    cmd = [str(CLI), "load", "--server", url, "--table", str(target), "--sql", SQL,
                           "--mode", "append", "--compression", "snappy",
                           "--config", '{"optimize_after_write": false}']
                elif name == "a":
                    cmd = [PYTHON, "-c", SDK_DEFAULT, url, SQL, str(target), str(sdk_cap),
                           str(SDK_BATCH_SIZE), args.sdk_default_batching]
                elif name == "b":
                    cmd = [PYTHON, "-c", SDK_BEST, url, SQL, str(target)]
                else:
                    target.mkdir(parents=True)
                    cmd = [PYTHON, "-c", PARQUET, url, SQL, str(target / "data.parquet")]
                elapsed, rss, out = timed(cmd, log_dir)
                written = rows_in(target if delta else target / "data.parquet", delta)
                expected = sdk_cap if name == "a" else rows
                if written != expected:
                    raise RuntimeError(f"{name} wrote {written} rows, expected {expected}")
                if name == "ampdelta":
                    match = re.search(r"Loaded (\d+) rows", out)
                    if not match or int(match.group(1)) != rows:
                        raise RuntimeError(f"ampdelta load printed {out.strip()!r}, expected {rows} rows")
                    detail = ""
                elif name == "a":
                    info = json.loads(out.strip().splitlines()[-1])
                    # Interpreter start-up and imports are paid once; only the load part scales.
                    overhead = elapsed - info["load_seconds"]
                    full = overhead + info["load_seconds"] * rows / info["rows"]
                    a_runs.append({"seconds": elapsed, **info, "extrapolated_seconds": full})
                    detail = (f" measured {info['rows']} rows in {elapsed:.2f}s ({info['batches']} batches: "
                              f"write {info['write_seconds']:.2f}s, compact {info['compact_seconds']:.2f}s, "
                              f"last batch {info['last_batch_seconds']:.2f}s)"
                              + (f", extrapolated to {rows} rows: {full:.2f}s" if info["rows"] < rows else ""))
                    elapsed = full
                else:
                    detail = ""
                seconds[name].append(elapsed)
                memory[name].append(rss)
                sizes[name] = du(target)
                print(f"round {round_index + 1} {name}: {elapsed:.2f}s, {rows / elapsed:,.0f} rows/s, "
                      f"peak RSS {rss:.0f} MiB{detail}", file=sys.stderr)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait()
        if not args.keep:
            for name in peers:
                shutil.rmtree(work / f"out-{name}", ignore_errors=True)

    med = {k: statistics.median(v) for k, v in seconds.items()}
    rps = {k: rows / v for k, v in med.items()}
    report = {
        "rows": rows,
        "rounds": args.rounds,
        "codec": "snappy",
        "query": SQL,
        "seconds_median": {k: round(v, 3) for k, v in med.items()},
        "rows_per_second": {k: round(v) for k, v in rps.items()},
        "peak_rss_mib_median": {k: round(statistics.median(v)) for k, v in memory.items()},
        "output_mib": {k: round(v / 2**20, 1) for k, v in sizes.items()},
    }
    if "a" in peers:
        measured_rows = a_runs[0]["rows"]
        extrapolated = measured_rows < rows
        med_wall = statistics.median(r["seconds"] for r in a_runs)
        report["a_measured"] = {
            "extrapolated": extrapolated,
            "rows": measured_rows,
            "batches": a_runs[0]["batches"],
            "batching": args.sdk_default_batching,
            "seconds_median": round(med_wall, 3),
            "rows_per_second": round(measured_rows / med_wall),
            "write_seconds_median": round(statistics.median(r["write_seconds"] for r in a_runs), 3),
            "compact_seconds_median": round(statistics.median(r["compact_seconds"] for r in a_runs), 3),
            "first_batch_seconds_median": round(statistics.median(r["first_batch_seconds"] for r in a_runs), 3),
            "last_batch_seconds_median": round(statistics.median(r["last_batch_seconds"] for r in a_runs), 3),
            "note": (f"a stopped after {measured_rows} of {rows} rows (--sdk-default-max-rows); its seconds, "
                     f"rows/s and ratios are extrapolated linearly to {rows} rows (start-up not scaled). "
                     "Optimistic: each compact() rewrites the table's growing small files, so later batches "
                     "cost more (compare first/last batch seconds). Peak RSS and output size are at the "
                     "measured rows.") if extrapolated else "a loaded every row: nothing extrapolated",
        }
    ratios = {}
    if "a" in rps and "ampdelta" in rps:
        ratios["a/ampdelta"] = round(rps["a"] / rps["ampdelta"], 4)
    if "b" in rps and "ampdelta" in rps:
        ratios["b/ampdelta"] = round(rps["b"] / rps["ampdelta"], 3)
    if "ampdelta" in rps and "c" in rps:
        ratios["ampdelta/c"] = round(rps["ampdelta"] / rps["c"], 3)
    if ratios:
        report["rows_per_second_ratios"] = ratios
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
