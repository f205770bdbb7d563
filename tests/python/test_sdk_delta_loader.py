"""The Python SDK's own Delta Lake loader tests (amp-protocol.md §4.4), expressed through
ampdelta's API: a Client of the dev server instead of the SDK's synthetic batches.

Where the SDK feeds a loader N rows, these tests load a query returning N rows (WHERE on
block_num ranges); the SDK's fixture partitions by year/month, columns the Quickstart
dataset does not have, so partitioning uses one it has (transactions.tx_index). Each test
says which SDK test it mirrors. Every table is read back by deltalake, Polars and DuckDB.
"""

from __future__ import annotations

import itertools
import re
import threading
import time

import pytest

import ampdelta
from conftest import (QUICKSTART_DATASET, QUICKSTART_FIRST, REORG_RE, RESULT_RE,
                      assert_readers_see, column, delta_config, delta_version,
                      history_operations, is_delta_table, read_all, rows_by_block,
                      server_hashes)

TXS = f'SELECT block_num, tx_index, tx_hash, gas_used FROM "{QUICKSTART_DATASET}".transactions'
HASHES_SQL = f'SELECT block_num, hash FROM "{QUICKSTART_DATASET}".blocks'
# The SDK's delta_basic_config without its partition columns (see the module doc).
BASIC = {"optimize_after_write": True, "vacuum_after_write": False, "schema_evolution": True,
         "merge_schema": True, "storage_options": {}}
_names = itertools.count()


def connect(client, path, **config) -> str:
    """configure_connection a fresh connection name to the table at path."""
    name = f"delta_{next(_names)}"
    client.configure_connection(name, "deltalake", delta_config(path, **config))
    return name


def blocks_sql(first: int, last: int, columns: str = "block_num, timestamp, hash, gas_used"):
    return (f'SELECT {columns} FROM "{QUICKSTART_DATASET}".blocks '
            f"WHERE block_num BETWEEN {QUICKSTART_FIRST + first} AND {QUICKSTART_FIRST + last}")


def numbers(first: int, last: int) -> list[int]:
    return list(range(QUICKSTART_FIRST + first, QUICKSTART_FIRST + last + 1))


def check_result(result, rows: int, destination: str) -> None:
    """The SDK's LoadResult fields and __str__ (amp-protocol.md §3.2)."""
    assert result.success is True and result.error is None, result
    assert result.rows_loaded == rows, result
    assert result.table_name == destination
    assert result.loader_type == "deltalake"
    assert result.is_reorg is False
    assert result.duration >= 0
    assert str(result) == f"✅ Loaded {rows} rows to {destination} in {result.duration:.2f}s"
    assert RESULT_RE.match(str(result))


@pytest.mark.timeout(60)
def test_append_5_then_5_gives_10(client, tmp_path):
    # Mirrors TestDeltaLakeCore.test_append_mode: 5 + 5 -> 10.
    path = tmp_path / "t"
    conn = connect(client, path, **BASIC)
    first = client.sql(blocks_sql(0, 4)).load(connection=conn, destination="t", read_all=True)
    check_result(first, 5, "t")
    second = client.sql(blocks_sql(5, 9)).load(connection=conn, destination="t",
                                               read_all=True, mode="append")
    check_result(second, 5, "t")
    assert_readers_see(path, blocks=numbers(0, 9), num_rows=10)


@pytest.mark.timeout(60)
def test_overwrite_keeps_only_the_new_rows(client, tmp_path):
    # Mirrors TestDeltaLakeCore.test_overwrite_mode: 5, then a 3-row overwrite -> 3; also
    # with a LoadMode and in several batches (the SDK kept only the last batch, §4.3.1).
    path = tmp_path / "t"
    conn = connect(client, path, **BASIC)
    client.sql(blocks_sql(0, 4)).load(connection=conn, destination="t", read_all=True)
    result = client.sql(blocks_sql(10, 12)).load(connection=conn, destination="t",
                                                 read_all=True, mode="overwrite")
    check_result(result, 3, "t")
    assert_readers_see(path, blocks=numbers(10, 12), num_rows=3)
    result = client.sql(blocks_sql(20, 59)).load(
        connection=conn, destination="t", read_all=True, mode=ampdelta.LoadMode.OVERWRITE,
        batch_size=7)
    check_result(result, 40, "t")
    assert_readers_see(path, blocks=numbers(20, 59), num_rows=40)


