#!/usr/bin/env python3
"""Merge/upsert of a fraction of the keys into a large table: `ampdelta load --mode merge` vs
deltalake's merge builder, one run, on the same table and the same source rows.

The target is --rows rows of the calibrated synthetic chain's transactions, loaded once by
ampdelta. The source is a second dev server's chain with another seed: the same keys
(block_num, tx_index) with other values. Two shapes of source, --pattern:
  recent  the newest blocks (a fraction of the table, contiguous: what an upsert of late data
          or a reorg correction looks like);
  spread  one tx_index in every block (the same fraction, touching every file).
Each round restores the target to its loaded version first (metadata only), then:
  ampdelta   `ampdelta load --mode merge --merge-keys block_num,tx_index --sql <source query>`
             (its process wall time: the DoGet of the source is part of the merge);
  deltalake  DoGet + read_all of the source, then DeltaTable.merge(source, "t.block_num =
             s.block_num AND t.tx_index = s.tx_index").when_matched_update_all()
             .when_not_matched_insert_all().execute() (timed after imports; the DoGet apart too).
Reported: seconds, files removed and added by the merge commit, peak RSS. Checked: the table has
--rows rows afterwards and sum(nonce) equals the target's minus the replaced rows' plus the
source's, read back by deltalake; in the first round both engines' merged tables must hold the
same rows, every column (bench/load_bench.py's content check).

Usage: bench/merge_bench.py [--rows 10000000] [--fraction 0.01] [--pattern recent] [--rounds 3]
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
import load_bench  # noqa: E402  (timing, the SDK's query path)

TXS_PER_BLOCK = 100
FIRST_BLOCK = 24_000_000

DELTALAKE_MERGE = load_bench.PRELUDE + r"""
import os
from deltalake import DeltaTable
url, sql, path = sys.argv[1:4]
begin()
source = do_get(url, sql).read_all()
fetched = time.perf_counter() - T0
dt = DeltaTable(path)
metrics = (dt.merge(source, predicate="t.block_num = s.block_num AND t.tx_index = s.tx_index",
                    source_alias="s", target_alias="t")
           .when_matched_update_all().when_not_matched_insert_all().execute())
