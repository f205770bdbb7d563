"""The SDK's loader API on the engine: `ampdelta.loaders.DeltaLakeLoader` (docs/sdk-loaders.md).

The behaviours the SDK's own loader tests check (amp-protocol.md §3.3-3.5 and §4.4),
driven through the SDK's DataLoader contract: context manager, load_table/load_batch in
each mode, nulls of every type, errors, schema evolution, partitioning, and
load_stream_continuous fed the SDK's stream items (read from the dev server the way the
SDK reads them) through reorgs, several networks and replays. Every table is read back by
deltalake, DuckDB and Polars.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import decimal
import json
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import ampdelta
from ampdelta.loaders import BlockRange, DeltaLakeLoader, LoadMode, LoadResult
from conftest import (QUICKSTART_DATASET, column, delta_version, read_all, rows_by_block,
                      server_hashes)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from amp_flight import do_get  # noqa: E402  (the SDK's GetFlightInfo + DoGet)

READERS = ("deltalake", "duckdb", "polars")


def block_table(first: int, last: int, gas: int = 1) -> pa.Table:
    blocks = list(range(first, last + 1))
    return pa.table({"block_num": pa.array(blocks, pa.int64()),
                     "gas_used": pa.array([gas] * len(blocks), pa.int64())})


def config(path, **extra) -> dict:
    """The seed's config without the optimize after each load (versions count loads)."""
    return {"table_path": str(path), "optimize_after_write": False, **extra}


def sorted_rows(table: pa.Table, *names: str) -> list[tuple]:
    return sorted(zip(*(column(table, name) for name in names)), key=repr)


def readers_agree(path, expected: list[tuple], *names: str) -> None:
    for reader, table in read_all(path, READERS).items():
        assert sorted_rows(table, *names) == sorted(expected, key=repr), reader


# --- the DataLoader contract ------------------------------------------------------------

def test_context_manager_connects_and_results_are_the_sdks(tmp_path):
    loader = DeltaLakeLoader({"table_path": str(tmp_path / "t")})
    assert not loader.is_connected
    with loader as entered:
        assert entered is loader and loader.is_connected
        assert loader.health_check()["healthy"]
        result = loader.load_table(block_table(1, 10), "blocks")
    assert not loader.is_connected
    assert isinstance(result, LoadResult) and result.success, result.error
    assert (result.rows_loaded, result.table_name, result.loader_type) == (10, "blocks",
                                                                          "deltalake")
    assert result.metadata["operation"] == "load_table"
    assert str(result).startswith("✅ Loaded 10 rows to blocks in ")
    readers_agree(tmp_path / "t", [(b, 1) for b in range(1, 11)], "block_num", "gas_used")


def test_load_table_of_many_batches_is_one_commit_in_every_mode(tmp_path):
    path = tmp_path / "t"
    three_batches = pa.Table.from_batches(
        block_table(1, 30, gas=2).to_batches(max_chunksize=10))
    with DeltaLakeLoader(config(path)) as loader:
        assert loader.load_table(block_table(1, 30), "t").success
        assert loader.load_table(three_batches, "t").success
        assert delta_version(path) == 1
        readers_agree(path, [(b, 1) for b in range(1, 31)] + [(b, 2) for b in range(1, 31)],
                      "block_num", "gas_used")
        # The SDK's overwrite kept only the last batch; here the whole load replaces the table.
        result = loader.load_table(three_batches, "t", mode=LoadMode.OVERWRITE)
        assert result.success and result.rows_loaded == 30, result.error
        assert delta_version(path) == 2
        readers_agree(path, [(b, 2) for b in range(1, 31)], "block_num", "gas_used")
        result = loader.load_table(block_table(25, 40, gas=3), "t", mode=LoadMode.MERGE,
                                   merge_keys=["block_num"])
        assert result.success, result.error
        assert (result.metadata["rows_updated"], result.metadata["rows_inserted"]) == (6, 10)
        result = loader.load_table(block_table(40, 41, gas=4), "t", mode="upsert",
                                   merge_keys=["block_num"])
        assert result.success, result.error
    readers_agree(path, [(b, 2) for b in range(1, 25)] + [(b, 3) for b in range(25, 40)] +
                  [(40, 4), (41, 4)], "block_num", "gas_used")