@pytest.mark.timeout(90)
def test_batch_loading_reports_each_batch_and_commits_once(dev_server_factory, tmp_path):
    # Mirrors TestDeltaLakeCore.test_batch_loading: 10,000 rows as 40 x 250, each result's
    # rows_loaded the batch's rows, 10,000 in all. The server sends 1000-row batches
    # (--batch-rows); batch_size=250 writes and reports 250-row batches. Rows become visible
    # only with the commit, which the last result follows and reports (table_version).
    server = dev_server_factory("--blocks", "1250", "--batch-rows", "1000")
    client = ampdelta.Client(server.url)
    path = tmp_path / "t"
    conn = connect(client, path, optimize_after_write=False)
    results = []
    for result in client.sql(TXS).load(connection=conn, destination="t", batch_size=250):
        if not results:
            assert not is_delta_table(path), "rows visible before the load committed"
        results.append(result)
    assert [r.rows_loaded for r in results] == [250] * 40
    assert all(r.success for r in results)
    assert "table_version" in results[-1].metadata, results[-1].metadata
    assert int(results[-1].metadata["table_version"]) == 0 == delta_version(path)
    expected = sorted((b, t) for b in numbers(0, 1249) for t in range(8))
    for name, got in read_all(path).items():
        assert sorted(zip(column(got, "block_num"), column(got, "tx_index"))) == expected, name


@pytest.mark.timeout(60)
def test_nulls_are_kept(client, tmp_path):
    # Mirrors TestDeltaLakeCore.test_null_handling: 10 rows with nulls.
    sql = (f'SELECT block_num, tx_index, "to", gas_price, max_fee_per_gas, chain_id, '
           f'state_root FROM "{QUICKSTART_DATASET}".transactions '
           f"WHERE block_num = {QUICKSTART_FIRST + 3} AND tx_index < 10")
    source = client.sql(sql).to_arrow()
    nulls = {name: source.column(name).null_count for name in source.column_names}
    assert source.num_rows == 8 and sum(nulls.values()) > 0, (
        f"no nulls in the source, pick other columns: {nulls}")
    path = tmp_path / "t"
    conn = connect(client, path, **BASIC)
    check_result(client.sql(sql).load(connection=conn, destination="t", read_all=True), 8, "t")
    for name, got in read_all(path).items():
        assert {c: got.column(c).null_count for c in got.column_names} == nulls, name


@pytest.mark.timeout(60)
def test_partition_by_a_column_of_the_data(client, tmp_path):
    # Mirrors TestDeltaLakeSpecific.test_partitioning (partition_by year/month/day there).
    path = tmp_path / "t"
    conn = connect(client, path, **dict(BASIC, partition_by=["tx_index"]))
    sql = f"{TXS} WHERE block_num BETWEEN {QUICKSTART_FIRST} AND {QUICKSTART_FIRST + 4}"
    check_result(client.sql(sql).load(connection=conn, destination="t", read_all=True), 40, "t")
    from deltalake import DeltaTable
    assert DeltaTable(str(path)).metadata().partition_columns == ["tx_index"]
    assert sorted(p.name for p in path.iterdir() if p.name.startswith("tx_index=")) == [
        f"tx_index={i}" for i in range(8)]
    for name, got in read_all(path).items():
        assert sorted(zip(column(got, "block_num"), column(got, "tx_index"))) == sorted(
            (b, t) for b in numbers(0, 4) for t in range(8)), name


@pytest.mark.timeout(60)
def test_optimize_after_write_compacts_and_keeps_every_row(client, tmp_path):
    # Mirrors TestDeltaLakeSpecific.test_optimization: 1000 rows readable, version >= 0.
    path = tmp_path / "t"
    conn = connect(client, path, **BASIC)
    for first in range(0, 100, 25):  # 4 loads of 25 blocks x 8 transactions
        sql = (f"{TXS} WHERE block_num BETWEEN {QUICKSTART_FIRST + first} AND "
               f"{QUICKSTART_FIRST + first + 24}")
        client.sql(sql).load(connection=conn, destination="t", read_all=True)
    assert delta_version(path) >= 0
    assert "OPTIMIZE" in [op for _, op in history_operations(path)], history_operations(path)
    from deltalake import DeltaTable
    assert len(DeltaTable(str(path)).file_uris()) < 4  # compacted
    assert_readers_see(path, num_rows=800)


