"""Amp wire protocol (amp-protocol.md §1) against `ampdelta dev-server`, spoken by a
pyarrow.flight client that makes exactly the Python SDK's calls:

    any = Any.Pack(CommandStatementQuery(query=sql))            # real protobuf messages
    info = client.get_flight_info(FlightDescriptor.for_command(any.SerializeToString()))
    reader = client.do_get(info.endpoints[0].ticket)
    loop reader.read_chunk() -> (chunk.data, chunk.app_metadata) until StopIteration
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.flight as flight
import pyarrow.parquet as pq
import pytest
from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, message_factory

from conftest import (QUICKSTART_DATASET, QUICKSTART_FIRST, QUICKSTART_LAST,
                      fixtures_dir)

# --------------------------------------------------------------------------------------
# The SDK's request: Any{arrow.flight.protocol.sql.CommandStatementQuery{query = sql}}
# --------------------------------------------------------------------------------------

COMMAND_TYPE_URL = "type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery"


def _command_statement_query_class():
    """Build the CommandStatementQuery message class (FlightSql.proto subset) at runtime."""
    fdp = descriptor_pb2.FileDescriptorProto(
        name="ampdelta_interop/FlightSql_subset.proto",
        package="arrow.flight.protocol.sql",
        syntax="proto3")
    message = fdp.message_type.add(name="CommandStatementQuery")
    message.field.add(name="query", number=1,
                      type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                      label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    message.field.add(name="transaction_id", number=2,
                      type=descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
                      label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
                      proto3_optional=True, oneof_index=0)
    message.oneof_decl.add(name="_transaction_id")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(
        pool.FindMessageTypeByName("arrow.flight.protocol.sql.CommandStatementQuery"))


CommandStatementQuery = _command_statement_query_class()


def statement_command(sql: str) -> bytes:
    packed = any_pb2.Any()
    packed.Pack(CommandStatementQuery(query=sql))
    assert packed.type_url == COMMAND_TYPE_URL
    return packed.SerializeToString()


def descriptor_for(sql: str) -> flight.FlightDescriptor:
    return flight.FlightDescriptor.for_command(statement_command(sql))


# --------------------------------------------------------------------------------------
# Reading DoGet
# --------------------------------------------------------------------------------------

@dataclass
class Chunk:
    data: pa.RecordBatch
    metadata: dict

    @property
    def complete(self) -> bool:
        return self.metadata["ranges_complete"]

    @property
    def range(self) -> dict:
        ranges = self.metadata["ranges"]
        assert len(ranges) == 1, f"expected exactly one range: {self.metadata}"
        return ranges[0]


@dataclass
class Result:
    info: flight.FlightInfo
    schema: pa.Schema
    chunks: list[Chunk] = field(default_factory=list)

    def table(self) -> pa.Table:
        return pa.Table.from_batches([c.data for c in self.chunks], schema=self.schema)


def parse_app_metadata(chunk) -> dict:
    assert chunk.app_metadata is not None, "record batch without app_metadata"
    metadata = json.loads(chunk.app_metadata.to_pybytes())
    assert set(metadata) == {"ranges", "ranges_complete"}, metadata
    assert isinstance(metadata["ranges"], list)
    assert isinstance(metadata["ranges_complete"], bool)
    return metadata


def open_query(url: str, sql: str, headers=None, timeout: float = 30.0, do_get_headers=None):
    """GetFlightInfo (with `headers`, e.g. amp-stream/amp-resume) then DoGet."""
    client = flight.connect(url)
    try:
        options = flight.FlightCallOptions(headers=headers or [], timeout=timeout)
        info = client.get_flight_info(descriptor_for(sql), options)
        reader = client.do_get(info.endpoints[0].ticket,
                               flight.FlightCallOptions(headers=do_get_headers or [],
                                                        timeout=timeout))
    except BaseException:
        client.close()
        raise
    return client, info, reader


def run_query(url: str, sql: str, headers=None, do_get_headers=None) -> Result:
    """The SDK's batch call sequence; every chunk until StopIteration."""
    client, info, reader = open_query(url, sql, headers, do_get_headers=do_get_headers)
    with client:
        result = Result(info=info, schema=reader.schema)
        while True:
            try:
                chunk = reader.read_chunk()
            except StopIteration:
                break
            assert chunk.data is not None
            result.chunks.append(Chunk(chunk.data, parse_app_metadata(chunk)))
    return result


HEX32 = re.compile(r"^0x[0-9a-f]{64}$")


