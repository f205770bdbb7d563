"""Type widening (writer feature `typeWidening`, Delta 4.0): Spark widens a column's type
(`ALTER TABLE … ALTER COLUMN … TYPE BIGINT`, recorded in `delta.typeChanges`); ampdelta then
appends values only the wider type holds, deletes and optimizes, reading the files written
before the change with the table's type, and keeps the type-change record; Spark reads every
row back and keeps writing. ampdelta itself never widens a column.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc

import readers
from conftest import cli_env, cli_path


def run_cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(cli_path()), *map(str, args)], capture_output=True, text=True,
                          env=cli_env(), timeout=180, stdin=subprocess.DEVNULL)


def ok(*args) -> None:
    done = run_cli(*args)
    assert done.returncode == 0, f"{args}\nexit {done.returncode}\n{done.stderr}"


def latest_schema(table: Path) -> dict:
    schemas = [json.loads(line)["metaData"]["schemaString"]
               for path in sorted((table / "_delta_log").glob("*.json"))
               for line in path.read_text().splitlines() if '"metaData"' in line]
    return json.loads(schemas[-1])


def test_ampdelta_writes_into_a_column_spark_widened(tmp_path):
    table = tmp_path / "widened"
    spark = readers.spark_session()
    spark.sql(f"CREATE TABLE delta.`{table}` (id INT, name STRING) USING delta "
              "TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    spark.sql(f"INSERT INTO delta.`{table}` VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    spark.sql(f"ALTER TABLE delta.`{table}` ALTER COLUMN id TYPE BIGINT")
    field = latest_schema(table)["fields"][0]
    assert field["type"] == "long" and field["metadata"]["delta.typeChanges"], field

    source = tmp_path / "big.arrow"
    data = pa.table({"id": pa.array([2**40, 5], pa.int64()), "name": ["big", "e"]})
    with ipc.new_file(source, data.schema) as out:
        out.write_table(data)
    ok("table", "write", table, "--input", source)
    ok("table", "delete", table, "--where", "id = 2")
    ok("table", "optimize", table)  # reads the int files as long, rewrites them
    want = [(1, "a"), (3, "c"), (5, "e"), (2**40, "big")]
    got = sorted((r["id"], r["name"]) for r in readers.read_spark(table).to_pylist())
    assert got == want
    duck = sorted((r["id"], r["name"]) for r in readers.read_duckdb(table).to_pylist())
    assert duck == want
    # The type-change record is kept, and Spark keeps writing.
    assert latest_schema(table)["fields"][0]["metadata"]["delta.typeChanges"]
    spark.sql(f"INSERT INTO delta.`{table}` VALUES ({2**41}, 'spark')")
    assert sorted(readers.read_spark(table).column("id").to_pylist()) == \
        [1, 3, 5, 2**40, 2**41]
