#!/usr/bin/env python3
"""Decoded events: `ampdelta load` of Amp's evm_decode_log queries against the Python stack, in
one run, same data.

One dev server (the calibrated synthetic chain: its catalogued events are valid encodings) serves
two queries to every peer:

  transfers  ERC-20 Transfer: from, to (address), value (uint256, text)
  swaps      Uniswap V3 Swap: sender, recipient, amount0/1 (int256, text), sqrtPriceX96 (uint160)
             and liquidity (uint128) as Decimal256(76, 0), tick (int24)

Peers, each its own process, writing Snappy Parquet to local disk:

  ampdelta  `ampdelta load --compression snappy --config '{"optimize_after_write": false}'`: the
            struct as the server sends it, Decimal256 stored as text (the default policy).
  python    the Python stack at its best (as load_bench.py's b): DoGet, read_all(), then the cast
            deltalake needs first, as its users write it — every Decimal256 to string, since
            deltalake refuses Decimal256 ("Invalid data type for Delta Lake") — and one
            write_deltalake.

Reported per query: medians of --rounds of the wall time after start-up (the peer's own clock:
ampdelta's "in N s" of its result line; Python's perf_counter after its imports) and of the
process wall time, start-up shown apart (process wall minus load), CPU seconds and peak RSS. The
first round checks both tables hold the server's rows (row count through deltalake).

Usage: bench/events_bench.py [--blocks 2000] [--txs-per-block 100] [--logs-per-tx 3]
                             [--rounds 3] [--cli build/release/tools/ampdelta/ampdelta]
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
sys.path.insert(0, str(ROOT / "bench"))
from load_bench import peer_env, positive_int, rows_in, timed  # noqa: E402

LOGS = '"acme/eth_mainnet".logs'
QUERIES = {
    "transfers": (
        "SELECT block_num, log_index, evm_decode_log(topic1, topic2, topic3, data, "
        "'Transfer(address indexed from, address indexed to, uint256 value)') AS transfer "
        f"FROM {LOGS} WHERE topic0 = evm_topic('Transfer(address,address,uint256)')"),
    "swaps": (
        "SELECT block_num, log_index, address, evm_decode_log(topic1, topic2, topic3, data, "
        "'Swap(address indexed sender, address indexed recipient, int256 amount0, int256 "
        "amount1, uint160 sqrtPriceX96, uint128 liquidity, int24 tick)') AS swap "
        f"FROM {LOGS} WHERE topic0 = "
        "evm_topic('Swap(address,address,int256,int256,uint160,uint128,int24)')"),
}

PYTHON_PEER = f"BENCH_DIR = {str(ROOT / 'bench')!r}\n" + r"""
import json, resource, sys, time
import pyarrow as pa
import pyarrow.compute as pc
from deltalake import WriterProperties, write_deltalake
sys.path.insert(0, BENCH_DIR)
from amp_flight import do_get

def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime

def without_decimal256(t):
    # What deltalake users write before write_deltalake: Decimal256 (any depth) as text.
    if pa.types.is_decimal256(t):
        return pa.string()
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(without_decimal256(f.type)) for f in t])
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(without_decimal256(t.value_type)))
    return t

url, sql, dst = sys.argv[1], sys.argv[2], sys.argv[3]
t0, cpu0 = time.perf_counter(), cpu()
table = do_get(url, sql).read_all()
schema = pa.schema([f.with_type(without_decimal256(f.type)) for f in table.schema])
table = table.cast(schema)
write_deltalake(dst, table, mode="append",
                writer_properties=WriterProperties(compression="SNAPPY"))
print(json.dumps({"rows": table.num_rows, "load_seconds": time.perf_counter() - t0,
                  "load_cpu_seconds": cpu() - cpu0}))
"""

RESULT_RE = re.compile(r"Loaded (\d+) rows to .* in ([\d.]+)s")


def run(cmd: list, work: pathlib.Path) -> dict:
    """Run a peer: wall and CPU seconds, peak RSS (MiB) and stdout (load_bench.timed)."""
    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    return timed(cmd, logs)


def start_server(cli: str, args) -> tuple[subprocess.Popen, str]:
    server = subprocess.Popen(
        [cli, "dev-server", "--port", "0", "--blocks", str(args.blocks), "--txs-per-block",
         str(args.txs_per_block), "--logs-per-tx", str(args.logs_per_tx)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=peer_env())
    line = server.stdout.readline()
    if "listening on" not in line:
        raise RuntimeError(f"dev server did not start: {line!r}")
    return server, line.split()[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=2000)
    parser.add_argument("--txs-per-block", type=int, default=100)
    parser.add_argument("--logs-per-tx", type=int, default=3)
    parser.add_argument("--rounds", type=positive_int, default=3)
    parser.add_argument("--cli", default=str(ROOT / "build/release/tools/ampdelta/ampdelta"))
    parser.add_argument("--json-out", default=None)
    args = parser.parse_args()
    server, url = start_server(args.cli, args)
    work = pathlib.Path(tempfile.mkdtemp(prefix="events-bench-"))
    report = {"blocks": args.blocks, "txs_per_block": args.txs_per_block,
              "logs_per_tx": args.logs_per_tx, "rounds": args.rounds, "queries": {}}
    try:
        for name, sql in QUERIES.items():
            samples = {"ampdelta": [], "python": []}
            for round_index in range(args.rounds):
                for peer in samples:
                    dst = work / f"{name}-{peer}-{round_index}"
                    if peer == "ampdelta":
                        result = run([args.cli, "load", "--server", url, "--table", str(dst),
                                      "--sql", sql, "--compression", "snappy", "--config",
                                      '{"optimize_after_write": false}'], work)
                        match = RESULT_RE.search(result["stdout"])
                        rows, load = int(match.group(1)), float(match.group(2))
                    else:
                        result = run([sys.executable, "-c", PYTHON_PEER, url, sql, str(dst)],
                                     work)
                        doc = json.loads(result["stdout"].strip().splitlines()[-1])
                        rows, load = doc["rows"], doc["load_seconds"]
                    if round_index == 0 and rows_in(dst, delta=True) != rows:
                        raise RuntimeError(f"{peer} {name}: the table does not hold {rows} rows")
                    samples[peer].append({"rows": rows, "load": load, "wall": result["wall"],
                                          "startup": result["wall"] - load,
                                          "cpu": result["cpu"], "rss": result["rss"]})
                    shutil.rmtree(dst, ignore_errors=True)
            medians = {peer: {key: statistics.median(s[key] for s in runs)
                              for key in ("rows", "load", "wall", "startup", "cpu", "rss")}
                       for peer, runs in samples.items()}
            medians["python_over_ampdelta"] = medians["python"]["load"] / medians["ampdelta"]["load"]
            report["queries"][name] = medians
            print(f"{name}: {int(medians['ampdelta']['rows'])} rows; ampdelta "
                  f"{medians['ampdelta']['load']:.2f} s (start-up "
                  f"{medians['ampdelta']['startup']:.2f} s, {medians['ampdelta']['cpu']:.1f} CPU-s, "
                  f"{medians['ampdelta']['rss']:.0f} MiB); python {medians['python']['load']:.2f} s "
                  f"(start-up {medians['python']['startup']:.2f} s, "
                  f"{medians['python']['cpu']:.1f} CPU-s, {medians['python']['rss']:.0f} MiB); "
                  f"python/ampdelta {medians['python_over_ampdelta']:.2f}x", flush=True)
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)
    if args.json_out:
        pathlib.Path(args.json_out).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
