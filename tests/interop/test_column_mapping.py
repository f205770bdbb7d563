"""Column mapping (`delta.columnMapping.mode` name and id): ampdelta writes into tables
Databricks made with it, including one whose partition column was renamed, and creates
its own; Spark (the reference) and DuckDB read every row back, Spark keeps writing after
ampdelta and ampdelta after Spark. Data files name columns physically and carry the ids as
Parquet field ids; partition values and statistics are keyed by physical name.
deltalake 1.6.6 and Polars do not read column-mapped tables (docs/downstream.md): Polars
refuses, deltalake refuses reader features or reads mapped columns as nulls, Databricks'
own rows included.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import readers
from conftest import cli_env, cli_path, fixtures_dir
MAPPING = "delta.columnMapping.mode"


def run_cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(cli_path()), *map(str, args)], capture_output=True, text=True,
                          env=cli_env(), timeout=180, stdin=subprocess.DEVNULL)


def ok(*args) -> subprocess.CompletedProcess:
    done = run_cli(*args)
    assert done.returncode == 0, f"{args}\nexit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def write(tmp_path: Path, table: Path, data: pa.Table, *extra) -> None:
    source = tmp_path / f"input-{len(list(tmp_path.glob('input-*')))}.arrow"
    with ipc.new_file(source, data.schema) as out:
        out.write_table(data)
    ok("table", "write", table, "--input", source, *extra)


def copy_fixture(name: str, tmp_path: Path) -> Path:
    table = tmp_path / name
    shutil.copytree(fixtures_dir() / "delta-rs" / name, table)
    for root, dirs, files in os.walk(table):
        for entry in dirs + files:
            os.chmod(Path(root) / entry, 0o755 if entry in dirs else 0o644)
    return table


def commits(table: Path) -> list[list[dict]]:
    log = table / "_delta_log"
    return [[json.loads(line) for line in path.read_text().splitlines() if line]
            for path in sorted(log.glob("*.json"))]


def latest(table: Path, kind: str) -> dict:
    found = [a[kind] for commit in commits(table) for a in commit if kind in a]
    return found[-1]


def spark_rows(table: Path) -> list[tuple]:
    return sorted(tuple(r.values()) for r in readers.read_spark(table).to_pylist())


def duckdb_rows(table: Path) -> list[tuple]:
    return sorted(tuple(r.values()) for r in readers.read_duckdb(table).to_pylist())


def spark_sql(statement: str) -> None:
    readers.spark_session().sql(statement).collect()


def physical_schema(table: Path) -> dict[str, tuple[str, int]]:
    """Logical name -> (physical name, id) of the top-level columns."""
    schema = json.loads(latest(table, "metaData")["schemaString"])
    return {f["name"]: (f["metadata"]["delta.columnMapping.physicalName"],
                        f["metadata"]["delta.columnMapping.id"]) for f in schema["fields"]}


def ampdelta_adds(table: Path) -> list[dict]:
    return [a["add"] for commit in commits(table)
            if any(a.get("commitInfo", {}).get("engineInfo", "").startswith("ampdelta")
                   for a in commit)
            for a in commit if "add" in a]


def assert_files_are_physical(table: Path) -> None:
    """ampdelta's data files, partition values and statistics use physical names and ids."""
    columns = physical_schema(table)
    physical = {p: i for p, i in columns.values()}
    adds = [a for a in ampdelta_adds(table) if json.loads(a["stats"])["numRecords"] > 0]
    assert adds
    for add in adds:
        assert set(add["partitionValues"]) <= set(physical), add
        stats = json.loads(add["stats"])
        assert set(stats.get("minValues", {})) <= set(physical), stats
        schema = pq.read_schema(table / add["path"])
        for field in schema:
            assert field.name in physical, (field.name, add["path"])
            assert int(field.metadata[b"PARQUET:field_id"]) == physical[field.name]


