"""Which engines read which tables (`delta/log/reader_support.h`): for a table of each reader
feature (and the legacy reader version 2), what `ampdelta table info --json` claims of Spark,
DuckDB, Polars and deltalake is what each of them does — reads every row as Spark does, or
refuses. A write that declares its readers (`--readers`, config `readers`) is refused,
naming reader and feature, when the table it would leave needs a feature one of them cannot
read; the table is left as it was. "Reads" means gives Spark's rows: deltalake opens a
column-mapped table at reader version 2 and reads every value as null, so it does not read it.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import readers
from table_cli import ok, run_cli, write_table

TESTED = ("spark", "duckdb", "polars", "deltalake")
HERE = Path(__file__).resolve().parent


def as_text(data: pa.Table) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in data.to_pylist())


def read_elsewhere(reader: str, table: Path) -> list[str] | None:
    """The rows `reader` reads, as sorted text, or None when it refuses the table. In a
    subprocess: deltalake may abort the interpreter at exit after a read."""
    if reader == "spark":  # the session this process already runs
        try:
            return as_text(readers.read_spark(table))
        except Exception:  # noqa: BLE001 - any refusal
            return None
    code = ("import json, os, sys; sys.path.insert(0, sys.argv[1]); import readers; "
            "t = readers.READERS[sys.argv[2]](sys.argv[3]); "
            "print(json.dumps(sorted(json.dumps(r, sort_keys=True, default=str) "
            "for r in t.to_pylist()))); sys.stdout.flush(); os._exit(0)")
    done = subprocess.run([sys.executable, "-c", code, str(HERE), reader, str(table)],
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def claims(table: Path) -> dict[str, bool]:
    info = json.loads(ok("table", "info", table, "--json").stdout)
    return {r["name"]: r["reads"] for r in info["readers"]}


def build_tables(tmp_path: Path) -> dict[str, Path]:
    """One table per reader feature, each holding what the feature is about."""
    spark = readers.spark_session()
    ids = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", "b", "c"]})
    tables = {name: tmp_path / name for name in
              ("plain", "deletion_vectors", "column_mapping", "timestamp_ntz", "v2_checkpoint",
               "type_widening", "type_widening_preview", "vacuum_protocol_check",
              "legacy_column_mapping", "legacy_reader_version_2")}
    assert write_table(tmp_path, tables["plain"], ids).returncode == 0
    # A deletion vector in place.
    assert write_table(tmp_path, tables["deletion_vectors"], ids, "--property",
                 "delta.enableDeletionVectors=true").returncode == 0
    ok("table", "delete", tables["deletion_vectors"], "--where", "id = 2")
    # Physical names that differ from the logical ones after a rename.
    assert write_table(tmp_path, tables["column_mapping"], ids, "--property",
                 "delta.columnMapping.mode=name").returncode == 0
    spark.sql(f"ALTER TABLE delta.`{tables['column_mapping']}` RENAME COLUMN name TO label")
    assert write_table(tmp_path, tables["timestamp_ntz"], pa.table(
        {"id": pa.array([1], pa.int64()), "at": pa.array([1_700_000_000_000_000],
                                                           pa.timestamp("us"))})).returncode == 0
    assert write_table(tmp_path, tables["v2_checkpoint"], ids, "--property",
                 "delta.checkpointPolicy=v2").returncode == 0
    ok("table", "checkpoint", tables["v2_checkpoint"])
    # Files written before the widening next to files of the wider type.
    spark.sql(f"CREATE TABLE delta.`{tables['type_widening']}` (id INT, name STRING) USING delta "
              "TBLPROPERTIES ('delta.enableTypeWidening'='true')")
    spark.sql(f"INSERT INTO delta.`{tables['type_widening']}` VALUES (1, 'a')")
    assert write_table(tmp_path, tables["type_widening"], pa.table(
        {"id": pa.array([2**40], pa.int64()), "name": ["big"]})).returncode == 0
    spark.sql(f"CREATE TABLE delta.`{tables['type_widening_preview']}` (id INT) USING delta "
              "TBLPROPERTIES ('delta.feature.typeWidening-preview'='supported', "
              "'delta.enableTypeWidening'='true')")
    spark.sql(f"INSERT INTO delta.`{tables['type_widening_preview']}` VALUES (1)")
    spark.sql(f"ALTER TABLE delta.`{tables['type_widening_preview']}` ALTER COLUMN id TYPE BIGINT")
    spark.sql(f"INSERT INTO delta.`{tables['type_widening_preview']}` VALUES ({2**40})")
    # Reader version 2 without column mapping on: deltalake reads it, Polars refuses it.
    spark.sql(f"CREATE TABLE delta.`{tables['legacy_reader_version_2']}` (id BIGINT) USING delta "
              "TBLPROPERTIES ('delta.minReaderVersion'='2', 'delta.minWriterVersion'='5')")
    spark.sql(f"INSERT INTO delta.`{tables['legacy_reader_version_2']}` VALUES (1)")
    spark.sql(f"CREATE TABLE delta.`{tables['vacuum_protocol_check']}` (id BIGINT) USING delta "
              "TBLPROPERTIES ('delta.feature.vacuumProtocolCheck'='supported')")
    spark.sql(f"INSERT INTO delta.`{tables['vacuum_protocol_check']}` VALUES (1)")
    spark.sql(f"CREATE TABLE delta.`{tables['legacy_column_mapping']}` (id BIGINT, name STRING) "
              "USING delta TBLPROPERTIES ('delta.columnMapping.mode'='name', "
              "'delta.minReaderVersion'='2', 'delta.minWriterVersion'='5')")
    spark.sql(f"INSERT INTO delta.`{tables['legacy_column_mapping']}` VALUES (1, 'a')")
    spark.sql(f"ALTER TABLE delta.`{tables['legacy_column_mapping']}` "
              "RENAME COLUMN name TO label")
    return tables


@pytest.mark.timeout(600)
def test_what_table_info_claims_of_each_reader_is_what_the_reader_does(tmp_path):
    tables = build_tables(tmp_path)
    wrong = []
    for feature, table in tables.items():
        claimed = claims(table)
        truth = read_elsewhere("spark", table)
        assert truth, feature
        for reader in TESTED:
            got = truth if reader == "spark" else read_elsewhere(reader, table)
            if claimed[reader] and got != truth:
                wrong.append(f"{feature}: {reader} is claimed to read it but "
                             f"{'refuses it' if got is None else f'reads {got}'}")
            # Not reading a table is refusing it or reading other rows than Spark's
            # (deltalake's nulls for a column-mapped table at reader version 2).
            if not claimed[reader] and got == truth:
                wrong.append(f"{feature}: {reader} is claimed not to read it but reads it")
    assert not wrong, "\n".join(wrong)
    # The claims that make the table in docs/downstream.md, spelled out.
    assert not claims(tables["column_mapping"])["polars"]
    assert not claims(tables["deletion_vectors"])["deltalake"]
    assert claims(tables["deletion_vectors"])["polars"]
    assert all(claims(tables["plain"])[reader] for reader in TESTED)
    assert claims(tables["legacy_reader_version_2"])["deltalake"]
    assert not claims(tables["legacy_column_mapping"])["deltalake"]
    assert claims(tables["type_widening_preview"])["spark"]


def test_a_write_is_refused_when_a_declared_reader_cannot_read_the_table(tmp_path):
    data = pa.table({"id": pa.array([1], pa.int64())})
    table = tmp_path / "mapped"
    done = write_table(tmp_path, table, data, "--property", "delta.columnMapping.mode=name",
                 "--readers", "spark,Polars,deltalake")
    assert done.returncode == 2, done.stderr
    assert "polars cannot read columnMapping" in done.stderr
    assert "deltalake cannot read columnMapping" in done.stderr
    assert not table.exists() or not list((table / "_delta_log").glob("*.json"))
    assert write_table(tmp_path, table, data, "--property", "delta.columnMapping.mode=name",
                 "--readers", "spark,duckdb").returncode == 0
    # Into an existing table a reader cannot read: refused, the table unchanged.
    log = sorted(p.name for p in (table / "_delta_log").iterdir())
    done = write_table(tmp_path, table, data, "--readers", "polars")
    assert done.returncode == 2 and "polars cannot read columnMapping" in done.stderr
    assert sorted(p.name for p in (table / "_delta_log").iterdir()) == log
    # A property this write would enable.
    plain = tmp_path / "plain"
    assert write_table(tmp_path, plain, data).returncode == 0
    done = write_table(tmp_path, plain, data, "--property", "delta.enableDeletionVectors=true",
                 "--readers", "deltalake")
    assert done.returncode == 2 and "deltalake cannot read deletionVectors" in done.stderr
    assert claims(plain)["deltalake"]


@pytest.mark.parametrize("readers_option", ["nosuch", "spark,nosuch", ""])
def test_an_unknown_reader_is_refused_naming_the_known_ones(tmp_path, readers_option):
    done = write_table(tmp_path, tmp_path / "t", pa.table({"id": pa.array([1], pa.int64())}),
                 "--readers", readers_option)
    assert done.returncode == 2, done.stderr
    assert "known readers are spark, duckdb, polars, deltalake, trino" in done.stderr
    assert not (tmp_path / "t").exists()


def test_a_load_with_readers_in_its_config_is_refused_before_it_writes(tmp_path, quickstart_url):
    from test_change_data_feed import blocks
    table = tmp_path / "loaded"
    config = {"readers": ["deltalake"],
              "table_properties": {"delta.enableDeletionVectors": "true"}}
    done = run_cli("load", "--server", quickstart_url, "--table", table, "--sql", blocks(),
                   "--config", json.dumps(config), "--quiet")
    assert done.returncode == 2, done.stderr
    assert "deltalake cannot read deletionVectors" in done.stderr
    assert not table.exists() or not list((table / "_delta_log").glob("*.json"))
    config["readers"] = ["spark", "duckdb", "polars"]
    done = run_cli("load", "--server", quickstart_url, "--table", table, "--sql", blocks(),
                   "--config", json.dumps(config), "--quiet")
    assert done.returncode == 0, done.stderr