def test_load_batch_and_load_stream_commit_each_batch(tmp_path):
    path = tmp_path / "t"
    batches = block_table(1, 30).to_batches(max_chunksize=10)
    with DeltaLakeLoader(config(path)) as loader:
        result = loader.load_batch(batches[0], "t")
        assert result.success and result.metadata["operation"] == "load_batch"
        results = list(loader.load_stream(iter(batches[1:]), "t"))
    assert [r.rows_loaded for r in results] == [10, 10]
    assert delta_version(path) == 2
    readers_agree(path, [(b, 1) for b in range(1, 31)], "block_num", "gas_used")


def test_nulls_of_every_type_are_kept(tmp_path):
    path = tmp_path / "t"
    values = {
        "i8": (pa.int8(), 1), "i16": (pa.int16(), 2), "i32": (pa.int32(), 3),
        "i64": (pa.int64(), 4), "u8": (pa.uint8(), 5), "u16": (pa.uint16(), 6),
        "u32": (pa.uint32(), 7), "f32": (pa.float32(), 1.5), "f64": (pa.float64(), 2.5),
        "flag": (pa.bool_(), True), "text": (pa.string(), "x"), "bytes": (pa.binary(), b"\x01"),
        "big_text": (pa.large_string(), "y"),
        "dec": (pa.decimal128(38, 0), decimal.Decimal(10) ** 30),
        "wide": (pa.decimal256(76, 0), decimal.Decimal(2) ** 200),
        "day": (pa.date32(), datetime.date(2024, 1, 2)),
        "at": (pa.timestamp("us", tz="UTC"),
               datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)),
        "items": (pa.list_(pa.int64()), [1, 2]),
        "pair": (pa.struct([("a", pa.int64()), ("b", pa.string())]), {"a": 1, "b": "z"}),
        "tags": (pa.map_(pa.string(), pa.int64()), [("k", 1)]),
    }
    table = pa.table({"id": pa.array([0, 1], pa.int64()),
                      **{name: pa.array([value, None], type_) for name, (type_, value)
                         in values.items()}})
    with DeltaLakeLoader(config(path)) as loader:
        result = loader.load_table(table, "t")
    assert result.success, result.error
    for reader, got in read_all(path, READERS).items():
        got = got.sort_by("id")
        for name in values:
            if name == "wide" and reader != "deltalake":
                continue  # decimal(76,0) is beyond these readers (docs/wide-integers.md)
            assert got.column(name)[1].as_py() in (None, []), (reader, name)
            assert got.column(name)[0].is_valid, (reader, name)


def test_create_table_false_on_a_missing_table_fails_and_creates_nothing(tmp_path):
    path = tmp_path / "missing"
    with DeltaLakeLoader(config(path)) as loader:
        result = loader.load_table(block_table(1, 3), "t", create_table=False)
    assert not result.success
    assert "does not exist and create_table=False" in result.error
    assert str(result).startswith("❌ Failed to load to t: ")
    assert not path.exists()


def test_bad_configuration_mode_and_data_are_named(tmp_path):
    with pytest.raises(ValueError,
                       match="Invalid DeltaLakeLoader configuration: unknown key 'table_pth'"):
        DeltaLakeLoader({"table_pth": str(tmp_path)})
    with DeltaLakeLoader({"table_path": str(tmp_path / "t")}) as loader:
        result = loader.load_table(block_table(1, 3), "t", mode="replace")
        assert not result.success and "Unsupported mode 'replace'" in result.error
        result = loader.load_table({"block_num": [1]}, "t")
        assert not result.success and "needs Arrow data" in result.error
        result = loader.load_table(block_table(1, 3), "t", mode=LoadMode.MERGE)
        assert not result.success and "merge_keys" in result.error
        # As the SDK's loaders, every failure is a failed result, a typo'd keyword too.
        result = loader.load_table(block_table(1, 3), "t", colour="red")
        assert not result.success and "unexpected keyword argument 'colour'" in result.error
    assert not (tmp_path / "t").exists()


def test_schema_evolution_and_partitioning(tmp_path):
    path = tmp_path / "t"
    settings = config(path, partition_by=["network"], merge_schema=True)
    first = pa.table({"block_num": pa.array([1, 2], pa.int64()),
                      "network": pa.array(["eth", "base"])})
    second = first.append_column("gas_used", pa.array([7, 8], pa.int64()))
    with DeltaLakeLoader(settings) as loader:
        assert loader.load_table(first, "t").success
        result = loader.load_table(second, "t")
        assert result.success, result.error
    assert sorted(p.name for p in path.iterdir() if p.name.startswith("network=")) == [
        "network=base", "network=eth"]
    readers_agree(path, [(1, "eth", None), (2, "base", None), (1, "eth", 7), (2, "base", 8)],
                  "block_num", "network", "gas_used")