def test_ampdelta_appends_deletes_and_optimizes_a_databricks_table_with_spaces_in_names(tmp_path):
    table = copy_fixture("table_with_column_mapping", tmp_path)
    before = spark_rows(table)
    data = pa.table({"Company Very Short": ["ACME", "BMS"], "Super Name": ["Road Runner", "Wile"]})
    write(tmp_path, table, data)
    write(tmp_path, table, pa.table({"Company Very Short": ["BMS"], "Super Name": ["Coyote"]}))
    assert_files_are_physical(table)
    ok("table", "delete", table, "--where", "`Super Name` = 'Wile'")
    ok("table", "optimize", table)
    ok("table", "checkpoint", table)
    want = sorted(before + [("ACME", "Road Runner"), ("BMS", "Coyote")])
    assert spark_rows(table) == want
    assert duckdb_rows(table) == want
    # Spark keeps writing after ampdelta, ampdelta after Spark.
    spark_sql(f"INSERT INTO delta.`{table}` VALUES ('BH', 'Spark')")
    write(tmp_path, table, pa.table({"Company Very Short": ["BH"], "Super Name": ["After"]}))
    want = sorted(want + [("BH", "After"), ("BH", "Spark")])
    assert spark_rows(table) == want
    assert duckdb_rows(table) == want
    assert latest(table, "protocol") == {"minReaderVersion": 2, "minWriterVersion": 5}


def test_a_partition_column_databricks_renamed_is_written_by_its_physical_name(tmp_path):
    # id was renamed newid after column mapping was enabled: physical name id.
    table = copy_fixture("table_with_partitioning_mapping", tmp_path)
    assert physical_schema(table)["newid"][0] == "id"
    before = spark_rows(table)
    write(tmp_path, table, pa.table({"newid": pa.array([1, 7], pa.int32()),
                                     "description": ["one more", "seven"]}))
    assert {a["partitionValues"]["id"] for a in ampdelta_adds(table)} == {"1", "7"}
    ok("table", "delete", table, "--where", "newid = 2")
    want = sorted([r for r in before if r[0] != 2] + [(1, "one more"), (7, "seven")])
    assert spark_rows(table) == want
    assert duckdb_rows(table) == want
    # The protocol keeps its features (deletion vectors, column mapping).
    protocol = latest(table, "protocol")
    assert {"columnMapping", "deletionVectors"} <= set(protocol["readerFeatures"])


