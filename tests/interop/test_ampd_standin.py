"""The ampd stand-in (ampd_standin.py) against facts from ampd's source, and ampdelta's CLI
against the stand-in.

Part 1 talks to the stand-in with a raw gRPC client (no Arrow Flight library between the
test and the bytes) and checks what ampd's code says the wire carries: the exact
app_metadata JSON, nothing before the first microbatch of a stream (not even the schema),
a keep-alive at each microbatch start, at most --microbatch-max-blocks blocks per
microbatch, the resume rules (continue, rewind, silent stall, malformed cursors ignored),
batch DoGet's order, and errors as tonic sends them: a status and a message, no Arrow
trailers. Part 2 runs `ampdelta query` and `ampdelta load` against it: late schema, SIGINT
while the first microbatch is awaited, trailer-less error codes, mid-stream failures.

ampd facts cited as flight.rs / streaming_query.rs / cursor.rs are from edgeandnode/amp
(see ../shared/spec/ampd-fidelity.md and the stand-in's module doc).
"""

from __future__ import annotations

import json
import queue
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import grpc
import pyarrow as pa
import pyarrow.flight as flight
import pytest

import ampd_standin as standin
import readers
from conftest import AMPD_STANDIN, QUICKSTART_DATASET, QUICKSTART_FIRST, QUICKSTART_LAST, \
    cli_env, cli_path, run_dev_server
from test_stream_crash import RESULT_RE, canonical_hashes, hex_hash, repeated

BLOCKS = f'"{QUICKSTART_DATASET}".blocks'
SQL = f"SELECT block_num, hash, parent_hash, timestamp, gas_used FROM {BLOCKS}"
NETWORK = "mainnet"
ZERO = "0x" + "0" * 64
CLI_TIMEOUT_S = 60


def run_standin(*args):
    return run_dev_server(*[str(a) for a in args], kind=AMPD_STANDIN)


# --------------------------------------------------------------------------------------
# A raw gRPC client of the Flight service
# --------------------------------------------------------------------------------------

END = object()


def decode_flight_data(data, schema: pa.Schema | None):
    """("schema", Schema) or ("batch", RecordBatch) from one FlightData."""
    header = data.data_header
    pad = (-len(header)) % 8
    framed = (b"\xff\xff\xff\xff" + (len(header) + pad).to_bytes(4, "little") + header
              + b"\0" * pad + data.data_body)
    message = pa.ipc.read_message(pa.py_buffer(framed))
    if message.type == "schema":
        return "schema", pa.ipc.read_schema(message)
    assert message.type == "record batch", message.type
    assert schema is not None, "a record batch before the schema"
    return "batch", pa.ipc.read_record_batch(message, schema)


class Message:
    def __init__(self, raw, kind: str, value, at: float):
        self.raw, self.kind, self.value, self.at = raw, kind, value, at
        self.metadata_bytes = bytes(raw.app_metadata)
        self.metadata = json.loads(self.metadata_bytes) if self.metadata_bytes else None

    @property
    def rows(self) -> int:
        return self.value.num_rows if self.kind == "batch" else 0

    @property
    def span(self) -> tuple[int, int] | None:
        if not self.metadata or not self.metadata["ranges"]:
            return None
        numbers = self.metadata["ranges"][0]["numbers"]
        return numbers["start"], numbers["end"]

    @property
    def complete(self) -> bool:
        return bool(self.metadata and self.metadata["ranges_complete"])


class DoGetStream:
    """A DoGet call read on a thread: next(timeout) gives a Message, a grpc.RpcError, END,
    or None when nothing arrived in time."""

    def __init__(self, call):
        self.call = call
        self.started = time.monotonic()
        self.items: queue.Queue = queue.Queue()
        self.schema = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for data in self.call:
                kind, value = decode_flight_data(data, self.schema)
                if kind == "schema":
                    self.schema = value
                self.items.put(Message(data, kind, value, time.monotonic() - self.started))
            self.items.put(END)
        except grpc.RpcError as error:
            self.items.put(error)

    def next(self, timeout: float = 10.0):
        try:
            return self.items.get(timeout=timeout)
        except queue.Empty:
            return None

    def take(self, count: int, timeout: float = 10.0) -> list:
        out = []
        for _ in range(count):
            item = self.next(timeout)
            assert isinstance(item, Message), f"after {[m.kind for m in out]}: got {item!r}"
            out.append(item)
        return out

    def microbatches(self, count: int, timeout: float = 10.0) -> list[list[Message]]:
        """The next `count` microbatches, each the messages up to its marker."""
        out, current = [], []
        while len(out) < count:
            item = self.next(timeout)
            assert isinstance(item, Message), f"got {item!r} after {len(out)} microbatches"
            if item.kind == "schema":
                continue
            current.append(item)
            if item.complete:
                out.append(current)
                current = []
        return out

    def cancel(self):
        self.call.cancel()