def check_range(rng: dict, network: str, start: int, end: int) -> None:
    assert set(rng) <= {"network", "numbers", "hash", "prev_hash", "timestamp"}, rng
    assert rng["network"] == network
    assert rng["numbers"] == {"start": start, "end": end}
    assert HEX32.match(rng["hash"]), rng["hash"]
    assert HEX32.match(rng["prev_hash"]), rng["prev_hash"]


def hex_hash(value: bytes) -> str:
    return "0x" + value.hex()


QS = f'"{QUICKSTART_DATASET}"'
QUICKSTART_SQL = f"SELECT block_num, timestamp, hash, gas_used FROM {QS}.blocks"


def unix(block: int) -> int:
    return 1_765_584_371 + (block - 24_000_000) * 12  # 2025-12-13 00:06:11 UTC, 12 s blocks


# --------------------------------------------------------------------------------------
# Amp's EVM schemas (amp-protocol.md §2), built independently of the C++ code
# --------------------------------------------------------------------------------------

TS = pa.timestamp("ns", tz="+00:00")
B32 = pa.binary(32)
ADDR = pa.binary(20)
DEC = pa.decimal128(38, 0)


def nn(name, type_):
    return pa.field(name, type_, nullable=False)


def n(name, type_):
    return pa.field(name, type_, nullable=True)


def list_of(type_):
    return pa.list_(pa.field("item", type_, nullable=False))


BLOCKS_SCHEMA = pa.schema([
    nn("_block_num", pa.uint64()), nn("block_num", pa.uint64()), nn("timestamp", TS),
    nn("hash", B32), nn("parent_hash", B32), nn("ommers_hash", B32), nn("miner", ADDR),
    nn("state_root", B32), nn("transactions_root", B32), nn("receipt_root", B32),
    nn("logs_bloom", pa.binary()), nn("difficulty", DEC), n("total_difficulty", DEC),
    nn("gas_limit", pa.uint64()), nn("gas_used", pa.uint64()), nn("extra_data", pa.binary()),
    nn("mix_hash", B32), nn("nonce", pa.uint64()), n("base_fee_per_gas", DEC),
    n("withdrawals_root", B32), n("blob_gas_used", pa.uint64()),
    n("excess_blob_gas", pa.uint64()), n("parent_beacon_root", B32), n("requests_hash", B32),
])

TRANSACTIONS_SCHEMA = pa.schema([
    nn("_block_num", pa.uint64()), nn("block_hash", B32), nn("block_num", pa.uint64()),
    nn("timestamp", TS), nn("tx_index", pa.uint32()), nn("tx_hash", B32), n("to", ADDR),
    nn("nonce", pa.uint64()), n("gas_price", DEC), nn("gas_limit", pa.uint64()),
    nn("value", pa.utf8()), nn("input", pa.binary()), nn("r", B32), nn("s", B32),
    nn("v_parity", pa.bool_()), n("chain_id", pa.uint64()), nn("gas_used", pa.uint64()),
    nn("type", pa.int32()), n("max_fee_per_gas", DEC), n("max_priority_fee_per_gas", DEC),
    n("max_fee_per_blob_gas", DEC), nn("from", ADDR), nn("status", pa.bool_()),
    n("state_root", B32),
    n("access_list", list_of(pa.struct([nn("address", ADDR),
                                        nn("storage_keys", list_of(B32))]))),
    n("blob_versioned_hashes", list_of(B32)),
    n("authorization_list", list_of(pa.struct([
        nn("chain_id", pa.uint64()), nn("address", ADDR), nn("nonce", pa.uint64()),
        nn("y_parity", pa.bool_()), nn("r", B32), nn("s", B32)]))),
])

LOGS_SCHEMA = pa.schema([
    nn("_block_num", pa.uint64()), nn("block_hash", B32), nn("block_num", pa.uint64()),
    nn("timestamp", TS), nn("tx_hash", B32), nn("tx_index", pa.uint32()),
    nn("log_index", pa.uint32()), nn("address", ADDR), n("topic0", B32), n("topic1", B32),
    n("topic2", B32), n("topic3", B32), nn("data", pa.binary()),
])


def nested_fields(f: pa.Field, path: str = ""):
    """(path, nullable) of a field and of every field nested in it, names included.

    pyarrow's type equality ignores the name of a list's item field, so the names are
    checked through the paths."""
    path = f"{path}.{f.name}" if path else f.name
    yield path, f.nullable
    t = f.type
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        yield from nested_fields(t.value_field, path)
    elif pa.types.is_struct(t):
        for i in range(t.num_fields):
            yield from nested_fields(t.field(i), path)