@pytest.mark.parametrize("mode", ["name", "id"])
def test_a_new_table_with_column_mapping_evolves_and_survives_a_spark_rename(tmp_path, mode):
    table = tmp_path / f"mapped_{mode}"
    item = pa.struct([("to", pa.binary()), ("value (wei)", pa.int64())])
    data = pa.table({
        "block_num": pa.array([1, 2, 3], pa.uint64()),
        "network": ["eth", "eth", "base"],
        "transfer": pa.array([{"to": b"a", "value (wei)": 5}, None,
                              {"to": b"c", "value (wei)": 7}], item),
        "calls": pa.array([[{"to": b"x", "value (wei)": 1}], [], None], pa.list_(item)),
    })
    write(tmp_path, table, data, "--partition-by", "network", "--property", f"{MAPPING}={mode}")
    metadata = latest(table, "metaData")
    assert metadata["configuration"][MAPPING] == mode
    # Every struct field, nested ones too, has an id and a physical name.
    schema = json.loads(metadata["schemaString"])
    ids = []

    def visit(fields):
        for field in fields:
            ids.append(field["metadata"]["delta.columnMapping.id"])
            assert field["metadata"]["delta.columnMapping.physicalName"].startswith("col-")
            kind = field["type"]
            while isinstance(kind, dict) and kind.get("type") == "array":
                kind = kind["elementType"]
            if isinstance(kind, dict) and kind.get("type") == "struct":
                visit(kind["fields"])
    visit(schema["fields"])
    assert sorted(ids) == list(range(1, 9))
    assert metadata["configuration"]["delta.columnMapping.maxColumnId"] == "8"
    assert "columnMapping" in latest(table, "protocol")["readerFeatures"]
    assert_files_are_physical(table)
    first = spark_rows(table)
    assert [r[0] for r in first] == [1, 2, 3]
    assert first[0][2] == {"to": bytearray(b"a"), "value (wei)": 5}

    # Schema evolution: the new column gets the next id.
    write(tmp_path, table, pa.table({"block_num": pa.array([4], pa.uint64()),
                                     "network": ["eth"], "gas": pa.array([21000], pa.int64())}))
    assert physical_schema(table)["gas"][1] == 9
    assert latest(table, "metaData")["configuration"]["delta.columnMapping.maxColumnId"] == "9"
    if mode == "name":
        # A column Spark renames keeps its physical name; ampdelta loads by the new name.
        spark_sql(f"ALTER TABLE delta.`{table}` RENAME COLUMN gas TO gas_used")
        write(tmp_path, table, pa.table({"block_num": pa.array([5], pa.uint64()),
                                         "network": ["base"],
                                         "gas_used": pa.array([50000], pa.int64())}))
        assert physical_schema(table)["gas_used"][1] == 9
    gas = "gas_used" if mode == "name" else "gas"
    got = readers.read_spark(table)
    assert sorted(got.column("block_num").to_pylist()) == [1, 2, 3, 4] + ([5] if mode == "name" else [])
    assert sorted(v for v in got.column(gas).to_pylist() if v is not None) == \
        [21000] + ([50000] if mode == "name" else [])
    ok("table", "delete", table, "--where", "block_num = 2")
    assert sorted(r["block_num"] for r in readers.read_duckdb(table).to_pylist()) == \
        [1, 3, 4] + ([5] if mode == "name" else [])
    after = {r["block_num"]: r for r in readers.read_spark(table).to_pylist()}
    assert sorted(after) == [1, 3, 4] + ([5] if mode == "name" else [])
    # The delete rewrote the first file: nested values came through under their names.
    assert after[3]["transfer"] == {"to": bytearray(b"c"), "value (wei)": 7}
    assert after[1]["calls"] == [{"to": bytearray(b"x"), "value (wei)": 1}]


def test_polars_refuses_a_column_mapped_table_rather_than_misreading_it(tmp_path):
    table = copy_fixture("table_with_column_mapping", tmp_path)
    with pytest.raises(Exception, match="column mapping|columnMapping"):
        readers.read_polars(table)


def test_the_mode_of_an_existing_table_is_not_changed_and_a_bad_mode_is_refused(tmp_path):
    table = tmp_path / "plain"
    write(tmp_path, table, pa.table({"a": [1]}))
    log = sorted(p.name for p in (table / "_delta_log").iterdir())
    source = tmp_path / "more.arrow"
    with ipc.new_file(source, pa.schema([("a", pa.int64())])) as out:
        out.write_table(pa.table({"a": [2]}))
    done = run_cli("table", "write", table, "--input", source, "--property", f"{MAPPING}=name")
    assert done.returncode == 2, done.stderr
    assert "can be set only when a table is created" in done.stderr
    bad = run_cli("table", "write", tmp_path / "bad", "--input", source,
                  "--property", f"{MAPPING}=names")
    assert bad.returncode == 2 and "none, name or id" in bad.stderr, bad.stderr
    assert sorted(p.name for p in (table / "_delta_log").iterdir()) == log
    assert not (tmp_path / "bad" / "_delta_log").exists()