@pytest.mark.timeout(60)
def test_schema_evolution_adds_a_column(client, tmp_path):
    # Mirrors TestDeltaLakeSpecific.test_schema_evolution: a load with an extra column adds it.
    path = tmp_path / "t"
    conn = connect(client, path, **BASIC)
    client.sql(blocks_sql(0, 4, "block_num, hash")).load(connection=conn, destination="t",
                                                         read_all=True)
    from deltalake import DeltaTable
    before = [f.name for f in DeltaTable(str(path)).schema().fields]
    assert before == ["block_num", "hash"]
    client.sql(blocks_sql(5, 9, "block_num, hash, gas_used")).load(
        connection=conn, destination="t", read_all=True)
    after = [f.name for f in DeltaTable(str(path)).schema().fields]
    assert after == ["block_num", "hash", "gas_used"]
    for name, got in read_all(path).items():
        gas = dict(zip(column(got, "block_num"), column(got, "gas_used")))
        assert sorted(gas) == numbers(0, 9), name
        assert all(gas[b] is None for b in numbers(0, 4)), name
        assert all(gas[b] is not None for b in numbers(5, 9)), name


@pytest.mark.timeout(60)
def test_history_after_two_loads(client, tmp_path):
    # Mirrors TestDeltaLakeSpecific.test_table_history: version >= 1 after 2 loads, history
    # not empty.
    path = tmp_path / "t"
    conn = connect(client, path, **BASIC)
    client.sql(blocks_sql(0, 4)).load(connection=conn, destination="t", read_all=True)
    client.sql(blocks_sql(5, 9)).load(connection=conn, destination="t", read_all=True)
    assert delta_version(path) >= 1
    for table in (ampdelta.Table(str(path)), client.table(conn)):
        history = table.history()
        assert isinstance(history, list) and history, history
        assert all(isinstance(h, dict) for h in history)
        assert max(h["version"] for h in history) == delta_version(path) == table.version()
        assert [h["operation"] for h in history].count("WRITE") == 2, history


@pytest.mark.timeout(60)
def test_result_metadata_has_the_table_version_and_files(client, tmp_path):
    # Mirrors TestDeltaLakeSpecific.test_metadata_completeness (delta_version, files_added)
    # and test_file_size_calculation (the files exist, their bytes > 0).
    path = tmp_path / "t"
    conn = connect(client, path, optimize_after_write=False)
    for expected_version, (first, last) in enumerate([(0, 49), (50, 99)]):
        result = client.sql(blocks_sql(first, last)).load(connection=conn, destination="t",
                                                          read_all=True)
        assert int(result.metadata["table_version"]) == expected_version == delta_version(path)
        assert int(result.metadata["files_added"]) >= 1, result.metadata
    from deltalake import DeltaTable
    import os
    uris = DeltaTable(str(path)).file_uris()
    assert uris
    sizes = [os.path.getsize(u.removeprefix("file://")) for u in uris]
    assert all(s > 0 for s in sizes), sizes


@pytest.mark.timeout(90)
def test_concurrent_appends_from_three_threads(client, tmp_path):
    # Mirrors TestDeltaLakeSpecific.test_concurrent_operations_safety: 5 rows, then 3
    # threads appending 5 each -> 20. The GIL is released during a load, so the three
    # loads run at once: each thread takes its load's first batch result (batch_size=1:
    # the load has then written its second batch and waits, uncommitted, for the loop to
    # go on) and waits at a barrier that only opens when all three loads are in progress
    # (it times out if they are not).
    path = tmp_path / "t"
    conn = connect(client, path, **BASIC)
    client.sql(blocks_sql(0, 4)).load(connection=conn, destination="t", read_all=True)
    barrier = threading.Barrier(3, timeout=30)
    results, errors, met = {}, [], []

    def append(index: int) -> None:
        first = 5 + 5 * index
        try:
            batches = []
            for result in client.sql(blocks_sql(first, first + 4)).load(
                    connection=conn, destination=f"t{index}", batch_size=1):
                if not batches:
                    barrier.wait()
                    met.append(index)
                batches.append(result)
            results[index] = batches
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=append, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a load did not finish"
    assert not errors, errors
    assert sorted(met) == [0, 1, 2], "the three loads were not in progress at once"
    for index in range(3):
        assert [r.rows_loaded for r in results[index]] == [1] * 5
        assert "table_version" in results[index][-1].metadata
    versions = sorted(int(results[i][-1].metadata["table_version"]) for i in range(3))
    assert len(set(versions)) == 3, versions  # three commits
    assert_readers_see(path, blocks=numbers(0, 19), num_rows=20)