def test_polars_frames_and_a_reader_of_any_size_are_streamed_in(tmp_path):
    pl = pytest.importorskip("polars")
    path = tmp_path / "t"
    frame = pl.DataFrame({"block_num": list(range(100)), "gas_used": [5] * 100})

    def batches():
        for start in range(100, 200_100, 50_000):
            yield block_table(start, start + 49_999).to_batches()[0]

    reader = pa.RecordBatchReader.from_batches(block_table(0, 0).schema, batches())
    with DeltaLakeLoader(config(path)) as loader:
        assert loader.load_table(frame, "t").success
        result = loader.load_table(reader, "t")
    assert result.success and result.rows_loaded == 200_000, result.error
    counts = {name: table.num_rows for name, table in read_all(path, READERS).items()}
    assert set(counts.values()) == {200_100}, counts


# --- load_stream_continuous: the SDK's stream items --------------------------------------

@dataclasses.dataclass
class BatchMetadata:  # the SDK's streaming.types.BatchMetadata, as the loader reads it
    ranges: list
    ranges_complete: bool = False


@dataclasses.dataclass
class ResponseBatch:  # the SDK's unified ResponseBatch, as the loader reads it
    data: object = None
    metadata: BatchMetadata = None
    is_reorg: bool = False
    invalidation_ranges: list = None


def sdk_items(url: str, sql: str, until: int):
    """The items the SDK's StreamingResultIterator yields for `sql`, read with pyarrow's
    Flight client as the SDK reads them, up to the microbatch ending at `until`."""
    reader = do_get(url, sql)
    while True:
        chunk = reader.read_chunk()
        document = json.loads(bytes(chunk.app_metadata)) if chunk.app_metadata else {}
        ranges = [BlockRange(r["network"], r["numbers"]["start"], r["numbers"]["end"],
                             r.get("hash"), r.get("prev_hash"))
                  for r in document.get("ranges", [])]
        yield ResponseBatch(chunk.data, BatchMetadata(ranges, document.get(
            "ranges_complete", False)))
        if document.get("ranges_complete") and ranges and ranges[0].end >= until:
            reader.cancel()
            return


def stream_sql() -> str:
    return (f'SELECT block_num, hash FROM "{QUICKSTART_DATASET}".blocks '
            "SETTINGS stream = true")


def test_stream_through_reorgs_keeps_every_block_once_with_canonical_hashes(reorg_server,
                                                                              tmp_path):
    server, head = reorg_server
    path = tmp_path / "t"
    with DeltaLakeLoader(config(path)) as loader:
        results = list(loader.load_stream_continuous(
            sdk_items(server.url, stream_sql(), head), "blocks", connection_name="c"))
    assert results and all(r.success for r in results), [r.error for r in results]
    assert any(r.is_reorg for r in results)
    assert all(r.loader_type == "deltalake" and r.table_name == "blocks" for r in results)
    hashes = server_hashes(server.url)
    for reader, table in read_all(path, READERS).items():
        assert rows_by_block(table) == hashes, reader
        assert "_amp_batch_id" in table.column_names, reader


def test_a_replayed_stream_and_the_sdks_reorg_items_load_nothing_twice(quickstart_url,
                                                                      tmp_path):
    path = tmp_path / "t"
    first = sdk_items(quickstart_url, stream_sql(), 24_000_050)
    with DeltaLakeLoader(config(path)) as loader:
        assert all(r.success for r in loader.load_stream_continuous(first, "blocks"))
        version = delta_version(path)
        # The SDK starts over after a restart (its resume is off) and may yield reorg items
        # of its own: microbatches the table holds are skipped, the reorg items carry no rows.
        replay = list(sdk_items(quickstart_url, stream_sql(), 24_000_050))
        replay.insert(1, ResponseBatch(is_reorg=True, invalidation_ranges=[
            BlockRange("anvil", 24_000_000, 24_000_001)]))
        results = list(loader.load_stream_continuous(iter(replay), "blocks"))
    assert all(r.success for r in results), [r.error for r in results]
    assert delta_version(path) == version
    blocks = {name: sorted(column(t, "block_num")) for name, t in read_all(path, READERS).items()}
    assert all(b == sorted(set(b)) for b in blocks.values()), "a block loaded twice"