def assert_schema_equal(actual: pa.Schema, expected: pa.Schema) -> None:
    """Names, order, types, nullability and nested field names, with a readable diff."""
    assert actual.names == expected.names
    for got, want in zip(actual, expected):
        assert got.type == want.type, f"{got.name}: {got.type} != {want.type}"
        assert list(nested_fields(got)) == list(nested_fields(want)), got.name
    assert actual.equals(expected), f"\n{actual}\n!=\n{expected}"


def test_schema_check_sees_list_item_names():
    renamed = pa.schema([n("blob_versioned_hashes",
                           pa.list_(pa.field("element", B32, nullable=False)))])
    with pytest.raises(AssertionError):
        assert_schema_equal(renamed, pa.schema([TRANSACTIONS_SCHEMA.field("blob_versioned_hashes")]))
    nullable_item = pa.schema([n("blob_versioned_hashes", pa.list_(B32))])
    with pytest.raises(AssertionError):
        assert_schema_equal(nullable_item,
                            pa.schema([TRANSACTIONS_SCHEMA.field("blob_versioned_hashes")]))


# --------------------------------------------------------------------------------------
# Request encoding and FlightInfo
# --------------------------------------------------------------------------------------

def test_command_bytes_match_the_sdk_wire_form():
    sql = "SELECT 1"
    data = statement_command(sql)
    url = COMMAND_TYPE_URL.encode()
    inner = b"\x0a" + bytes([len(sql)]) + sql.encode()
    assert data == b"\x0a" + bytes([len(url)]) + url + b"\x12" + bytes([len(inner)]) + inner
    unpacked = CommandStatementQuery()
    packed = any_pb2.Any.FromString(data)
    assert packed.Unpack(unpacked) and unpacked.query == sql
    assert not unpacked.HasField("transaction_id")


def test_flight_info_shape(quickstart_url):
    with flight.connect(quickstart_url) as client:
        descriptor = descriptor_for(QUICKSTART_SQL)
        info = client.get_flight_info(descriptor)
    assert len(info.endpoints) == 1
    assert info.endpoints[0].locations == []  # redeem on the same connection
    assert info.total_records == -1 and info.total_bytes == -1
    assert info.ordered is False
    assert info.descriptor == descriptor
    assert info.schema.names == ["block_num", "timestamp", "hash", "gas_used"]


# --------------------------------------------------------------------------------------
# Quickstart batch query
# --------------------------------------------------------------------------------------

QUICKSTART_RESULT_SCHEMA = pa.schema([
    nn("block_num", pa.uint64()), nn("timestamp", TS), nn("hash", B32),
    nn("gas_used", pa.uint64()),
])


def test_quickstart_schema(quickstart_url):
    result = run_query(quickstart_url, QUICKSTART_SQL)
    assert_schema_equal(result.info.schema, QUICKSTART_RESULT_SCHEMA)
    assert_schema_equal(result.schema, QUICKSTART_RESULT_SCHEMA)
    for chunk in result.chunks:
        assert chunk.data.schema.equals(QUICKSTART_RESULT_SCHEMA)


def test_quickstart_rows(quickstart_url):
    table = run_query(quickstart_url, QUICKSTART_SQL).table()
    assert table.num_rows == 100
    numbers = table.column("block_num").to_pylist()
    assert sorted(numbers) == list(range(QUICKSTART_FIRST, QUICKSTART_LAST + 1))
    rows = {row["block_num"]: row for row in table.to_pylist()}
    last = rows[QUICKSTART_LAST]["timestamp"]
    assert last == dt.datetime(2025, 12, 13, 0, 25, 59, tzinfo=dt.timezone.utc)
    for number, row in rows.items():
        assert row["timestamp"].timestamp() == unix(number)
        assert len(row["hash"]) == 32
    assert len({row["hash"] for row in rows.values()}) == 100


def test_quickstart_app_metadata(quickstart_url):
    result = run_query(quickstart_url, QUICKSTART_SQL)
    assert len(result.chunks) >= 2
    *data_chunks, last = result.chunks
    assert last.data.num_rows == 0 and last.complete
    expected_range = last.range
    check_range(expected_range, "mainnet", QUICKSTART_FIRST, QUICKSTART_LAST)
    assert expected_range.get("timestamp") == unix(QUICKSTART_LAST)
    for chunk in data_chunks:
        assert chunk.complete is False
        assert chunk.metadata["ranges"] == [expected_range]
    # The range's hash is the end block's hash.
    table = result.table()
    by_number = dict(zip(table.column("block_num").to_pylist(), table.column("hash").to_pylist()))
    assert expected_range["hash"] == hex_hash(by_number[QUICKSTART_LAST])


