"""The seed's scripts (seed_scripts/, the Python SDK's Delta Lake page with only the import
line changed) run against the dev server, each in a subprocess whose working directory is
the test's tmp_path. Their output is checked line by line against the SDK's LoadResult
format, and every table they write is read back with deltalake, Polars and DuckDB."""

from __future__ import annotations

import collections

import pytest

import ampdelta
from conftest import (BLOCKS_SQL, QUICKSTART_BLOCK_NUMBERS, QUICKSTART_FIRST, RESULT_RE,
                      SEED_SCRIPTS, assert_keyboard_interrupt_exit, assert_readers_see, column,
                      delta_config, history_operations, read_all, readers, rows_by_block,
                      rows_per_version, run_script, server_hashes)


def result_line(stdout: str, rows: int, destination: str) -> None:
    """stdout is exactly one LoadResult line: `✅ Loaded ROWS rows to DEST in S.SSs`."""
    lines = stdout.splitlines()
    assert len(lines) == 1, stdout
    match = RESULT_RE.match(lines[0])
    assert match, f"not the SDK's LoadResult format: {lines[0]!r}"
    assert (int(match.group(1)), match.group(2)) == (rows, destination), lines[0]


@pytest.mark.timeout(90)
def test_load_script_prints_its_result_and_every_reader_sees_the_100_blocks(
        quickstart_url, tmp_path):
    done = run_script(SEED_SCRIPTS / "load_delta_lake.py", tmp_path, quickstart_url)
    result_line(done.stdout, 100, "blocks")
    table = tmp_path / "data" / "blocks"
    assert_readers_see(table, blocks=QUICKSTART_BLOCK_NUMBERS, hashes=server_hashes(quickstart_url),
                       num_rows=100)
    # The page: Delta has no unsigned integers (block_num, gas_used: i64), µs timestamps.
    from deltalake import DeltaTable
    types = {f.name: str(f.type.type) for f in DeltaTable(str(table)).schema().fields}
    assert types == {"block_num": "long", "timestamp": "timestamp", "hash": "binary",
                     "gas_used": "long"}, types


@pytest.mark.timeout(90)
def test_read_script_shows_the_newest_blocks_with_the_pages_types(quickstart_url, tmp_path):
    run_script(SEED_SCRIPTS / "load_delta_lake.py", tmp_path, quickstart_url)
    done = run_script(SEED_SCRIPTS / "read_delta_lake.py", tmp_path, None)
    lines = done.stdout.splitlines()
    # The page's output, with the dev server's gas_used values (its chain has the
    # Quickstart's block numbers and timestamps, not its gas).
    assert lines[0] == "shape: (3, 3)", done.stdout
    cells = [[c.strip() for c in line.strip("│").split("┆")] for line in lines if "┆" in line]
    assert cells[0] == ["block_num", "timestamp", "gas_used"], done.stdout
    assert cells[1] == ["---", "---", "---"], done.stdout
    assert cells[2] == ["i64", "datetime[μs, UTC]", "i64"], done.stdout
    gas = dict(zip(*(column(readers.read_deltalake(tmp_path / "data" / "blocks"), c)
                     for c in ("block_num", "gas_used"))))
    assert cells[3:] == [
        ["24000099", "2025-12-13 00:25:59 UTC", str(gas[24000099])],
        ["24000098", "2025-12-13 00:25:47 UTC", str(gas[24000098])],
        ["24000097", "2025-12-13 00:25:35 UTC", str(gas[24000097])],
    ], done.stdout


@pytest.mark.timeout(120)
def test_replace_script_uses_the_connection_the_load_script_configured(quickstart_url,
                                                                       tmp_path):
    # replace_delta_lake.py never configures 'local_delta': the SDK keeps connections in
    # ~/.flight_sql_connections.json, so the one load_delta_lake.py named is found there.
    run_script(SEED_SCRIPTS / "load_delta_lake.py", tmp_path, quickstart_url)
    done = run_script(SEED_SCRIPTS / "replace_delta_lake.py", tmp_path, quickstart_url)
    result_line(done.stdout, 100, "blocks")
    table = tmp_path / "data" / "blocks"
    assert_readers_see(table, blocks=QUICKSTART_BLOCK_NUMBERS, hashes=server_hashes(quickstart_url),
                       num_rows=100)
    # The page: the delete is a version of its own (readers see an empty table), the
    # versions before it stay readable.
    operations = history_operations(table)
    deletes = [v for v, op in operations if op == "DELETE"]
    assert len(deletes) == 1, operations
    counts = rows_per_version(table)
    assert counts[deletes[0]] == 0 and counts[deletes[0] - 1] == 100, (operations, counts)
    assert counts[-1] == 100, counts


