"""The stream path `ampdelta.sdk.register()` opens, driven only through the real Amp SDK
(issue 51): every block exactly once whatever names the SDK's user gives the load, a restart
(the SDK starts every stream from its first block) that skips what the table holds without
a version emptier than its neighbours, complete microbatches committed before a failure is
reported, the SDK's parallel load, and reorgs found by the loader with the SDK's own
detection off.
"""
from __future__ import annotations

import hashlib

import pyarrow as pa
import pytest

import ampdelta.sdk
from amp.loaders.registry import create_loader
from amp.streaming.types import BatchMetadata, BlockRange, ResponseBatch
from conftest import (QUICKSTART_DATASET, QUICKSTART_FIRST, QUICKSTART_LAST, both_servers,
                      cli_env, cli_path, run_dev_server)
from sdk_harness import (SdkStream, assert_every_block_once,
                         assert_no_version_emptier_outside_reorgs, block_numbers, canonical_chain,
                         table_chain, versions)

BLOCKS = f'SELECT block_num, hash FROM "{QUICKSTART_DATASET}".blocks'


@pytest.fixture(scope="module", autouse=True)
def registered():
    ampdelta.sdk.register()


def highest_committed(table) -> int:
    """The highest block the table holds; -1 before its first commit."""
    if not any((table / "_delta_log").glob("*.json")):
        return -1
    blocks = block_numbers(table)
    return blocks[-1] if blocks else -1


@pytest.mark.timeout(300)
@both_servers()
def test_renamed_destinations_connections_and_restarts_load_every_block_once(tmp_path,
                                                                             server_kind):
    """The destination only names the load, and so does the connection: the same query into
    the same table_path under other names, or restarted, loads nothing twice; and the
    restart's replay of what a commit of several microbatches holds is skipped, never
    undone (no DELETE, no version emptier than its neighbours)."""
    table = tmp_path / "blocks"
    with run_dev_server("--block-interval-ms", "200", "--microbatch-max-blocks", "10",
                        kind=server_kind) as server:
        for destination, connection in [("blocks", "lake"), ("eth_blocks", "lake"),
                                        ("blocks", "other_lake"), ("eth_blocks", "lake")]:
            start = highest_committed(table) if (table / "_delta_log").exists() else 0
            with SdkStream(server.url, table, destination, connection, BLOCKS) as stream:
                # New blocks committed: the replay of the old ones is behind the stream.
                stream.wait_for(lambda results: bool(results) and table.exists() and
                                highest_committed(table) > max(start, QUICKSTART_LAST) + 2,
                                90, f"new blocks loaded into {destination} via {connection}")
                assert stream.interrupt() == 0, stream.stderr_tail()
            assert not [r for r in stream.results if not r["success"]], stream.results
            assert not [r for r in stream.results if r["is_reorg"]], stream.results
            assert_every_block_once(table)
    history = assert_no_version_emptier_outside_reorgs(table)
    assert not [c for c in history if c["operation"] == "DELETE"], history


def sdk_items(ranges: list[tuple[int, int]], fail_after: int | None = None):
    """The SDK's ResponseBatches of microbatches `ranges` (a data batch and its
    ranges_complete marker each), hashes chained; ConnectionError (what the SDK's
    StreamingResultIterator raises on a network failure) after `fail_after` of them."""
    def hash_of(block):
        return "0x" + hashlib.sha256(str(block).encode()).hexdigest()
    for index, (start, end) in enumerate(ranges):
        if fail_after is not None and index == fail_after:
            raise ConnectionError("Flight stream read failed: connection reset by peer")
        block_range = BlockRange("mainnet", start, end, hash=hash_of(end),
                                 prev_hash=hash_of(start - 1))
        data = pa.record_batch({"block_num": pa.array(range(start, end + 1), pa.int64()),
                                "value": pa.array([7] * (end - start + 1), pa.int64())})
        yield ResponseBatch(data=data, metadata=BatchMetadata(ranges=[block_range]))
        yield ResponseBatch(data=data.slice(0, 0),
                            metadata=BatchMetadata(ranges=[block_range], ranges_complete=True))


def sdk_loader(table):
    return create_loader("ampdelta", {"table_path": str(table)})


