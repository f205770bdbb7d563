"""Row tracking (PROTOCOL.md "Row Tracking"): every ampdelta operation on a table that tracks
rows, made by Spark or by ampdelta, keeps the row ID of every row it does not delete and the
commit version of every row it does not change, and gives new rows IDs no row ever had. Spark's
`_metadata.row_id` and `_metadata.row_commit_version` are the oracle
(docs/downstream.md "Row tracking")."""
from __future__ import annotations

import collections
import json
from pathlib import Path

import pyarrow as pa
import pytest

import readers
from conftest import QUICKSTART_FIRST
from table_cli import ok, run_cli, stream_through_reorgs, write_table
from test_change_data_feed import blocks

MIDDLE = QUICKSTART_FIRST + 20

# name: TBLPROPERTIES of the table (every one tracks rows).
VARIANTS = {
    "plain": "",
    "mapping_id_dv_cdf_ict": ", 'delta.columnMapping.mode'='id', "
                             "'delta.enableDeletionVectors'='true', "
                             "'delta.enableChangeDataFeed'='true', "
                             "'delta.enableInCommitTimestamps'='true'",
    "clustered_mapping_name": ", 'delta.columnMapping.mode'='name'",
    "made_by_ampdelta": None,
}


def tracked(table: Path, version: int | None = None) -> dict[int, tuple[int, int]]:
    """block_num -> (row ID, row commit version) of every row, as Spark reads them."""
    at = f" VERSION AS OF {version}" if version is not None else ""
    rows = readers.spark_session().sql(
        f"SELECT block_num, _metadata.row_id AS id, _metadata.row_commit_version AS v "
        f"FROM delta.`{table}`{at}").collect()
    out = {r["block_num"]: (r["id"], r["v"]) for r in rows}
    assert len(out) == len(rows), "a block twice"
    ids = [id_ for id_, _ in out.values()]
    assert None not in ids and len(set(ids)) == len(ids), "row IDs not unique"
    return out


def latest_version(table: Path) -> int:
    return max(int(p.name.split(".")[0]) for p in (table / "_delta_log").glob("*.json"))


def high_water_mark(table: Path) -> int:
    """The last rowIdHighWaterMark the log records."""
    mark = -1
    for path in sorted((table / "_delta_log").glob("*.json")):
        for line in path.read_text().splitlines():
            action = json.loads(line).get("domainMetadata")
            if action and action["domain"] == "delta.rowTracking":
                mark = json.loads(action["configuration"])["rowIdHighWaterMark"]
    return mark


def make_table(tmp_path: Path, variant: str) -> Path:
    table = tmp_path / variant
    if VARIANTS[variant] is None:
        data = pa.table({"block_num": pa.array([1, 2], pa.int64()),
                         "hash": pa.array([b"\x01", b"\x02"]),
                         "gas_used": pa.array([10, 20], pa.int64())})
        done = write_table(tmp_path, table, data, "--property", "delta.enableRowTracking=true")
        assert done.returncode == 0, done.stderr
        return table
    spark = readers.spark_session()
    cluster = " CLUSTER BY (block_num)" if variant.startswith("clustered") else ""
    spark.sql(f"CREATE TABLE delta.`{table}` (block_num BIGINT, hash BINARY, gas_used BIGINT) "
              f"USING delta{cluster} TBLPROPERTIES ('delta.enableRowTracking'='true'"
              f"{VARIANTS[variant]})")
    spark.sql(f"INSERT INTO delta.`{table}` VALUES (1, X'01', 10), (2, X'02', 20)")
    return table


@pytest.mark.timeout(480)
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_operation_keeps_row_ids_and_gives_new_rows_fresh_ones(
        tmp_path, quickstart_url, variant):
    table = make_table(tmp_path, variant)
    before = tracked(table)
    assert set(before) == {1, 2}

    def step(*args, sql: str | None = None, updated: set[int] = frozenset(),
             deleted: set[int] = frozenset(), replaced: bool = False) -> None:
        """Run one operation; rows it did not update or delete keep ID and commit version,
        updated rows keep their ID and take the operation's version, new rows (every row
        when it `replaced` the table) get IDs above every earlier one."""
        nonlocal before
        highest = max(high_water_mark(table), max(i for i, _ in before.values()))
        if sql is not None:
            ok("load", "--server", quickstart_url, "--table", table, "--sql", sql, "--quiet",
               "--config", '{"optimize_after_write": false}', *args)
        else:
            ok("table", *args)
        after = tracked(table)
        version = latest_version(table)
        if replaced:
            before = {}
        for block, (row_id, commit) in after.items():
            if block in updated:
                assert (row_id, commit) == (before[block][0], version), (args, block)
            elif block in before:
                assert (row_id, commit) == before[block], (args, block)
            else:
                assert row_id > highest and commit == version, (args, block, row_id, highest)
        assert replaced or set(before) - set(after) == set(deleted), args
        assert high_water_mark(table) >= max(i for i, _ in after.values())
        before = after

    step(sql=blocks(last=MIDDLE))
    step("--mode", "merge", "--merge-keys", "block_num",
         sql=blocks(first=MIDDLE - 5, last=MIDDLE + 5), updated=set(range(MIDDLE - 5, MIDDLE + 1)))
    step("delete", table, "--where", "block_num = 1", deleted={1})
    step("optimize", table)
    step("checkpoint", table)
    before_overwrite, kept = latest_version(table), before
    step("--mode", "overwrite", sql=blocks(last=QUICKSTART_FIRST + 9), replaced=True)
    mark = high_water_mark(table)
    # A restore brings the rows back with their IDs and commit versions, and hands out no
    # ID twice: the high-water mark stays.
    ok("table", "restore", table, "--version", before_overwrite)
    assert tracked(table) == kept
    assert high_water_mark(table) == mark
    before = kept
    step("vacuum", table, "--retention-hours", "0", "--force")
    # Spark keeps writing after ampdelta, and ampdelta after Spark.
    readers.spark_session().sql(f"INSERT INTO delta.`{table}` (block_num, hash, gas_used) "
                                "VALUES (3, X'03', 30)")
    after = tracked(table)
    assert after[3][0] > mark and {b: after[b] for b in before} == before
    before = after
    step(sql=blocks(first=MIDDLE + 6, last=MIDDLE + 8))
    # Readers that ignore row tracking read the rows, not the materialized columns.
    info = json.loads(ok("table", "info", table, "--json").stdout)
    for reader in info["readers"]:
        if reader["reads"] and reader["name"] in ("deltalake", "duckdb", "polars"):
            data = readers.READERS[reader["name"]](table)
            assert sorted(data.column("block_num").to_pylist()) == sorted(before), reader
            assert data.column_names == ["block_num", "hash", "gas_used"], reader


