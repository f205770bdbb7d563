#!/usr/bin/env python3
"""Write throughput on Amp-shaped data, in one run: ampdelta vs deltalake's write_deltalake vs
a raw Parquet write of the same batches (the limit).

The data is Amp's evm `transactions` table, fetched once from the ampdelta dev server into an
Arrow IPC file; every writer then streams the same batches from that file with the same codec.
Each round runs the three writers back to back; the report gives medians and ratios, and the
peak RSS of each writer process.

Usage: bench/write_bench.py [--rows 2000000] [--rounds 3] [--codec snappy]
"""
import argparse
import json
import os
import pathlib
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import load_bench  # noqa: E402  (output checks)
CLI = ROOT / "build/release/tools/ampdelta/ampdelta"
PYTHON = sys.executable

DELTALAKE_WRITER = r"""
import sys, pyarrow as pa, pyarrow.ipc as ipc
from deltalake import write_deltalake, WriterProperties
src, dst, codec = sys.argv[1:4]
reader = ipc.open_file(pa.memory_map(src))
batches = pa.RecordBatchReader.from_batches(reader.schema, (reader.get_batch(i) for i in range(reader.num_record_batches)))
write_deltalake(dst, batches, mode="append", writer_properties=WriterProperties(compression=codec.upper()))
"""

PARQUET_WRITER = r"""
import sys, pyarrow as pa, pyarrow.ipc as ipc, pyarrow.parquet as pq
src, dst, codec = sys.argv[1:4]
reader = ipc.open_file(pa.memory_map(src))
with pq.ParquetWriter(dst, reader.schema, compression=codec) as writer:
    for i in range(reader.num_record_batches):
        writer.write_batch(reader.get_batch(i), row_group_size=1048576)
"""


def fetch(url: str, path: str, rows_wanted: int) -> int:
    import pyarrow as pa
    from amp_flight import do_get
    reader = do_get(url, 'SELECT * FROM "acme/eth_mainnet".transactions')
    rows = 0
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, reader.schema) as writer:
        while True:
            try:
                chunk = reader.read_chunk()
            except StopIteration:
                break
            if chunk.data is not None and chunk.data.num_rows:
                writer.write_batch(chunk.data)
                rows += chunk.data.num_rows
    return rows


def timed(cmd: list) -> tuple:
    # Start every writer with no dirty pages left by the one before: otherwise the kernel's
    # write-back of the previous writer's output runs (and is paid for) during this one.
    os.sync()
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=load_bench.peer_env())
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if status != 0:
        raise RuntimeError(f"{cmd[0]} failed: {proc.stderr.read().decode()[-2000:]}")
    return elapsed, usage.ru_maxrss / 1024.0  # MiB


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=load_bench.positive_int, default=3)
    parser.add_argument("--codec", default="snappy")
    parser.add_argument("--txs-per-block", type=int, default=100)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()

    work = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="ampdelta-write-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    data = work / f"transactions-{args.rows}.arrow"
    if not data.exists():
        blocks = -(-args.rows // args.txs_per_block)
        server = subprocess.Popen([str(CLI), "dev-server", "--port", "0", "--blocks", str(blocks),
                                   "--txs-per-block", str(args.txs_per_block)],
                                  stdout=subprocess.PIPE, text=True)
        url = server.stdout.readline().split()[-1]
        try:
            rows = fetch(url, str(data), args.rows)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait()
        print(f"data: {rows} rows, {data.stat().st_size / 2**20:.0f} MiB Arrow IPC", file=sys.stderr)

    # Every output is checked against the input: rows each round, content in the first.
    expected = load_bench.content(data, "ipc")

    results = {"ampdelta": [], "deltalake": [], "parquet": []}
    memory = {"ampdelta": [], "deltalake": [], "parquet": []}
    sizes = {}
    for round_index in range(args.rounds):
        for name in ("ampdelta", "deltalake", "parquet"):
            target = work / f"out-{name}"
            shutil.rmtree(target, ignore_errors=True)
            if name == "ampdelta":
                cmd = [str(CLI), "table", "write", str(target), "--input", str(data),
                       "--compression", args.codec]
            elif name == "deltalake":
                cmd = [PYTHON, "-c", DELTALAKE_WRITER, str(data), str(target), args.codec]
            else:
                target.mkdir(parents=True)
                cmd = [PYTHON, "-c", PARQUET_WRITER, str(data), str(target / "data.parquet"), args.codec]
            elapsed, rss = timed(cmd)
            delta = name != "parquet"
            written = load_bench.rows_in(target if delta else target / "data.parquet", delta)
            if written != expected["rows"]:
                raise RuntimeError(f"{name} wrote {written} rows, the input has {expected['rows']}")
            if round_index == 0:
                load_bench.check_content(
                    name, load_bench.content(target, "delta" if delta else "parquet"), expected)
            results[name].append(elapsed)
            memory[name].append(rss)
            sizes[name] = load_bench.du(target)
            print(f"round {round_index + 1} {name}: {elapsed:.2f}s, peak RSS {rss:.0f} MiB",
                  file=sys.stderr)
    med = {k: statistics.median(v) for k, v in results.items()}
    report = {
        "rows": expected["rows"],
        "codec": args.codec,
        "seconds_median": {k: round(v, 3) for k, v in med.items()},
        "rows_per_second": {k: round(expected["rows"] / v) for k, v in med.items()},
        "peak_rss_mib_median": {k: round(statistics.median(v)) for k, v in memory.items()},
        "output_mib": {k: round(v / 2**20, 1) for k, v in sizes.items()},
        "ampdelta_over_parquet_time": round(med["ampdelta"] / med["parquet"], 3),
        "deltalake_over_ampdelta_time": round(med["deltalake"] / med["ampdelta"], 3),
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