def test_load_stream_continuous_again_loads_nothing_twice_and_undoes_nothing(tmp_path):
    """The issue's case: three microbatches of 100 rows in one commit, the same items handed
    over three times (other connection names each time): 300 rows, one commit of them,
    no reorg, no DELETE."""
    table = tmp_path / "t"
    microbatches = [(0, 99), (100, 199), (200, 299)]
    for run in range(3):
        with sdk_loader(table) as loader:
            results = list(loader.load_stream_continuous(
                sdk_items(microbatches), "blocks", connection_name=f"connection-{run}"))
        assert all(r.success for r in results), results
        assert not [r for r in results if r.is_reorg], results
        assert sum(r.rows_loaded for r in results) == (300 if run == 0 else 0), results
    assert block_numbers(table) == list(range(300))
    history = versions(table)
    assert [c["operation"] for c in history] == ["STREAMING UPDATE"], history


def test_a_replay_that_runs_past_the_table_replaces_its_last_blocks_in_one_commit(tmp_path):
    """A restart whose first microbatch runs past what the table holds (cut differently
    than before): the blocks it re-sends unchecked are replaced in the commit that adds
    the new ones; every version holds at least what the one before it did."""
    table = tmp_path / "t"
    with sdk_loader(table) as loader:
        assert all(r.success for r in loader.load_stream_continuous(
            sdk_items([(0, 99), (100, 149)]), "blocks"))
    with sdk_loader(table) as loader:
        results = list(loader.load_stream_continuous(
            sdk_items([(0, 99), (100, 199)]), "blocks"))
    assert all(r.success for r in results) and not [r for r in results if r.is_reorg], results
    assert [r.metadata.get("rows_replaced") for r in results] == [50], results
    assert block_numbers(table) == list(range(200))
    # The replacement recorded what it loaded: the next restart checks it and goes on.
    with sdk_loader(table) as loader:
        results = list(loader.load_stream_continuous(
            sdk_items([(0, 99), (100, 199), (200, 249)]), "blocks"))
    assert [(r.rows_loaded, r.is_reorg, r.metadata.get("rows_replaced")) for r in results] \
        == [(50, False, None)], results
    assert block_numbers(table) == list(range(250))
    history = versions(table)
    assert [c["rows"] for c in history] == [150, 200, 250], history


def test_complete_microbatches_are_committed_before_a_failure_is_reported(tmp_path):
    """With the options the SDK's client passes (no stream_commit_rows), five complete
    microbatches, then the items' iterator fails: the five are in the table, and the failed
    result says so."""
    table = tmp_path / "t"
    microbatches = [(start, start + 99) for start in range(0, 800, 100)]
    with sdk_loader(table) as loader:
        results = list(loader.load_stream_continuous(
            sdk_items(microbatches, fail_after=5), "blocks", connection_name="lake",
            batch_size=10000, mode="append", create_table=True, schema_evolution=False))
    failed = [r for r in results if not r.success]
    assert len(failed) == 1, results
    assert "connection reset by peer" in failed[0].error, failed[0].error
    assert "500 rows were committed" in failed[0].error, failed[0].error
    assert block_numbers(table) == list(range(500))


@pytest.mark.timeout(300)
def test_the_sdks_parallel_load_run_again_loads_every_block_once(tmp_path):
    """parallel_config through the registered loader: the SDK's partitions, each with its
    block_ranges, channel_suffix and offset_token keywords, every block once. The SDK
    keeps no record of a finished load: run again (after a failure, or by a scheduler),
    each partition replaces its blocks in its one commit, so no block is loaded twice and
    no version holds fewer blocks than the one before."""
    table = tmp_path / "blocks"
    with run_dev_server() as server:
        for _run in range(2):
            with SdkStream(server.url, table, "blocks", "lake", BLOCKS, parallel_config={
                    "num_workers": 2, "table_name": "blocks", "min_block": QUICKSTART_FIRST,
                    "max_block": QUICKSTART_LAST + 1, "partition_size": 25}) as stream:
                assert stream._finish(240) == 0, stream.stderr_tail()
            assert all(r["success"] for r in stream.results), [r.get("error") for r in stream.results]
            assert len(stream.results) == 4, stream.results
            assert block_numbers(table) == list(range(QUICKSTART_FIRST, QUICKSTART_LAST + 1))
    assert_no_version_emptier_outside_reorgs(table)


