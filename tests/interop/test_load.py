"""`ampdelta load` from the dev server, read back by independent readers."""
import subprocess

import pytest

import readers
from conftest import cli_env, cli_path

QUICKSTART = 'SELECT block_num, timestamp, hash, gas_used FROM "acme/eth_mainnet".blocks'


def load(url, table, sql, *extra):
    return subprocess.run([str(cli_path()), "load", "--server", url, "--table", str(table),
                           "--sql", sql, *extra], env=cli_env(), capture_output=True, text=True,
                          timeout=120)


@pytest.mark.timeout(120)
def test_quickstart_load_reads_back_as_the_seed_shows(quickstart_url, tmp_path):
    import polars as pl

    table = tmp_path / "blocks"
    done = load(quickstart_url, table, QUICKSTART, "--destination", "blocks")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("✅ Loaded 100 rows to blocks in "), done.stdout
    df = pl.read_delta(str(table))
    newest = df.select("block_num", "timestamp", "gas_used").sort("block_num", descending=True).head(3)
    assert newest.schema["block_num"] == pl.Int64
    assert newest.schema["gas_used"] == pl.Int64
    assert str(newest.schema["timestamp"]) == "Datetime(time_unit='us', time_zone='UTC')"
    assert newest["block_num"].to_list() == [24000099, 24000098, 24000097]
    assert str(newest["timestamp"][0]) == "2025-12-13 00:25:59+00:00"
    for name in ("deltalake", "duckdb"):
        got = readers.READERS[name](str(table))
        assert got.num_rows == 100, name
        assert sorted(got.column("block_num").to_pylist()) == list(range(24000000, 24000100)), name


@pytest.mark.timeout(120)
def test_overwrite_keeps_every_row_and_history(quickstart_url, tmp_path):
    table = tmp_path / "tx"
    first = load(quickstart_url, table, QUICKSTART)
    assert first.returncode == 0, first.stderr
    sql = 'SELECT * FROM "acme/eth_mainnet".transactions'
    second = load(quickstart_url, table, sql, "--mode", "overwrite")
    assert second.returncode == 0, second.stderr
    assert "Loaded 800 rows" in second.stdout
    latest = readers.read_deltalake(str(table))
    assert latest.num_rows == 800
    previous = readers.read_deltalake(str(table), version=0)
    assert previous.num_rows == 100


@pytest.mark.timeout(60)
def test_errors_exit_non_zero_and_leave_the_table(quickstart_url, tmp_path):
    table = tmp_path / "blocks"
    assert load(quickstart_url, table, QUICKSTART).returncode == 0
    bad = load(quickstart_url, table, QUICKSTART, "--partition-by", "network")
    assert bad.returncode == 2  # bad input
    assert "Partition columns {'network'} not found in table" in bad.stdout
    config = load(quickstart_url, table, QUICKSTART, "--config", '{"batch_size": 5}')
    assert config.returncode == 2
    assert "Invalid DeltaLakeLoader configuration: unknown key 'batch_size'" in config.stderr
    sql_error = load(quickstart_url, table, "SELECT * FROM nowhere.blocks")
    assert sql_error.returncode == 3  # the server refused the SQL
    assert "INVALID_ARGUMENT" in sql_error.stdout
    assert readers.read_deltalake(str(table)).num_rows == 100
    from deltalake import DeltaTable
    assert DeltaTable(str(table)).version() == 0
