#!/usr/bin/env python3
"""Checkpoint write time and snapshot open time on tables with 10k, 100k and 1M active files:
ampdelta vs deltalake, one run, on the same tables.

For each size, bench/checkpoint_scale builds a table of that many `add` actions (10,000 per
commit, with statistics, no checkpoint). Then, each in its own process (peak RSS from wait4):
  1. ampdelta writes the checkpoint of the latest version (the snapshot load is timed apart);
  2. both engines open the table from that checkpoint (ampdelta Snapshot::Load; deltalake
     DeltaTable(path) + file_uris(), which lists every active file);
  3. the checkpoint is removed and deltalake writes its own (DeltaTable.create_checkpoint(),
     timed after the open); both engines open the table again from deltalake's checkpoint.
Every open must see every file, and every open runs with the table's JSON commits moved
aside, so an engine that ignored the checkpoint and replayed the log would fail, not win.

Usage: bench/checkpoint_bench.py [--sizes 10000,100000,1000000] [--rounds 3] [--json-out FILE]
"""
import argparse
import contextlib
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
import load_bench  # noqa: E402  (the report's output)
BINARY = ROOT / "build/release/bench/checkpoint_scale"
COMMIT_NAME = re.compile(r"\d{20}\.json")

DELTALAKE = r"""
import json, os, sys, time
from deltalake import DeltaTable
path, action = sys.argv[1:3]
start = time.perf_counter()
dt = DeltaTable(path)
if action == "checkpoint":
    opened = time.perf_counter()
    dt.create_checkpoint()
    print(json.dumps({"load_seconds": opened - start, "checkpoint_seconds": time.perf_counter() - opened,
                      "version": dt.version()}))
else:
    files = len(dt.file_uris())
    print(json.dumps({"open_seconds": time.perf_counter() - start, "files": files, "version": dt.version()}))
sys.stdout.flush()
os._exit(0)  # deltalake can abort the interpreter at exit
"""


def run(cmd: list) -> tuple[dict, float]:
    """Run cmd; return its JSON output and peak RSS in MiB."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    out, err = proc.stdout.read(), proc.stderr.read()
    if status != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd[:3]))} failed: {err[-2000:]}")
    return json.loads(out.strip().splitlines()[-1]), usage.ru_maxrss / 1024.0


def drop_checkpoints(table: pathlib.Path) -> None:
    log = table / "_delta_log"
    for path in log.iterdir():
        if ".checkpoint." in path.name or path.name == "_last_checkpoint":
            path.unlink()


@contextlib.contextmanager
def commits_hidden(table: pathlib.Path):
    """Move the JSON commits (NNN.json, not checkpoints) aside while the block runs, and back;
    the checkpoint is of the latest version."""
    commits = sorted(p for p in (table / "_delta_log").iterdir() if COMMIT_NAME.fullmatch(p.name))
    if not commits:
        raise RuntimeError(f"{table} has no JSON commits to hide")
    hidden = []
    try:
        for path in commits:
            path.rename(path.with_name(path.name + ".hidden"))
            hidden.append(path)
        yield
    finally:
        for path in hidden:
            path.with_name(path.name + ".hidden").rename(path)


def opens(table: pathlib.Path, files: int, version: int, rounds: int) -> dict:
    with commits_hidden(table):
        return opens_from_checkpoint(table, files, version, rounds)


def opens_from_checkpoint(table: pathlib.Path, files: int, version: int, rounds: int) -> dict:
    ours, theirs, ours_rss, theirs_rss = [], [], [], []
    for _ in range(rounds):
        out, rss = run([str(BINARY), "open", "--table", str(table), "--iterations", "1"])
        if (out["files"], out["version"]) != (files, version):
            raise RuntimeError(f"ampdelta opened {out['files']} files at version {out['version']}, "
                               f"expected {files} at {version}")
        ours.append(out["open_seconds_median"])
        ours_rss.append(rss)
        out, rss = run([sys.executable, "-c", DELTALAKE, str(table), "open"])
        if (out["files"], out["version"]) != (files, version):
            raise RuntimeError(f"deltalake opened {out['files']} files at version {out['version']}, "
                               f"expected {files} at {version}")
        theirs.append(out["open_seconds"])
        theirs_rss.append(rss)
    a, d = statistics.median(ours), statistics.median(theirs)
    return {"ampdelta_seconds": round(a, 4), "deltalake_seconds": round(d, 4),
            "ampdelta_over_deltalake": round(a / d, 3),
            "ampdelta_peak_rss_mib": round(statistics.median(ours_rss)),
            "deltalake_peak_rss_mib": round(statistics.median(theirs_rss))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--rounds", type=load_bench.positive_int, default=3)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--json-out", default=None)
    args = parser.parse_args()
    work = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="ampdelta-checkpoint-bench-"))
    points = []
    for files in (int(s) for s in args.sizes.split(",") if s.strip()):
        table = work / f"t{files}"
        shutil.rmtree(table, ignore_errors=True)
        start = time.perf_counter()
        built, _ = run([str(BINARY), "build", "--table", str(table), "--files", str(files)])
        print(f"{files:,} files: built in {time.perf_counter() - start:.1f}s", file=sys.stderr)
        point = {"files": files, "commits": built["version"] + 1}
        ours, ours_rss = [], []
        for _ in range(args.rounds):
            drop_checkpoints(table)
            out, rss = run([str(BINARY), "checkpoint", "--table", str(table)])
            ours.append(out["checkpoint_seconds"])
            ours_rss.append(rss)
            point["ampdelta_checkpoint_bytes"] = out["checkpoint_bytes"]
        point["open_from_ampdelta_checkpoint"] = opens(table, files, built["version"], args.rounds)
        theirs, theirs_rss = [], []
        for _ in range(args.rounds):
            drop_checkpoints(table)
            out, rss = run([sys.executable, "-c", DELTALAKE, str(table), "checkpoint"])
            theirs.append(out["checkpoint_seconds"])
            theirs_rss.append(rss)
        point["deltalake_checkpoint_bytes"] = sum(
            p.stat().st_size for p in (table / "_delta_log").glob("*.checkpoint*.parquet"))
        point["open_from_deltalake_checkpoint"] = opens(table, files, built["version"], args.rounds)
        a, d = statistics.median(ours), statistics.median(theirs)
        point["checkpoint"] = {
            "ampdelta_seconds": round(a, 4), "deltalake_seconds": round(d, 4),
            "ampdelta_over_deltalake": round(a / d, 3),
            "ampdelta_peak_rss_mib": round(statistics.median(ours_rss)),
            "deltalake_peak_rss_mib": round(statistics.median(theirs_rss))}
        points.append(point)
        print(f"{files:,} files: {json.dumps(point)}", file=sys.stderr)
        shutil.rmtree(table, ignore_errors=True)
    load_bench.emit_report({"points": points}, args.json_out)
    if not args.workdir:  # never a directory the user named
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