class RawFlight:
    def __init__(self, url: str):
        self.channel = grpc.insecure_channel(
            url.removeprefix("grpc://"), options=[("grpc.max_receive_message_length", -1)])
        method = f"/{standin.SERVICE}/"
        self._info = self.channel.unary_unary(
            method + "GetFlightInfo", request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=standin.FlightInfo.FromString)
        self._get = self.channel.unary_stream(
            method + "DoGet", request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=standin.FlightData.FromString)

    def close(self):
        self.channel.close()

    def flight_info(self, sql: str | None = None, *, descriptor=None, stream: bool | None = None,
                    resume: str | None = None, metadata=()):
        if descriptor is None:
            descriptor = standin.FlightDescriptor(type=standin.DESCRIPTOR_CMD,
                                                  cmd=standin.statement_command(sql))
        headers = list(metadata)
        if stream is not None:
            headers.append(("amp-stream", "true" if stream else "false"))
        if resume is not None:
            headers.append(("amp-resume", resume))
        return self._info(descriptor, metadata=headers, timeout=30)

    def do_get(self, sql: str, **kwargs) -> DoGetStream:
        info = self.flight_info(sql, **kwargs)
        return DoGetStream(self._get(info.endpoint[0].ticket, timeout=120))


@pytest.fixture
def raw():
    clients = []

    def connect(server) -> RawFlight:
        client = RawFlight(server.url)
        clients.append(client)
        return client
    yield connect
    for client in clients:
        client.close()


def assert_tonic_status(error: grpc.RpcError, code: grpc.StatusCode, message_start: str):
    """A tonic status: the code and message, and trailers with nothing of Arrow's."""
    assert error.code() == code, (error.code(), error.details())
    assert error.details().startswith(message_start), error.details()
    trailers = [key for key, _ in (error.trailing_metadata() or ())]
    assert not [k for k in trailers if k.startswith("x-arrow") or k.endswith("-bin")], trailers


def batch_rows(client: RawFlight, sql: str = SQL) -> tuple[list[Message], pa.Table]:
    stream = client.do_get(sql)
    messages = []
    while (item := stream.next()) is not END:
        assert isinstance(item, Message), item
        messages.append(item)
    batches = [m.value for m in messages if m.kind == "batch"]
    return messages, pa.Table.from_batches(batches, schema=stream.schema)


def chain_of(client: RawFlight) -> dict[int, dict]:
    """block_num -> {hash, parent_hash, timestamp} of the canonical chain (a batch query)."""
    _, table = batch_rows(client)
    out = {}
    for row in table.to_pylist():
        out[row["block_num"]] = {"hash": hex_hash(row["hash"]),
                                 "parent_hash": hex_hash(row["parent_hash"]),
                                 "timestamp": int(row["timestamp"].timestamp())}
    return out


def expected_metadata(start: int, end: int, chain: dict[int, dict], complete: bool,
                      network: str = NETWORK) -> bytes:
    """ampd's bytes for one range, spelled out: sorted keys, compact, numbers nested."""
    return (f'{{"ranges":[{{"hash":"{chain[end]["hash"]}","network":"{network}",'
            f'"numbers":{{"end":{end},"start":{start}}},'
            f'"prev_hash":"{chain[start]["parent_hash"]}",'
            f'"timestamp":{chain[end]["timestamp"]}}}],'
            f'"ranges_complete":{"true" if complete else "false"}}}').encode()


# --------------------------------------------------------------------------------------
# Part 1: the stand-in against ampd's source
# --------------------------------------------------------------------------------------