def test_several_networks_and_a_bad_item_end_the_stream_with_a_failure(tmp_path):
    path = tmp_path / "t"
    schema = pa.schema([("block_num", pa.uint64()), ("value", pa.int64())])

    def item(start, end, complete):
        rows = pa.table({"block_num": pa.array(range(start, end + 1), pa.uint64()),
                         "value": pa.array([1] * (end - start + 1), pa.int64())}, schema=schema)
        # Both chains advance in every message, as ampd sends a query over two networks.
        return ResponseBatch(rows, BatchMetadata(
            [BlockRange("eth", start, end, f"0x{end:064x}", f"0x{start - 1:064x}"),
             BlockRange("base", 5 * start, 5 * end + 4, f"0x{end + 1:064x}",
                        f"0x{start:064x}")], complete))

    items = [item(1, 9, True), item(10, 19, True),
             ResponseBatch(pa.table({"other": [1]}),
                           BatchMetadata([BlockRange("eth", 20, 20)], True))]
    with DeltaLakeLoader(config(path)) as loader:
        # A commit per microbatch: the two before the bad item are in the table.
        results = list(loader.load_stream_continuous(iter(items), "t", stream_commit_rows=1))
    assert not results[-1].success
    assert "schema" in results[-1].error
    # What was committed before the bad item stays, each block once.
    for reader, table in read_all(path, READERS).items():
        assert sorted(column(table, "block_num")) == list(range(1, 20)), reader


def test_ampdelta_exports_the_loader_api():
    assert ampdelta.loaders.DeltaLakeLoader is DeltaLakeLoader
    assert LoadMode.UPSERT in DeltaLakeLoader.SUPPORTED_MODES


# --- what an attacker found (each failed before its fix) ----------------------------------

class SdkLoadMode(enum.Enum):  # the SDK's own amp.loaders.types.LoadMode: another Enum
    APPEND = "append"
    OVERWRITE = "overwrite"
    UPSERT = "upsert"
    MERGE = "merge"


def stream_items(microbatches: int, rows_each: int = 100, reader: bool = False,
                 numpy_backed: bool = False):
    """SDK-like items: `microbatches` complete microbatches of `rows_each` rows on "eth",
    each its own item (rows and its end in one, as the SDK's tests send them)."""
    for index in range(microbatches):
        first, last = index * rows_each, (index + 1) * rows_each - 1
        numbers = list(range(first, last + 1))
        if numpy_backed:
            import numpy as np
            table = pa.table({"block_num": pa.array(np.arange(first, last + 1, dtype=np.uint64))})
        else:
            table = pa.table({"block_num": pa.array(numbers, pa.uint64())})
        data = table.to_reader() if reader else table
        yield ResponseBatch(data, BatchMetadata(
            [BlockRange("eth", first, last, f"0x{last + 1:064x}", f"0x{first:064x}")], True))


def table_blocks(path) -> dict:
    return {name: sorted(column(table, "block_num"))
            for name, table in read_all(path, READERS).items()}


def test_the_sdks_own_load_mode_enum_is_understood(tmp_path):
    with DeltaLakeLoader(config(tmp_path / "t")) as loader:
        assert loader.load_table(block_table(1, 3), "t", mode=SdkLoadMode.APPEND).success
        assert loader.load_table(block_table(1, 2), "t", mode=SdkLoadMode.OVERWRITE).success
    with DeltaLakeLoader(config(tmp_path / "s")) as loader:
        results = list(loader.load_stream_continuous(
            stream_items(2), "s", mode=SdkLoadMode.APPEND, batch_size=10000,
            create_table=True, schema_evolution=False, max_retries=3, retry_delay=1.0))
    assert results and all(r.success for r in results), [r.error for r in results]
    readers_agree(tmp_path / "t", [(1, 1), (2, 1)], "block_num", "gas_used")


