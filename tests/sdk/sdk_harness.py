"""Helpers of the tests that drive ampdelta through the real Amp SDK (tests/sdk): a user's
SDK streaming script run as a process (scripts/sdk_stream.py) and stopped as a user stops
it (Ctrl-C, or kill -9), and what a table's versions say about it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from deltalake import DeltaTable

SDK_STREAM = Path(__file__).resolve().parent / "scripts" / "sdk_stream.py"
QUICKSTART_FIRST = 24_000_000


class SdkStream:
    """`amp.Client(url).sql(query).load(connection, destination, stream=True)` with
    ampdelta registered, in its own process; its results as they come."""

    def __init__(self, url: str, table: Path, destination: str, connection: str,
                 query: str, **keywords):
        self.args = [sys.executable, str(SDK_STREAM), url, str(table), destination,
                     connection, query, json.dumps(keywords)]
        self.results: list[dict] = []
        self.stderr_lines: list[str] = []
        self.exit_code: int | None = None

    def __enter__(self) -> "SdkStream":
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, text=True, env=env)
        self._readers = [threading.Thread(target=self._read, args=(self.proc.stdout, True)),
                         threading.Thread(target=self._read, args=(self.proc.stderr, False))]
        for reader in self._readers:
            reader.start()
        return self

    def _read(self, pipe, results: bool) -> None:
        for line in pipe:
            if results and line.startswith("{"):
                self.results.append(json.loads(line))
            elif not results:
                self.stderr_lines.append(line)

    def wait_for(self, condition, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if condition(self.results):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"{what}: not within {timeout_s} s (exit {self.proc.poll()})\n"
                             f"results: {self.results}\n{self.stderr_tail()}")

    def commits(self) -> list[dict]:
        return [r for r in self.results if r["success"] and not r["is_reorg"] and r["rows"] > 0]

    def interrupt(self) -> int:
        """Ctrl-C, as a user stops the SDK's stream; the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        return self._finish(60)

    def kill(self) -> int:
        """kill -9 at whatever instant."""
        if self.proc.poll() is None:
            self.proc.kill()
        return self._finish(30)

    def _finish(self, timeout_s: float) -> int:
        try:
            self.exit_code = self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.exit_code = self.proc.wait()
            raise AssertionError(f"the SDK stream did not stop within {timeout_s} s\n"
                                 f"{self.stderr_tail()}")
        for reader in self._readers:
            reader.join(timeout=10)
        return self.exit_code

    def stderr_tail(self) -> str:
        return "stderr:\n" + "".join(self.stderr_lines[-40:])

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:
            self.kill()


def block_numbers(table: Path, version: int | None = None) -> list[int]:
    return sorted(DeltaTable(str(table), version=version)
                  .to_pyarrow_table(columns=["block_num"]).column("block_num").to_pylist())


def assert_every_block_once(table: Path, first: int = QUICKSTART_FIRST) -> list[int]:
    """The table holds each block from `first` to its highest exactly once."""
    blocks = block_numbers(table)
    assert blocks, "the table is empty"
    duplicates = sorted({b for b in blocks if blocks.count(b) > 1})
    assert not duplicates, f"blocks loaded twice: {duplicates[:20]}"
    missing = sorted(set(range(first, blocks[-1] + 1)) - set(blocks))
    assert not missing, f"blocks missing: {missing[:20]}"
    return blocks


def versions(table: Path, rows: bool = True) -> list[dict]:
    """The table's commits, oldest first, each with its operation, parameters and (unless
    `rows` is False) the rows a reader sees at it."""
    out = []
    for commit in sorted(DeltaTable(str(table)).history(), key=lambda c: c["version"]):
        out.append({"version": commit["version"], "operation": commit["operation"],
                    "parameters": commit.get("operationParameters") or {}})
        if rows:
            out[-1]["rows"] = len(block_numbers(table, commit["version"]))
    return out


def is_reorg_undo(commit: dict) -> bool:
    return commit["operation"] == "DELETE" and "reorg:" in str(commit["parameters"])


def rows_per_version(table: Path) -> dict[int, int]:
    """The rows a reader sees at each version, by replaying the table's commit files and
    reading each data file's Parquet footer once (a version-by-version read through
    deltalake is quadratic: a 30-minute soak leaves thousands of versions). A file with a
    deletion vector has its version read through deltalake instead."""
    import pyarrow.parquet as pq

    live: dict[str, int] = {}
    footers: dict[str, int] = {}
    counts: dict[int, int] = {}
    for commit in sorted((table / "_delta_log").glob("*.json")):
        version = int(commit.stem)
        has_deletion_vector = False
        for line in commit.read_text().splitlines():
            action = json.loads(line) if line.strip() else {}
            if "remove" in action:
                live.pop(action["remove"]["path"], None)
            if "add" in action:
                path = action["add"]["path"]
                if path not in footers:
                    footers[path] = pq.ParquetFile(table / path).metadata.num_rows
                live[path] = footers[path]
                has_deletion_vector |= bool(action["add"].get("deletionVector"))
        counts[version] = (len(block_numbers(table, version)) if has_deletion_vector
                           else sum(live.values()))
    return counts


def assert_no_version_emptier_outside_reorgs(table: Path) -> list[dict]:
    """No version holds fewer rows than both its neighbours unless it is a reorg's undo:
    a reader at any version sees at least what was committed before (issue 51)."""
    history = versions(table, rows=False)
    counts = rows_per_version(table)
    assert counts[history[-1]["version"]] == len(block_numbers(table)), \
        "the log replay disagrees with deltalake on the table's rows"
    for commit in history:
        commit["rows"] = counts[commit["version"]]
    for before, commit, after in zip(history, history[1:], history[2:]):
        if commit["rows"] < before["rows"] and commit["rows"] < after["rows"]:
            assert is_reorg_undo(commit), (
                f"version {commit['version']} ({commit['operation']} "
                f"{commit['parameters']}) holds {commit['rows']} rows, fewer than "
                f"{before['rows']} before and {after['rows']} after:\n" +
                "\n".join(f"{c['version']} {c['operation']} {c['rows']}" for c in history))
    return history


def canonical_chain(cli: Path, env: dict, url: str, dataset: str) -> dict[int, str]:
    """block_num -> hash ("0x…") of the server's chain now (a batch query, as CSV)."""
    import csv
    import io

    proc = subprocess.run([str(cli), "query", "--server", url, "--format", "csv", "--sql",
                           f'SELECT block_num, hash FROM "{dataset}".blocks'],
                          capture_output=True, text=True, env=env, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    records = list(csv.reader(io.StringIO(proc.stdout, newline="")))
    return {int(number): block_hash.lower() for number, block_hash in records[1:]}


def table_chain(table: Path) -> dict[int, str]:
    """block_num -> hash of the table's rows (each block once, or the assertion fails)."""
    rows = DeltaTable(str(table)).to_pyarrow_table(columns=["block_num", "hash"]).to_pylist()
    chain: dict[int, str] = {}
    for row in rows:
        assert row["block_num"] not in chain, f"block {row['block_num']} loaded twice"
        chain[row["block_num"]] = "0x" + bytes(row["hash"]).hex()
    return chain