def test_quickstart_hash_chain(quickstart_url):
    result = run_query(quickstart_url, f"SELECT * FROM {QS}.blocks")
    table = result.table()
    assert table.num_rows == 100
    rows = sorted(table.to_pylist(), key=lambda r: r["block_num"])
    for row in rows:
        assert row["_block_num"] == row["block_num"]
    for previous, current in zip(rows, rows[1:]):
        assert current["block_num"] == previous["block_num"] + 1
        assert current["parent_hash"] == previous["hash"], current["block_num"]
    rng = result.chunks[-1].range
    assert rng["prev_hash"] == hex_hash(rows[0]["parent_hash"])
    assert rng["hash"] == hex_hash(rows[-1]["hash"])


@pytest.mark.parametrize("table,expected", [
    ("blocks", BLOCKS_SCHEMA), ("transactions", TRANSACTIONS_SCHEMA), ("logs", LOGS_SCHEMA),
])
def test_full_table_schemas(quickstart_url, table, expected):
    assert len(expected) == {"blocks": 24, "transactions": 27, "logs": 13}[table]
    result = run_query(quickstart_url, f"SELECT * FROM {QS}.{table}")
    assert_schema_equal(result.info.schema, expected)
    assert_schema_equal(result.schema, expected)
    data = result.table()
    assert data.num_rows > 0
    assert set(data.column("block_num").to_pylist()) == set(
        range(QUICKSTART_FIRST, QUICKSTART_LAST + 1))
    assert result.chunks[-1].complete and result.chunks[-1].data.num_rows == 0


def test_aggregate_query(quickstart_url):
    result = run_query(
        quickstart_url,
        f"SELECT COUNT(*) AS n, MIN(block_num) AS lo, MAX(block_num) AS hi FROM {QS}.blocks "
        "WHERE block_num BETWEEN 24000010 AND 24000019")
    assert result.schema.names == ["n", "lo", "hi"]
    assert result.table().to_pylist() == [{"n": 10, "lo": 24_000_010, "hi": 24_000_019}]
    assert result.chunks[-1].complete and result.chunks[-1].data.num_rows == 0
    # The ranges are the synced ranges of the table, not the rows' span (§1.4).
    check_range(result.chunks[-1].range, "mainnet", QUICKSTART_FIRST, QUICKSTART_LAST)


def test_empty_result_still_sends_one_batch_and_marker(quickstart_url):
    result = run_query(quickstart_url, f"SELECT block_num FROM {QS}.blocks WHERE block_num > 99999999")
    assert [c.data.num_rows for c in result.chunks] == [0, 0]
    assert [c.complete for c in result.chunks] == [False, True]


def test_limit_in_batch_mode(quickstart_url):
    table = run_query(quickstart_url, f"SELECT block_num FROM {QS}.blocks LIMIT 5").table()
    assert table.num_rows == 5


def test_large_batches_are_sliced_near_2_mib(dev_server_factory):
    """Batches over ~2 MiB go out as several FlightData, each repeating the app_metadata (§1.4)."""
    server = dev_server_factory("--blocks", "1000", "--txs-per-block", "20")
    result = run_query(server.url, f"SELECT * FROM {QS}.transactions")
    data_chunks = [c for c in result.chunks if not c.complete]
    assert sum(c.data.num_rows for c in data_chunks) == 20_000
    assert len(data_chunks) > 1
    for chunk in data_chunks:
        assert chunk.data.get_total_buffer_size() <= 2 * 1024 * 1024 * 1.1
    assert len({json.dumps(c.metadata["ranges"], sort_keys=True) for c in result.chunks}) == 1
    check_range(result.chunks[-1].range, "mainnet", QUICKSTART_FIRST, QUICKSTART_FIRST + 999)


def test_bearer_token_required_when_configured(dev_server_factory):
    server = dev_server_factory("--require-token", "sekrit")
    sql = f"SELECT block_num FROM {QS}.blocks"
    with flight.connect(server.url) as client, pytest.raises(flight.FlightUnauthenticatedError):
        client.get_flight_info(descriptor_for(sql))
    auth = [(b"authorization", b"Bearer sekrit")]
    # The SDK's auth middleware puts the header on every call, DoGet included.
    assert run_query(server.url, sql, auth, do_get_headers=auth).table().num_rows == 100


# --------------------------------------------------------------------------------------
# Errors (§1.8). pyarrow maps gRPC INVALID_ARGUMENT to pa.ArrowInvalid and INTERNAL to
# flight.FlightInternalError.
# --------------------------------------------------------------------------------------

def get_info_error(url, descriptor, headers=None):
    with flight.connect(url) as client:
        with pytest.raises(Exception) as caught:
            client.get_flight_info(descriptor, flight.FlightCallOptions(headers=headers or []))
    return caught


