"""Identity columns Spark makes (`BIGINT GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY`, writer
feature `identityColumns`): ampdelta gives the rows it adds values `start + k * step` beyond the
high-water mark and records the new mark in the same commit, keeps the values of rows it
copies (delete, optimize, a merge's updated rows), refuses values provided for an ALWAYS
column, keeps the mark across a restore, and never commits a value twice under concurrent
writers; Spark reads back and keeps numbering after ampdelta.
"""
from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pytest

import readers
from table_cli import arrow_file, blocks_of, ok, run_cli, stream_through_reorgs


def write_names(tmp_path: Path, table: Path, names: list[str]) -> subprocess.CompletedProcess:
    return run_cli("table", "write", table, "--input",
                   arrow_file(tmp_path, pa.table({"name": pa.array(names, pa.utf8())})))


def identity_metadata(table: Path, column: str = "id") -> dict:
    schemas = [json.loads(line)["metaData"]["schemaString"]
               for path in sorted((table / "_delta_log").glob("*.json"))
               for line in path.read_text().splitlines() if '"metaData"' in line]
    fields = {f["name"]: f for f in json.loads(schemas[-1])["fields"]}
    return fields[column]["metadata"]


def rows(table: Path, reader: str = "spark") -> list[tuple]:
    return sorted((r["id"], r["name"]) for r in readers.READERS[reader](table).to_pylist())


def log(table: Path) -> list[str]:
    return sorted(p.name for p in (table / "_delta_log").iterdir())


def spark_identity_table(table: Path, generated: str) -> None:
    spark = readers.spark_session()
    spark.sql(f"CREATE TABLE delta.`{table}` (id BIGINT GENERATED {generated} AS IDENTITY "
              "(START WITH 10 INCREMENT BY 5), name STRING) USING delta")
    spark.sql(f"INSERT INTO delta.`{table}` (name) VALUES ('a'), ('b')")


def test_ampdelta_numbers_its_rows_after_spark_and_spark_after_ampdelta(tmp_path):
    table = tmp_path / "always"
    spark_identity_table(table, "ALWAYS")
    spark_max = max(i for i, _ in rows(table))
    ok("table", "write", table, "--input",
       arrow_file(tmp_path, pa.table({"name": ["c", "d", "e"]})))
    got = rows(table)
    ids = [i for i, _ in got]
    assert len(set(ids)) == 5 and all((i - 10) % 5 == 0 for i in ids), got
    ours = sorted(i for i, name in got if name in "cde")
    assert min(ours) > spark_max, got
    assert identity_metadata(table)["delta.identity.highWaterMark"] == max(ours)
    # Delete, optimize and a checkpoint copy rows: their values stay.
    ok("table", "delete", table, "--where", "name = 'd'")
    ok("table", "optimize", table)
    ok("table", "checkpoint", table)
    kept = [r for r in got if r[1] != "d"]
    for reader in ("spark", "duckdb", "polars", "deltalake"):
        assert rows(table, reader) == kept, reader
    # Spark numbers on from ampdelta's mark.
    readers.spark_session().sql(f"INSERT INTO delta.`{table}` (name) VALUES ('f')")
    after = dict((name, i) for i, name in rows(table))
    assert after["f"] > max(ours), after


def test_values_given_for_an_always_column_are_refused_with_the_table_unchanged(tmp_path):
    table = tmp_path / "always"
    spark_identity_table(table, "ALWAYS")
    before = log(table)
    refused = run_cli("table", "write", table, "--input",
                      arrow_file(tmp_path, pa.table({"id": [1], "name": ["x"]})))
    assert refused.returncode == 2, refused.stderr
    assert "column id is GENERATED ALWAYS AS IDENTITY" in refused.stderr, refused.stderr
    # Differently cased, still the same column.
    cased = run_cli("table", "write", table, "--input",
                    arrow_file(tmp_path, pa.table({"ID": [1], "name": ["x"]})))
    assert cased.returncode == 2, cased.stderr
    assert log(table) == before
    assert len(rows(table)) == 2


def test_a_by_default_column_keeps_given_values_and_numbers_the_rest(tmp_path):
    table = tmp_path / "by-default"
    spark_identity_table(table, "BY DEFAULT")
    ok("table", "write", table, "--input",
       arrow_file(tmp_path, pa.table({"id": [1000, 1001], "name": ["x", "y"]})))
    assert write_names(tmp_path, table, ["z"]).returncode == 0
    got = dict((name, i) for i, name in rows(table))
    assert got["x"] == 1000 and got["y"] == 1001, got
    assert (got["z"] - 10) % 5 == 0 and got["z"] > max(got["a"], got["b"]), got


