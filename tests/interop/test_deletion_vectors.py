"""Deletion vectors written by ampdelta (`delta.enableDeletionVectors=true`): deletes,
merges and reorg undos mark rows in a DV instead of rewriting the file, and Spark
(delta-spark, the reference), DuckDB (delta-kernel-rs) and Polars read exactly the rows
left. deltalake 1.6.6 refuses the deletionVectors reader feature (docs/downstream.md).

Spark and ampdelta also take turns on the same file: each adds to the other's DV.
"""

from __future__ import annotations

import collections
import json
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

import readers
from conftest import QUICKSTART_DATASET, QUICKSTART_FIRST, QUICKSTART_LAST, cli_env, \
    cli_path, run_dev_server
from test_stream_crash import canonical_hashes, hex_hash, last_quiet_head, live_chain_args

BLOCKS_SQL = f'SELECT block_num, hash, gas_used FROM "{QUICKSTART_DATASET}".blocks'
DV = "delta.enableDeletionVectors=true"
CDF = "delta.enableChangeDataFeed=true"
# Readers that apply deletion vectors; deltalake 1.6.6 refuses the table instead.
DV_READERS = ("spark", "duckdb", "polars")


def run_cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([str(cli_path()), *args], capture_output=True, text=True,
                          env=cli_env(), timeout=timeout, stdin=subprocess.DEVNULL)