def test_a_partition_with_commit_every_rows_is_refused_naming_the_key(tmp_path):
    """A partition of the SDK's parallel load is one commit that replaces its blocks;
    commit_every_rows would split it into versions holding its blocks twice: refused."""
    table = tmp_path / "t"
    batch = pa.record_batch({"block_num": pa.array(range(10), pa.int64())})
    with create_loader("ampdelta", {"table_path": str(table)}) as loader:
        results = list(loader.load_stream(
            iter([batch]), "blocks", block_ranges=[BlockRange("eth", 0, 10)],
            commit_every_rows=5))
    assert len(results) == 1 and not results[0].success, results
    assert "commit_every_rows" in results[0].error, results[0].error
    assert not table.exists()


def test_a_partition_replaces_only_blocks_no_stream_loaded_and_only_its_own(tmp_path):
    """load_stream with the SDK's block_ranges: one range is replaced on a rerun; rows of
    blocks outside it are refused (a rerun could not replace them); several ranges (other
    networks) name no span and load batch by batch, replacing nothing."""
    table = tmp_path / "t"
    batch = pa.record_batch({"block_num": pa.array(range(10), pa.int64())})
    with create_loader("ampdelta", {"table_path": str(table)}) as loader:
        for _ in range(2):
            results = list(loader.load_stream(iter([batch]), "blocks",
                                              block_ranges=[BlockRange("eth", 0, 10)]))
            assert [r.success for r in results] == [True], results
        assert block_numbers(table) == list(range(10))
        results = list(loader.load_stream(iter([batch]), "blocks",
                                          block_ranges=[BlockRange("eth", 0, 5)]))
        assert len(results) == 1 and not results[0].success, results
        assert "outside the blocks they replace, 0..4" in results[0].error, results[0].error
        assert block_numbers(table) == list(range(10))
        results = list(loader.load_stream(iter([batch]), "blocks", block_ranges=[
            BlockRange("eth", 0, 10), BlockRange("base", 0, 10)]))
        assert [r.success for r in results] == [True], results
        assert block_numbers(table) == sorted(list(range(10)) * 2)


@pytest.mark.timeout(300)
def test_with_the_sdks_reorg_detection_off_the_loader_undoes_every_reorg(tmp_path):
    """The SDK's ReorgAwareStream drops the batch after each of its reorg items (and all of
    a reorg that opens with a keep-alive, as ampd's do): with it off
    (`with_reorg_detection=False`, docs/sdk-loaders.md), the loader finds each reorg in the
    re-sent ranges and the table ends equal to the canonical chain."""
    reorg_every, head = 5, QUICKSTART_LAST + 40
    while (head - QUICKSTART_LAST) % reorg_every == 0:
        head += 1
    table = tmp_path / "blocks"
    # --await-streams: the chain grows once the stream holds it, so no reorg forks inside
    # the first (catch-up) microbatch, which a handed-over stream cannot read again (the
    # loader then asks for the stream to be run again: another test's subject).
    with run_dev_server("--block-interval-ms", "200", "--max-head", str(head),
                        "--reorg-every", str(reorg_every), "--reorg-depth", "3",
                        "--await-streams") as server:
        with SdkStream(server.url, table, "blocks", "lake", BLOCKS,
                       with_reorg_detection=False) as stream:
            stream.wait_for(lambda results: table.exists() and
                            highest_committed(table) == head, 200,
                            f"the chain's final head {head} loaded")
            assert stream.interrupt() == 0, stream.stderr_tail()
        chain = canonical_chain(cli_path(), cli_env(), server.url, QUICKSTART_DATASET)
    reorgs = [r for r in stream.results if r["is_reorg"]]
    assert len(reorgs) >= 6, stream.results
    assert table_chain(table) == {block: chain[block] for block in range(QUICKSTART_FIRST,
                                                                         head + 1)}


