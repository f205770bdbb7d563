"""Table maintenance from Python (docs/python.md "Table maintenance"): ampdelta.Table and
client.table(connection) run the engine's history, optimize, delete, restore, vacuum and
checkpoint, each returning a dict; after each step deltalake and DuckDB read the table
back with exactly the rows the step leaves."""

from __future__ import annotations

import pathlib

import pytest

import ampdelta
from conftest import (BLOCKS_SQL, QUICKSTART_BLOCK_NUMBERS, QUICKSTART_FIRST, column, delta_config,
                      delta_version, history_operations, readers, server_hashes)

NAMES = ("deltalake", "duckdb")


def live_files(path) -> list[str]:
    from deltalake import DeltaTable
    return sorted(DeltaTable(str(path)).file_uris())


def parquet_on_disk(path) -> list[pathlib.Path]:
    return sorted(p for p in pathlib.Path(path).rglob("*.parquet") if "_delta_log" not in p.parts)


def check_readers(path, blocks: list[int], hashes: dict[int, str]) -> None:
    for name in NAMES:
        got = readers.READERS[name](str(path))
        numbers = column(got, "block_num")
        assert sorted(numbers) == sorted(blocks), f"{name}: {len(numbers)} rows"
        assert {b: "0x" + bytes(h).hex() for b, h in zip(numbers, column(got, "hash"))} == {
            b: hashes[b] for b in blocks}, name


@pytest.mark.timeout(120)
def test_history_optimize_delete_restore_vacuum_checkpoint(quickstart_url, tmp_path):
    hashes = server_hashes(quickstart_url)
    path = tmp_path / "blocks"
    client = ampdelta.Client(quickstart_url)
    client.configure_connection("m", "deltalake", delta_config(path, optimize_after_write=False))
    for first in range(0, 100, 25):  # versions 0..3, a file each
        client.sql(f"{BLOCKS_SQL} WHERE block_num BETWEEN {QUICKSTART_FIRST + first} AND "
                   f"{QUICKSTART_FIRST + first + 24}").load(connection="m", destination="m",
                                                             read_all=True)
    table = ampdelta.Table(str(path))
    assert table.version() == 3 == client.table("m").version()

    history = table.history()
    assert [h["version"] for h in history] == [3, 2, 1, 0], history
    assert all(h["operation"] == "WRITE" and "timestamp" in h for h in history), history
    assert [h["version"] for h in table.history(limit=2)] == [3, 2]

    assert len(live_files(path)) == 4
    optimized = table.optimize()
    assert isinstance(optimized, dict), optimized
    assert optimized["files_removed"] == 4 and optimized["files_added"] >= 1, optimized
    assert optimized["version"] == 4 == delta_version(path), optimized
    assert len(live_files(path)) == optimized["files_added"]
    assert history_operations(path)[-1] == (4, "OPTIMIZE")
    check_readers(path, QUICKSTART_BLOCK_NUMBERS, hashes)

    deleted = table.delete(f"block_num >= {QUICKSTART_FIRST + 50}")
    assert isinstance(deleted, dict), deleted
    assert deleted["rows_deleted"] == 50 and deleted["version"] == 5, deleted
    check_readers(path, QUICKSTART_BLOCK_NUMBERS[:50], hashes)

    restored = table.restore(4)
    assert isinstance(restored, dict), restored
    assert restored["version"] == 6 and restored["restored_version"] == 4, restored
    check_readers(path, QUICKSTART_BLOCK_NUMBERS, hashes)
    assert readers.read_deltalake(str(path), version=5).num_rows == 50  # time travel stays

    # The removed files are younger than the default 7-day retention: nothing to delete.
    on_disk = parquet_on_disk(path)
    dry = table.vacuum(dry_run=True)
    assert isinstance(dry, dict) and dry["dry_run"] is True and dry["files_deleted"] == 0, dry
    done = table.vacuum()
    assert isinstance(done, dict) and done["dry_run"] is False, done
    assert done["files_deleted"] == 0, done
    assert parquet_on_disk(path) == on_disk
    check_readers(path, QUICKSTART_BLOCK_NUMBERS, hashes)

    version = delta_version(path)
    checkpoint = client.table("m").checkpoint()
    assert isinstance(checkpoint, dict), checkpoint
    assert checkpoint["version"] == version, checkpoint
    assert (path / "_delta_log" / f"{version:020d}.checkpoint.parquet").is_file() or any(
        (path / "_delta_log").glob(f"{version:020d}.checkpoint.*.parquet"))
    check_readers(path, QUICKSTART_BLOCK_NUMBERS, hashes)
    from deltalake import DeltaTable
    assert DeltaTable(str(path)).version() == version
    # docs/python.md: `table.checkpoint()  # {'version': 10, 'actions': 8, 'files': 1, …}`.
    assert checkpoint["files"] == len(DeltaTable(str(path)).file_uris()), checkpoint
    assert checkpoint["actions"] > checkpoint["files"] and checkpoint["bytes"] > 0, checkpoint


@pytest.mark.timeout(60)
def test_vacuum_without_retention_deletes_the_files_no_version_uses(quickstart_url, tmp_path):
    path = tmp_path / "blocks"
    client = ampdelta.Client(quickstart_url)
    client.configure_connection("v", "deltalake", delta_config(path, optimize_after_write=False))
    sql = f"{BLOCKS_SQL} WHERE block_num < {QUICKSTART_FIRST + 10}"
    client.sql(sql).load(connection="v", destination="v", read_all=True)
    client.sql(f"{BLOCKS_SQL} WHERE block_num >= {QUICKSTART_FIRST + 10}").load(
        connection="v", destination="v", read_all=True, mode="overwrite")
    assert len(parquet_on_disk(path)) == 2
    table = client.table("v")
    dry = table.vacuum(retention_hours=0, dry_run=True, enforce_retention_duration=False)
    assert dry["files_deleted"] == 1 and dry["dry_run"] is True, dry
    assert len(parquet_on_disk(path)) == 2
    done = table.vacuum(retention_hours=0, enforce_retention_duration=False)
    assert done["files_deleted"] == 1 and done["dry_run"] is False, done
    assert len(parquet_on_disk(path)) == 1
    check_readers(path, QUICKSTART_BLOCK_NUMBERS[10:], server_hashes(quickstart_url))


def test_delete_without_a_predicate_removes_every_row(client, tmp_path):
    path = tmp_path / "blocks"
    client.configure_connection("d", "deltalake", delta_config(path))
    client.sql(BLOCKS_SQL).load(connection="d", destination="d", read_all=True)
    deleted = ampdelta.Table(str(path)).delete()
    assert deleted["rows_deleted"] == 100, deleted
    for name in NAMES:
        assert readers.READERS[name](str(path)).num_rows == 0, name