report = {"rows": source.num_rows, "fetch_seconds": fetched}
finish(report)
sys.stdout.flush()
os._exit(0)  # deltalake can abort the interpreter at exit
"""

SUM_NONCE = r"""
import json, os, sys
import pyarrow.compute as pc
from deltalake import DeltaTable
table = DeltaTable(sys.argv[1]).to_pyarrow_dataset().to_table(columns=["nonce"])
print(json.dumps({"rows": table.num_rows, "sum_nonce": pc.sum(table["nonce"]).as_py()}))
sys.stdout.flush()
os._exit(0)
"""

SOURCE_SUM = load_bench.PRELUDE + r"""
import pyarrow.compute as pc
url, sql = sys.argv[1:3]
begin()
table = do_get(url, sql).read_all()
finish({"rows": table.num_rows, "sum_nonce": pc.sum(table["nonce"]).as_py() or 0})
"""


def start_server(blocks: int, seed: int):
    server = subprocess.Popen(
        [str(load_bench.CLI), "dev-server", "--port", "0", "--blocks", str(blocks),
         "--txs-per-block", str(TXS_PER_BLOCK), "--seed", str(seed)],
        stdout=subprocess.PIPE, text=True)
    url = server.stdout.readline().split()[-1]
    threading.Thread(target=server.stdout.read, daemon=True).start()
    return server, url


def commit_actions(table: pathlib.Path, version: int) -> dict:
    counts = {"add": 0, "remove": 0}
    with open(table / "_delta_log" / f"{version:020d}.json") as log:
        for line in log:
            action = json.loads(line)
            for kind in counts:
                if kind in action:
                    counts[kind] += 1
    return counts


def latest_version(table: pathlib.Path) -> int:
    return max(int(p.name.split(".")[0]) for p in (table / "_delta_log").glob("*.json"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--fraction", type=float, default=0.01)
    parser.add_argument("--pattern", choices=("recent", "spread"), default="recent")
    parser.add_argument("--rounds", type=load_bench.positive_int, default=3)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--json-out", default=None)
    args = parser.parse_args()
    blocks = -(-args.rows // TXS_PER_BLOCK)
    rows = blocks * TXS_PER_BLOCK
    if args.pattern == "recent":
        first = FIRST_BLOCK + blocks - max(1, round(blocks * args.fraction))
        where = f"block_num >= {first}"
    else:
        where = f"tx_index = {TXS_PER_BLOCK // 2}"
        if abs(args.fraction - 1 / TXS_PER_BLOCK) > 1e-9:
            parser.error(f"--pattern spread merges one tx_index per block: --fraction {1 / TXS_PER_BLOCK}")
    sql = f'SELECT * FROM "acme/eth_mainnet".transactions WHERE {where}'
    work = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="ampdelta-merge-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    target = work / "target"
    shutil.rmtree(target, ignore_errors=True)
    log_dir = work / "log"
    log_dir.mkdir(exist_ok=True)
    base, base_url = start_server(blocks, 0)
    source, source_url = start_server(blocks, 1)
    runs = {"ampdelta": [], "deltalake": []}
    merged = {}  # each engine's first merged table, digested (load_bench.content)
    try:
        load_bench.timed([str(load_bench.CLI), "load", "--server", base_url, "--table", str(target),
                          "--sql", 'SELECT * FROM "acme/eth_mainnet".transactions', "--mode", "append",
                          "--compression", "snappy", "--config", '{"optimize_after_write": false}'], log_dir)
        base_version = latest_version(target)
        loaded = load_bench.python_json(SUM_NONCE, str(target))
        if loaded["rows"] != rows:
            raise RuntimeError(f"the target has {loaded['rows']} rows, expected {rows}")
        replaced = load_bench.python_json(SOURCE_SUM, base_url, sql)
        incoming = load_bench.python_json(SOURCE_SUM, source_url, sql)
        if replaced["rows"] != incoming["rows"]:
            raise RuntimeError("the two chains disagree on the source's keys")
        if replaced["sum_nonce"] == incoming["sum_nonce"]:
            raise RuntimeError("the source rows equal the rows they replace: the check could not "
                               "tell a merge from no merge")
        expected = {"rows": rows,
                    "sum_nonce": loaded["sum_nonce"] - replaced["sum_nonce"] + incoming["sum_nonce"]}
        files = len(list(target.glob("*.parquet")))
        print(f"target: {rows:,} rows in {files} files; source: {incoming['rows']:,} rows ({where})",
              file=sys.stderr)
        for round_index in range(args.rounds):
            for engine in runs:
                if latest_version(target) != base_version:
                    subprocess.run([str(load_bench.CLI), "table", "restore", str(target), "--version",
                                    str(base_version)], check=True, stdout=subprocess.DEVNULL)
                if engine == "ampdelta":
                    cmd = [str(load_bench.CLI), "load", "--server", source_url, "--table", str(target),
                           "--sql", sql, "--mode", "merge", "--merge-keys", "block_num", "tx_index",
                           "--compression", "snappy", "--config", '{"optimize_after_write": false}']
                else:
                    cmd = [load_bench.PYTHON, "-c", DELTALAKE_MERGE, source_url, sql, str(target)]
                run = load_bench.timed(cmd, log_dir)
                out = run.pop("stdout")
                run["seconds"] = run["wall"]
                if engine == "deltalake":
                    info = load_bench.last_json(out)
                    run["seconds"], run["fetch_seconds"] = info["load_seconds"], info["fetch_seconds"]
                version = latest_version(target)
                run.update(commit_actions(target, version))
                got = load_bench.python_json(SUM_NONCE, str(target))
                if got != expected:
                    raise RuntimeError(f"{engine}'s merge left {got}, expected {expected}")
                if round_index == 0:
                    merged[engine] = load_bench.content(target, "delta")
                runs[engine].append(run)
                print(f"round {round_index + 1} {engine}: {run['seconds']:.2f}s, files removed "
                      f"{run['remove']}, added {run['add']}, peak RSS {run['rss']:.0f} MiB", file=sys.stderr)
            if round_index == 0:
                # Both engines must leave the same rows, every column (read back by deltalake).
                load_bench.check_content("ampdelta's merged table", merged["ampdelta"],
                                         merged["deltalake"])
    finally:
        for server in (base, source):
            server.send_signal(signal.SIGTERM)
            server.wait()
        if not args.workdir:  # never a directory the user named
            shutil.rmtree(work, ignore_errors=True)
    report = {"rows": rows, "pattern": args.pattern, "where": where, "source_rows": incoming["rows"],
              "target_files": files, "engines": {}}
    for engine, engine_runs in runs.items():
        entry = {"seconds_median": round(statistics.median(r["seconds"] for r in engine_runs), 3),
                 "files_removed": engine_runs[0]["remove"], "files_added": engine_runs[0]["add"],
                 "peak_rss_mib_median": round(statistics.median(r["rss"] for r in engine_runs))}
        if engine == "deltalake":
            entry["fetch_seconds_median"] = round(statistics.median(r["fetch_seconds"] for r in engine_runs), 3)
        report["engines"][engine] = entry
    e = report["engines"]
    report["deltalake_seconds_over_ampdelta"] = round(e["deltalake"]["seconds_median"] / e["ampdelta"]["seconds_median"], 3)
    load_bench.emit_report(report, args.json_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