def test_concurrent_writers_never_commit_the_same_value(tmp_path):
    table = tmp_path / "contended"
    spark_identity_table(table, "ALWAYS")
    with ThreadPoolExecutor(4) as pool:
        done = list(pool.map(lambda n: write_names(tmp_path, table, [f"w{n}-{i}" for i in
                                                                     range(50)]), range(4)))
    # A writer that lost to another's mark fails as a conflict (exit 5), the table
    # without its rows.
    assert all(d.returncode in (0, 5) for d in done), [d.stderr for d in done]
    committed = sum(d.returncode == 0 for d in done)
    assert committed >= 1
    got = rows(table)
    ids = [i for i, _ in got]
    assert len(ids) == 2 + 50 * committed and len(set(ids)) == len(ids)
    assert identity_metadata(table)["delta.identity.highWaterMark"] == max(ids)


def test_a_restore_keeps_the_mark_of_values_handed_out_since(tmp_path):
    table = tmp_path / "restored"
    spark_identity_table(table, "ALWAYS")
    version = len([p for p in log(table) if p.endswith(".json")]) - 1
    assert write_names(tmp_path, table, ["c", "d"]).returncode == 0
    mark = identity_metadata(table)["delta.identity.highWaterMark"]
    ok("table", "restore", table, "--version", version)
    assert identity_metadata(table)["delta.identity.highWaterMark"] == mark
    readers.spark_session().sql(f"INSERT INTO delta.`{table}` (name) VALUES ('e')")
    assert dict((name, i) for i, name in rows(table))["e"] > mark


def test_a_restore_finds_the_mark_of_a_column_renamed_since(tmp_path):
    # Column mapping: the restored version names the column `id`, the latest `rid`.
    table = tmp_path / "renamed"
    spark = readers.spark_session()
    spark.sql(f"CREATE TABLE delta.`{table}` (id BIGINT GENERATED ALWAYS AS IDENTITY, "
              "name STRING) USING delta TBLPROPERTIES ('delta.columnMapping.mode'='name')")
    spark.sql(f"INSERT INTO delta.`{table}` (name) VALUES ('a')")
    version = len([p for p in log(table) if p.endswith(".json")]) - 1
    spark.sql(f"ALTER TABLE delta.`{table}` RENAME COLUMN id TO rid")
    assert write_names(tmp_path, table, ["b", "c", "d"]).returncode == 0
    mark = identity_metadata(table, "rid")["delta.identity.highWaterMark"]
    ok("table", "restore", table, "--version", version)
    assert identity_metadata(table)["delta.identity.highWaterMark"] == mark
    spark.sql(f"INSERT INTO delta.`{table}` (name) VALUES ('e')")
    assert dict((name, i) for i, name in rows(table))["e"] > mark


@pytest.mark.parametrize("options", [[], ["--no-merge-schema"]])
def test_a_not_null_identity_column_is_computed_without_merging_schemas(tmp_path, options):
    table = tmp_path / "not_null"
    readers.spark_session().sql(
        f"CREATE TABLE delta.`{table}` (id BIGINT NOT NULL GENERATED ALWAYS AS IDENTITY, "
        "name STRING) USING delta")
    ok("table", "write", table, *options, "--input",
       arrow_file(tmp_path, pa.table({"name": ["a", "b"]})))
    assert rows(table) == [(1, "a"), (2, "b")]
    # A column the data lacks that the table does not compute is still refused.
    done = run_cli("table", "write", table, "--no-merge-schema", "--input",
                   arrow_file(tmp_path, pa.table({"id2": [1]})))
    assert done.returncode == 2 and "missing from the data: ['name']" in done.stderr, done.stderr


def test_a_step_as_large_as_a_long_hands_out_what_fits_and_then_refuses(tmp_path):
    table = tmp_path / "huge"
    step = 9_000_000_000_000_000_000
    readers.spark_session().sql(
        f"CREATE TABLE delta.`{table}` (id BIGINT GENERATED ALWAYS AS IDENTITY "
        f"(START WITH {-step} INCREMENT BY {step}), name STRING) USING delta")
    assert write_names(tmp_path, table, ["a", "b", "c"]).returncode == 0
    assert rows(table) == [(-step, "a"), (0, "b"), (step, "c")]
    before = log(table)
    done = write_names(tmp_path, table, ["d"])
    assert done.returncode == 2 and "ran out of values" in done.stderr, done.stderr
    assert log(table) == before


