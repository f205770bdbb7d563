"""`ampdelta load` (batch) killed with SIGKILL at random moments of a large load.

A batch load commits once at its end, so whatever moment the loader dies at, deltalake must
read the table either at its old version (nothing of the load) or fully loaded; and once
`table vacuum --full` has run, no file the log does not reference and no temporary file or
write lease may remain.

The kill times come from random.Random(seed); the seed and every trial are printed.
AMPDELTA_BATCH_CRASH_TRIALS=N runs N trials, AMPDELTA_BATCH_CRASH_SEED=S replays a seed.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

import readers
from conftest import QUICKSTART_DATASET, cli_env, cli_path, run_dev_server

TRIALS = max(1, int(os.environ.get("AMPDELTA_BATCH_CRASH_TRIALS") or 30))
SEED = int(os.environ.get("AMPDELTA_BATCH_CRASH_SEED") or 20261201)
CHAIN_BLOCKS = 6000  # 48,000 transactions: a load of a few seconds under ASan
LOAD_SQL = f'SELECT * FROM "{QUICKSTART_DATASET}".transactions'
BASE_SQL = f'SELECT * FROM "{QUICKSTART_DATASET}".transactions WHERE block_num < 24000010'
# Many files per load, so kills land between files, mid-file and mid-commit.
LOAD_CONFIG = '{"max_rows_per_file": 4000, "optimize_after_write": false}'

@pytest.fixture
def read_table():
    """What deltalake sees: version, rows and data files of a table."""
    with readers.DeltaLakeChild() as child:
        yield child.read


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(cli_path()), *args], capture_output=True, text=True,
                          env=cli_env(), timeout=timeout, stdin=subprocess.DEVNULL)


def load_args(url: str, table: Path, sql: str, mode: str) -> list[str]:
    return [str(cli_path()), "load", "--server", url, "--table", str(table), "--sql", sql,
            "--mode", mode, "--config", LOAD_CONFIG]


def is_log_file(relative: str) -> bool:
    if not relative.startswith("_delta_log/"):
        return False
    name = relative[len("_delta_log/"):]
    return "/" not in name and not name.startswith(".") and (
        name == "_last_checkpoint" or name.endswith((".json", ".checkpoint.parquet", ".crc")))


def leftovers(table: Path, referenced: set[str]) -> list[str]:
    """Files that are neither the log nor data files the latest version references."""
    out = []
    for path in table.rglob("*"):
        if path.is_file():
            relative = path.relative_to(table).as_posix()
            if not is_log_file(relative) and relative not in referenced:
                out.append(relative)
    return sorted(out)


@pytest.mark.timeout(120 + 12 * TRIALS)
def test_kill_9_at_random_moments_leaves_the_old_or_the_new_table(tmp_path, read_table):
    rng = random.Random(SEED)
    print(f"seed={SEED} trials={TRIALS}")
    with run_dev_server("--blocks", str(CHAIN_BLOCKS)) as server:
        base = tmp_path / "base"
        made = cli("load", "--server", server.url, "--table", str(base), "--sql", BASE_SQL,
                   "--config", LOAD_CONFIG)
        assert made.returncode == 0, made.stderr
        before = read_table(base)
        # One full load, timed, gives the range of kill moments and the rows it adds.
        timed = tmp_path / "timed"
        shutil.copytree(base, timed)
        started = time.monotonic()
        full = subprocess.run(load_args(server.url, timed, LOAD_SQL, "append"),
                              capture_output=True, text=True, env=cli_env(), timeout=300)
        load_s = time.monotonic() - started
        assert full.returncode == 0, full.stderr
        load_rows = read_table(timed)["rows"] - before["rows"]
        assert load_rows > 0
        print(f"a load takes {load_s:.2f} s and adds {load_rows} rows")

        outcomes = {"old": 0, "new": 0}
        for trial in range(TRIALS):
            mode = "overwrite" if trial % 3 == 2 else "append"
            table = tmp_path / f"trial-{trial:03d}"
            shutil.copytree(base, table)
            delay = rng.uniform(0.02, load_s * 1.1)
            proc = subprocess.Popen(load_args(server.url, table, LOAD_SQL, mode),
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, env=cli_env())
            time.sleep(delay)
            finished = proc.poll() is not None
            if not finished:
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            # It may have finished between the poll and the kill.
            assert proc.returncode in (0, -signal.SIGKILL), proc.returncode
            finished = finished or proc.returncode == 0

            seen = read_table(table)
            new_rows = load_rows if mode == "overwrite" else before["rows"] + load_rows
            what = (f"seed {SEED} trial {trial} ({mode}, SIGKILL after {delay:.3f} s"
                    f"{', finished first' if finished else ''})")
            if seen["version"] == before["version"]:
                assert seen["rows"] == before["rows"], f"{what}: old version with {seen}"
                outcomes["old"] += 1
            else:
                assert seen["version"] == before["version"] + 1, f"{what}: {seen['version']}"
                assert seen["rows"] == new_rows, f"{what}: {seen['rows']} rows, not {new_rows}"
                outcomes["new"] += 1

            vacuum = cli("table", "vacuum", str(table), "--full", "--retention-hours", "0",
                         "--force")
            assert vacuum.returncode == 0, f"{what}: vacuum failed\n{vacuum.stderr}"
            after = read_table(table)
            assert after["rows"] == seen["rows"], f"{what}: vacuum changed the rows"
            left = leftovers(table, set(after["files"]))
            assert not left, f"{what}: left after vacuum: {left}"
            print(f"trial {trial}: {mode}, kill after {delay:.3f} s -> "
                  f"{'new' if seen['version'] != before['version'] else 'old'} version, "
                  f"vacuum: {vacuum.stdout.strip().splitlines()[-1]}")
            shutil.rmtree(table)
        print(f"outcomes: {outcomes}")
        assert outcomes["old"] > 0 and outcomes["new"] > 0, (
            f"the kills never hit both sides of the commit: {outcomes}")