@pytest.mark.timeout(60)
def test_progress_gets_each_batch_of_a_read_all_load(client, tmp_path):
    # The SDK reports each batch (metadata batch_size); ampdelta's progress callback gets
    # every batch's LoadResult in the calling thread, also with read_all=True.
    path = tmp_path / "t"
    conn = connect(client, path, optimize_after_write=False)
    caller = threading.get_ident()
    calls = []

    def progress(result):
        calls.append((threading.get_ident(), result))

    result = client.sql(f"{TXS} WHERE block_num < {QUICKSTART_FIRST + 50}").load(
        connection=conn, destination="t", read_all=True, batch_size=100, progress=progress)
    check_result(result, 400, "t")
    assert {thread for thread, _ in calls} == {caller}
    batches = [r for _, r in calls if not r.is_reorg and r.rows_loaded]
    assert [r.rows_loaded for r in batches][:4] == [100] * 4, [str(r) for _, r in calls]
    assert sum(r.rows_loaded for r in batches) in (400, 800), [str(r) for _, r in calls]


@pytest.mark.timeout(90)
def test_50000_rows_in_a_minute(big_server, tmp_path):
    # Mirrors TestDeltaLakePerformance.test_large_data_loading: 50,000 rows (5 batches) in
    # under 60 s. Here 3000 blocks x 17 transactions = 51,000 rows in batches of 10,000.
    client = ampdelta.Client(big_server.url)
    path = tmp_path / "t"
    conn = connect(client, path, **BASIC)
    started = time.monotonic()
    result = client.sql(f"{TXS} WHERE block_num < {QUICKSTART_FIRST + 3000}").load(
        connection=conn, destination="t", read_all=True, batch_size=10_000)
    assert time.monotonic() - started < 60
    check_result(result, 51_000, "t")
    assert_readers_see(path, num_rows=51_000)


@pytest.mark.timeout(120)
def test_stream_with_reorgs_keeps_every_block_once_with_canonical_hashes(reorg_server,
                                                                         tmp_path):
    # Mirrors TestDeltaLakeStreaming (the _amp_batch_id column, reorg deletion) on a real
    # stream: the dev server's chain grows and replaces its newest 3 blocks after every 7;
    # the SDK fixture's streaming config (partition_by=[]) with its injected state config.
    server, head = reorg_server
    client = ampdelta.Client(server.url)
    path = tmp_path / "live"
    conn = connect(client, path, partition_by=[], optimize_after_write=False,
                   state={"enabled": True, "storage": "memory", "store_batch_id": True})
    results = list(client.sql(f'SELECT block_num, hash, gas_used FROM '
                              f'"{QUICKSTART_DATASET}".blocks').load(
        connection=conn, destination="live", stream=True, until_block=head))
    reorgs = [r for r in results if r.is_reorg]
    assert reorgs, [str(r) for r in results]
    for r in reorgs:
        assert REORG_RE.match(str(r)), str(r)
        assert str(r) == f"🔄 Reorg detected: {len(r.invalidation_ranges)} ranges invalidated"
        assert r.invalidation_ranges and all(
            b.network == "mainnet" and b.start <= b.end for b in r.invalidation_ranges), r
    for r in results:
        if not r.is_reorg:
            check_result(r, r.rows_loaded, "live")

    chain = client.sql(HASHES_SQL).to_arrow()
    canonical = rows_by_block(chain)
    assert max(canonical) == head
    assert canonical == server_hashes(server.url)
    got = assert_readers_see(path, blocks=sorted(canonical), hashes=canonical)
    for name, rows in got.items():
        ids = column(rows, "_amp_batch_id")
        assert all(isinstance(i, str) and re.fullmatch(r"[0-9a-f]{16}", i) for i in ids), name


@pytest.mark.timeout(60)
def test_writer_properties_set_the_parquet_compression(client, tmp_path):
    # The seed's "Load options": writer_properties=WriterProperties(compression='ZSTD');
    # docs/python.md: a dict works too, other set fields raise ValueError.
    import pyarrow.parquet as pq
    from deltalake import WriterProperties

    for name, properties, codec in [("zstd", WriterProperties(compression="ZSTD"), "ZSTD"),
                                    ("snappy", {"compression": "snappy"}, "SNAPPY")]:
        path = tmp_path / name
        conn = connect(client, path, optimize_after_write=False)
        client.sql(blocks_sql(0, 9)).load(connection=conn, destination=name, read_all=True,
                                          writer_properties=properties)
        files = [p for p in path.rglob("*.parquet") if "_delta_log" not in p.parts]
        assert files
        codecs = {pq.ParquetFile(f).metadata.row_group(0).column(c).compression
                  for f in files for c in range(4)}
        assert codecs == {codec}, (name, codecs)
        assert_readers_see(path, blocks=numbers(0, 9))
    path = tmp_path / "bad"
    conn = connect(client, path)
    with pytest.raises(ValueError):
        client.sql(blocks_sql(0, 9)).load(connection=conn, destination="bad", read_all=True,
                                          writer_properties=WriterProperties(
                                              data_page_size_limit=1024))
    assert not is_delta_table(path)
