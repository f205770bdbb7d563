"""`ampdelta load --stream` killed at random moments on a live chain with reorgs.

A streaming load keeps its state in the table (a txn action per stream, block ranges in
add.tags), so a loader killed with SIGKILL anywhere (mid-write, between the Parquet file
and the log entry, mid-reorg-undo) and restarted must resume after the last committed
block: in the end every block is in the table exactly once, with the canonical chain's
hash, and no committed version ever held a block twice.

The kill times come from random.Random(seed); the seed and every trial are printed.
AMPDELTA_CRASH_TRIALS=N runs N trials instead of CRASH_TRIALS (a soak) and
AMPDELTA_CRASH_SEED=S replays a failing seed.
"""

from __future__ import annotations

import collections
import contextlib
import csv
import io
import json
import math
import os
import random
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

import readers
from conftest import QUICKSTART_DATASET, QUICKSTART_FIRST, QUICKSTART_LAST, both_servers, \
    cli_env, cli_path, run_dev_server

STREAM_SQL = f'SELECT block_num, hash, gas_used FROM "{QUICKSTART_DATASET}".blocks'
CANONICAL_SQL = f'SELECT block_num, hash FROM "{QUICKSTART_DATASET}".blocks'
LOAD_CONFIG = '{"optimize_after_write": false}'
COMMIT_INTERVAL_MS = 50

# The live chain: starts at QUICKSTART_LAST, one block every BLOCK_INTERVAL_MS, and replaces
# the newest REORG_DEPTH blocks whenever (head - INITIAL_HEAD) % REORG_EVERY == 0.
INITIAL_HEAD = QUICKSTART_LAST
BLOCK_INTERVAL_MS = 20
REORG_EVERY = 13
REORG_DEPTH = 3
MICROBATCH_MAX_BLOCKS = 20

CRASH_TRIALS = 30
TRIALS = max(1, int(os.environ.get("AMPDELTA_CRASH_TRIALS") or CRASH_TRIALS))
SEED = int(os.environ.get("AMPDELTA_CRASH_SEED") or 20251213)
KILL_AFTER_S = (0.05, 1.0)
# What one trial costs on average (the sleep plus starting, killing and reaping the loader);
# the chain keeps growing (and reorging) for about as long as the trials take.
TRIAL_ESTIMATE_S = sum(KILL_AFTER_S) / 2 + 0.05

LOADER_STOP_TIMEOUT_S = 10.0
RESULT_RE = re.compile(r"^✅ Loaded (\d+) rows to (.+?) in [\d.]+s(?: \[mainnet:(\d+)-(\d+)\])?$")
REORG_RE = re.compile(r"^🔄 Reorg detected: ")


def last_quiet_head(blocks_to_grow: int) -> int:
    """A --max-head about blocks_to_grow past INITIAL_HEAD at which no reorg is scheduled, so
    the chain is final once it reaches it (the last reorg happens strictly before)."""
    head = INITIAL_HEAD + max(blocks_to_grow, REORG_EVERY + 1)
    while (head - INITIAL_HEAD) % REORG_EVERY == 0:
        head += 1
    return head


def live_chain_args(max_head: int) -> list[str]:
    return ["--blocks", str(QUICKSTART_LAST - QUICKSTART_FIRST + 1),
            "--block-interval-ms", str(BLOCK_INTERVAL_MS), "--max-head", str(max_head),
            "--reorg-every", str(REORG_EVERY), "--reorg-depth", str(REORG_DEPTH),
            "--microbatch-max-blocks", str(MICROBATCH_MAX_BLOCKS)]


def stream_args(url: str, table: Path, *extra: str) -> list[str]:
    return [str(cli_path()), "load", "--server", url, "--table", str(table), "--sql", STREAM_SQL,
            "--stream", "--commit-interval-ms", str(COMMIT_INTERVAL_MS), "--config", LOAD_CONFIG,
            *extra]