def test_one_shot_readers_under_back_pressure_lose_no_rows(tmp_path):
    # 60 items through a channel of 4: pushes wait, and a reader cannot be exported twice.
    with DeltaLakeLoader(config(tmp_path / "t")) as loader:
        results = list(loader.load_stream_continuous(
            stream_items(60, reader=True), "s", stream_commit_rows=1))
    assert all(r.success for r in results), [r.error for r in results]
    assert sum(r.rows_loaded for r in results) == 6000
    for reader, blocks in table_blocks(tmp_path / "t").items():
        assert blocks == list(range(6000)), reader


def test_a_stream_ending_inside_a_microbatch_fails_naming_the_rows_left(tmp_path):
    items = list(stream_items(4))
    unfinished = items[-1]
    unfinished.metadata.ranges_complete = False  # its end never comes
    with DeltaLakeLoader(config(tmp_path / "t")) as loader:
        results = list(loader.load_stream_continuous(iter(items), "s"))
    assert results and not results[-1].success
    assert "ended inside a microbatch" in results[-1].error
    assert "300 rows of complete microbatches" in results[-1].error


def test_a_producer_that_raises_ends_the_stream_with_a_failed_result(tmp_path):
    def items():
        yield from stream_items(3)
        raise ValueError("the source went away")

    with DeltaLakeLoader(config(tmp_path / "t")) as loader:
        results = list(loader.load_stream_continuous(items(), "s", stream_commit_rows=1))
    assert not results[-1].success and "the source went away" in results[-1].error
    # Every microbatch handed over complete before the failure is committed, once.
    for reader, blocks in table_blocks(tmp_path / "t").items():
        assert blocks == list(range(300)), reader


@pytest.mark.timeout(60)
def test_a_bad_item_after_numpy_backed_ones_fails_without_hanging(tmp_path):
    pytest.importorskip("numpy", reason="numpy-backed columns need numpy (the wheel matrix "
                        "venvs have none; the full Python suite runs it)")
    items = list(stream_items(5, numpy_backed=True))
    items.append(ResponseBatch({"not": "arrow"}, BatchMetadata([BlockRange("eth", 500, 599)],
                                                               True)))
    with DeltaLakeLoader(config(tmp_path / "t")) as loader:
        results = list(loader.load_stream_continuous(iter(items), "s", stream_commit_rows=1))
    assert not results[-1].success and "needs Arrow data" in results[-1].error


def test_load_stream_merges_every_batch_in_a_merge(tmp_path):
    batches = [block_table(1, 3, gas=1).to_batches()[0], block_table(2, 4, gas=2).to_batches()[0],
               block_table(4, 5, gas=3).to_batches()[0]]
    with DeltaLakeLoader(config(tmp_path / "t")) as loader:
        results = list(loader.load_stream(iter(batches), "t", mode=LoadMode.UPSERT,
                                          merge_keys=["block_num"]))
    assert [r.success for r in results] == [True, True, True], [r.error for r in results]
    readers_agree(tmp_path / "t", [(1, 1), (2, 2), (3, 2), (4, 3), (5, 3)], "block_num",
                  "gas_used")


EXIT_WHILE_STREAMING = """
import sys, threading, time, dataclasses
import pyarrow as pa
from ampdelta.loaders import BlockRange, DeltaLakeLoader

@dataclasses.dataclass
class Meta:
    ranges: list
    ranges_complete: bool = True

@dataclasses.dataclass
class Item:
    data: object
    metadata: Meta
    is_reorg: bool = False

def items():
    n = 0
    while True:
        yield Item(pa.table({"block_num": pa.array([n], pa.uint64())}),
                   Meta([BlockRange("eth", n, n, f"0x{n + 1:064x}", f"0x{n:064x}")]))
        n += 1
        time.sleep(0.01)

def stream():
    with DeltaLakeLoader({"table_path": sys.argv[1]}) as loader:
        for _ in loader.load_stream_continuous(items(), "s"):
            pass

threading.Thread(target=stream, daemon=True).start()
time.sleep(1.0)
print("exiting", flush=True)
"""


@pytest.mark.timeout(300)
def test_exit_while_a_daemon_thread_streams_handed_over_items_is_clean(tmp_path):
    import subprocess
    script = tmp_path / "exit_streaming.py"
    script.write_text(EXIT_WHILE_STREAMING)
    outcomes = []
    for run in range(10):
        done = subprocess.run([sys.executable, str(script), str(tmp_path / f"t{run}")],
                              capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
        outcomes.append((done.returncode, done.stderr[-300:]))
    assert all(code == 0 for code, _ in outcomes), outcomes
