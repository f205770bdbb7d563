"""Liquid clustering by block number (`--cluster-by block_num`): the table records its
clustering columns as Spark does (writer features `clustering` + `domainMetadata`, domain
`delta.clustering`), `ampdelta table optimize` sorts overlapping files into files whose
block ranges follow each other, and Spark and DuckDB then skip files on block_num ranges.
"""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

import readers
from conftest import QUICKSTART_DATASET, QUICKSTART_FIRST, QUICKSTART_LAST, cli_env, cli_path
from test_stream_cursor_log import hex_hash, live_files, log_commits

TX_SQL = f'SELECT * FROM "{QUICKSTART_DATASET}".transactions'
# Overlapping loads: each file spans most of the chain, as unordered writers leave them.
OVERLAPPING = [(0, 59), (40, 99), (20, 79), (10, 89)]
PROBE = (QUICKSTART_FIRST + 30, QUICKSTART_FIRST + 35)
TARGET_SIZE = 60_000


def rows(table) -> collections.Counter:
    """The multiset of (block_num, tx_index, tx_hash) rows."""
    return collections.Counter(zip(table.column("block_num").to_pylist(),
                                   table.column("tx_index").to_pylist(),
                                   (hex_hash(h) for h in table.column("tx_hash").to_pylist())))


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(cli_path()), *args], capture_output=True, text=True,
                          env=cli_env(), timeout=180, stdin=subprocess.DEVNULL)


def describe(proc: subprocess.CompletedProcess) -> str:
    return f"{proc.args}\nexit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"


def load(url: str, table: Path, first: int, last: int, *extra: str) -> subprocess.CompletedProcess:
    sql = (f"{TX_SQL} WHERE block_num >= {QUICKSTART_FIRST + first} "
           f"AND block_num <= {QUICKSTART_FIRST + last}")
    return run_cli("load", "--server", url, "--table", str(table), "--sql", sql, "--quiet",
                   "--config", '{"optimize_after_write": false}', *extra)


def spark_files_read(table: Path) -> int:
    """Files Spark's scan reads for the PROBE range (its numFiles metric)."""
    spark = readers.spark_session()
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    df = (spark.read.format("delta").load(str(table))
          .where(f"block_num BETWEEN {PROBE[0]} AND {PROBE[1]}").select("block_num"))
    df.collect()
    leaves = df._jdf.queryExecution().executedPlan().collectLeaves()
    counts = [leaves.apply(i).metrics().get("numFiles").get().value()
              for i in range(leaves.size()) if leaves.apply(i).metrics().contains("numFiles")]
    assert len(counts) == 1, counts
    return counts[0]


def duckdb_files_read(table: Path) -> tuple[int, int]:
    """(files scanned, files in the table) for the PROBE range, from DuckDB's EXPLAIN
    ANALYZE of delta_scan (delta-kernel-rs prunes by the files' statistics)."""
    con = readers.duckdb_connect(readers.duckdb_delta_extension_path())
    try:
        plan = con.execute(
            f"EXPLAIN ANALYZE SELECT count(*) FROM delta_scan('{table}') "
            f"WHERE block_num BETWEEN {PROBE[0]} AND {PROBE[1]}").fetchall()[0][1]
    finally:
        con.close()
    found = re.search(r"Scanning Files: (\d+)/(\d+)", plan)
    assert found, plan
    return int(found.group(1)), int(found.group(2))


def block_ranges(table: Path) -> list[tuple[int, int]]:
    out = []
    for add in live_files(table).values():
        stats = json.loads(add["stats"])
        out.append((stats["minValues"]["block_num"], stats["maxValues"]["block_num"]))
    return sorted(out)