class Loader:
    """A `ampdelta load --stream` subprocess whose stdout/stderr go to files under logs/."""

    def __init__(self, url: str, table: Path, logs: Path, name: str, *extra: str):
        self.args = stream_args(url, table, *extra)
        logs.mkdir(parents=True, exist_ok=True)
        self.stdout_path = logs / f"{name}.stdout"
        self.stderr_path = logs / f"{name}.stderr"
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=err, env=cli_env())

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def describe(self) -> str:
        return (f"{' '.join(self.args)}\nexit {self.proc.returncode}\n"
                f"stdout ({self.stdout_path}):\n{self.stdout()}\n"
                f"stderr ({self.stderr_path}):\n{self.stderr()}")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=LOADER_STOP_TIMEOUT_S)


@contextlib.contextmanager
def running_loader(url: str, table: Path, logs: Path, name: str, *extra: str):
    """Start a Loader; SIGKILL it (if still running) and reap it when the block ends."""
    loader = Loader(url, table, logs, name, *extra)
    try:
        yield loader
    finally:
        loader.kill()


def canonical_hashes(url: str) -> dict[int, str]:
    """block_num -> "0x…" hash of the server's current chain (a batch query, CSV)."""
    proc = subprocess.run([str(cli_path()), "query", "--server", url, "--format", "csv",
                           "--sql", CANONICAL_SQL], capture_output=True, text=True,
                          env=cli_env(), timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stderr}"
    assert proc.stderr.startswith("rows="), proc.stderr  # the summary is on stderr
    records = list(csv.reader(io.StringIO(proc.stdout, newline="")))
    assert records[0] == ["block_num", "hash"], records[0]  # the header record
    chain = {}
    for number, block_hash in records[1:]:
        chain[int(number)] = block_hash.lower()
    return chain


def hex_hash(value) -> str:
    return "0x" + value.hex() if isinstance(value, (bytes, bytearray)) else str(value).lower()


def repeated(block_nums: list[int]) -> dict[int, int]:
    return {n: c for n, c in collections.Counter(block_nums).items() if c > 1}


def check_prefix(block_nums: list[int], what: str) -> None:
    """No block twice, and the blocks are QUICKSTART_FIRST..max with none missing: a stream
    commits whole microbatches in order and a reorg undo removes a suffix."""
    twice = repeated(block_nums)
    assert not twice, f"{what}: repeated blocks {dict(sorted(twice.items())[:20])}"
    if block_nums:
        missing = sorted(set(range(QUICKSTART_FIRST, max(block_nums) + 1)) - set(block_nums))
        assert not missing, f"{what}: missing blocks {missing[:20]} (of {len(missing)})"


# Reading a version whole reads every data file it holds, and with optimize off each commit
# adds a file, so reading every version whole is quadratic in the number of commits. Up to
# FULL_READ_VERSIONS versions (30 trials make about 250) every version is read whole; in
# longer soaks every version is still loaded and checked from its file list (each data file
# read once), and FULL_READ_VERSIONS evenly spread versions and the latest are read whole.
FULL_READ_VERSIONS = 400


def check_every_version(table: Path) -> tuple[int, int]:
    """Every version 0..latest reads with deltalake and holds a repeat-free block prefix.
    Returns (latest version, how many versions were read whole)."""
    import pyarrow.parquet as pq
    from deltalake import DeltaTable

    latest = DeltaTable(str(table)).version()
    stride = max(1, math.ceil((latest + 1) / FULL_READ_VERSIONS))
    block_nums_of_file: dict[str, list[int]] = {}
    read_whole = 0
    # One table moved forward version by version: deltalake replays only the new commits
    # (a fresh DeltaTable per version replays the whole log each time).
    moving = DeltaTable(str(table), version=0)
    for version in range(latest + 1):
        what = f"{table} version {version} of {latest}"
        try:
            moving.load_as_version(version)
            if version % stride == 0 or version == latest:
                block_nums = moving.to_pyarrow_table().column("block_num").to_pylist()
                read_whole += 1
            else:
                block_nums = []
                for uri in moving.file_uris():
                    if uri not in block_nums_of_file:
                        block_nums_of_file[uri] = pq.read_table(
                            uri, columns=["block_num"]).column("block_num").to_pylist()
                    block_nums += block_nums_of_file[uri]
        except Exception as error:  # noqa: BLE001 - report which version is unreadable
            pytest.fail(f"{what} is unreadable: {error!r}")
        check_prefix(block_nums, what)
    return latest, read_whole