def test_column_mapping_with_change_data_feed_deletion_vectors_and_clustering(
        tmp_path, quickstart_url):
    from test_change_data_feed import blocks, load, spark_changes
    from conftest import QUICKSTART_FIRST, QUICKSTART_LAST
    table = tmp_path / "combo"
    properties = ["--property", f"{MAPPING}=name", "--property",
                  "delta.enableChangeDataFeed=true", "--property",
                  "delta.enableDeletionVectors=true", "--cluster-by", "block_num"]
    middle = QUICKSTART_FIRST + 50
    load(quickstart_url, table, *properties, sql=blocks(last=middle))
    load(quickstart_url, table, sql=blocks(first=middle + 1))
    # An upsert of blocks the table holds replaces them: no block twice.
    load(quickstart_url, table, "--mode", "merge", "--merge-keys", "block_num",
         sql=blocks(first=middle - 5, last=middle + 5))
    ok("table", "delete", table, "--where", f"block_num < {QUICKSTART_FIRST + 10}")
    ok("table", "optimize", table)
    protocol = latest(table, "protocol")
    assert {"columnMapping", "deletionVectors"} <= set(protocol["readerFeatures"])
    assert {"columnMapping", "changeDataFeed", "clustering"} <= set(protocol["writerFeatures"])
    # The clustering domain names the column physically, as Spark writes it.
    domains = [a["domainMetadata"] for c in commits(table) for a in c if "domainMetadata" in a]
    physical = physical_schema(table)["block_num"][0]
    assert json.loads(domains[-1]["configuration"])["clusteringColumns"] == [[physical]]
    assert_files_are_physical(table)
    want = list(range(QUICKSTART_FIRST + 10, QUICKSTART_LAST + 1))
    assert sorted(readers.read_spark(table).column("block_num").to_pylist()) == want
    assert sorted(readers.read_duckdb(table).column("block_num").to_pylist()) == want
    # Spark's change feed: every insert, the merge's updates, the ten deleted blocks.
    changes = spark_changes(table).to_pylist()
    deleted = sorted(r["block_num"] for r in changes if r["_change_type"] == "delete")
    assert deleted == list(range(QUICKSTART_FIRST, QUICKSTART_FIRST + 10))
    inserted = sorted(r["block_num"] for r in changes if r["_change_type"] == "insert")
    assert inserted == list(range(QUICKSTART_FIRST, QUICKSTART_LAST + 1))
    updated = sorted(r["block_num"] for r in changes
                     if r["_change_type"] == "update_postimage")
    assert updated == list(range(middle - 5, middle + 6))


@pytest.mark.timeout(400)
def test_a_stream_through_reorgs_into_a_column_mapped_table_ends_with_the_canonical_chain(
        tmp_path):
    import collections
    from conftest import QUICKSTART_DATASET, run_dev_server
    from test_deletion_vectors import BLOCKS_SQL, DV, MIN_REORGS, check, rows
    from test_deletion_vectors import run_cli as run_cli_long
    from test_stream_crash import canonical_hashes, last_quiet_head, live_chain_args
    readers.spark_session()  # started before the chain: it takes a while
    max_head = last_quiet_head(200)
    table = tmp_path / "stream"
    with run_dev_server(*live_chain_args(max_head), "--await-streams") as server:
        check(run_cli_long("load", "--server", server.url, "--table", str(table), "--sql",
                           BLOCKS_SQL, "--stream", "--commit-interval-ms", "50",
                           "--until-block", str(max_head), "--property", DV,
                           "--property", f"{MAPPING}=name", "--config",
                           '{"optimize_after_write": false}', timeout=300))
        chain = canonical_hashes(server.url)
        verified = check(run_cli_long("verify", str(table), "--server", server.url,
                                      "--dataset", QUICKSTART_DATASET, "--json"))
        assert json.loads(verified.stdout)["findings"] == [], verified.stdout
    undos = [c for c in commits(table)
             if any(a.get("commitInfo", {}).get("operation") == "DELETE" for a in c)]
    assert len(undos) >= MIN_REORGS, f"only {len(undos)} reorg undos"
    assert_files_are_physical(table)
    canonical = collections.Counter(chain.items())
    for name in ("spark", "duckdb"):
        assert rows(readers.READERS[name](table)) == canonical, name
