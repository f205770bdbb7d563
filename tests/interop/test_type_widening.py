"""Type widening (writer feature `typeWidening`, Delta 4.0): Spark widens a column's type
(`ALTER TABLE … ALTER COLUMN … TYPE BIGINT`, recorded in `delta.typeChanges`); ampdelta then
appends values only the wider type holds, deletes and optimizes, reading the files written
before the change with the table's type, and keeps the type-change record; Spark reads every
row back and keeps writing. On a table with `delta.enableTypeWidening=true` a write that merges
schemas widens a column the data brings in a wider type, and records it as Spark's own schema
evolution does.
"""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import readers
from table_cli import latest_schema, log_names, ok, run_cli, write_table


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


def test_schema_evolution_widens_a_column_as_spark_records_it(tmp_path):
    spark = readers.spark_session()
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for table in (ours, theirs):
        spark.sql(f"CREATE TABLE delta.`{table}` (id INT, ratio FLOAT, name STRING) USING delta "
                  "TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
        spark.sql(f"INSERT INTO delta.`{table}` VALUES (1, 0.5, 'a'), (2, 1.5, 'b')")
    wide = pa.table({"id": pa.array([2**40], pa.int64()), "ratio": pa.array([0.25], pa.float64()),
                     "name": ["big"]})
    done = write_table(tmp_path, ours, wide)
    assert done.returncode == 0, done.stderr
    # Spark's own schema evolution of the same append, the oracle of what gets recorded.
    spark.createDataFrame([(2**40, 0.25, "big")], "id BIGINT, ratio DOUBLE, name STRING") \
        .write.format("delta").mode("append") \
        .option("mergeSchema", "true").save(str(theirs))
    ours_fields = {f["name"]: f for f in latest_schema(ours)["fields"]}
    theirs_fields = {f["name"]: f for f in latest_schema(theirs)["fields"]}
    for column in ("id", "ratio"):
        assert ours_fields[column]["type"] == theirs_fields[column]["type"], column
        assert ours_fields[column]["metadata"] == theirs_fields[column]["metadata"], column
    want = [(1, 0.5, "a"), (2, 1.5, "b"), (2**40, 0.25, "big")]
    for reader in ("spark", "duckdb"):
        got = sorted((r["id"], r["ratio"], r["name"])
                     for r in readers.READERS[reader](ours).to_pylist())
        assert got == want, reader
    # ampdelta keeps writing and rewriting the mixed files; Spark after it.
    ok("table", "delete", ours, "--where", "id = 1")
    ok("table", "optimize", ours)
    spark.sql(f"INSERT INTO delta.`{ours}` VALUES ({2**41}, 2.5, 'spark')")
    assert sorted(readers.read_spark(ours).column("id").to_pylist()) == [2, 2**40, 2**41]


def test_without_type_widening_a_wider_column_is_refused_with_the_table_unchanged(tmp_path):
    table = tmp_path / "plain"
    spark = readers.spark_session()
    spark.sql(f"CREATE TABLE delta.`{table}` (id INT, ratio FLOAT) USING delta")
    spark.sql(f"INSERT INTO delta.`{table}` VALUES (1, 0.5)")
    before = log_names(table)
    done = write_table(tmp_path, table, pa.table({"id": pa.array([2], pa.int64()),
                                                  "ratio": pa.array([0.25], pa.float64())}))
    assert done.returncode == 2, done.stderr
    assert "ratio (table float, data double)" in done.stderr
    assert "delta.enableTypeWidening=true" in done.stderr
    assert log_names(table) == before
    # With the property set by the same write, it widens and the protocol gets the feature.
    done = write_table(tmp_path, table, pa.table({"id": pa.array([2], pa.int64()),
                                                  "ratio": pa.array([0.25], pa.float64())}),
                       "--property", "delta.enableTypeWidening=true")
    assert done.returncode == 0, done.stderr
    fields = {f["name"]: f for f in latest_schema(table)["fields"]}
    assert fields["ratio"]["type"] == "double" and fields["id"]["type"] == "long"
    protocol = [json.loads(line)["protocol"]
                for path in sorted((table / "_delta_log").glob("*.json"))
                for line in path.read_text().splitlines() if '"protocol"' in line][-1]
    assert "typeWidening" in protocol["readerFeatures"]
    assert "typeWidening" in protocol["writerFeatures"]
    got = sorted((r["id"], r["ratio"]) for r in readers.read_spark(table).to_pylist())
    assert got == [(1, 0.5), (2, 0.25)]


def test_statistics_of_files_written_before_a_float_was_widened_never_decide_a_delete(tmp_path):
    # Spark wrote 0.2f's statistics as 0.2, which as a double is less than the value the
    # file holds (0.20000000298023224): trusting them drops the whole file.
    table = tmp_path / "floats"
    spark = readers.spark_session()
    spark.sql(f"CREATE TABLE delta.`{table}` (id BIGINT, v FLOAT) USING delta "
              "TBLPROPERTIES ('delta.enableTypeWidening'='true')")
    spark.sql(f"INSERT INTO delta.`{table}` VALUES (1, 0.1), (2, 0.2)")
    spark.sql(f"ALTER TABLE delta.`{table}` ALTER COLUMN v TYPE DOUBLE")
    found = run_cli("table", "scan", table, "--where", "v = 0.20000000298023224",
                    "--format", "count")
    assert found.returncode == 0 and "rows=1 " in found.stdout, found.stdout
    ok("table", "delete", table, "--where", "v < 0.2000000001")
    assert [r["id"] for r in readers.read_spark(table).to_pylist()] == [2]


@pytest.mark.parametrize("uses", ["g INT GENERATED ALWAYS AS (a)", "CONSTRAINT"])
def test_a_column_an_expression_uses_is_never_widened_as_in_spark(tmp_path, uses):
    table = tmp_path / "pinned"
    spark = readers.spark_session()
    extra = "" if uses == "CONSTRAINT" else f", {uses}"
    spark.sql(f"CREATE TABLE delta.`{table}` (a INT{extra}) USING delta "
              "TBLPROPERTIES ('delta.enableTypeWidening'='true')")
    if uses == "CONSTRAINT":
        spark.sql(f"ALTER TABLE delta.`{table}` ADD CONSTRAINT positive CHECK (a > 0)")
    spark.sql(f"INSERT INTO delta.`{table}` (a) VALUES (1)")
    # A long that fits is written into the int column, which keeps its type.
    done = write_table(tmp_path, table, pa.table({"a": pa.array([5], pa.int64())}))
    assert done.returncode == 0, done.stderr
    assert {f["name"]: f["type"] for f in latest_schema(table)["fields"]}["a"] == "integer"
    before = log_names(table)
    done = write_table(tmp_path, table, pa.table({"a": pa.array([2**40], pa.int64())}))
    assert done.returncode == 2, done.stderr
    assert log_names(table) == before
    spark.sql(f"INSERT INTO delta.`{table}` (a) VALUES (7)")
    assert sorted(readers.read_spark(table).column("a").to_pylist()) == [1, 5, 7]


def test_a_struct_field_widens_as_spark_widens_it(tmp_path):
    spark = readers.spark_session()
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for table in (ours, theirs):
        spark.sql(f"CREATE TABLE delta.`{table}` (id BIGINT, s STRUCT<a: INT, b: STRING>) "
                  "USING delta TBLPROPERTIES ('delta.enableTypeWidening'='true')")
        spark.sql(f"INSERT INTO delta.`{table}` VALUES (1, named_struct('a', 1, 'b', 'x'))")
    wide = pa.table({"id": pa.array([2], pa.int64()),
                     "s": pa.array([{"a": 2**40, "b": "y"}],
                                   pa.struct([("a", pa.int64()), ("b", pa.string())]))})
    done = write_table(tmp_path, ours, wide)
    assert done.returncode == 0, done.stderr
    spark.createDataFrame([(2, (2**40, "y"))], "id BIGINT, s STRUCT<a: BIGINT, b: STRING>") \
        .write.format("delta").mode("append").option("mergeSchema", "true").save(str(theirs))
    ours_s = {f["name"]: f for f in latest_schema(ours)["fields"]}["s"]
    theirs_s = {f["name"]: f for f in latest_schema(theirs)["fields"]}["s"]
    assert ours_s == theirs_s
    got = sorted((r["id"], r["s"]["a"]) for r in readers.read_spark(ours).to_pylist())
    assert got == [(1, 1), (2, 2**40)]


def test_a_struct_field_widens_beside_a_narrower_one(tmp_path):
    table = tmp_path / "nested"
    spark = readers.spark_session()
    spark.sql(f"CREATE TABLE delta.`{table}` (id BIGINT, s STRUCT<a: INT, b: INT>) USING delta "
              "TBLPROPERTIES ('delta.enableTypeWidening'='true')")
    spark.sql(f"INSERT INTO delta.`{table}` VALUES (1, named_struct('a', 1, 'b', 1))")
    # s.a arrives wider, s.b narrower: a widens, b keeps its type and takes the value.
    data = pa.table({"id": pa.array([2], pa.int64()),
                     "s": pa.array([{"a": 2**40, "b": 2}],
                                   pa.struct([("a", pa.int64()), ("b", pa.int16())]))})
    done = write_table(tmp_path, table, data)
    assert done.returncode == 0, done.stderr
    s_type = {f["name"]: f for f in latest_schema(table)["fields"]}["s"]["type"]
    assert [(f["name"], f["type"]) for f in s_type["fields"]] == [("a", "long"), ("b", "integer")]
    got = sorted((r["id"], r["s"]["a"], r["s"]["b"]) for r in readers.read_spark(table).to_pylist())
    assert got == [(1, 1, 1), (2, 2**40, 2)]


def amp_dataset(folder: Path, table: str, data: pa.Table, block: int) -> Path:
    """`data` as one Parquet file of an Amp snapshot (`<dir>/<table>/<revision>/`), with the
    `nozzle_metadata` block range Amp writes."""
    import pyarrow.parquet as pq
    revision = folder / table / "1"
    revision.mkdir(parents=True)
    nozzle = {"table": table, "ranges": [{
        "numbers": {"start": block, "end": block}, "network": "mainnet",
        "hash": "0x" + "ab" * 32, "prev_hash": "0x" + "cd" * 32}]}
    pq.write_table(data.replace_schema_metadata({"nozzle_metadata": json.dumps(nozzle)}),
                   revision / f"{block:09d}-0000000000000001.parquet")
    return folder


def test_a_merge_widens_a_struct_field_and_rewrites_rows_written_before(tmp_path):
    from conftest import run_dev_server
    table = tmp_path / "merged"
    spark = readers.spark_session()
    spark.sql(f"CREATE TABLE delta.`{table}` (block_num BIGINT, id BIGINT, "
              "s STRUCT<a: INT, b: STRING>) USING delta "
              "TBLPROPERTIES ('delta.enableTypeWidening'='true')")
    spark.sql(f"INSERT INTO delta.`{table}` SELECT 1, id, named_struct('a', CAST(id AS INT), "
              "'b', 'old') FROM range(6)")
    struct = pa.struct([("a", pa.int64()), ("b", pa.string())])
    data = pa.table({"block_num": pa.array([2] * 10, pa.uint64()),
                     "id": pa.array(range(10), pa.int64()),
                     "s": pa.array([{"a": 2**40 + i, "b": "new"} for i in range(10)], struct)})
    source = amp_dataset(tmp_path / "amp", "things", data, 2)
    with run_dev_server("--no-synthetic", "--dataset", f"acme/wide={source}") as server:
        ok("load", "--server", server.url, "--table", table, "--sql",
           'SELECT block_num, id, s FROM "acme/wide".things', "--mode", "merge",
           "--merge-keys", "id", "--quiet", "--config", '{"optimize_after_write": false}')
    got = sorted((r["id"], r["s"]["a"], r["s"]["b"]) for r in readers.read_spark(table).to_pylist())
    assert got == [(i, 2**40 + i, "new") for i in range(10)]
    s_field = {f["name"]: f for f in latest_schema(table)["fields"]}["s"]
    assert s_field["type"]["fields"][0]["type"] == "long"


def test_a_preview_type_widening_table_is_written_as_spark_writes_it(tmp_path):
    # `typeWidening-preview` (Delta 3.x tables): each type change records the table version
    # it happened at, and new files the version that added them.
    spark = readers.spark_session()
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for table in (ours, theirs):
        spark.sql(f"CREATE TABLE delta.`{table}` (id INT, name STRING) USING delta "
                  "TBLPROPERTIES ('delta.feature.typeWidening-preview'='supported', "
                  "'delta.enableTypeWidening'='true')")
        spark.sql(f"INSERT INTO delta.`{table}` VALUES (1, 'a'), (2, 'b')")
    wide = pa.table({"id": pa.array([2**40], pa.int64()), "name": ["big"]})
    done = write_table(tmp_path, ours, wide)
    assert done.returncode == 0, done.stderr
    spark.createDataFrame([(2**40, "big")], "id BIGINT, name STRING").write.format("delta") \
        .mode("append").option("mergeSchema", "true").save(str(theirs))
    version = max(int(name.split(".")[0]) for name in log_names(ours) if name.endswith(".json"))
    ours_id, theirs_id = latest_schema(ours)["fields"][0], latest_schema(theirs)["fields"][0]
    assert ours_id["type"] == theirs_id["type"] == "long"
    assert ours_id["metadata"] == theirs_id["metadata"]
    assert ours_id["metadata"]["delta.typeChanges"][0]["tableVersion"] == version
    commit = (ours / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
    adds = [json.loads(line)["add"] for line in commit if '"add"' in line]
    assert adds and all(add["defaultRowCommitVersion"] == version for add in adds)
    # Every operation, then Spark writing after ampdelta.
    ok("table", "delete", ours, "--where", "id = 1")
    ok("table", "optimize", ours)
    ok("table", "checkpoint", ours)
    spark.sql(f"INSERT INTO delta.`{ours}` VALUES ({2**41}, 'spark')")
    want = [(2, "b"), (2**40, "big"), (2**41, "spark")]
    assert sorted((r["id"], r["name"]) for r in readers.read_spark(ours).to_pylist()) == want
    assert latest_schema(ours)["fields"][0]["metadata"] == theirs_id["metadata"]