def test_a_restart_shows_change_data_readers_no_row_deleted_or_inserted_again(tmp_path):
    """With the change data feed on, a restart whose replay the table holds records no
    change: a CDF reader (deltalake's load_cdf) sees each row inserted once, none deleted."""
    table = tmp_path / "t"
    config = {"table_path": str(table),
              "table_properties": {"delta.enableChangeDataFeed": "true"}}
    for run in range(2):
        with create_loader("ampdelta", config) as loader:
            assert all(r.success for r in loader.load_stream_continuous(
                sdk_items([(0, 99), (100, 199), (200, 299)][:2 + run]), "blocks"))
    from deltalake import DeltaTable

    changes = DeltaTable(str(table)).load_cdf(starting_version=0).read_all()
    kinds = changes.column("_change_type").to_pylist()
    assert set(kinds) == {"insert"}, sorted(set(kinds))
    assert sorted(changes.column("block_num").to_pylist()) == list(range(300))


@pytest.mark.timeout(300)
def test_the_sdks_hybrid_parallel_load_then_stream_loads_every_block_once(tmp_path):
    """parallel_config without max_block: the SDK loads its partitions up to the head it
    detects, then streams from that head less its reorg buffer into the same table. The
    stream takes the table over from its first block: the buffer's blocks are not loaded
    twice."""
    table = tmp_path / "blocks"
    with run_dev_server("--block-interval-ms", "300") as server:
        with SdkStream(server.url, table, "blocks", "lake", BLOCKS, parallel_config={
                "num_workers": 2, "table_name": f'"{QUICKSTART_DATASET}".blocks',
                "min_block": QUICKSTART_FIRST, "partition_size": 25,
                "reorg_buffer": 10}) as stream:
            stream.wait_for(lambda results: highest_committed(table) > QUICKSTART_LAST + 15,
                            120, "the stream after the partitions")
            assert stream.interrupt() == 0, stream.stderr_tail()
    assert all(r["success"] for r in stream.results), [r.get("error") for r in stream.results]
    assert_every_block_once(table)


def test_a_table_path_with_a_nul_is_refused_up_front_and_creates_nothing(tmp_path):
    """A NUL cuts a path for the operating system: the loader refuses it before anything
    is written, rather than failing later with a folder left at the cut."""
    path = str(tmp_path / "lake") + "\0evil"
    with pytest.raises(ValueError, match="contains a NUL byte"):
        create_loader("ampdelta", {"table_path": path})
    assert not (tmp_path / "lake").exists()


@pytest.mark.parametrize("read_all", [True, False], ids=["load_table", "load_stream"])
def test_the_sdks_batch_load_through_the_registered_loader(tmp_path, quickstart_url, read_all):
    """`client.sql(q).load(connection, destination)`: the SDK hands the registered loader the
    whole result (read_all=True: load_table) or its batches (load_stream); every block once."""
    from amp.client import Client

    client = Client(quickstart_url)
    client.configure_connection("lake", "ampdelta", {"table_path": str(tmp_path / "t")})
    outcome = client.sql(BLOCKS).load("lake", "blocks", read_all=read_all)
    results = [outcome] if read_all else list(outcome)
    assert results and all(r.success for r in results), results
    assert sum(r.rows_loaded for r in results) == QUICKSTART_LAST - QUICKSTART_FIRST + 1
    assert block_numbers(tmp_path / "t") == list(range(QUICKSTART_FIRST, QUICKSTART_LAST + 1))


def test_a_takeover_starts_at_the_first_microbatchs_lowest_row(tmp_path):
    """A batch-loaded table taken over by a stream whose first microbatch sends its rows out
    of order (5..9, then 0..4): the takeover starts at block 0, not 5 — no row twice."""
    table = tmp_path / "t"
    with create_loader("ampdelta", {"table_path": str(table)}) as loader:
        assert loader.load_table(pa.table({"block_num": pa.array(range(100), pa.int64()),
                                           "value": pa.array([7] * 100, pa.int64())}),
                                 "blocks").success

    def items():
        first = list(sdk_items([(0, 9)]))
        data, marker = first[0], first[1]
        rows = data.data
        yield ResponseBatch(data=rows.slice(5, 5), metadata=data.metadata)
        yield ResponseBatch(data=rows.slice(0, 5), metadata=data.metadata)
        yield marker
        yield from sdk_items([(10, 99)])

    with create_loader("ampdelta", {"table_path": str(table)}) as loader:
        results = list(loader.load_stream_continuous(items(), "blocks"))
    assert all(r.success for r in results), results
    assert block_numbers(table) == list(range(100))