def test_unknown_table_is_invalid_argument(quickstart_url):
    caught = get_info_error(quickstart_url, descriptor_for(f"SELECT * FROM {QS}.nope"))
    assert caught.type is pa.ArrowInvalid
    assert "invalid query" in str(caught.value)


def test_order_by_is_invalid_argument(quickstart_url):
    caught = get_info_error(
        quickstart_url, descriptor_for(f"SELECT block_num FROM {QS}.blocks ORDER BY block_num"))
    assert caught.type is pa.ArrowInvalid
    assert "ORDER BY" in str(caught.value)


def test_wrong_any_type_url(quickstart_url):
    packed = any_pb2.Any(
        type_url="type.googleapis.com/arrow.flight.protocol.sql.CommandPreparedStatementQuery",
        value=CommandStatementQuery(query=QUICKSTART_SQL).SerializeToString())
    caught = get_info_error(quickstart_url,
                            flight.FlightDescriptor.for_command(packed.SerializeToString()))
    assert caught.type is pa.ArrowInvalid
    assert "unsupported flight descriptor command" in str(caught.value)
    assert "CommandPreparedStatementQuery" in str(caught.value)


def test_raw_sql_without_any_is_rejected(quickstart_url):
    caught = get_info_error(quickstart_url,
                            flight.FlightDescriptor.for_command(QUICKSTART_SQL.encode()))
    assert caught.type is pa.ArrowInvalid


def test_path_descriptor_is_rejected(quickstart_url):
    caught = get_info_error(quickstart_url, flight.FlightDescriptor.for_path("blocks"))
    assert caught.type is pa.ArrowInvalid
    assert "unsupported flight descriptor type" in str(caught.value)


def test_empty_query_is_invalid(quickstart_url):
    caught = get_info_error(quickstart_url, descriptor_for("   "))
    assert caught.type is pa.ArrowInvalid
    assert "invalid query" in str(caught.value)


def test_streaming_aggregate_fails_at_do_get(quickstart_url):
    sql = f"SELECT COUNT(*) AS n FROM {QS}.blocks SETTINGS stream = true"
    with flight.connect(quickstart_url) as client:
        info = client.get_flight_info(descriptor_for(sql))  # planning succeeds
        with pytest.raises(pa.ArrowInvalid) as caught:
            reader = client.do_get(info.endpoints[0].ticket)
            reader.read_chunk()
    assert "non-incremental" in str(caught.value)
    assert "Aggregate" in str(caught.value)


def test_resume_cursor_for_other_network_is_internal(streaming_server):
    headers = [(b"amp-stream", b"true"),
               (b"amp-resume", b'{"anvil":{"number":1,"hash":"0x' + b"00" * 32 + b'"}}')]
    with flight.connect(streaming_server.url) as client:
        info = client.get_flight_info(  # the cursor is only checked when the stream starts
            descriptor_for(f"SELECT block_num FROM {QS}.blocks"),
            flight.FlightCallOptions(headers=headers))
        with pytest.raises(flight.FlightInternalError) as caught:
            reader = client.do_get(info.endpoints[0].ticket, flight.FlightCallOptions(timeout=20))
            reader.read_chunk()
    assert "expected cursor for network 'mainnet'" in str(caught.value)


# --------------------------------------------------------------------------------------
# Streaming (§1.4 incremental branch, §1.6, §1.7)
# --------------------------------------------------------------------------------------

@dataclass
class Microbatch:
    range: dict
    rows: list[dict]
    data_chunks: list[Chunk]


def read_microbatches(reader, count: int, deadline_s: float = 20.0,
                      stop=None) -> list[Microbatch]:
    """Read chunks until `count` ranges_complete markers (or stop(microbatches) is true)."""
    microbatches: list[Microbatch] = []
    pending: list[Chunk] = []
    deadline = time.monotonic() + deadline_s
    while len(microbatches) < count:
        assert time.monotonic() < deadline, f"timed out; got {[m.range for m in microbatches]}"
        raw = reader.read_chunk()  # the stream never ends on its own
        chunk = Chunk(raw.data, parse_app_metadata(raw))
        assert len(chunk.metadata["ranges"]) == 1, chunk.metadata  # one network
        if not chunk.complete:
            pending.append(chunk)
            continue
        assert chunk.data.num_rows == 0, "the commit marker is a 0-row batch"
        for data in pending:
            assert data.range == chunk.range, "data chunk range differs from its marker"
        rows = [row for data in pending for row in data.data.to_pylist()]
        microbatches.append(Microbatch(chunk.range, rows, pending))
        pending = []
        if stop is not None and stop(microbatches):
            break
    return microbatches


STREAM = [(b"amp-stream", b"true")]