def check_final_table(table: Path, url: str, last_block: int) -> int:
    """Latest version: QUICKSTART_FIRST..last_block once each, canonical hashes, DuckDB agrees."""
    latest = readers.read_deltalake(table)
    block_nums = latest.column("block_num").to_pylist()
    twice = repeated(block_nums)
    assert not twice, f"{table}: repeated blocks {dict(sorted(twice.items())[:20])}"
    expected = set(range(QUICKSTART_FIRST, last_block + 1))
    missing = sorted(expected - set(block_nums))
    extra = sorted(set(block_nums) - expected)
    assert not missing and not extra, f"{table}: missing {missing[:20]}, unexpected {extra[:20]}"

    chain = canonical_hashes(url)
    assert sorted(chain) == sorted(expected), "the dev server's chain is not at --max-head"
    stale = [(n, hex_hash(h), chain[n])
             for n, h in zip(block_nums, latest.column("hash").to_pylist())
             if hex_hash(h) != chain[n]]
    assert not stale, f"{table}: {len(stale)} rows with a non-canonical hash, e.g. {stale[:5]}"

    duck = readers.READERS["duckdb"](table)
    assert duck.num_rows == latest.num_rows, (duck.num_rows, latest.num_rows)
    assert sorted(duck.column("block_num").to_pylist()) == sorted(expected)
    return latest.num_rows


def orphaned_files(table: Path) -> int:
    """Data files in the directory that no version's log adds."""
    added = set()
    for entry in (table / "_delta_log").glob("*.json"):
        if not re.fullmatch(r"\d{20}\.json", entry.name):
            continue
        for line in entry.read_text().splitlines():
            action = json.loads(line) if line.strip() else {}
            if "add" in action:
                added.add(action["add"]["path"])
    return sum(1 for f in table.glob("*.parquet") if f.name not in added)


def finish(url: str, table: Path, logs: Path, name: str, until_block: int,
           timeout_s: float) -> Loader:
    """Run the loader with --until-block until it exits; require exit 0."""
    with running_loader(url, table, logs, name, "--until-block", str(until_block)) as loader:
        try:
            loader.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            pass
        assert loader.proc.returncode == 0, (
            f"{name} did not finish in {timeout_s:.0f} s\n{loader.describe()}")
    lines = loader.stdout().splitlines()
    assert lines and RESULT_RE.match(lines[-1]), loader.describe()
    return loader