def test_app_metadata_bytes_of_a_known_range():
    # amp-protocol.md §1.5's streaming example on anvil (the hash of the SDK's test vector):
    # serde_json of json!({"ranges": [BlockRange], "ranges_complete": false}).
    block_hash = bytes.fromhex("0deee2eaa7adb2b28c7fa731f79ea86e77e375f8ee0a0f2619ba6ec3eb2f68e6")
    r = standin.BlockRange(0, 2, "anvil", block_hash, standin.ZERO_HASH, 1700000000)
    assert standin.app_metadata([r], False) == (
        b'{"ranges":[{"hash":"0x0deee2eaa7adb2b28c7fa731f79ea86e77e375f8ee0a0f2619ba6ec3eb2f68e6",'
        b'"network":"anvil","numbers":{"end":2,"start":0},"prev_hash":"0x' + b"0" * 64 + b'",'
        b'"timestamp":1700000000}],"ranges_complete":false}')
    # timestamp is skipped when None (skip_serializing_if), and an empty list stays a list.
    untimed = standin.BlockRange(5, 5, "anvil", block_hash, block_hash, None)
    assert b'"timestamp"' not in standin.app_metadata([untimed], True)
    assert standin.app_metadata([], True) == b'{"ranges":[],"ranges_complete":true}'


def test_cursor_deserialisation_follows_serde():
    # cursor.rs: Cursor(BTreeMap<NetworkId, NetworkCursor{number: u64, hash: BlockHash}>);
    # flight.rs keeps only what deserialises (.ok()).
    good = "0x" + "ab" * 32
    assert standin.parse_cursor(json.dumps({"mainnet": {"number": 7, "hash": good}}).encode()) \
        == {"mainnet": (7, bytes.fromhex("ab" * 32))}
    # unknown fields are ignored; the 0x prefix is optional; hex case does not matter
    assert standin.parse_cursor(json.dumps(
        {"mainnet": {"number": 7, "hash": "AB" * 32, "timestamp": 3}}).encode()) is not None
    for bad in (b"not json", b"[]", b'{"mainnet": 7}',
                json.dumps({"": {"number": 1, "hash": good}}).encode(),
                json.dumps({"mainnet": {"number": "7", "hash": good}}).encode(),
                json.dumps({"mainnet": {"number": -1, "hash": good}}).encode(),
                json.dumps({"mainnet": {"number": 1.5, "hash": good}}).encode(),
                json.dumps({"mainnet": {"number": 7, "hash": ""}}).encode(),
                json.dumps({"mainnet": {"number": 7, "hash": "0xab"}}).encode(),
                json.dumps({"mainnet": {"hash": good}}).encode()):
        assert standin.parse_cursor(bad) is None, bad


def test_flight_info_is_one_endpoint_with_an_opaque_ticket(raw):
    with run_standin() as server:
        client = raw(server)
        command = standin.statement_command(SQL)
        descriptor = standin.FlightDescriptor(type=standin.DESCRIPTOR_CMD, cmd=command)
        info = client.flight_info(descriptor=descriptor)
        assert len(info.endpoint) == 1 and len(info.endpoint[0].location) == 0
        assert info.total_records == -1 and info.total_bytes == -1 and not info.ordered
        assert info.flight_descriptor == descriptor  # echoed
        # bincode AmpTicket: the query string first (varint length, bytes)
        ticket = info.endpoint[0].ticket.ticket
        assert ticket[1:1 + len(SQL)] == SQL.encode() and ticket[0] == len(SQL)
        schema = pa.ipc.read_schema(pa.py_buffer(info.schema))
        assert schema.names == ["block_num", "hash", "parent_hash", "timestamp", "gas_used"]


def test_blocks_schema_equals_the_dev_servers(raw):
    # Two transcriptions of datasets-raw evm/tables/blocks.rs, by different hands: the dev
    # server's (evm_schemas.cc) and the stand-in's.
    sql = f"SELECT * FROM {BLOCKS}"
    with run_standin() as ampd, run_dev_server() as dev:
        ampd_schema = pa.ipc.read_schema(pa.py_buffer(raw(ampd).flight_info(sql).schema))
        client = flight.connect(dev.url)
        dev_info = client.get_flight_info(
            flight.FlightDescriptor.for_command(standin.statement_command(sql)))
        client.close()
    assert ampd_schema.equals(dev_info.schema), f"{ampd_schema}\n---\n{dev_info.schema}"
    assert ampd_schema.field("timestamp").type == pa.timestamp("ns", tz="+00:00")
    assert ampd_schema.names[0] == "_block_num" and len(ampd_schema) == 24


