"""Every ampdelta operation on a table Spark made with each writer feature ampdelta once
refused, and the combinations users have: append, load, merge, delete, optimize, checkpoint,
overwrite, restore, vacuum, then Spark writing after ampdelta and ampdelta after Spark. After
each step Spark reads back exactly the rows the step leaves, and at the end every tested reader
that `ampdelta table info` says reads the table gives the same rows
(docs/downstream.md "Spark and Databricks tables: feature × operation").
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import readers
from table_cli import blocks_of, ok, stream_through_reorgs
from conftest import QUICKSTART_FIRST
from test_change_data_feed import blocks

BASE = "block_num BIGINT, hash BINARY, gas_used BIGINT"
MIDDLE = QUICKSTART_FIRST + 20

# name: (extra columns, TBLPROPERTIES, statements Spark runs after CREATE; `{t}` the table)
FEATURES = {
    "column_mapping_name": (
        ", note STRING", "'delta.columnMapping.mode'='name'",
        ["ALTER TABLE {t} RENAME COLUMN note TO memo", "ALTER TABLE {t} ADD COLUMN tmp INT",
         "ALTER TABLE {t} DROP COLUMN tmp"]),
    "column_mapping_id": (
        ", note STRING", "'delta.columnMapping.mode'='id'",
        ["ALTER TABLE {t} RENAME COLUMN note TO memo"]),
    "check_constraints": (
        "", "",
        ["ALTER TABLE {t} ADD CONSTRAINT gas_positive CHECK (gas_used >= 0)"]),
    "generated_columns": (", block_copy BIGINT GENERATED ALWAYS AS (block_num)", "", []),
    "identity_columns": (", row_id BIGINT GENERATED ALWAYS AS IDENTITY", "", []),
    "type_widening": (
        "", "'delta.enableTypeWidening'='true'",
        ["ALTER TABLE {t} ALTER COLUMN gas_used TYPE BIGINT"]),
    "v2_checkpoint": ("", "'delta.checkpointPolicy'='v2', 'delta.checkpointInterval'='2'", []),
    "mapping_dv_cdf_ict": (
        "", "'delta.columnMapping.mode'='name', 'delta.enableDeletionVectors'='true', "
            "'delta.enableChangeDataFeed'='true', 'delta.enableInCommitTimestamps'='true'",
        []),
    "clustering_mapping": ("", "'delta.columnMapping.mode'='name'", ["CLUSTER"]),
    "row_tracking_mapping_dv": (
        ", note STRING", "'delta.enableRowTracking'='true', 'delta.columnMapping.mode'='name', "
                         "'delta.enableDeletionVectors'='true'",
        ["ALTER TABLE {t} RENAME COLUMN note TO memo"]),
}


def spark_table(table: Path, feature: str) -> None:
    extra, properties, statements = FEATURES[feature]
    spark = readers.spark_session()
    gas = "gas_used INT" if feature == "type_widening" else "gas_used BIGINT"
    cluster = " CLUSTER BY (block_num)" if "CLUSTER" in statements else ""
    spark.sql(f"CREATE TABLE delta.`{table}` (block_num BIGINT, hash BINARY, {gas}{extra}) "
              f"USING delta{cluster}" + (f" TBLPROPERTIES ({properties})" if properties else ""))
    spark.sql(f"INSERT INTO delta.`{table}` (block_num, hash, gas_used) "
              "VALUES (1, X'01', 10), (2, X'02', 20)")
    for statement in statements:
        if statement != "CLUSTER":
            spark.sql(statement.format(t=f"delta.`{table}`"))


def latest_version(table: Path) -> int:
    return max(int(p.name.split(".")[0]) for p in (table / "_delta_log").glob("*.json"))


def block_numbers(table: Path, reader: str = "spark") -> list[int]:
    return sorted(readers.READERS[reader](table).column("block_num").to_pylist())


def check_feature_columns(table: Path, feature: str) -> None:
    rows = readers.read_spark(table).to_pylist()
    if feature == "generated_columns":
        assert all(r["block_copy"] == r["block_num"] for r in rows)
    if feature == "identity_columns":
        ids = [r["row_id"] for r in rows]
        assert None not in ids and len(set(ids)) == len(ids)
    if feature == "v2_checkpoint":
        names = [p.name for p in (table / "_delta_log").iterdir()]
        assert not [n for n in names if n.endswith(".checkpoint.parquet")], names


@pytest.mark.timeout(420)
@pytest.mark.parametrize("feature", sorted(FEATURES))
def test_every_operation_on_a_spark_table_with_the_feature(tmp_path, quickstart_url, feature):
    table = tmp_path / feature
    spark_table(table, feature)
    expected = {1, 2}

    def step(*args, sql: str | None = None) -> None:
        if sql is not None:
            ok("load", "--server", quickstart_url, "--table", table, "--sql", sql, "--quiet",
               "--config", '{"optimize_after_write": false}', *args)
        else:
            ok("table", *args)
        assert block_numbers(table) == sorted(expected), args
        check_feature_columns(table, feature)

    expected |= set(range(QUICKSTART_FIRST, MIDDLE + 1))
    step(sql=blocks(last=MIDDLE))
    expected |= set(range(MIDDLE + 1, MIDDLE + 6))
    step("--mode", "merge", "--merge-keys", "block_num",
         sql=blocks(first=MIDDLE - 5, last=MIDDLE + 5))
    expected.discard(1)
    step("delete", table, "--where", "block_num = 1")
    step("optimize", table)
    step("checkpoint", table)
    before_overwrite = latest_version(table)
    kept = set(expected)
    expected = set(range(QUICKSTART_FIRST, QUICKSTART_FIRST + 10))
    step("--mode", "overwrite", sql=blocks(last=QUICKSTART_FIRST + 9))
    expected = kept
    step("restore", table, "--version", before_overwrite)
    step("vacuum", table, "--retention-hours", "0", "--force")
    # Spark keeps writing after ampdelta, and ampdelta after Spark.
    readers.spark_session().sql(f"INSERT INTO delta.`{table}` (block_num, hash, gas_used) "
                                "VALUES (3, X'03', 30)")
    expected.add(3)
    assert block_numbers(table) == sorted(expected)
    expected |= set(range(MIDDLE + 6, MIDDLE + 9))
    step(sql=blocks(first=MIDDLE + 6, last=MIDDLE + 8))
    # Every tested reader that table info says reads it gives the same rows.
    info = json.loads(ok("table", "info", table, "--json").stdout)
    for reader in info["readers"]:
        if reader["reads"] and reader["name"] in ("duckdb", "polars"):
            assert block_numbers(table, reader["name"]) == sorted(expected), reader["name"]


@pytest.mark.timeout(400)
@pytest.mark.parametrize("feature", ["check_constraints", "generated_columns", "type_widening"])
def test_a_stream_through_reorgs_into_a_spark_table_with_the_feature(tmp_path, feature):
    # The other features' streams: test_column_mapping, test_identity_columns,
    # test_v2_checkpoints, test_deletion_vectors, test_change_data_feed, test_clustering.
    import collections
    table = tmp_path / feature
    spark_table(table, feature)
    # A stream starts on a table no other writer holds rows in (or takes it over).
    readers.spark_session().sql(f"DELETE FROM delta.`{table}`")
    chain = stream_through_reorgs(table)
    assert blocks_of(readers.read_spark(table)) == collections.Counter(chain.items())
    check_feature_columns(table, feature)
