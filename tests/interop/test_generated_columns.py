"""Generated columns Spark makes (`… GENERATED ALWAYS AS (expr)`, writer feature
`generatedColumns`): ampdelta computes the columns a write leaves out (a generated partition
column too), checks the values a write gives, refuses a table whose expression it cannot
evaluate naming the column (exit 6, the table unchanged) while delete and optimize go on;
Spark reads back, agrees with every value, and keeps writing. Spark's session zone is UTC, as
ampdelta evaluates zoned timestamps (docs/downstream.md).
"""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa

import readers
from table_cli import arrow_file, ok, run_cli

UTC = dt.timezone.utc


def events(numbers: list[int], times: list[dt.datetime | None], **given) -> pa.Table:
    columns = {"n": pa.array(numbers, pa.int64()),
               "ts": pa.array(times, pa.timestamp("ns", "UTC"))}  # Amp sends nanoseconds
    columns.update(given)
    return pa.table(columns)


def log(table: Path) -> list[str]:
    return sorted(p.name for p in (table / "_delta_log").iterdir())


def create(table: Path) -> None:
    readers.spark_session().sql(
        f"CREATE TABLE delta.`{table}` (n BIGINT, ts TIMESTAMP, "
        "day DATE GENERATED ALWAYS AS (CAST(ts AS DATE)), "
        "yr INT GENERATED ALWAYS AS (YEAR(ts)), "
        "hr INT GENERATED ALWAYS AS (hour(`ts`))) USING delta PARTITIONED BY (day)")


def spark_disagreements(table: Path) -> int:
    """Rows whose generated values are not what Spark computes from ts."""
    return readers.spark_session().sql(
        f"SELECT * FROM delta.`{table}` WHERE NOT (day <=> CAST(ts AS DATE)) "
        "OR NOT (yr <=> YEAR(ts)) OR NOT (hr <=> HOUR(ts))").count()


def test_ampdelta_computes_generated_columns_spark_agrees_and_keeps_writing(tmp_path):
    table = tmp_path / "generated"
    create(table)
    late = dt.datetime(2024, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    early = dt.datetime(2025, 1, 1, 0, 0, tzinfo=UTC)
    ok("table", "write", table, "--input",
       arrow_file(tmp_path, events([1, 2, 3], [late, early, None])))
    rows = {r["n"]: r for r in readers.read_spark(table).to_pylist()}
    assert rows[1]["day"] == dt.date(2024, 12, 31) and rows[1]["yr"] == 2024
    assert rows[1]["hr"] == 23
    assert rows[2]["day"] == dt.date(2025, 1, 1) and rows[2]["yr"] == 2025
    assert rows[3]["day"] is None and rows[3]["yr"] is None
    # The generated partition column names the files' folders.
    adds = [json.loads(line)["add"] for p in sorted((table / "_delta_log").glob("*.json"))
            for line in p.read_text().splitlines() if '"add"' in line]
    assert {a["partitionValues"]["day"] for a in adds} == {"2024-12-31", "2025-01-01", None}
    # Values given right pass; delete and optimize keep every row's values.
    ok("table", "write", table, "--input", arrow_file(tmp_path, events(
        [4], [early], day=pa.array([dt.date(2025, 1, 1)]), yr=pa.array([2025], pa.int32()))))
    ok("table", "delete", table, "--where", "n = 2")
    ok("table", "optimize", table)
    spark = readers.spark_session()
    spark.sql(f"INSERT INTO delta.`{table}` (n, ts) VALUES (5, TIMESTAMP '2023-06-01 12:00:00')")
    ok("table", "write", table, "--input", arrow_file(tmp_path, events([6], [late])))
    assert spark_disagreements(table) == 0
    got = sorted((r["n"], r["day"]) for r in readers.read_spark(table).to_pylist())
    assert got == [(1, dt.date(2024, 12, 31)), (3, None), (4, dt.date(2025, 1, 1)),
                   (5, dt.date(2023, 6, 1)), (6, dt.date(2024, 12, 31))]
    for reader in ("duckdb", "polars", "deltalake"):
        theirs = sorted((r["n"], r["day"]) for r in readers.READERS[reader](table).to_pylist())
        assert theirs == got, reader


def test_a_given_value_that_is_not_the_expressions_is_refused_with_the_table_unchanged(
        tmp_path):
    table = tmp_path / "generated"
    create(table)
    before = log(table)
    when = dt.datetime(2024, 5, 5, 10, tzinfo=UTC)
    wrong = run_cli("table", "write", table, "--input", arrow_file(tmp_path, events(
        [1, 2], [when, when], yr=pa.array([2024, 1999], pa.int32()))))
    assert wrong.returncode == 2, wrong.stderr
    assert "generated column yr (YEAR(ts)) is given 1999 in row 1" in wrong.stderr, wrong.stderr
    assert log(table) == before


def test_an_expression_ampdelta_cannot_evaluate_stops_writes_but_not_maintenance(tmp_path):
    table = tmp_path / "bucketed"
    spark = readers.spark_session()
    spark.sql(f"CREATE TABLE delta.`{table}` (n BIGINT, "
              "bucket BIGINT GENERATED ALWAYS AS (n DIV 10)) USING delta")
    spark.sql(f"INSERT INTO delta.`{table}` (n) VALUES (1), (25), (37)")
    before = log(table)
    refused = run_cli("table", "write", table, "--input",
                      arrow_file(tmp_path, pa.table({"n": pa.array([40], pa.int64())})))
    assert refused.returncode == 6, refused.stderr
    assert "generated column bucket (n DIV 10)" in refused.stderr, refused.stderr
    assert log(table) == before
    ok("table", "delete", table, "--where", "n = 25")
    ok("table", "optimize", table)
    got = sorted((r["n"], r["bucket"]) for r in readers.read_spark(table).to_pylist())
    assert got == [(1, 0), (37, 3)]


def test_a_load_and_a_merge_from_amp_compute_the_day_of_each_block(tmp_path, quickstart_url):
    from conftest import QUICKSTART_FIRST
    table = tmp_path / "blocks"
    readers.spark_session().sql(
        f"CREATE TABLE delta.`{table}` (block_num BIGINT, timestamp TIMESTAMP, "
        "gas_used BIGINT, day DATE GENERATED ALWAYS AS (CAST(timestamp AS DATE))) "
        "USING delta PARTITIONED BY (day)")
    sql = ('SELECT block_num, timestamp, gas_used FROM "acme/eth_mainnet".blocks '
           f"WHERE block_num < {QUICKSTART_FIRST + 30}")
    ok("load", "--server", quickstart_url, "--table", table, "--sql", sql, "--quiet")
    ok("load", "--server", quickstart_url, "--table", table, "--sql", sql, "--quiet",
       "--mode", "merge", "--merge-keys", "block_num")
    data = readers.read_spark(table).to_pylist()
    assert sorted(r["block_num"] for r in data) == list(range(QUICKSTART_FIRST,
                                                              QUICKSTART_FIRST + 30))
    spark = readers.spark_session()
    assert spark.sql(f"SELECT * FROM delta.`{table}` "
                     "WHERE NOT (day <=> CAST(timestamp AS DATE))").count() == 0