def test_descriptors_ampd_refuses(raw):
    with run_standin() as server:
        client = raw(server)
        wrong_type = standin.any_pb2.Any(type_url="type.googleapis.com/foo.Bar", value=b"")
        cases = [
            (standin.FlightDescriptor(type=standin.DESCRIPTOR_CMD,
                                      cmd=wrong_type.SerializeToString()),
             "unsupported flight descriptor command: type.googleapis.com/foo.Bar"),
            (standin.FlightDescriptor(type=standin.DESCRIPTOR_PATH, path=["blocks"]),
             "unsupported flight descriptor type: 1"),
            (standin.FlightDescriptor(type=standin.DESCRIPTOR_CMD, cmd=b"\xff\xff"),
             "ProtocolBuffers decoding error: "),
        ]
        for descriptor, message in cases:
            with pytest.raises(grpc.RpcError) as caught:
                client.flight_info(descriptor=descriptor)
            assert_tonic_status(caught.value, grpc.StatusCode.INVALID_ARGUMENT, message)
        with pytest.raises(grpc.RpcError) as caught:
            client.flight_info("   ")
        assert_tonic_status(caught.value, grpc.StatusCode.INVALID_ARGUMENT,
                            "invalid query: string cannot be empty or contain only whitespace")


def test_batch_doget_is_schema_data_marker_with_the_synced_range(raw):
    with run_standin() as server:
        client = raw(server)
        chain = chain_of(client)
        low, high = QUICKSTART_FIRST + 10, QUICKSTART_FIRST + 19
        messages, table = batch_rows(client, f"{SQL} WHERE block_num BETWEEN {low} AND {high}")
        assert messages[0].kind == "schema" and messages[0].metadata is None
        data, marker = messages[1:-1], messages[-1]
        assert data and all(not m.complete for m in data)
        assert marker.rows == 0 and marker.complete
        assert table.column("block_num").to_pylist() == list(
            range(QUICKSTART_FIRST + 10, QUICKSTART_FIRST + 20))
        # R is the table's synced range, not the rows' span (common_ranges)
        for m in data:
            assert m.metadata_bytes == expected_metadata(QUICKSTART_FIRST, QUICKSTART_LAST,
                                                         chain, False)
        assert marker.metadata_bytes == expected_metadata(QUICKSTART_FIRST, QUICKSTART_LAST,
                                                          chain, True)
        # Nothing matches: NonEmptyRecordBatchStream still sends one 0-row batch.
        messages, table = batch_rows(client, SQL + " WHERE block_num < 5")
        assert [(m.kind, m.rows, m.complete) for m in messages] == [
            ("schema", 0, False), ("batch", 0, False), ("batch", 0, True)]


def test_streaming_sends_nothing_before_the_first_microbatch(raw):
    with run_standin() as server:  # a still chain: no new block ever
        client = raw(server)
        chain = chain_of(client)
        cursor = json.dumps({NETWORK: {"number": QUICKSTART_LAST,
                                       "hash": chain[QUICKSTART_LAST]["hash"]}})
        stream = client.do_get(SQL, stream=True, resume=cursor)
        assert stream.next(timeout=1.5) is None, "the stream sent something without a microbatch"
        stream.cancel()


def test_the_schema_comes_with_the_first_microbatch_then_a_keepalive(raw):
    with run_standin("--block-interval-ms", 1500, "--max-head", QUICKSTART_LAST + 1) as server:
        client = raw(server)
        chain = chain_of(client)
        assert max(chain) == QUICKSTART_LAST, "the chain moved before the test looked at it"
        cursor = json.dumps({NETWORK: {"number": QUICKSTART_LAST,
                                       "hash": chain[QUICKSTART_LAST]["hash"]}})
        stream = client.do_get(SQL, stream=True, resume=cursor)
        schema, keepalive, data, marker = stream.take(4)
        assert schema.kind == "schema" and schema.metadata is None
        assert schema.at > 0.5, f"the schema came {schema.at:.2f} s in, before the block existed"
        assert keepalive.at - schema.at < 0.5  # together: MicrobatchStart, then the tick
        new = QUICKSTART_LAST + 1
        chain = chain_of(client)
        assert (keepalive.rows, keepalive.complete, keepalive.span) == (0, False, (new, new))
        assert keepalive.metadata_bytes == expected_metadata(new, new, chain, False)
        assert data.rows == 1 and data.metadata_bytes == keepalive.metadata_bytes
        assert marker.rows == 0
        assert marker.metadata_bytes == expected_metadata(new, new, chain, True)
        assert data.value.column("parent_hash")[0].as_py().hex() == \
            chain[QUICKSTART_LAST]["hash"][2:]
        stream.cancel()


