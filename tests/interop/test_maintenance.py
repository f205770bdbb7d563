"""OPTIMIZE, VACUUM and RESTORE on ampdelta tables, checked by independent readers."""
import pathlib
import subprocess

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import readers
from conftest import cli_env, cli_path


def ampdelta(*args):
    done = subprocess.run([str(cli_path()), *map(str, args)], env=cli_env(), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def write(tmp_path, table, ids, *extra):
    source = tmp_path / f"in-{ids[0]}-{len(ids)}.arrow"
    data = pa.table({"id": pa.array(ids, pa.uint64()), "network": ["eth" if i % 2 else "base" for i in ids]})
    with ipc.new_file(source, data.schema) as writer:
        writer.write_table(data)
    return ampdelta("table", "write", table, "--input", source, *extra)


def parquet_files(table):
    return sorted(p for p in pathlib.Path(table).rglob("*.parquet") if "_delta_log" not in p.parts)


def ids(table, reader="deltalake", version=None):
    if version is None:
        got = readers.READERS[reader](str(table))
    else:
        got = readers.READERS[reader](str(table), version=version)
    return sorted(got.column("id").to_pylist())


@pytest.mark.timeout(180)
def test_optimize_compacts_and_every_reader_sees_the_same_rows(tmp_path):
    table = tmp_path / "t"
    for start in range(0, 60, 10):
        write(tmp_path, table, list(range(start, start + 10)), "--partition-by", "network")
    assert len(parquet_files(table)) == 12
    out = ampdelta("table", "optimize", table)
    assert "files_removed=12 files_added=2" in out
    for name in ("deltalake", "duckdb", "polars", "spark"):
        assert ids(table, name) == list(range(60)), name
    assert ids(table, "deltalake", version=5) == list(range(60))


@pytest.mark.timeout(240)
def test_optimize_stitches_large_row_groups_and_rewrites_when_asked(tmp_path):
    # Three writes of 80,000 rows in two partitions: files of 40,000 rows, one row group
    # each, which compaction copies as they are unless told to rewrite.
    stitched, rewritten = tmp_path / "s", tmp_path / "r"
    for table in (stitched, rewritten):
        for start in range(0, 240_000, 80_000):
            write(tmp_path, table, list(range(start, start + 80_000)), "--partition-by",
                  "network", "--compression", "zstd")
    assert "files_removed=6 files_added=2 files_stitched=6" in ampdelta(
        "table", "optimize", stitched)
    assert "files_removed=6 files_added=2 files_stitched=0" in ampdelta(
        "table", "optimize", rewritten, "--rewrite")
    for name in ("deltalake", "duckdb", "polars", "spark"):
        for table in (stitched, rewritten):
            assert ids(table, name) == list(range(240_000)), (name, table)


@pytest.mark.timeout(180)
def test_vacuum_really_deletes_unreferenced_files_and_readers_still_work(tmp_path):
    table = tmp_path / "t"
    write(tmp_path, table, list(range(10)))
    write(tmp_path, table, list(range(10, 20)), "--mode", "overwrite")
    before = parquet_files(table)
    assert len(before) == 2
    dry = ampdelta("table", "vacuum", table, "--retention-hours", "0", "--force", "--dry-run")
    assert "would delete 1 files" in dry
    assert parquet_files(table) == before
    done = ampdelta("table", "vacuum", table, "--retention-hours", "0", "--force")
    assert "deleted 1 files" in done
    after = parquet_files(table)
    assert len(after) == 1
    for name in ("deltalake", "duckdb", "polars", "spark"):
        assert ids(table, name) == list(range(10, 20)), name
    history = ampdelta("table", "history", table)
    assert "VACUUM END" in history and "VACUUM START" in history


@pytest.mark.timeout(120)
def test_vacuum_refuses_a_short_retention_without_force(tmp_path):
    table = tmp_path / "t"
    write(tmp_path, table, list(range(5)))
    done = subprocess.run([str(cli_path()), "table", "vacuum", str(table), "--retention-hours", "1"],
                          env=cli_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2  # bad input (README, "Exit codes")
    assert "shorter than the table's" in done.stderr


@pytest.mark.timeout(120)
def test_restore_returns_to_an_older_version(tmp_path):
    table = tmp_path / "t"
    write(tmp_path, table, list(range(10)))
    write(tmp_path, table, list(range(10, 20)))
    ampdelta("table", "delete", table, "--where", "id >= 5")
    assert ids(table) == list(range(5))
    ampdelta("table", "restore", table, "--version", "1")
    assert ids(table) == list(range(20))
    assert ids(table, "spark") == list(range(20))
    assert ids(table, "deltalake", version=2) == list(range(5))
