"""Everything at once on one table: a stream following a reorging chain, batch appends,
OPTIMIZE, VACUUM (its retention guard on) and RESTORE, for a bounded time.

At the end (the stream then runs to the chain's final head): the stream's blocks are in the
table exactly once each with the canonical hashes (a restore that took blocks back was
noticed and refilled), every batch load is there whole or not at all (a restore may take one
back), and every version of the log reads with deltalake without a repeated block.

AMPDELTA_TORTURE_SECONDS=S runs the actors for S seconds (default TORTURE_S).
"""

from __future__ import annotations

import collections
import json
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import QUICKSTART_DATASET, QUICKSTART_FIRST, cli_env, cli_path, run_dev_server
from test_stream_crash import canonical_hashes, hex_hash, last_quiet_head, live_chain_args, \
    BLOCK_INTERVAL_MS

TORTURE_S = float(os.environ.get("AMPDELTA_TORTURE_SECONDS") or 20)
SEED = int(os.environ.get("AMPDELTA_TORTURE_SEED") or 20261202)
STREAM_SQL = f'SELECT block_num, hash, gas_used FROM "{QUICKSTART_DATASET}".blocks'
# Batch loads read a second, still chain far below the stream's blocks: each load is one
# block range, so its rows are recognisable.
BATCH_FIRST = 1_000_000
BATCH_BLOCKS = 20
BATCH_LOADS_MAX = 400

# Every version's block numbers, from each data file read once; run in a child that leaves
# through os._exit (deltalake 1.6.6 may abort the interpreter at exit).
READ_VERSIONS = r"""
import json, os, sys
import pyarrow.parquet as pq
from deltalake import DeltaTable
root = sys.argv[1]
latest = DeltaTable(root).version()
# One table moved forward version by version: deltalake replays only the new commits
# (a fresh DeltaTable per version replays the whole log each time: 5x slower).
table = DeltaTable(root, version=0)
blocks_of = {}
versions = {}
for version in range(latest + 1):
    table.load_as_version(version)
    numbers = []
    for uri in table.file_uris():
        if uri not in blocks_of:
            blocks_of[uri] = pq.read_table(uri, columns=["block_num"]).column("block_num").to_pylist()
        numbers += blocks_of[uri]
    versions[version] = numbers
final = DeltaTable(root).to_pyarrow_table(columns=["block_num", "hash"])
hashes = [value.hex() if value is not None else None for value in final.column("hash").to_pylist()]
sys.stdout.write(json.dumps({"versions": versions,
                             "final": list(zip(final.column("block_num").to_pylist(), hashes))}))
sys.stdout.flush()
os._exit(0)
"""


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(cli_path()), *args], capture_output=True, text=True,
                          env=cli_env(), timeout=timeout, stdin=subprocess.DEVNULL)


class Actor(threading.Thread):
    """Runs `step` again and again until stopped; records every command's outcome."""

    def __init__(self, name: str, step, stop: threading.Event):
        super().__init__(name=name, daemon=True)
        self.step = step
        self.stop = stop
        self.outcomes: collections.Counter = collections.Counter()
        self.failures: list[str] = []

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.step(self)
            except Exception as error:  # noqa: BLE001 - reported by the test
                self.failures.append(f"{self.name}: {error!r}")
                return