@pytest.mark.timeout(90 + 3 * TRIALS)
@both_servers()
def test_kill_9_at_random_moments_never_loses_or_repeats_a_block(tmp_path, server_kind):
    rng = random.Random(SEED)
    max_head = last_quiet_head(math.ceil(TRIALS * TRIAL_ESTIMATE_S * 1000 / BLOCK_INTERVAL_MS))
    table = tmp_path / "blocks"
    logs = tmp_path / "logs"
    print(f"seed={SEED} trials={TRIALS} max_head={max_head} table={table} logs={logs}")
    started = time.monotonic()
    with run_dev_server(*live_chain_args(max_head), kind=server_kind) as server:
        commits_seen = 0
        for trial in range(TRIALS):
            delay = rng.uniform(*KILL_AFTER_S)
            with running_loader(server.url, table, logs, f"trial-{trial:03d}") as loader:
                time.sleep(delay)
                exited = loader.proc.poll()
                assert exited is None, (
                    f"seed {SEED} trial {trial}: the loader exited by itself before SIGKILL "
                    f"at {delay:.3f} s\n{loader.describe()}")
                os.kill(loader.proc.pid, signal.SIGKILL)
                loader.proc.wait(timeout=LOADER_STOP_TIMEOUT_S)
                assert loader.proc.returncode == -signal.SIGKILL, loader.describe()
            out = loader.stdout().splitlines()
            commits = sum(1 for line in out if RESULT_RE.match(line) or REORG_RE.match(line))
            commits_seen += commits
            print(f"trial {trial}: SIGKILL after {delay:.3f} s, {commits} result lines"
                  + (f", last: {out[-1].replace(str(table), 'blocks')}" if out else ""))
        trials_s = time.monotonic() - started
        assert commits_seen > 0, "no trial ever committed: the kills come too early"

        # The chain stops at max_head; give the last run the time it needs to get there.
        chain_left_s = max(0.0, (max_head - INITIAL_HEAD) * BLOCK_INTERVAL_MS / 1000 - trials_s)
        finish(server.url, table, logs, "final", max_head, chain_left_s + 60)
        rows = check_final_table(table, server.url, max_head)
    latest, read_whole = check_every_version(table)
    print(f"{TRIALS} trials in {trials_s:.1f} s, {commits_seen} results before kills; "
          f"{rows} rows, {latest + 1} versions checked ({read_whole} read whole); "
          f"left by kills mid-commit: "
          f"{orphaned_files(table)} uncommitted data files, "
          f"{len(list((table / '_delta_log').glob('.ampdelta-tmp-*')))} temporary log files; "
          f"{time.monotonic() - started:.1f} s in all")


def wait_for_first_commit(loader: Loader, timeout_s: float = 30) -> None:
    """Wait until the loader has printed a commit line: SIGTERM must find a load under way
    (a signal that arrives during start-up is another test's business)."""
    deadline = time.monotonic() + timeout_s
    while not loader.stdout().strip():
        assert loader.proc.poll() is None, loader.describe()
        assert time.monotonic() < deadline, f"no commit in {timeout_s} s\n{loader.describe()}"
        time.sleep(0.05)


@pytest.mark.timeout(90)
@both_servers()
def test_sigterm_stops_after_the_current_commit(tmp_path, server_kind):
    max_head = last_quiet_head(200)  # about 4 s of chain
    table = tmp_path / "blocks"
    logs = tmp_path / "logs"
    with run_dev_server(*live_chain_args(max_head), kind=server_kind) as server:
        with running_loader(server.url, table, logs, "terminated") as loader:
            wait_for_first_commit(loader)
            time.sleep(0.3)  # into the load, between or inside commits
            assert loader.proc.poll() is None, loader.describe()
            loader.proc.send_signal(signal.SIGTERM)
            try:
                loader.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pytest.fail(f"no exit within 5 s of SIGTERM\n{loader.describe()}")
            # Terminated after its last commit: 143 (docs/operations.md).
            assert loader.proc.returncode == 143, loader.describe()
        lines = loader.stdout().splitlines()
        assert len(lines) >= 2, loader.describe()  # at least one commit, then the result
        final = RESULT_RE.match(lines[-1])
        assert final and final.group(3) is None, loader.describe()
        assert "runtime error" not in loader.stderr(), loader.describe()

        stopped = readers.read_deltalake(table)
        block_nums = stopped.column("block_num").to_pylist()
        check_prefix(block_nums, f"{table} after SIGTERM")
        last_commit = RESULT_RE.match(lines[-2])
        if last_commit and last_commit.group(4) is not None:
            # the last commit printed is the table's state: nothing after it was half-written
            assert max(block_nums) == int(last_commit.group(4)), loader.describe()
        assert max(block_nums) < max_head, "the chain was complete before SIGTERM"

        finish(server.url, table, logs, "restarted", max_head, 60)
        check_final_table(table, server.url, max_head)
    check_every_version(table)