@pytest.mark.timeout(60)
def test_streaming_microbatches(streaming_server, quickstart_url):
    client, info, reader = open_query(
        streaming_server.url, f"SELECT block_num, hash, parent_hash FROM {QS}.blocks", STREAM)
    with client:
        microbatches = read_microbatches(reader, 4)
        reader.cancel()
    bounds = [(m.range["numbers"]["start"], m.range["numbers"]["end"]) for m in microbatches]
    assert bounds == [(24_000_000, 24_000_029), (24_000_030, 24_000_059),
                      (24_000_060, 24_000_089), (24_000_090, 24_000_099)]
    for mb, (start, end) in zip(microbatches, bounds):
        check_range(mb.range, "mainnet", start, end)
        # every block exactly once, rows ordered by block number (§1.4)
        assert [r["block_num"] for r in mb.rows] == list(range(start, end + 1))
        by_number = {r["block_num"]: r for r in mb.rows}
        assert mb.range["hash"] == hex_hash(by_number[end]["hash"])
        assert mb.range["prev_hash"] == hex_hash(by_number[start]["parent_hash"])
        assert mb.range.get("timestamp") == unix(end)
    for previous, current in zip(microbatches, microbatches[1:]):
        assert current.range["prev_hash"] == previous.range["hash"]
    # The streamed final hash agrees with the batch query's range.
    batch = run_query(quickstart_url, QUICKSTART_SQL)
    assert batch.chunks[-1].range["hash"] == microbatches[-1].range["hash"]


@pytest.mark.timeout(60)
def test_streaming_via_sql_setting(streaming_server):
    client, _, reader = open_query(
        streaming_server.url, f"SELECT block_num FROM {QS}.blocks SETTINGS stream = true")
    with client:
        microbatches = read_microbatches(reader, 1)
        reader.cancel()
    check_range(microbatches[0].range, "mainnet", 24_000_000, 24_000_029)


def test_amp_stream_false_overrides_sql_setting(streaming_server):
    result = run_query(streaming_server.url,
                       f"SELECT block_num FROM {QS}.blocks SETTINGS stream = true",
                       headers=[(b"amp-stream", b"false")])
    assert result.table().num_rows == 100
    check_range(result.chunks[-1].range, "mainnet", QUICKSTART_FIRST, QUICKSTART_LAST)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("value", [b"1", b"TRUE"])
def test_amp_stream_header_values(streaming_server, value):
    client, _, reader = open_query(streaming_server.url, f"SELECT block_num FROM {QS}.blocks",
                                   [(b"amp-stream", value)])
    with client:
        microbatches = read_microbatches(reader, 1)
        reader.cancel()
    check_range(microbatches[0].range, "mainnet", 24_000_000, 24_000_029)


@pytest.mark.timeout(60)
def test_streaming_starts_at_earliest_block_not_at_the_filter(streaming_server):
    """Microbatches follow the table's blocks; a WHERE filter only empties some (§1.4)."""
    client, _, reader = open_query(
        streaming_server.url, f"SELECT block_num FROM {QS}.blocks WHERE block_num >= 24000050",
        STREAM)
    with client:
        microbatches = read_microbatches(reader, 3)
        reader.cancel()
    assert [m.range["numbers"]["start"] for m in microbatches] == [
        24_000_000, 24_000_030, 24_000_060]
    assert microbatches[0].rows == []
    assert [r["block_num"] for r in microbatches[1].rows] == list(range(24_000_050, 24_000_060))
    assert len(microbatches[2].rows) == 30


@pytest.mark.timeout(60)
def test_streaming_keepalives(dev_server_factory):
    server = dev_server_factory("--microbatch-max-blocks", "30", "--keepalives")
    client, _, reader = open_query(server.url, f"SELECT block_num FROM {QS}.blocks", STREAM)
    with client:
        microbatches = read_microbatches(reader, 4)
        reader.cancel()
    for mb in microbatches:
        first = mb.data_chunks[0]  # a 0-row keep-alive opens every microbatch
        assert first.data.num_rows == 0 and not first.complete and first.range == mb.range
    assert sum(len(mb.rows) for mb in microbatches) == 100


@pytest.mark.timeout(60)
def test_stream_at_head_sends_nothing_until_a_new_block(streaming_server, quickstart_url):
    """Between microbatches nothing is sent (§1.4); a cursor at the head waits (§1.7)."""
    table = run_query(quickstart_url, QUICKSTART_SQL).table()
    head_hash = dict(zip(table.column("block_num").to_pylist(),
                         table.column("hash").to_pylist()))[QUICKSTART_LAST]
    cursor = {"mainnet": {"number": QUICKSTART_LAST, "hash": hex_hash(head_hash)}}
    headers = STREAM + [(b"amp-resume", json.dumps(cursor).encode())]
    with pytest.raises(flight.FlightTimedOutError):
        client, _, reader = open_query(streaming_server.url, f"SELECT block_num FROM {QS}.blocks",
                                       headers, timeout=1.5)
        with client:
            chunk = reader.read_chunk()
            pytest.fail(f"unexpected chunk at the head: {chunk.app_metadata}")