def test_microbatches_hold_at_most_1000_blocks_and_chain_by_hash(raw):
    first = 1_000_000
    with run_standin("--start-block", first, "--blocks", 2500) as server:
        client = raw(server)
        stream = client.do_get(f"SELECT block_num, hash, parent_hash FROM {BLOCKS}", stream=True)
        batches = stream.microbatches(3, timeout=30)
        stream.cancel()
    spans = [mb[-1].span for mb in batches]
    assert spans == [(first, first + 999), (first + 1000, first + 1999),
                     (first + 2000, first + 2499)]
    previous_hash = None
    for mb in batches:
        keepalive, *data, marker = mb
        assert keepalive.rows == 0 and not keepalive.complete  # the immediate first tick
        assert marker.rows == 0 and marker.complete and len(marker.metadata["ranges"]) == 1
        r = marker.metadata["ranges"][0]
        rows = pa.Table.from_batches([m.value for m in data]).to_pylist()
        assert [row["block_num"] for row in rows] == list(range(r["numbers"]["start"],
                                                                r["numbers"]["end"] + 1))
        assert hex_hash(rows[0]["parent_hash"]) == r["prev_hash"]
        assert hex_hash(rows[-1]["hash"]) == r["hash"]
        for a, b in zip(rows, rows[1:]):
            assert b["parent_hash"] == a["hash"]
        if previous_hash is not None:
            assert r["prev_hash"] == previous_hash
        previous_hash = r["hash"]
        assert re.fullmatch(r"0x[0-9a-f]{64}", r["hash"]) and isinstance(r["timestamp"], int)


def test_keepalives_repeat_while_a_microbatch_runs(raw):
    with run_standin("--microbatch-delay-ms", 1300, "--keepalive-interval-s", 0.4) as server:
        stream = raw(server).do_get(SQL, stream=True)
        (mb,) = stream.microbatches(1)
        stream.cancel()
    keepalives = [m for m in mb if m.rows == 0 and not m.complete]
    assert len(keepalives) >= 3, [(m.rows, round(m.at, 2)) for m in mb]
    assert mb[0] is keepalives[0] and mb[-1].complete


def test_resume_continues_rewinds_restarts_or_stalls(raw):
    # Block QUICKSTART_LAST+1 arrives after 1 s and replaces the newest 3 blocks: the fork is
    # QUICKSTART_LAST-1.
    head = QUICKSTART_LAST + 1
    with run_standin("--block-interval-ms", 1000, "--max-head", head,
                     "--reorg-at", f"{head}:3") as server:
        client = raw(server)
        before = chain_of(client)
        assert max(before) == QUICKSTART_LAST, "the chain moved before the test looked at it"
        deadline = time.monotonic() + 10
        while max(after := chain_of(client)) < head:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        fork = QUICKSTART_LAST - 1
        assert after[fork]["hash"] != before[fork]["hash"]
        assert after[fork - 1]["hash"] == before[fork - 1]["hash"]

        def first_range(number: int, block_hash: str, network: str = NETWORK):
            cursor = json.dumps({network: {"number": number, "hash": block_hash}})
            stream = client.do_get(SQL, stream=True, resume=cursor)
            item = stream.next(timeout=1.5)
            if item is None:
                stream.cancel()
                return None
            if isinstance(item, grpc.RpcError):
                return item
            (mb,) = stream.microbatches(1)
            stream.cancel()
            return mb[-1].metadata["ranges"][0]

        # (N, hash) canonical: N+1, prev_hash = the cursor's hash
        r = first_range(fork - 2, after[fork - 2]["hash"])
        assert (r["numbers"]["start"], r["prev_hash"]) == (fork - 1, after[fork - 2]["hash"])
        # a stale hash: reorg_base walks the fork back to its lowest block
        r = first_range(QUICKSTART_LAST, before[QUICKSTART_LAST]["hash"])
        assert (r["numbers"]["start"], r["numbers"]["end"]) == (fork, head)
        assert r["prev_hash"] == after[fork - 1]["hash"]
        # a hash the server never had: restart at N itself
        r = first_range(fork - 5, "0x" + "12" * 32)
        assert r["numbers"]["start"] == fork - 5 and r["prev_hash"] == after[fork - 6]["hash"]
        # below the first block: the blocks table lacks it, no microbatch, silence
        assert first_range(QUICKSTART_FIRST - 1, before[QUICKSTART_FIRST]["parent_hash"]) is None
        # the cursor's network is not the query's: INTERNAL at DoGet
        error = first_range(5, ZERO, network="base")
        assert isinstance(error, grpc.RpcError), error
        assert_tonic_status(error, grpc.StatusCode.INTERNAL,
                            "streaming query execution error | Caused by: ")
        assert "expected cursor for network 'mainnet', but cursor only contains networks: " \
               "[base]" in error.details()
        # a cursor that does not deserialise is ignored: the stream starts at the first block
        for malformed in ("{not json", json.dumps({NETWORK: {"number": "5", "hash": ZERO}}),
                          json.dumps({NETWORK: {"number": 5, "hash": ""}})):
            stream = client.do_get(SQL, stream=True, resume=malformed)
            (mb,) = stream.microbatches(1)
            stream.cancel()
            assert mb[-1].span[0] == QUICKSTART_FIRST, malformed