def test_optimize_clusters_overlapping_files_and_spark_and_duckdb_skip_files(
        tmp_path, quickstart_url):
    table = tmp_path / "transactions"
    for first, last in OVERLAPPING:
        proc = load(quickstart_url, table, first, last, "--cluster-by", "block_num")
        assert proc.returncode == 0, describe(proc)
    protocol = next(a["protocol"] for a in log_commits(table)[0] if "protocol" in a)
    assert {"clustering", "domainMetadata"} <= set(protocol["writerFeatures"])
    assert "readerFeatures" not in protocol, "clustering needs no reader feature"
    domains = [a["domainMetadata"] for actions in log_commits(table) for a in actions
               if "domainMetadata" in a]
    assert len(domains) == 1, "the clustering columns are recorded once"
    assert json.loads(domains[0]["configuration"])["clusteringColumns"] == [["block_num"]]
    spark = readers.spark_session()
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{table}`").collect()[0]
    assert list(detail["clusteringColumns"]) == ["block_num"]

    before = rows(readers.read_deltalake(table))
    spark_before = spark_files_read(table)
    duck_before = duckdb_files_read(table)
    assert spark_before == 3 and duck_before == (3, 4), (spark_before, duck_before)

    proc = run_cli("table", "optimize", str(table), "--target-size", str(TARGET_SIZE))
    assert proc.returncode == 0, describe(proc)
    files = live_files(table)
    assert len(files) > 4, f"optimize wrote {len(files)} files"
    assert all(add.get("clusteringProvider") == "liquid" for add in files.values())
    ranges = block_ranges(table)
    for (_, high), (low, _) in zip(ranges, ranges[1:]):
        assert high <= low, f"clustered files overlap: {ranges}"
    optimize = [a["commitInfo"] for a in log_commits(table)[-1] if "commitInfo" in a][0]
    assert optimize["operationParameters"]["clusterBy"] == '["block_num"]'

    assert rows(readers.read_deltalake(table)) == before
    assert rows(readers.read_spark(table)) == before
    assert rows(readers.read_duckdb(table)) == before
    assert rows(readers.read_polars(table)) == before
    spark_after = spark_files_read(table)
    duck_after = duckdb_files_read(table)
    print(f"files read for block_num {PROBE}: Spark {spark_before} -> {spark_after}, "
          f"DuckDB {duck_before} -> {duck_after}")
    assert spark_after <= 2 and duck_after[0] <= 2 and duck_after[1] == len(files)

    # Spark sees a clustered table: its own OPTIMIZE clusters by the same column.
    spark.sql(f"OPTIMIZE delta.`{table}`").collect()
    spark_optimize = [a["commitInfo"] for a in log_commits(table)[-1] if "commitInfo" in a][0]
    assert spark_optimize["operationParameters"]["clusterBy"] == '["block_num"]'
    proc = load(quickstart_url, table, 0, 9)
    assert proc.returncode == 0, describe(proc)  # ampdelta appends after Spark's optimize


def test_a_streamed_clustered_table_skips_files_after_an_optimize(tmp_path, streaming_server):
    table = tmp_path / "blocks"
    proc = run_cli("load", "--server", streaming_server.url, "--table", str(table), "--sql",
                   TX_SQL, "--stream", "--until-block", str(QUICKSTART_LAST),
                   "--commit-interval-ms", "0", "--cluster-by", "block_num", "--cursor-in-log",
                   "--config", '{"optimize_after_write": false}')
    assert proc.returncode == 0, describe(proc)
    before = rows(readers.read_deltalake(table))
    spark_before = spark_files_read(table)
    proc = run_cli("table", "optimize", str(table), "--target-size", str(TARGET_SIZE))
    assert proc.returncode == 0, describe(proc)
    assert rows(readers.read_spark(table)) == before
    files = live_files(table)
    spark_after = spark_files_read(table)
    duck_after = duckdb_files_read(table)
    print(f"stream: {len(files)} files; Spark read {spark_before} -> {spark_after}, "
          f"DuckDB {duck_after}")
    assert spark_after <= 2 and duck_after[0] <= 2 and duck_after[1] == len(files) > 2
    # The stream's state survives: a resume has nothing to load and exits at once.
    proc = run_cli("load", "--server", streaming_server.url, "--table", str(table), "--sql",
                   TX_SQL, "--stream", "--until-block", str(QUICKSTART_LAST),
                   "--config", '{"optimize_after_write": false}')
    assert proc.returncode == 0, describe(proc)
    assert rows(readers.read_deltalake(table)) == before


@pytest.mark.parametrize("first,extra,message", [
    ((), ("--cluster-by", "nosuch"), "cluster_by names column 'nosuch'"),
    ((), ("--cluster-by", "block_num,BLOCK_NUM"), "twice"),
    ((), ("--cluster-by", "input"), "cannot cluster by column 'input'"),
    (("--partition-by", "type"), ("--cluster-by", "block_num"),
     "cannot be both partitioned and clustered"),
], ids=["missing-column", "duplicate", "binary-column", "partitioned"])
def test_a_bad_clustering_is_refused_and_the_table_stays_as_it_was(tmp_path, quickstart_url,
                                                                   first, extra, message):
    table = tmp_path / "t"
    proc = load(quickstart_url, table, 0, 9, *first)
    assert proc.returncode == 0, describe(proc)
    log = sorted(os.listdir(table / "_delta_log"))
    proc = load(quickstart_url, table, 10, 19, *extra)
    assert proc.returncode != 0 and message in proc.stdout + proc.stderr, describe(proc)
    assert sorted(os.listdir(table / "_delta_log")) == log


def test_clustering_an_existing_table_records_the_columns_and_keeps_its_rows(
        tmp_path, quickstart_url):
    table = tmp_path / "t"
    assert load(quickstart_url, table, 0, 49).returncode == 0
    proc = load(quickstart_url, table, 50, 99, "--cluster-by", "block_num")
    assert proc.returncode == 0, describe(proc)
    commit = log_commits(table)[-1]
    protocol = [a["protocol"] for a in commit if "protocol" in a]
    assert protocol and {"clustering", "domainMetadata"} <= set(protocol[0]["writerFeatures"])
    detail = readers.spark_session().sql(f"DESCRIBE DETAIL delta.`{table}`").collect()[0]
    assert list(detail["clusteringColumns"]) == ["block_num"]
    assert sorted({b for b, _, _ in rows(readers.read_spark(table))}) == \
        list(range(QUICKSTART_FIRST, QUICKSTART_LAST + 1))