@pytest.mark.timeout(240 + 3 * TORTURE_S)
def test_everything_at_once_keeps_every_block_once_and_every_version_readable(tmp_path):
    rng = random.Random(SEED)
    table = tmp_path / "blocks"
    max_head = last_quiet_head(int((TORTURE_S + 15) * 1000 / BLOCK_INTERVAL_MS))
    print(f"seed={SEED} seconds={TORTURE_S} max_head={max_head} table={table}")
    with run_dev_server(*live_chain_args(max_head)) as live, \
            run_dev_server("--start-block", str(BATCH_FIRST),
                           "--blocks", str(BATCH_BLOCKS * BATCH_LOADS_MAX)) as still:
        stream = subprocess.Popen(
            [str(cli_path()), "load", "--server", live.url, "--table", str(table), "--sql",
             STREAM_SQL, "--stream", "--commit-interval-ms", "50", "--until-block",
             str(max_head), "--config", '{"optimize_after_write": false}'],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, env=cli_env())
        # The stream creates the table; the others join once it exists.
        deadline = time.monotonic() + 60
        while not (table / "_delta_log" / "00000000000000000000.json").exists():
            assert stream.poll() is None, stream.stderr.read()
            assert time.monotonic() < deadline, "the stream never created the table"
            time.sleep(0.05)
        first_version = 0

        stop = threading.Event()
        loaded: list[tuple[int, int]] = []
        lock = threading.Lock()

        def batch_load(actor: Actor) -> None:
            with lock:
                if len(loaded) >= BATCH_LOADS_MAX:
                    time.sleep(0.1)
                    return
                start = BATCH_FIRST + len(loaded) * BATCH_BLOCKS
                loaded.append((start, start + BATCH_BLOCKS - 1))
            sql = (f'SELECT block_num, hash, gas_used FROM "{QUICKSTART_DATASET}".blocks '
                   f"WHERE block_num BETWEEN {start} AND {start + BATCH_BLOCKS - 1}")
            done = run("load", "--server", still.url, "--table", str(table), "--sql", sql,
                       "--config", '{"optimize_after_write": false}')
            actor.outcomes[done.returncode] += 1
            assert done.returncode == 0, f"batch load {start}: {done.stderr}"

        def optimize(actor: Actor) -> None:
            done = run("table", "optimize", str(table))
            actor.outcomes[done.returncode] += 1
            # A compaction may lose to a concurrent remove (exit 5) and is simply skipped.
            assert done.returncode in (0, 5), f"optimize: {done.stderr}"
            time.sleep(0.3)

        def vacuum(actor: Actor) -> None:
            done = run("table", "vacuum", str(table), "--full")
            actor.outcomes[done.returncode] += 1
            assert done.returncode == 0, f"vacuum: {done.stderr}"
            time.sleep(0.5)

        def restore(actor: Actor) -> None:
            time.sleep(rng.uniform(1.0, 3.0))
            info = run("table", "info", str(table), "--json")
            assert info.returncode == 0, info.stderr
            latest = json.loads(info.stdout)["version"]
            target = max(first_version, latest - rng.randint(1, 4))
            done = run("table", "restore", str(table), "--version", str(target))
            actor.outcomes[done.returncode] += 1
            assert done.returncode == 0, f"restore to {target}: {done.stderr}"

        actors = [Actor("batch", batch_load, stop), Actor("optimize", optimize, stop),
                  Actor("vacuum", vacuum, stop), Actor("restore", restore, stop)]
        for actor in actors:
            actor.start()
        time.sleep(TORTURE_S)
        stop.set()
        for actor in actors:
            actor.join(timeout=120)
        failures = [failure for actor in actors for failure in actor.failures]
        assert stream.poll() is None or stream.returncode == 0, stream.stderr.read()
        try:
            out, err = stream.communicate(timeout=180)
        except subprocess.TimeoutExpired:
            stream.kill()
            out, err = stream.communicate()
            pytest.fail(f"the stream did not reach block {max_head}\n{err[-4000:]}")
        assert stream.returncode == 0, f"stream exited {stream.returncode}\n{err[-4000:]}"
        assert not failures, "\n".join(failures)
        summary = {actor.name: dict(actor.outcomes) for actor in actors}
        print(f"actors: {summary}; stream: {err.strip().splitlines()[-1] if err.strip() else ''}")
        assert summary["restore"].get(0, 0) > 0, "no restore ran"
        assert summary["batch"].get(0, 0) > 0, "no batch load ran"

        chain = canonical_hashes(live.url)

    proc = subprocess.run([sys.executable, "-c", READ_VERSIONS, str(table)], capture_output=True,
                          text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, f"deltalake cannot read every version:\n{proc.stderr}"
    seen = json.loads(proc.stdout)
    ranges = list(loaded)

    def check(numbers: list[int], what: str) -> None:
        counts = collections.Counter(numbers)
        twice = sorted(n for n, c in counts.items() if c > 1)
        assert not twice, f"{what}: blocks twice: {twice[:20]}"
        for start, end in ranges:
            present = sum(1 for n in range(start, end + 1) if n in counts)
            assert present in (0, end - start + 1), (
                f"{what}: batch load {start}..{end} is partly there ({present} rows)")

    for version, numbers in seen["versions"].items():
        check(numbers, f"version {version}")
    final = seen["final"]
    check([n for n, _ in final], "the latest version")
    streamed = {n: h for n, h in final if n >= QUICKSTART_FIRST}
    expected = set(range(QUICKSTART_FIRST, max_head + 1))
    missing = sorted(expected - set(streamed))
    assert not missing, (f"streamed blocks missing: {missing[:20]} (of {len(missing)})\n"
                         f"stream stderr:\n{err[-6000:]}")
    stale = [n for n, h in streamed.items() if hex_hash(bytes.fromhex(h)) != chain[n]]
    assert not stale, f"non-canonical hashes at {stale[:10]}"
    print(f"{len(seen['versions'])} versions read; {len(streamed)} streamed blocks, "
          f"{len(final) - len(streamed)} batch rows in the latest version")