def check(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert proc.returncode == 0, \
        f"{proc.args}\nexit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc


def blocks(first: int, last: int) -> str:
    return f"{BLOCKS_SQL} WHERE block_num >= {first} AND block_num <= {last}"


def load(url: str, table: Path, sql: str, *extra: str) -> None:
    check(run_cli("load", "--server", url, "--table", str(table), "--sql", sql, "--quiet",
                  "--config", '{"optimize_after_write": false}', *extra))


def commit_actions(table: Path, version: int) -> list[dict]:
    path = table / "_delta_log" / f"{version:020d}.json"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def latest_version(table: Path) -> int:
    return max(int(p.stem) for p in (table / "_delta_log").glob("*.json"))


def marked_adds(table: Path, version: int) -> list[dict]:
    """The adds of a commit that carry a deletion vector."""
    return [a["add"] for a in commit_actions(table, version)
            if "add" in a and a["add"].get("deletionVector")]


def data_files(table: Path) -> set[str]:
    return {str(p.relative_to(table)) for p in table.rglob("*.parquet")
            if not str(p.relative_to(table)).startswith(("_delta_log", "_change_data"))}


def rows(table: pa.Table) -> collections.Counter:
    return collections.Counter(zip(table.column("block_num").to_pylist(),
                                   (hex_hash(h) for h in table.column("hash").to_pylist())))


def assert_readers_agree(table: Path, expected: collections.Counter) -> None:
    for name in DV_READERS:
        got = rows(readers.READERS[name](table))
        assert got == expected, (name, sorted(set(got) ^ set(expected))[:10])
    with pytest.raises(Exception, match="deletionVectors"):
        readers.read_deltalake(table)


def spark_sql(statement: str) -> None:
    readers.spark_session().sql(statement).collect()


@pytest.mark.timeout(300)  # Spark's start and its DELETE
def test_deletes_and_merges_mark_rows_and_spark_and_ampdelta_take_turns(tmp_path,
                                                                        quickstart_url):
    table = tmp_path / "t"
    load(quickstart_url, table, blocks(QUICKSTART_FIRST, QUICKSTART_LAST), "--property", DV)
    canonical = canonical_hashes(quickstart_url)
    expected = collections.Counter({(b, h) for b, h in canonical.items()
                                    if QUICKSTART_FIRST <= b <= QUICKSTART_LAST})
    files = data_files(table)

    # A delete of some rows: the file stays, a DV marks them.
    cut = QUICKSTART_FIRST + 10
    check(run_cli("table", "delete", str(table), "--where", f"block_num < {cut}"))
    assert data_files(table) == files, "a delete on a DV table writes no data file"
    marked = marked_adds(table, 1)
    assert len(marked) == 1 and marked[0]["deletionVector"]["cardinality"] == 10, marked
    assert json.loads(marked[0]["stats"])["tightBounds"] is False
    expected = collections.Counter({k: v for k, v in expected.items() if k[0] >= cut})
    assert_readers_agree(table, expected)

    # A merge that replaces 5 rows and inserts none marks the 5 replaced ones.
    upper = QUICKSTART_LAST - 4
    load(quickstart_url, table, blocks(upper, QUICKSTART_LAST), "--mode", "merge",
         "--merge-keys", "block_num")
    merged = marked_adds(table, 2)
    assert len(merged) == 1 and merged[0]["deletionVector"]["cardinality"] == 15, merged
    assert_readers_agree(table, expected)

    # Spark deletes from the same file: it adds to ampdelta's DV.
    spark_block = QUICKSTART_FIRST + 50
    spark_sql(f"DELETE FROM delta.`{table}` WHERE block_num = {spark_block}")
    spark_version = latest_version(table)
    spark_marked = marked_adds(table, spark_version)
    assert spark_marked and sum(a["deletionVector"]["cardinality"] for a in spark_marked) \
        >= 16, spark_marked
    expected = collections.Counter({k: v for k, v in expected.items() if k[0] != spark_block})
    assert_readers_agree(table, expected)

    # ampdelta deletes again: it reads Spark's DV and adds to it.
    check(run_cli("table", "delete", str(table), "--where",
                  f"block_num BETWEEN {spark_block + 1} AND {spark_block + 2}"))
    again = marked_adds(table, latest_version(table))
    assert sum(a["deletionVector"]["cardinality"] for a in again) >= 18, again
    expected = collections.Counter({k: v for k, v in expected.items()
                                    if k[0] not in (spark_block + 1, spark_block + 2)})
    assert_readers_agree(table, expected)

    # Optimize writes the rows left without DVs; a vacuum then removes every DV file.
    check(run_cli("table", "optimize", str(table)))
    live = [a["add"] for a in commit_actions(table, latest_version(table)) if "add" in a]
    assert live and not any(a.get("deletionVector") for a in live), live
    check(run_cli("table", "vacuum", str(table), "--retention-hours", "0", "--force"))
    assert not list(table.rglob("deletion_vector_*.bin")), "vacuum left DV files behind"
    assert_readers_agree(table, expected)


MIN_REORGS = 5


@pytest.mark.timeout(400)
def test_a_stream_undoes_reorgs_with_deletion_vectors_and_the_change_feed_agrees(tmp_path):
    """A stream through at least 5 reorgs on a table with deletion vectors and the change
    data feed: undos mark rows instead of rewriting files, Spark, DuckDB and Polars read
    exactly the canonical chain, and Spark's change feed replays to it."""
    readers.spark_session()  # started before the chain: it takes a while
    max_head = last_quiet_head(200)
    table = tmp_path / "blocks"
    # The chain grows only while the stream keeps up (--await-streams): every reorg is met.
    with run_dev_server(*live_chain_args(max_head), "--await-streams") as server:
        proc = run_cli("load", "--server", server.url, "--table", str(table), "--sql",
                       BLOCKS_SQL, "--stream", "--commit-interval-ms", "50", "--until-block",
                       str(max_head), "--property", DV, "--property", CDF, "--config",
                       '{"optimize_after_write": false}', timeout=300)
        check(proc)
        chain = canonical_hashes(server.url)
        # `verify` reads the rows through their deletion vectors: clean against the chain.
        verified = run_cli("verify", str(table), "--server", server.url, "--dataset",
                           QUICKSTART_DATASET, "--json")
        check(verified)
        assert json.loads(verified.stdout)["findings"] == [], verified.stdout

    undos = [v for v in range(latest_version(table) + 1)
             if any("commitInfo" in a and a["commitInfo"]["operation"] == "DELETE"
                    for a in commit_actions(table, v))]
    assert len(undos) >= MIN_REORGS, f"only {len(undos)} reorg undos"
    marking = [v for v in undos if marked_adds(table, v)]
    assert marking, "no undo marked rows in a deletion vector"
    for version in marking:
        for add in marked_adds(table, version):
            removed = [a["remove"] for a in commit_actions(table, version)
                       if "remove" in a and a["remove"]["path"] == add["path"]]
            assert removed, f"version {version} re-adds {add['path']} without removing it"
    canonical = collections.Counter(chain.items())
    assert_readers_agree(table, canonical)

    spark = readers.spark_session()
    changes = (spark.read.format("delta").option("readChangeFeed", "true")
               .option("startingVersion", 0).load(str(table))
               .select("block_num", "hash", "_change_type").toArrow())
    replayed: collections.Counter = collections.Counter()
    for block, block_hash, kind in zip(changes.column("block_num").to_pylist(),
                                       changes.column("hash").to_pylist(),
                                       changes.column("_change_type").to_pylist()):
        key = (block, hex_hash(block_hash))
        if kind in ("insert", "update_postimage"):
            replayed[key] += 1
        elif kind in ("delete", "update_preimage"):
            replayed[key] -= 1
    assert +replayed == canonical

    # A deletion vector gone from a copy of the table: verify names it.
    copy = tmp_path / "copy"
    shutil.copytree(table, copy)
    dv_files = sorted(copy.rglob("deletion_vector_*.bin"))
    assert dv_files
    for dv in dv_files:
        dv.unlink()
    broken = run_cli("verify", str(copy), "--json")
    assert broken.returncode == 7, broken.stdout + broken.stderr
    counts = json.loads(broken.stdout)["counts"]
    assert counts.get("missing_file", 0) >= 1, counts