@pytest.mark.timeout(120)
def test_overwrite_script_keeps_all_17153_transactions(transactions_server, tmp_path):
    # The SDK prints "✅ Loaded 17153 rows" and keeps the last batch, 769 rows
    # (amp-protocol.md §4.3.1); ampdelta replaces the table's rows with all of the load's.
    table = tmp_path / "data" / "transactions"
    client = ampdelta.Client(transactions_server.url)
    client.configure_connection("before", "deltalake", delta_config(table))
    client.sql(f'SELECT * FROM "acme/eth_mainnet".transactions WHERE block_num < '
               f'{QUICKSTART_FIRST + 10}').load(connection="before", destination="before",
                                                read_all=True)
    assert readers.read_deltalake(table).num_rows == 170

    done = run_script(SEED_SCRIPTS / "overwrite_delta_lake.py", tmp_path,
                      transactions_server.url)
    result_line(done.stdout, 17_153, "transactions")
    expected = sorted((b, t) for b in range(QUICKSTART_FIRST, QUICKSTART_FIRST + 1009)
                      for t in range(17))
    for name, got in read_all(table).items():
        assert got.num_rows == 17_153, f"{name}: {got.num_rows} rows"
        assert sorted(zip(column(got, "block_num"), column(got, "tx_index"))) == expected, name
    # One commit replaced the 170 rows by the 17,153: no version in between holds a part.
    counts = rows_per_version(table)
    first_full = counts.index(17_153)
    assert counts[:first_full] == [170] * first_full, counts


@pytest.mark.timeout(120)
def test_merge_script_updates_matching_blocks_and_inserts_the_rest(quickstart_url,
                                                                  dev_server_factory, tmp_path):
    # The SDK fails with "Invalid save mode provided: merge"; ampdelta merges on merge_keys.
    other = dev_server_factory("--seed", "1")  # same blocks, other hashes
    table = tmp_path / "data" / "blocks"
    before_client = ampdelta.Client(other.url)
    before_client.configure_connection("before", "deltalake", delta_config(table))
    before_client.sql(f"{BLOCKS_SQL} WHERE block_num < {QUICKSTART_FIRST + 60}").load(
        connection="before", destination="before", read_all=True)
    old = rows_by_block(readers.read_deltalake(table))
    canonical = server_hashes(quickstart_url)
    assert all(old[b] != canonical[b] for b in old), "the two seeds gave the same hashes"

    done = run_script(SEED_SCRIPTS / "merge_delta_lake.py", tmp_path, quickstart_url)
    result_line(done.stdout, 100, "blocks")
    assert_readers_see(table, blocks=QUICKSTART_BLOCK_NUMBERS, hashes=canonical, num_rows=100)
    assert "MERGE" in [op for _, op in history_operations(table)]
    assert rows_per_version(table).count(60) >= 1  # the version before the merge


def check_stream_run(running, table, rows_before: int) -> list[int]:
    """The stream script's output and table after its SIGINT: every line a LoadResult of
    blocks_live, the table holding every printed commit plus at most the one in progress at
    the signal, each block once from QUICKSTART_FIRST on. Returns the blocks."""
    printed = [RESULT_RE.match(line) for line in running.lines]
    assert running.lines and all(printed), running.describe()
    assert {m.group(2) for m in printed} == {"blocks_live"}, running.describe()
    printed_rows = sum(int(m.group(1)) for m in printed)
    counts = rows_per_version(table)
    print(f"stream run: printed {[int(m.group(1)) for m in printed]}, rows per version {counts}")
    target = rows_before + printed_rows
    assert target in counts, f"no version holds the printed {target} rows: {counts}"
    last_printed = len(counts) - 1 - counts[::-1].index(target)
    assert len(counts) - 1 - last_printed <= 1, (
        f"more than one commit after the last printed result: {counts}\n{running.describe()}")
    got = assert_readers_see(table)
    blocks = None
    for name, rows in got.items():
        numbers = column(rows, "block_num")
        twice = {b: c for b, c in collections.Counter(numbers).items() if c > 1}
        assert not twice, f"{name}: blocks repeated {dict(list(twice.items())[:10])}"
        assert sorted(numbers) == list(range(QUICKSTART_FIRST, max(numbers) + 1)), name
        assert blocks is None or sorted(numbers) == blocks, name
        blocks = sorted(numbers)
    return blocks


@pytest.mark.timeout(120)
def test_stream_script_stops_at_ctrl_c_after_its_commit_and_a_restart_continues(
        live_server, script_runner, tmp_path):
    table = tmp_path / "data" / "blocks_live"
    script = SEED_SCRIPTS / "stream_delta_lake.py"
    first = script_runner(script, tmp_path, live_server.url)
    first.wait_for(lambda lines: sum(bool(RESULT_RE.match(x)) for x in lines) >= 3, 60)
    waited = first.interrupt()
    assert_keyboard_interrupt_exit(first)
    assert waited < 5, f"{waited:.1f} s from SIGINT to the exit\n{first.describe()}"
    blocks = check_stream_run(first, table, 0)
    assert len(blocks) >= 100, blocks[-1]  # the catch-up, then live blocks

    # A restart continues where the table ends: no block again, new blocks after it.
    second = script_runner(script, tmp_path, live_server.url)
    second.wait_for(lambda lines: sum(bool(RESULT_RE.match(x)) for x in lines) >= 2, 60)
    second.interrupt()
    assert_keyboard_interrupt_exit(second)
    after = check_stream_run(second, table, len(blocks))
    assert len(after) > len(blocks)
    hashes = server_hashes(live_server.url)
    for name, rows in read_all(table).items():
        assert rows_by_block(rows) == {b: hashes[b] for b in after}, name
