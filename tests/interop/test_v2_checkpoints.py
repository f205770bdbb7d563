"""V2 checkpoints (reader+writer feature `v2Checkpoint`, `delta.checkpointPolicy=v2`): on such
a table ampdelta writes UUID-named checkpoints with a `checkpointMetadata` row, their file
actions inline or in `_delta_log/_sidecars/` when there are many, and `_last_checkpoint` with
the `v2Checkpoint` object Spark writes; never a classic one. Spark reads back and keeps
writing (and checkpointing) after ampdelta; DuckDB reads it too. Polars and deltalake refuse
every table with the `v2Checkpoint` reader feature, whoever wrote it (asserted, so the day they
read them the docs and the readers table change).
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import readers
from table_cli import blocks_of, ok, run_cli, stream_through_reorgs, write_table


def write(tmp_path: Path, table: Path, data: pa.Table, *extra) -> None:
    done = write_table(tmp_path, table, data, *extra)
    assert done.returncode == 0, done.stderr


def ids(table: Path, reader: str = "spark") -> list[int]:
    return sorted(r["id"] for r in readers.READERS[reader](table).to_pylist())


def checkpoints(table: Path) -> list[str]:
    return sorted(p.name for p in (table / "_delta_log").iterdir()
                  if ".checkpoint." in p.name and not p.name.startswith("."))


def sidecars(table: Path) -> list[str]:
    folder = table / "_delta_log" / "_sidecars"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def checkpoint_of(done: subprocess.CompletedProcess) -> tuple[str, int]:
    """The path and sidecar count `ampdelta table checkpoint` printed."""
    fields = dict(item.split("=", 1) for item in done.stdout.split() if "=" in item)
    return fields["path"], int(fields["sidecars"])


def assert_is_v2(table: Path, path: str, expect_sidecars: int) -> None:
    name = Path(path).name
    version, kind, uuid, ext = name.split(".")
    assert kind == "checkpoint" and len(uuid) == 36 and ext == "parquet", name
    rows = pq.read_table(table / path).to_pylist()
    metadata = [r["checkpointMetadata"] for r in rows if r["checkpointMetadata"]]
    assert metadata == [{"version": int(version), "tags": None}], metadata
    named = [r["sidecar"]["path"] for r in rows if r["sidecar"]]
    assert len(named) == expect_sidecars
    for sidecar in named:
        assert (table / "_delta_log" / "_sidecars" / sidecar).is_file(), sidecar
    if expect_sidecars:
        assert not [r for r in rows if r["add"] or r["remove"]], "file actions inline"
    last = json.loads((table / "_delta_log" / "_last_checkpoint").read_text())
    assert last["version"] == int(version)
    assert last["v2Checkpoint"]["path"] == name
    assert [s["path"] for s in last["v2Checkpoint"]["sidecarFiles"]] == named


def assert_refused_by_polars_and_deltalake(table: Path) -> None:
    for reader in ("polars", "deltalake"):
        with pytest.raises(Exception, match="v2Checkpoint"):
            readers.READERS[reader](table)


def spark_v2_table(table: Path) -> None:
    spark = readers.spark_session()
    spark.sql(f"CREATE TABLE delta.`{table}` (id BIGINT, name STRING) USING delta "
              "TBLPROPERTIES ('delta.checkpointPolicy'='v2', 'delta.checkpointInterval'='3')")
    for i in range(4):  # past Spark's own V2 checkpoint at version 3
        spark.sql(f"INSERT INTO delta.`{table}` VALUES ({i}, 's{i}')")


def test_ampdelta_writes_and_checkpoints_a_spark_v2_checkpoint_table(tmp_path):
    table = tmp_path / "v2"
    spark_v2_table(table)
    spark_checkpoints = checkpoints(table)
    assert spark_checkpoints and all(len(c.split(".")) == 4 for c in spark_checkpoints)
    for start in (10, 20):
        write(tmp_path, table, pa.table({"id": pa.array(range(start, start + 3), pa.int64()),
                                         "name": ["x"] * 3}))
    ok("table", "delete", table, "--where", "id = 11")
    ok("table", "optimize", table)
    path, count = checkpoint_of(ok("table", "checkpoint", table))
    assert_is_v2(table, path, 0)
    write(tmp_path, table, pa.table({"id": pa.array([30], pa.int64()), "name": ["y"]}))
    path, count = checkpoint_of(ok("table", "checkpoint", table, "--sidecar-threshold", "0",
                                   "--sidecar-size", "2"))
    assert count >= 2
    assert_is_v2(table, path, count)
    assert not [c for c in checkpoints(table) if c.endswith(".checkpoint.parquet")]
    expected = [0, 1, 2, 3, 10, 12, 20, 21, 22, 30]
    assert ids(table) == expected
    # DuckDB starts from the newest checkpoint (its sidecars) and sees the same rows.
    assert ids(table, "duckdb") == expected
    assert_refused_by_polars_and_deltalake(table)
    # Spark keeps writing after ampdelta, and its own next checkpoint follows ours.
    spark = readers.spark_session()
    for i in range(3):
        spark.sql(f"INSERT INTO delta.`{table}` VALUES ({40 + i}, 'z')")
    assert ids(table) == expected + [40, 41, 42]
    assert len(checkpoints(table)) > len(spark_checkpoints) + 2


def test_a_new_table_with_checkpoint_policy_v2_gets_the_feature_and_v2_checkpoints(tmp_path):
    table = tmp_path / "new"
    write(tmp_path, table, pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["a", "b"]}),
          "--property", "delta.checkpointPolicy=v2", "--property", "delta.checkpointInterval=2")
    protocol = next(json.loads(line)["protocol"] for line in
                    (table / "_delta_log" / "00000000000000000000.json").read_text().splitlines()
                    if '"protocol"' in line)
    assert "v2Checkpoint" in protocol["readerFeatures"]
    assert "v2Checkpoint" in protocol["writerFeatures"]
    # The commit at the checkpoint interval checkpoints as the table requires.
    write(tmp_path, table, pa.table({"id": pa.array([3], pa.int64()), "name": ["c"]}))
    write(tmp_path, table, pa.table({"id": pa.array([4], pa.int64()), "name": ["d"]}))
    written = checkpoints(table)
    assert written and not [c for c in written if c.endswith(".checkpoint.parquet")], written
    last = json.loads((table / "_delta_log" / "_last_checkpoint").read_text())
    assert_is_v2(table, "_delta_log/" + last["v2Checkpoint"]["path"], 0)
    assert ids(table) == [1, 2, 3, 4]
    readers.spark_session().sql(f"INSERT INTO delta.`{table}` VALUES (5, 'e')")
    for reader in ("spark", "duckdb"):
        assert ids(table, reader) == [1, 2, 3, 4, 5], reader
    assert_refused_by_polars_and_deltalake(table)


@pytest.mark.parametrize("policy", ["v3", "V2 "])
def test_a_checkpoint_policy_is_classic_or_v2(tmp_path, policy):
    table = tmp_path / "policy"
    path = tmp_path / "input.arrow"
    data = pa.table({"id": pa.array([1], pa.int64())})
    with ipc.new_file(path, data.schema) as out:
        out.write_table(data)
    done = run_cli("table", "write", table, "--input", path, "--property",
                   f"delta.checkpointPolicy={policy}")
    if policy == "v3":
        assert done.returncode == 2 and "classic or v2" in done.stderr, done.stderr
        assert not table.exists() or not any((table / "_delta_log").glob("*.json"))
    else:
        assert done.returncode == 0, done.stderr
        assert ids(table, "duckdb") == [1]


def test_merge_vacuum_and_restore_on_a_v2_checkpoint_table(tmp_path, quickstart_url):
    from conftest import QUICKSTART_FIRST
    from test_change_data_feed import blocks
    table = tmp_path / "ops"
    readers.spark_session().sql(
        f"CREATE TABLE delta.`{table}` (block_num BIGINT, hash BINARY, gas_used BIGINT) "
        "USING delta TBLPROPERTIES ('delta.checkpointPolicy'='v2', "
        "'delta.checkpointInterval'='2')")
    middle = QUICKSTART_FIRST + 20

    def load(*extra: str, sql: str) -> None:
        ok("load", "--server", quickstart_url, "--table", table, "--sql", sql, "--quiet",
           "--config", '{"optimize_after_write": false}', *extra)

    load(sql=blocks(last=middle))
    version = max(int(p.name.split(".")[0]) for p in (table / "_delta_log").glob("*.json"))
    load("--mode", "merge", "--merge-keys", "block_num", sql=blocks(first=middle - 5,
                                                                     last=middle + 5))
    numbers = sorted(readers.read_spark(table).column("block_num").to_pylist())
    assert numbers == list(range(QUICKSTART_FIRST, middle + 6))
    written = checkpoints(table)
    assert written and not [c for c in written if c.endswith(".checkpoint.parquet")], written
    ok("table", "restore", table, "--version", version)
    ok("table", "vacuum", table, "--retention-hours", "0", "--force")
    numbers = sorted(readers.read_spark(table).column("block_num").to_pylist())
    assert numbers == list(range(QUICKSTART_FIRST, middle + 1))
    assert sorted(readers.read_duckdb(table).column("block_num").to_pylist()) == numbers


@pytest.mark.timeout(400)
def test_a_stream_through_reorgs_into_a_v2_checkpoint_table(tmp_path):
    import collections
    table = tmp_path / "stream"
    readers.spark_session().sql(
        f"CREATE TABLE delta.`{table}` (block_num BIGINT, hash BINARY, gas_used BIGINT) "
        "USING delta TBLPROPERTIES ('delta.checkpointPolicy'='v2', "
        "'delta.checkpointInterval'='3')")
    chain = stream_through_reorgs(table)
    written = checkpoints(table)
    assert len(written) >= 2 and not [c for c in written if c.endswith(".checkpoint.parquet")]
    for reader in ("spark", "duckdb"):
        assert blocks_of(readers.READERS[reader](table)) == collections.Counter(chain.items())
