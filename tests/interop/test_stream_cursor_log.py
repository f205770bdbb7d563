"""The stream's cursor in the table's log (`--cursor-in-log`, domain metadata): resume and
reorg undo survive another engine's compaction, which writes files without ampdelta's
block-range tags.

The proof runs Spark (delta-spark, the reference implementation) between two runs of a
stream: Spark's OPTIMIZE compacts every file the stream wrote and drops their tags; the
chain meanwhile replaces blocks the table holds; the stream resumes from the cursor in the
log, undoes the reorg inside Spark's compacted files by block number, and the table ends
with exactly the canonical chain, as deltalake, DuckDB and Spark read it.
"""

from __future__ import annotations

import collections
import json
import subprocess
from pathlib import Path

import pyarrow as pa

import readers
from conftest import QUICKSTART_DATASET, cli_env, cli_path, run_dev_server
from test_stream_crash import INITIAL_HEAD, REORG_DEPTH, REORG_EVERY, canonical_hashes, \
    hex_hash, live_chain_args

BLOCKS_SQL = f'SELECT block_num, hash, gas_used FROM "{QUICKSTART_DATASET}".blocks'
RANGE_TAGS = ("ampdelta.blockRanges.", "ampdelta.blockSpans.")
CURSOR_DOMAIN = "ampdelta.stream."
# The chain grows only while a stream is open and has been sent all of it (--await-streams),
# so the first run is sent block STOP alone, commits it and ends (--until-block) before it
# could read block STOP + 1, whose arrival replaces STOP - 1 and STOP; however slow it is.
REORG_HEAD = INITIAL_HEAD + 2 * REORG_EVERY  # the chain replaces the newest blocks here
STOP = REORG_HEAD - 1
FINAL_HEAD = REORG_HEAD + 20


def run_stream(url: str, table: Path, until: int, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(cli_path()), "load", "--server", url, "--table", str(table), "--sql", BLOCKS_SQL,
         "--stream", "--commit-interval-ms", "50", "--until-block", str(until),
         "--config", '{"optimize_after_write": false}', *extra],
        capture_output=True, text=True, env=cli_env(), timeout=180, stdin=subprocess.DEVNULL)


def describe(proc: subprocess.CompletedProcess) -> str:
    return f"{proc.args}\nexit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"


def log_commits(table: Path) -> list[list[dict]]:
    """Every commit's actions, in version order (every JSON commit is still there)."""
    paths = sorted((table / "_delta_log").glob("*.json"))
    assert [int(p.stem) for p in paths] == list(range(len(paths)))
    return [[json.loads(line) for line in p.read_text().splitlines() if line.strip()]
            for p in paths]


def live_files(table: Path) -> dict[str, dict]:
    files: dict[str, dict] = {}
    for actions in log_commits(table):
        for action in actions:
            if "add" in action:
                files[action["add"]["path"]] = action["add"]
            elif "remove" in action:
                files.pop(action["remove"]["path"], None)
    return files


def cursor_record(table: Path) -> dict:
    record = None
    for actions in log_commits(table):
        for action in actions:
            domain = action.get("domainMetadata")
            if domain and domain["domain"].startswith(CURSOR_DOMAIN):
                record = None if domain["removed"] else json.loads(domain["configuration"])
    assert record is not None, "the log holds no stream cursor"
    return record


def rows(table: pa.Table) -> collections.Counter:
    return collections.Counter(zip(table.column("block_num").to_pylist(),
                                   (hex_hash(h) for h in table.column("hash").to_pylist())))


def test_a_stream_resumes_and_undoes_a_reorg_inside_files_spark_compacted(tmp_path):
    spark = readers.spark_session()  # started before the chain: it takes a while
    table = tmp_path / "blocks"
    with run_dev_server(*live_chain_args(FINAL_HEAD), "--await-streams") as server:
        first = run_stream(server.url, table, STOP, "--cursor-in-log")
        assert first.returncode == 0, describe(first)
        held = rows(readers.read_deltalake(table))
        assert max(block for block, _ in held) == STOP, "the first run went past its stop"
        protocol = next(a["protocol"] for a in log_commits(table)[0] if "protocol" in a)
        assert "domainMetadata" in protocol["writerFeatures"]
        assert "readerFeatures" not in protocol, "the cursor needs no reader feature"
        recorded = cursor_record(table)["networks"]
        assert [r["last"]["end"] for r in recorded.values()] == [STOP]

        spark.sql(f"OPTIMIZE delta.`{table}`").collect()
        compacted = live_files(table)
        assert len(compacted) == 1, f"Spark's OPTIMIZE left {len(compacted)} files"
        assert not any(key.startswith(RANGE_TAGS) for add in compacted.values()
                       for key in (add.get("tags") or {})), "Spark kept ampdelta's tags"

        # Another stream drives the chain to REORG_HEAD (replacing STOP - 1 and STOP), so
        # the second run resumes from a cursor whose block the chain no longer has.
        driver = run_stream(server.url, tmp_path / "driver", REORG_HEAD)
        assert driver.returncode == 0, describe(driver)
        assert max(canonical_hashes(server.url)) >= REORG_HEAD
        second = run_stream(server.url, table, FINAL_HEAD)
        assert second.returncode == 0, describe(second)
        chain = canonical_hashes(server.url)

    replaced = [b for b in range(REORG_HEAD - REORG_DEPTH + 1, STOP + 1)
                if (b, chain[b]) not in held]
    assert replaced, "the reorg replaced none of the blocks the first run loaded"
    assert "Reorg detected" in second.stdout, describe(second)
    # The undo removed Spark's compacted file (it held the replaced blocks' rows).
    undos = [actions for actions in log_commits(table)
             if any(a.get("commitInfo", {}).get("operation") == "DELETE" for a in actions)]
    assert undos, "no reorg undo was committed"
    removed = {a["remove"]["path"] for actions in undos for a in actions if "remove" in a}
    assert set(compacted) <= removed, "the undo did not rewrite the compacted file"

    canonical = collections.Counter(chain.items())
    assert rows(readers.read_deltalake(table)) == canonical
    assert rows(readers.read_duckdb(table)) == canonical
    assert rows(readers.read_spark(table)) == canonical
    assert cursor_record(table)["networks"]["mainnet"]["last"]["end"] == FINAL_HEAD


def test_a_batch_load_refuses_to_record_a_cursor_it_does_not_have(tmp_path):
    """`--cursor-in-log` without `--stream` is a usage error, not a flag silently ignored;
    nothing is created."""
    table = tmp_path / "t"
    proc = subprocess.run(
        [str(cli_path()), "load", "--server", "grpc://127.0.0.1:1", "--table", str(table),
         "--sql", BLOCKS_SQL, "--cursor-in-log"],
        capture_output=True, text=True, env=cli_env(), timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, describe(proc)
    assert "--cursor-in-log records a stream's cursor" in proc.stderr, describe(proc)
    assert not table.exists()