def test_a_streaming_query_that_cannot_be_incremental_fails_at_doget(raw):
    with run_standin() as server:
        client = raw(server)
        sql = f"SELECT block_num FROM {BLOCKS} LIMIT 3"
        info = client.flight_info(sql, stream=True)  # planning succeeds
        stream = DoGetStream(client._get(info.endpoint[0].ticket, timeout=30))
        error = stream.next()
        assert isinstance(error, grpc.RpcError), error
        assert_tonic_status(error, grpc.StatusCode.INVALID_ARGUMENT,
                            "invalid query: non-incremental queries are not supported for "
                            "streaming")


def test_a_dataset_with_nothing_synced_ends_the_stream(raw):
    with run_standin("--blocks", 0) as server:
        stream = raw(server).do_get(SQL, stream=True)
        schema, marker = stream.take(2)
        assert stream.next() is END
    assert schema.kind == "schema"
    assert marker.rows == 0 and marker.metadata_bytes == b'{"ranges":[],"ranges_complete":true}'


def test_mid_stream_failures_are_internal_without_trailers(raw):
    with run_standin("--microbatch-max-blocks", 30, "--fail-microbatch", "2:internal") as server:
        stream = raw(server).do_get(SQL, stream=True)
        schema = stream.next()
        (first,) = stream.microbatches(1)
        second = []
        while isinstance(item := stream.next(), Message):
            second.append(item)
    assert schema.kind == "schema" and first[-1].span == (QUICKSTART_FIRST, QUICKSTART_FIRST + 29)
    assert [m.rows for m in second] == [0, 30]  # its keep-alive and data, no marker
    assert isinstance(item, grpc.RpcError), item
    assert_tonic_status(item, grpc.StatusCode.INTERNAL,
                        "streaming query execution error | Caused by: ")


def test_a_dropped_connection_resets_the_stream(raw):
    with run_standin("--microbatch-max-blocks", 30, "--fail-microbatch", "2:drop") as server:
        stream = raw(server).do_get(SQL, stream=True)
        stream.microbatches(1)
        # The reset reaches the reading thread whenever the machine lets it: on a loaded
        # machine (the suite runs on every core) that took more than next()'s 10 s.
        while isinstance(item := stream.next(timeout=120), Message):
            pass
    assert item is not None, "no error within 120 s of the dropped connection"
    assert isinstance(item, grpc.RpcError), item
    assert item.code() == grpc.StatusCode.UNAVAILABLE, (item.code(), item.details())


# --------------------------------------------------------------------------------------
# Part 2: ampdelta's CLI against the stand-in
# --------------------------------------------------------------------------------------

def run_cli(*args: str, timeout: float = CLI_TIMEOUT_S) -> subprocess.CompletedProcess:
    return subprocess.run([str(cli_path()), *map(str, args)], capture_output=True, text=True,
                          env=cli_env(), timeout=timeout, stdin=subprocess.DEVNULL)


def describe(proc) -> str:
    return f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"


def error_line(proc) -> str:
    lines = proc.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("ampdelta: error: ")]
    assert len(errors) == 1, describe(proc)
    return errors[0]


def test_cli_query_batch_and_stream():
    with run_standin("--microbatch-max-blocks", 30) as server:
        proc = run_cli("query", "--server", server.url, "--sql",
                       f"SELECT block_num, timestamp, hash, gas_used FROM {BLOCKS}")
        assert proc.returncode == 0, describe(proc)
        assert re.search(r"rows=100 .*ranges=mainnet\[24000000\.\.24000099\] "
                         r"ranges_complete=true", proc.stdout), describe(proc)
        proc = run_cli("query", "--server", server.url, "--stream", "--max-microbatches", 4,
                       "--sql", f"SELECT block_num FROM {BLOCKS}")
        assert proc.returncode == 0, describe(proc)
        spans = re.findall(r"^microbatch mainnet\[(\d+)\.\.(\d+)\]", proc.stdout, re.M)
        assert spans == [("24000000", "24000029"), ("24000030", "24000059"),
                         ("24000060", "24000089"), ("24000090", "24000099")], describe(proc)