@pytest.mark.timeout(400)
def test_a_stream_undoing_reorgs_keeps_the_row_ids_of_the_rows_it_copies(tmp_path):
    table = tmp_path / "stream"
    readers.spark_session().sql(
        f"CREATE TABLE delta.`{table}` (block_num BIGINT, hash BINARY, gas_used BIGINT) "
        "USING delta TBLPROPERTIES ('delta.enableRowTracking'='true')")
    chain = stream_through_reorgs(table)
    spark = readers.spark_session()
    rows = spark.sql(f"SELECT block_num, hash, _metadata.row_id AS id, "
                     f"_metadata.row_commit_version AS v FROM delta.`{table}`").collect()
    from test_stream_crash import hex_hash
    assert collections.Counter((r["block_num"], hex_hash(r["hash"])) for r in rows) == \
        collections.Counter(chain.items())
    assert len({r["id"] for r in rows}) == len(rows)
    # An undo copies the rows it keeps: none may look inserted by it, and each has the ID
    # it had in the commit that inserted it.
    undos = {v for v in range(latest_version(table) + 1)
             if '"operation":"DELETE"' in (table / "_delta_log" / f"{v:020d}.json").read_text()}
    rewrites = [v for v in undos
                if '"add"' in (table / "_delta_log" / f"{v:020d}.json").read_text()]
    assert rewrites, "no undo copied rows: the test proves nothing"
    assert not {r["v"] for r in rows} & undos
    by_version = collections.defaultdict(list)
    for r in rows:
        by_version[r["v"]].append(r)
    for version, written in by_version.items():
        then = {(r["block_num"], bytes(r["hash"])): r["id"] for r in spark.sql(
            f"SELECT block_num, hash, _metadata.row_id AS id FROM delta.`{table}` "
            f"VERSION AS OF {version}").collect()}
        for r in written:
            assert then[(r["block_num"], bytes(r["hash"]))] == r["id"], (version, r)


def test_bad_row_tracking_properties_are_refused_and_the_table_kept(tmp_path):
    table = tmp_path / "plain"
    data = pa.table({"id": pa.array([1, 2], pa.int64())})
    assert write_table(tmp_path, table, data).returncode == 0
    before = sorted(p.name for p in (table / "_delta_log").iterdir())
    done = write_table(tmp_path, table, data, "--property", "delta.enableRowTracking=true")
    assert done.returncode == 2 and "does not backfill" in done.stderr, done.stderr
    for bad in ("delta.enableRowTracking=yes",
                "delta.rowTracking.materializedRowIdColumnName=_id"):
        done = write_table(tmp_path, tmp_path / "new", data, "--property", bad)
        assert done.returncode == 2 and bad.split("=")[0] in done.stderr, done.stderr
        assert not (tmp_path / "new").exists()
    assert sorted(p.name for p in (table / "_delta_log").iterdir()) == before
    # A load bringing a column named like a materialized one is refused.
    tracked_table = tmp_path / "tracked"
    assert write_table(tmp_path, tracked_table, data,
                       "--property", "delta.enableRowTracking=true").returncode == 0
    config = [json.loads(line)["metaData"]["configuration"]
              for line in (tracked_table / "_delta_log" / f"{0:020d}.json").read_text()
              .splitlines() if "metaData" in line][0]
    name = config["delta.rowTracking.materializedRowIdColumnName"]
    done = write_table(tmp_path, tracked_table,
                       data.append_column(name, pa.array([None, None], pa.int64())))
    assert done.returncode == 2 and name in done.stderr, done.stderr
    assert latest_version(tracked_table) == 0