@pytest.mark.timeout(60)
def test_server_shutdown_ends_open_stream(dev_server_factory):
    server = dev_server_factory("--microbatch-max-blocks", "30")
    client, _, reader = open_query(server.url, f"SELECT block_num FROM {QS}.blocks", STREAM,
                                   timeout=20)
    with client:
        read_microbatches(reader, 4)  # now waiting at the head
        started = time.monotonic()
        server.proc.terminate()
        with pytest.raises(flight.FlightUnavailableError, match="shutting down"):
            while True:
                reader.read_chunk()
    assert server.proc.wait(timeout=10) == 0
    assert time.monotonic() - started < 5


@pytest.mark.timeout(60)
def test_streaming_resume(streaming_server, quickstart_url):
    table = run_query(quickstart_url, QUICKSTART_SQL).table()
    hashes = dict(zip(table.column("block_num").to_pylist(), table.column("hash").to_pylist()))
    cursor = {"mainnet": {"number": 24_000_049, "hash": hex_hash(hashes[24_000_049])}}
    headers = STREAM + [(b"amp-resume", json.dumps(cursor).encode())]
    client, _, reader = open_query(streaming_server.url, f"SELECT block_num FROM {QS}.blocks",
                                   headers)
    with client:
        microbatches = read_microbatches(reader, 2)
        reader.cancel()
    first = microbatches[0]
    check_range(first.range, "mainnet", 24_000_050, 24_000_079)
    assert first.range["prev_hash"] == cursor["mainnet"]["hash"]
    assert min(r["block_num"] for r in first.rows) == 24_000_050
    check_range(microbatches[1].range, "mainnet", 24_000_080, 24_000_099)


@pytest.mark.timeout(60)
def test_streaming_resume_with_unknown_hash_rewinds(streaming_server):
    """A cursor whose (number, hash) is not on the chain restarts at the cursor's number (§1.6)."""
    cursor = {"mainnet": {"number": 24_000_049, "hash": "0x" + "ab" * 32}}
    headers = STREAM + [(b"amp-resume", json.dumps(cursor).encode())]
    client, _, reader = open_query(streaming_server.url, f"SELECT block_num FROM {QS}.blocks",
                                   headers)
    with client:
        microbatches = read_microbatches(reader, 1)
        reader.cancel()
    rng = microbatches[0].range
    assert rng["numbers"]["start"] <= 24_000_049
    assert rng["prev_hash"] != cursor["mainnet"]["hash"]


@pytest.mark.timeout(60)
def test_streaming_invalid_resume_json_is_ignored(streaming_server):
    headers = STREAM + [(b"amp-resume", b"not json")]
    client, _, reader = open_query(streaming_server.url, f"SELECT block_num FROM {QS}.blocks",
                                   headers)
    with client:
        microbatches = read_microbatches(reader, 1)
        reader.cancel()
    check_range(microbatches[0].range, "mainnet", 24_000_000, 24_000_029)