def test_cli_query_stream_waits_for_the_late_schema():
    # The first microbatch starts 1.5 s in (a resume at the head of a chain that grows
    # then): before that the server sends nothing, not even the schema.
    with run_standin("--block-interval-ms", 1500, "--max-head", QUICKSTART_LAST + 1) as server:
        chain = canonical_hashes(server.url)
        cursor = json.dumps({NETWORK: {"number": QUICKSTART_LAST, "hash": chain[QUICKSTART_LAST]}})
        proc = run_cli("query", "--server", server.url, "--stream", "--max-microbatches", 1,
                       "--resume", cursor, "--sql", f"SELECT block_num FROM {BLOCKS}")
    assert proc.returncode == 0, describe(proc)
    assert re.search(rf"^microbatch mainnet\[{QUICKSTART_LAST + 1}\.\.{QUICKSTART_LAST + 1}\] "
                     r"rows=1 ", proc.stdout, re.M), describe(proc)


def test_cli_errors_carry_the_grpc_code_without_arrow_trailers():
    with run_standin("--microbatch-max-blocks", 30, "--fail-microbatch", "2:internal",
                     "--fail-flight-info", "unavailable:1") as server:
        # UNAVAILABLE at planning (the first call only)
        proc = run_cli("query", "--server", server.url, "--sql", f"SELECT block_num FROM {BLOCKS}")
        assert proc.returncode == 3, describe(proc)
        assert error_line(proc) == (
            "ampdelta: error: GetFlightInfo failed: UNAVAILABLE: "
            "scripted failure of GetFlightInfo (UNAVAILABLE)"), describe(proc)
        # INVALID_ARGUMENT at planning
        proc = run_cli("query", "--server", server.url, "--sql", f"SELECT nope FROM {BLOCKS}")
        assert proc.returncode == 3, describe(proc)
        assert error_line(proc).startswith(
            "ampdelta: error: GetFlightInfo failed: INVALID_ARGUMENT: invalid plan | Caused by: "
            "Schema error: No field named nope."), describe(proc)
        # INTERNAL mid-stream, after the first microbatch
        proc = run_cli("query", "--server", server.url, "--stream", "--sql",
                       f"SELECT block_num FROM {BLOCKS}")
        assert proc.returncode == 3, describe(proc)
        assert "microbatch mainnet[24000000..24000029]" in proc.stdout, describe(proc)
        assert re.fullmatch(r"ampdelta: error: DoGet failed: INTERNAL: streaming query execution "
                            r"error \| Caused by: .*scripted failure of microbatch 2",
                            error_line(proc)), describe(proc)


# --- load --stream ------------------------------------------------------------------------

STREAM_SQL = f"SELECT block_num, hash, gas_used FROM {BLOCKS}"
FAST_RETRY = json.dumps({"optimize_after_write": False, "resilience": {"retry": {
    "initial_backoff_ms": 100, "max_backoff_ms": 500}}})