def test_a_merge_keeps_the_values_of_the_rows_it_updates(tmp_path, quickstart_url):
    from test_change_data_feed import blocks
    from conftest import QUICKSTART_FIRST
    table = tmp_path / "merged"
    readers.spark_session().sql(
        f"CREATE TABLE delta.`{table}` (block_num BIGINT, hash BINARY, gas_used BIGINT, "
        "row_id BIGINT GENERATED ALWAYS AS IDENTITY) USING delta")
    middle = QUICKSTART_FIRST + 20

    def load(*extra: str, sql: str) -> None:
        ok("load", "--server", quickstart_url, "--table", table, "--sql", sql, "--quiet",
           "--config", '{"optimize_after_write": false}', *extra)

    def row_ids() -> dict[int, int]:
        data = readers.read_spark(table).to_pylist()
        numbers = [r["block_num"] for r in data]
        assert len(numbers) == len(set(numbers)), "a block twice"
        ids = [r["row_id"] for r in data]
        assert len(ids) == len(set(ids)) and None not in ids, "an identity value twice"
        return {r["block_num"]: r["row_id"] for r in data}

    load(sql=blocks(last=middle))
    before = row_ids()
    load("--mode", "merge", "--merge-keys", "block_num", sql=blocks(first=middle - 5,
                                                                     last=middle + 5))
    after = row_ids()
    assert {b: after[b] for b in before} == before
    new = [after[b] for b in range(middle + 1, middle + 6)]
    assert min(new) > max(before.values())
    mark = identity_metadata(table, "row_id")["delta.identity.highWaterMark"]
    assert mark >= max(after.values())


def test_a_parallel_backfill_numbers_every_row_once(tmp_path, quickstart_url):
    from test_change_data_feed import BLOCKS_SQL
    from conftest import QUICKSTART_FIRST, QUICKSTART_LAST
    table = tmp_path / "backfilled"
    readers.spark_session().sql(
        f"CREATE TABLE delta.`{table}` (block_num BIGINT, hash BINARY, gas_used BIGINT, "
        "row_id BIGINT GENERATED ALWAYS AS IDENTITY) USING delta")
    # Each partition's commit moves the mark: the others conflict and load again.
    done = ok("load", "--server", quickstart_url, "--table", table, "--sql", BLOCKS_SQL,
              "--workers", "3", "--partition-size", "25", "--config",
              '{"optimize_after_write": false}')
    assert "partitions_failed=0" in done.stderr, done.stderr
    data = readers.read_spark(table).to_pylist()
    assert sorted(r["block_num"] for r in data) == list(range(QUICKSTART_FIRST,
                                                              QUICKSTART_LAST + 1))
    ids = [r["row_id"] for r in data]
    assert len(set(ids)) == len(ids) and None not in ids
    assert identity_metadata(table, "row_id")["delta.identity.highWaterMark"] == max(ids)


@pytest.mark.timeout(400)
def test_a_stream_through_reorgs_keeps_the_values_of_the_rows_its_undos_copy(tmp_path):
    import collections
    table = tmp_path / "stream"
    readers.spark_session().sql(
        f"CREATE TABLE delta.`{table}` (block_num BIGINT, hash BINARY, gas_used BIGINT, "
        "row_id BIGINT GENERATED ALWAYS AS IDENTITY) USING delta")
    seen: dict[int, int] = {}
    chain = stream_through_reorgs(table)
    # Every version: a row that stays keeps its value (undos rewrite files without it
    # being given a new one), and no value is committed twice.
    versions = len(list((table / "_delta_log").glob("*.json")))
    for version in range(1, versions):
        data = readers.read_deltalake(table, version).to_pylist()
        ids = [r["row_id"] for r in data]
        assert len(set(ids)) == len(ids) and None not in ids, version
        for r in data:
            key = (r["block_num"], bytes(r["hash"]))
            assert seen.setdefault(hash(key), r["row_id"]) == r["row_id"], (version, key)
    assert blocks_of(readers.read_spark(table)) == collections.Counter(chain.items())