@pytest.mark.timeout(60)
def test_streaming_reorg_as_seen_by_the_client(dev_server_factory):
    """A live chain reorgs 3 blocks when its head reaches 24,000,103 (blocks 101..103 replaced)."""
    reorg_head, depth = 24_000_103, 3
    server = dev_server_factory("--block-interval-ms", "200", "--reorg-at", f"{reorg_head}:{depth}",
                                "--microbatch-max-blocks", "1000")
    client, _, reader = open_query(server.url, f"SELECT block_num, hash, parent_hash FROM {QS}.blocks",
                                   STREAM, timeout=25)

    def reorged(mbs):
        return len(mbs) >= 2 and mbs[-1].range["numbers"]["start"] <= mbs[-2].range["numbers"]["end"]

    def past_reorg(mbs):
        return reorged(mbs) or mbs[-1].range["numbers"]["end"] > reorg_head + 5

    seen: dict[int, bytes] = {}  # block -> hash as first received
    with client:
        microbatches = read_microbatches(reader, 10_000, deadline_s=20,
                                         stop=lambda mbs: past_reorg(mbs))
        reader.cancel()
    ranges = [(m.range["numbers"]["start"], m.range["numbers"]["end"]) for m in microbatches]
    assert reorged(microbatches), f"no backwards jump seen: {ranges}"
    previous, current = microbatches[-2], microbatches[-1]
    # Everything before the reorg was a normal forward stream.
    for a, b in zip(microbatches[:-1], microbatches[1:-1]):
        assert b.range["numbers"]["start"] == a.range["numbers"]["end"] + 1
        assert b.range["prev_hash"] == a.range["hash"]
    for mb in microbatches[:-1]:
        for row in mb.rows:
            seen[row["block_num"]] = row["hash"]
    start, end = current.range["numbers"]["start"], current.range["numbers"]["end"]
    assert previous.range["numbers"]["end"] >= reorg_head - depth + 1  # saw a replaced block
    assert reorg_head - depth + 1 <= start <= reorg_head, ranges
    assert end >= reorg_head
    assert current.range["prev_hash"] != previous.range["hash"]
    # The new microbatch hangs off the canonical block below the fork ...
    assert current.range["prev_hash"] == hex_hash(seen[start - 1])
    # ... and re-sends every block of [start..end], with new hashes for the replaced ones.
    rows = {r["block_num"]: r for r in current.rows}
    assert sorted(rows) == list(range(start, end + 1))
    assert current.range["hash"] == hex_hash(rows[end]["hash"])
    assert rows[start]["parent_hash"] == seen[start - 1]
    for number in range(start, end + 1):
        if number in seen:
            assert rows[number]["hash"] != seen[number], f"block {number} was not replaced"
        if number > start:
            assert rows[number]["parent_hash"] == rows[number - 1]["hash"]


# --------------------------------------------------------------------------------------
# Amp Parquet snapshot served as a dataset
# --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def eth_rpc_dir() -> Path:
    path = fixtures_dir() / "amp-snapshots" / "eth_rpc"
    if not path.is_dir():
        pytest.fail(f"fixture dataset missing: {path}", pytrace=False)
    return path


@pytest.fixture(scope="module")
def parquet_server(eth_rpc_dir):
    from conftest import run_dev_server

    with run_dev_server("--no-synthetic", "--dataset", f"eth_rpc={eth_rpc_dir}") as server:
        yield server


def only_parquet_file(directory: Path) -> Path:
    files = sorted(directory.glob("*/*.parquet"))
    assert len(files) == 1, files
    return files[0]


def test_parquet_dataset_logs(parquet_server, eth_rpc_dir):
    path = only_parquet_file(eth_rpc_dir / "logs")
    parquet_file = pq.ParquetFile(path)
    file_schema = parquet_file.schema_arrow
    nozzle = json.loads(parquet_file.metadata.metadata[b"nozzle_metadata"])
    [file_range] = nozzle["ranges"]

    result = run_query(parquet_server.url, "SELECT * FROM eth_rpc.logs")
    assert result.info.schema.equals(file_schema), f"\n{result.info.schema}\n!=\n{file_schema}"
    assert result.schema.equals(file_schema)
    assert_schema_equal(result.schema, LOGS_SCHEMA)
    table = result.table()
    assert table.num_rows == 719
    assert table.equals(pq.read_table(path).cast(file_schema))
    assert result.chunks[-1].complete and result.chunks[-1].data.num_rows == 0
    for chunk in result.chunks:
        rng = chunk.range
        check_range(rng, "mainnet", 15_000_000, 15_000_000)
        assert rng["hash"] == file_range["hash"]
        assert rng["prev_hash"] == file_range["prev_hash"]


@pytest.mark.timeout(60)
def test_parquet_dataset_streaming(parquet_server, eth_rpc_dir):
    nozzle = json.loads(pq.ParquetFile(only_parquet_file(eth_rpc_dir / "logs"))
                        .metadata.metadata[b"nozzle_metadata"])
    client, _, reader = open_query(parquet_server.url, "SELECT block_num FROM eth_rpc.logs", STREAM)
    with client:
        [microbatch] = read_microbatches(reader, 1)
        reader.cancel()
    check_range(microbatch.range, "mainnet", 15_000_000, 15_000_000)
    assert microbatch.range["hash"] == nozzle["ranges"][0]["hash"]
    assert len(microbatch.rows) == 719


def test_parquet_dataset_blocks(parquet_server):
    table = run_query(parquet_server.url, "SELECT block_num FROM eth_rpc.blocks").table()
    assert table.column("block_num").to_pylist() == [15_000_000]


def test_parquet_dataset_without_synthetic_chain(parquet_server):
    caught = get_info_error(parquet_server.url, descriptor_for(QUICKSTART_SQL))
    assert caught.type is pa.ArrowInvalid
    assert "invalid query" in str(caught.value)
