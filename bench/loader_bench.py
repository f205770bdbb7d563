#!/usr/bin/env python3
"""The SDK loader API on Arrow data (docs/sdk-loaders.md), in one run: ampdelta's
`DeltaLakeLoader.load_table` vs deltalake's `write_deltalake` vs the CLI on the same rows.

The data is Amp's evm `transactions` table, fetched once from the dev server into an Arrow
IPC file (bench/write_bench.py's fetch); every peer streams the same batches from that file
(a pyarrow RecordBatchReader reading the file batch by batch, never materialised) with
Snappy:
  module     DeltaLakeLoader({'table_path', 'optimize_after_write': False}).load_table(reader)
             timed in its process after its imports (the import shown apart)
  deltalake  write_deltalake(path, reader, mode='append'), timed the same way
  cli        `ampdelta table write --input FILE` (a release build): wall time less the median
             start-up of `ampdelta --version`
Each peer runs in its own process; peak RSS is the process's (wait4). Every table's rows are
counted from its Parquet footers each round and its content checked against the input in
the first (bench/load_bench.py). Medians over --rounds; also the wheel's size and the
median `import ampdelta` time. Run it in a venv with the wheel, pyarrow and deltalake
(scripts/wheel_venv.sh makes build/wheel-venv).

Usage: bench/loader_bench.py [--rows 1000000 10000000] [--rounds 3]
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
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import load_bench  # noqa: E402  (timed runs, output checks)
import write_bench  # noqa: E402  (the data)

CLI = ROOT / "build/release/tools/ampdelta/ampdelta"
PYTHON = sys.executable

# Each prints {"import": s, "load": s} last.
READER = r"""
import json, sys, time
started = time.perf_counter()
import pyarrow as pa, pyarrow.ipc as ipc
{imports}
imported = time.perf_counter()
src, dst = sys.argv[1:3]
# Read, not memory-mapped: a mapped input's pages would count in the peak RSS.
file = ipc.open_file(pa.OSFile(src))
reader = pa.RecordBatchReader.from_batches(
    file.schema, (file.get_batch(i) for i in range(file.num_record_batches)))
{load}
done = time.perf_counter()
print(json.dumps({{"import": imported - started, "load": done - imported}}))
"""
PEERS = {
    "module": READER.format(
        imports="from ampdelta.loaders import DeltaLakeLoader",
        load="with DeltaLakeLoader({'table_path': dst, 'optimize_after_write': False}) as loader:\n"
             "    result = loader.load_table(reader, 'transactions',\n"
             "                               writer_properties={'compression': 'SNAPPY'})\n"
             "assert result.success, result.error"),
    "deltalake": READER.format(
        imports="from deltalake import write_deltalake, WriterProperties",
        load="write_deltalake(dst, reader, mode='append',\n"
             "                writer_properties=WriterProperties(compression='SNAPPY'))"),
}


def data_file(work: pathlib.Path, rows: int, txs_per_block: int) -> pathlib.Path:
    data = work / f"transactions-{rows}.arrow"
    if data.exists():
        return data
    blocks = -(-rows // txs_per_block)
    server = subprocess.Popen([str(CLI), "dev-server", "--port", "0", "--blocks", str(blocks),
                               "--txs-per-block", str(txs_per_block)],
                              stdout=subprocess.PIPE, text=True)
    url = server.stdout.readline().split()[-1]
    try:
        got = write_bench.fetch(url, str(data), rows)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait()
    print(f"data: {got} rows, {data.stat().st_size / 2**20:.0f} MiB Arrow IPC", file=sys.stderr)
    return data


def startup(cmd: list, runs: int = 10) -> float:
    """Median wall seconds of a no-op command."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run_size(rows: int, args, work: pathlib.Path, cli_startup: float) -> dict:
    data = data_file(work, rows, args.txs_per_block)
    expected = load_bench.content(data, "ipc")
    seconds = {name: [] for name in (*PEERS, "cli")}
    rss = {name: [] for name in seconds}
    imports = {name: [] for name in PEERS}
    for round_index in range(args.rounds):
        for name in seconds:
            target = work / f"out-{name}"
            shutil.rmtree(target, ignore_errors=True)
            if name == "cli":
                cmd = [str(CLI), "table", "write", str(target), "--input", str(data),
                       "--compression", "snappy"]
            else:
                cmd = [PYTHON, "-c", PEERS[name], str(data), str(target)]
            run = load_bench.timed(cmd, work)
            if name == "cli":
                seconds[name].append(run["wall"] - cli_startup)
            else:
                timing = load_bench.last_json(run["stdout"])
                seconds[name].append(timing["load"])
                imports[name].append(timing["import"])
            rss[name].append(run["rss"])
            written = load_bench.rows_in(target, True)
            if written != expected["rows"]:
                raise RuntimeError(f"{name} wrote {written} rows, the input has {expected['rows']}")
            if round_index == 0:
                load_bench.check_content(name, load_bench.content(target, "delta"), expected)
            print(f"{rows} rows, round {round_index + 1} {name}: {seconds[name][-1]:.2f} s, "
                  f"peak RSS {rss[name][-1]:.0f} MiB", file=sys.stderr)
    med = {name: statistics.median(values) for name, values in seconds.items()}
    return {
        "rows": expected["rows"],
        "seconds_median": {k: round(v, 3) for k, v in med.items()},
        "import_seconds_median": {k: round(statistics.median(v), 3) for k, v in imports.items()},
        "peak_rss_mib_median": {k: round(statistics.median(v)) for k, v in rss.items()},
        "deltalake_over_module": round(med["deltalake"] / med["module"], 3),
        "module_over_cli": round(med["module"] / med["cli"], 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--rounds", type=load_bench.positive_int, default=3)
    parser.add_argument("--txs-per-block", type=int, default=100)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    work = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="ampdelta-loader-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    import ampdelta
    wheels = sorted((ROOT / "dist/wheelhouse").glob("ampdelta-*.whl"))
    report = {
        "wheel_mib": {w.name: round(w.stat().st_size / 2**20, 1) for w in wheels},
        "import_ampdelta_seconds": round(
            startup([PYTHON, "-c", "import ampdelta"]) - startup([PYTHON, "-c", "pass"]), 3),
        "ampdelta_from": os.path.dirname(ampdelta.__file__),
        "sizes": [],
    }
    cli_startup = startup([str(CLI), "--version"])
    for rows in args.rows:
        report["sizes"].append(run_size(rows, args, work, cli_startup))
    load_bench.emit_report(report, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