class StreamLoad:
    def __init__(self, url: str, table: Path, logs: Path, name: str, *extra):
        self.args = [str(cli_path()), "load", "--server", url, "--table", str(table), "--sql",
                     STREAM_SQL, "--stream", "--commit-interval-ms", "50", "--config",
                     FAST_RETRY, *map(str, extra)]
        logs.mkdir(parents=True, exist_ok=True)
        self.out, self.err = logs / f"{name}.stdout", logs / f"{name}.stderr"
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=err, env=cli_env())

    def describe(self) -> str:
        return (f"{' '.join(self.args)}\nexit {self.proc.returncode}\n"
                f"stdout:\n{self.out.read_text(errors='replace')}\n"
                f"stderr:\n{self.err.read_text(errors='replace')}")

    def wait(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


def load_until(url: str, table: Path, logs: Path, name: str, until: int, *extra,
               timeout: float = 60) -> StreamLoad:
    load = StreamLoad(url, table, logs, name, "--until-block", until, *extra)
    try:
        assert load.wait(timeout) == 0, load.describe()
    finally:
        load.stop()
    lines = load.out.read_text().splitlines()
    assert lines and RESULT_RE.match(lines[-1]), load.describe()
    return load


def check_table(table: Path, url: str, first: int, last: int) -> None:
    chain = canonical_hashes(url)
    rows = readers.read_deltalake(table)
    block_nums = rows.column("block_num").to_pylist()
    assert not repeated(block_nums), repeated(block_nums)
    assert sorted(block_nums) == list(range(first, last + 1))
    stale = [n for n, h in zip(block_nums, rows.column("hash").to_pylist())
             if hex_hash(h) != chain[n]]
    assert not stale, stale[:10]


@pytest.mark.parametrize("wait", ["resumed at the head", "first microbatch stalls"])
def test_load_stream_stops_on_sigint_while_awaiting_the_first_microbatch(tmp_path, wait):
    # ampd sends nothing, not even the schema, until a microbatch starts (flight.rs): the
    # loader must still stop at once on SIGINT (ampd-fidelity.md B1).
    table, logs = tmp_path / "blocks", tmp_path / "logs"
    if wait == "resumed at the head":
        # A still chain: after a load to its head, a restarted stream resumes there and the
        # server waits for a block that never comes.
        args, loaded = (), True
    else:
        # A fresh stream whose first microbatch never starts.
        args, loaded = ("--fail-microbatch", "1:stall:start"), False
    with run_standin(*args) as server:
        if loaded:
            load_until(server.url, table, logs, "first", QUICKSTART_LAST)
        versions = sorted((table / "_delta_log").glob("*.json")) if loaded else []
        load = StreamLoad(server.url, table, logs, "waiting")
        try:
            time.sleep(2.0)
            assert load.proc.poll() is None, load.describe()
            sent = time.monotonic()
            load.proc.send_signal(signal.SIGINT)
            code = load.wait(5)
            took = time.monotonic() - sent
            assert code is not None, f"no exit within 5 s of SIGINT\n{load.describe()}"
            assert took < 1.0, f"exit {took:.2f} s after SIGINT\n{load.describe()}"
            assert code == 130, load.describe()  # stopped by SIGINT (docs/operations.md)
        finally:
            load.stop()
        if loaded:
            assert sorted((table / "_delta_log").glob("*.json")) == versions
            check_table(table, server.url, QUICKSTART_FIRST, QUICKSTART_LAST)
        else:
            assert not (table / "_delta_log").is_dir() or \
                not list((table / "_delta_log").glob("*.json")), load.describe()


@pytest.mark.parametrize("kind", ["internal", "drop", "unavailable"])
def test_load_stream_recovers_from_a_mid_stream_failure(tmp_path, kind):
    # ampd reports every failure of a running stream as INTERNAL (flight.rs: every
    # streaming error is StreamingExecutionError → Status::internal); a dropped connection
    # or a proxy's UNAVAILABLE look like transport failures. The query was fine when it
    # started: reconnecting from the table's state loads every block exactly once.
    table, logs = tmp_path / "blocks", tmp_path / "logs"
    with run_standin("--microbatch-max-blocks", 20, "--fail-microbatch", f"3:{kind}") as server:
        load = load_until(server.url, table, logs, "load", QUICKSTART_LAST)
        check_table(table, server.url, QUICKSTART_FIRST, QUICKSTART_LAST)
    assert "retry class=server attempt=1" in load.err.read_text(), load.describe()


def test_load_stream_reconnects_after_a_stall_inside_a_microbatch(tmp_path):
    table, logs = tmp_path / "blocks", tmp_path / "logs"
    with run_standin("--microbatch-max-blocks", 20, "--fail-microbatch", "3:stall") as server:
        load = StreamLoad(server.url, table, logs, "load", "--until-block", QUICKSTART_LAST,
                          "--idle-timeout", 2)
        try:
            code = load.wait(12)
            assert code is not None, f"the loader hangs on a stalled stream\n{load.describe()}"
        finally:
            load.stop()
        # Reconnected from the table (the stall happens once): every block exactly once.
        assert code == 0, load.describe()
        check_table(table, server.url, QUICKSTART_FIRST, QUICKSTART_LAST)


def test_batch_load_retries_unavailable_at_planning(tmp_path):
    table = tmp_path / "blocks"
    with run_standin("--fail-flight-info", "unavailable:2") as server:
        proc = run_cli("load", "--server", server.url, "--table", table, "--sql", STREAM_SQL,
                       "--config", FAST_RETRY)
        assert proc.returncode == 0, describe(proc)
        assert RESULT_RE.match(proc.stdout.strip().splitlines()[-1]), describe(proc)
        check_table(table, server.url, QUICKSTART_FIRST, QUICKSTART_LAST)
