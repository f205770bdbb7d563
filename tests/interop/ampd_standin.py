#!/usr/bin/env python3
"""A stand-in for Amp's server (ampd), for interop tests: a plain gRPC server (grpcio) that
speaks the Arrow Flight service the way ampd's tonic service does.

Written from ampd's source (edgeandnode/amp: crates/services/server/src/flight.rs,
crates/core/common/src/streaming_query.rs, cursor.rs, datasets-common block_range.rs,
datasets-raw evm/tables/blocks.rs; see ../shared/spec/ampd-fidelity.md), never from
ampdelta's dev server: the dev server and the client were written by one team, and a
misunderstanding they share cancels out in tests that use both. What this server does, and
the ampd fact behind each behaviour:

GetFlightInfo (flight.rs `get_flight_info`)
  - the descriptor must be CMD holding a protobuf Any whose type_url is exactly
    type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery (arrow-flight's
    `Any::unpack` compares the type_url); another type_url is INVALID_ARGUMENT "unsupported
    flight descriptor command: <type_url>", PATH/UNKNOWN descriptors INVALID_ARGUMENT
    "unsupported flight descriptor type: <number>", undecodable bytes INVALID_ARGUMENT
    "ProtocolBuffers decoding error: …";
  - headers are read here only: `amp-stream` (`true`/`1`, `false`/`0`, case-insensitive;
    anything else: the SQL's `SETTINGS stream = true`, a boolean literal, decides) and
    `amp-resume` (`serde_json::from_slice::<Cursor>(…).ok()`: anything that does not
    deserialise into {network: {number: u64, hash: 32-byte hex}} is silently ignored);
  - the SQL is planned (errors surface here) and the answer is one endpoint with an opaque
    ticket (bincode-standard AmpTicket{query, is_streaming, cursor}), no locations, no
    expiration, total_records/total_bytes -1, ordered false, the descriptor echoed.

DoGet (flight.rs `do_get`, `flight_data_stream`)
  - the ticket is decoded and the query re-planned; a streaming query that cannot be
    incrementalised (here: LIMIT) fails here with INVALID_ARGUMENT "invalid query:
    non-incremental queries are not supported for streaming, …"; a cursor without the
    query's network fails here with INTERNAL (`to_single_network`);
  - batch: the schema; at least one data batch (a 0-row one when nothing matches:
    NonEmptyRecordBatchStream) with {"ranges":R,"ranges_complete":false}; a final 0-row
    batch with {"ranges":R,"ranges_complete":true}; R is the table's synced range, not the
    rows' span (`common_ranges`);
  - streaming (streaming_query.rs `execute`): NOTHING is sent, not even the schema, until
    the first microbatch starts; the schema goes out with the first MicrobatchStart. Per
    microbatch of at most --microbatch-max-blocks blocks (ampd's
    server_microbatch_max_interval, default 1000): a 0-row keep-alive at its start (the
    first tick of `keep_alive_stream`'s tokio interval fires at once) and every
    --keepalive-interval-s while it runs, the data batches, then one 0-row marker with
    ranges_complete true. Between microbatches nothing is sent;
  - the next range (`next_microbatch_range`/`next_microbatch_start`): the first block on a
    fresh stream; after a cursor (N, hash) still canonical, N+1 with prev_hash = hash;
    otherwise `reorg_base`: walk back from (N, hash) over forked blocks by parent hash to
    the lowest non-canonical number and restart there (a cursor block the server never
    had restarts at N itself); a start the blocks table lacks (a cursor below the first
    block, or past the head) sends nothing and waits, for ever below the first block;
  - app_metadata is ampd's exact JSON: `serde_json::to_string(&json!({...}))` without
    preserve_order, so keys are sorted, compact, hashes "0x" + lower-case hex, `numbers`
    nested {start,end}, `timestamp` (Unix seconds of the end block).

Errors (flight.rs `impl From<Error> for Status`): a gRPC status code and message, as tonic
sends them — no `x-arrow-status` or other Arrow detail trailers. Messages follow
`error_with_causes`: "<error> | Caused by: <cause> -> <cause>". Every failure of a running
stream is INTERNAL "streaming query execution error | Caused by: …".

The data: a `blocks` table in ampd's exact Arrow schema (24 columns with `_block_num`,
timestamps Timestamp(ns, "+00:00")), deterministic values from --seed, hashes chained by
parent_hash (the parent of block 0 is the zero hash), 12-second blocks. The chain is live
with --block-interval-ms; reorgs are scripted with --reorg-every/--reorg-depth and
--reorg-at HEAD:DEPTH (when the head reaches HEAD, the newest DEPTH blocks are replaced;
the replaced blocks stay known as a fork, so stale cursors rewind as on ampd).

Scripted failures (for tests; not ampd behaviour but faults ampd or the network produce):
  --fail-microbatch N:KIND[:POINT]   the N-th microbatch the server starts (counted over
        all streams, from 1) fails: KIND internal (INTERNAL, ampd's message shape), drop
        (the TCP connection is reset: a relay in front of the gRPC server cuts it),
        stall (the stream goes silent until the client gives up), unavailable,
        resource-exhausted; POINT start (before anything of the microbatch, even the
        schema), data (after its keep-alive and first data batch; the default) or end
        (before its marker)
  --fail-flight-info CODE:COUNT      the first COUNT GetFlightInfo calls fail with CODE

Usage: python ampd_standin.py --port 0 [options]; the first stdout line is
"ampd stand-in listening on grpc://127.0.0.1:PORT"; SIGTERM/SIGINT stop it.
"""

from __future__ import annotations

import argparse
import dataclasses
import decimal
import fcntl
import hashlib
import json
import os
import re
import signal
import socket
import struct
import sys
import termios
import threading
import time
from concurrent import futures

import grpc
import pyarrow as pa
from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

# --------------------------------------------------------------------------------------
# Flight's protobuf messages (Flight.proto and FlightSql.proto, the fields ampd uses),
# built at runtime in a private descriptor pool.
# --------------------------------------------------------------------------------------

_T = descriptor_pb2.FieldDescriptorProto


def _message_classes() -> dict[str, type]:
    flight_file = descriptor_pb2.FileDescriptorProto(
        name="ampd_standin/Flight_subset.proto", package="arrow.flight.protocol",
        syntax="proto3")

    def message(name: str, *fields: tuple) -> None:
        m = flight_file.message_type.add(name=name)
        for field_name, number, kind, label, type_name in fields:
            f = m.field.add(name=field_name, number=number, type=kind, label=label)
            if type_name:
                f.type_name = type_name

    one, many = _T.LABEL_OPTIONAL, _T.LABEL_REPEATED
    # FlightDescriptor.type is an enum (UNKNOWN 0, PATH 1, CMD 2); int32 is wire-identical.
    message("FlightDescriptor", ("type", 1, _T.TYPE_INT32, one, None),
            ("cmd", 2, _T.TYPE_BYTES, one, None), ("path", 3, _T.TYPE_STRING, many, None))
    message("Ticket", ("ticket", 1, _T.TYPE_BYTES, one, None))
    message("Location", ("uri", 1, _T.TYPE_STRING, one, None))
    # expiration_time (3, google.protobuf.Timestamp) is never set by ampd: left out.
    message("FlightEndpoint",
            ("ticket", 1, _T.TYPE_MESSAGE, one, ".arrow.flight.protocol.Ticket"),
            ("location", 2, _T.TYPE_MESSAGE, many, ".arrow.flight.protocol.Location"),
            ("app_metadata", 4, _T.TYPE_BYTES, one, None))
    message("FlightInfo", ("schema", 1, _T.TYPE_BYTES, one, None),
            ("flight_descriptor", 2, _T.TYPE_MESSAGE, one,
             ".arrow.flight.protocol.FlightDescriptor"),
            ("endpoint", 3, _T.TYPE_MESSAGE, many, ".arrow.flight.protocol.FlightEndpoint"),
            ("total_records", 4, _T.TYPE_INT64, one, None),
            ("total_bytes", 5, _T.TYPE_INT64, one, None),
            ("ordered", 6, _T.TYPE_BOOL, one, None),
            ("app_metadata", 7, _T.TYPE_BYTES, one, None))
    message("FlightData",
            ("flight_descriptor", 1, _T.TYPE_MESSAGE, one,
             ".arrow.flight.protocol.FlightDescriptor"),
            ("data_header", 2, _T.TYPE_BYTES, one, None),
            ("app_metadata", 3, _T.TYPE_BYTES, one, None),
            ("data_body", 1000, _T.TYPE_BYTES, one, None))
    message("Empty")

    sql_file = descriptor_pb2.FileDescriptorProto(
        name="ampd_standin/FlightSql_subset.proto", package="arrow.flight.protocol.sql",
        syntax="proto3")
    m = sql_file.message_type.add(name="CommandStatementQuery")
    m.field.add(name="query", number=1, type=_T.TYPE_STRING, label=one)
    m.field.add(name="transaction_id", number=2, type=_T.TYPE_BYTES, label=one,
                proto3_optional=True, oneof_index=0)
    m.oneof_decl.add(name="_transaction_id")

    pool = descriptor_pool.DescriptorPool()
    pool.Add(flight_file)
    pool.Add(sql_file)
    classes = {}
    for name in ("FlightDescriptor", "Ticket", "Location", "FlightEndpoint", "FlightInfo",
                 "FlightData", "Empty"):
        classes[name] = message_factory.GetMessageClass(
            pool.FindMessageTypeByName(f"arrow.flight.protocol.{name}"))
    classes["CommandStatementQuery"] = message_factory.GetMessageClass(
        pool.FindMessageTypeByName("arrow.flight.protocol.sql.CommandStatementQuery"))
    return classes


_CLASSES = _message_classes()
FlightDescriptor = _CLASSES["FlightDescriptor"]
Ticket = _CLASSES["Ticket"]
Location = _CLASSES["Location"]
FlightEndpoint = _CLASSES["FlightEndpoint"]
FlightInfo = _CLASSES["FlightInfo"]
FlightData = _CLASSES["FlightData"]
CommandStatementQuery = _CLASSES["CommandStatementQuery"]

SERVICE = "arrow.flight.protocol.FlightService"
COMMAND_TYPE_URL = "type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery"
DESCRIPTOR_UNKNOWN, DESCRIPTOR_PATH, DESCRIPTOR_CMD = 0, 1, 2


def statement_command(sql: str) -> bytes:
    """The Any{CommandStatementQuery{query}} bytes a client puts in a CMD descriptor."""
    packed = any_pb2.Any(type_url=COMMAND_TYPE_URL,
                         value=CommandStatementQuery(query=sql).SerializeToString())
    return packed.SerializeToString()


# --------------------------------------------------------------------------------------
# ampd's JSON (serde_json without preserve_order: sorted keys, compact) and cursor rules
# --------------------------------------------------------------------------------------

ZERO_HASH = bytes(32)


def hex_hash(value: bytes) -> str:
    return "0x" + value.hex()


@dataclasses.dataclass(frozen=True)
class BlockRange:
    """datasets_common::BlockRange: inclusive numbers, network, end hash, prev_hash (the
    start block's parent), timestamp (end block, Unix seconds; omitted when None)."""
    start: int
    end: int
    network: str
    hash: bytes
    prev_hash: bytes
    timestamp: int | None

    def to_json_value(self) -> dict:
        value = {"numbers": {"start": self.start, "end": self.end}, "network": self.network,
                 "hash": hex_hash(self.hash), "prev_hash": hex_hash(self.prev_hash)}
        if self.timestamp is not None:
            value["timestamp"] = self.timestamp
        return value


def app_metadata(ranges: list[BlockRange], complete: bool) -> bytes:
    """`serde_json::to_string(&json!({"ranges": ranges, "ranges_complete": complete}))`."""
    value = {"ranges": [r.to_json_value() for r in ranges], "ranges_complete": complete}
    return json.dumps(value, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode("utf-8")


_U64_MAX = 2**64 - 1
_HEX64 = re.compile(r"(?:0x)?[0-9a-fA-F]{64}")


def parse_cursor(raw: bytes) -> dict[str, tuple[int, bytes]] | None:
    """`serde_json::from_slice::<Cursor>(raw).ok()`: a map network (non-empty string) ->
    {"number": u64, "hash": 32-byte hex, "0x" optional}; unknown fields are ignored; any
    other shape gives None (the header is then ignored)."""
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(value, dict):
        return None
    cursor = {}
    for network, entry in value.items():
        if not network or not isinstance(entry, dict):
            return None
        if "number" not in entry or "hash" not in entry:
            return None
        number, block_hash = entry["number"], entry["hash"]
        if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number <= _U64_MAX:
            return None
        if not isinstance(block_hash, str) or not _HEX64.fullmatch(block_hash):
            return None
        cursor[network] = (number, bytes.fromhex(block_hash.removeprefix("0x")))
    return cursor


# --- bincode 2 (config::standard: little-endian varints) for the opaque ticket -----------

def _varint(value: int) -> bytes:
    if value < 251:
        return bytes([value])
    if value < 2**16:
        return b"\xfb" + value.to_bytes(2, "little")
    if value < 2**32:
        return b"\xfc" + value.to_bytes(4, "little")
    return b"\xfd" + value.to_bytes(8, "little")


class TicketDecodeError(ValueError):
    pass


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def take(self, n: int) -> bytes:
        if self.at + n > len(self.data):
            raise TicketDecodeError(
                f"UnexpectedEnd {{ additional: {self.at + n - len(self.data)} }}")
        chunk = self.data[self.at:self.at + n]
        self.at += n
        return chunk

    def varint(self) -> int:
        first = self.take(1)[0]
        widths = {251: 2, 252: 4, 253: 8}
        if first < 251:
            return first
        if first not in widths:
            raise TicketDecodeError(f"InvalidIntegerType {{ found: {first} }}")
        return int.from_bytes(self.take(widths[first]), "little")

    def string(self) -> str:
        raw = self.take(self.varint())
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise TicketDecodeError(f"Utf8 {{ inner: {error} }}") from None


def encode_ticket(query: str, is_streaming: bool,
                  cursor: dict[str, tuple[int, bytes]] | None) -> bytes:
    """AmpTicket{query: String, is_streaming: bool,
    cursor: Option<BTreeMap<String, (u64, [u8; 32])>>} in bincode's standard config."""
    raw = query.encode("utf-8")
    out = bytearray(_varint(len(raw)) + raw + bytes([1 if is_streaming else 0]))
    if cursor is None:
        out.append(0)
    else:
        out.append(1)
        out += _varint(len(cursor))
        for network in sorted(cursor):
            number, block_hash = cursor[network]
            name = network.encode("utf-8")
            out += _varint(len(name)) + name + _varint(number) + block_hash
    return bytes(out)


def decode_ticket(data: bytes) -> tuple[str, bool, dict[str, tuple[int, bytes]] | None]:
    reader = _Reader(data)
    query = reader.string()
    flag = reader.take(1)[0]
    if flag > 1:
        raise TicketDecodeError(f"InvalidBooleanValue({flag})")
    option = reader.take(1)[0]
    cursor = None
    if option == 1:
        cursor = {}
        for _ in range(reader.varint()):
            network = reader.string()
            cursor[network] = (reader.varint(), reader.take(32))
    elif option != 0:
        raise TicketDecodeError(f"UnexpectedVariant {{ found: {option} }}")
    return query, bool(flag), cursor


# --------------------------------------------------------------------------------------
# The chain and the blocks table (datasets-raw evm/tables/blocks.rs)
# --------------------------------------------------------------------------------------

BYTES32 = pa.binary(32)
ADDRESS = pa.binary(20)
CURRENCY = pa.decimal128(38, 0)
TIMESTAMP = pa.timestamp("ns", tz="+00:00")

BLOCKS_SCHEMA = pa.schema([
    pa.field("_block_num", pa.uint64(), nullable=False),
    pa.field("block_num", pa.uint64(), nullable=False),
    pa.field("timestamp", TIMESTAMP, nullable=False),
    pa.field("hash", BYTES32, nullable=False),
    pa.field("parent_hash", BYTES32, nullable=False),
    pa.field("ommers_hash", BYTES32, nullable=False),
    pa.field("miner", ADDRESS, nullable=False),
    pa.field("state_root", BYTES32, nullable=False),
    pa.field("transactions_root", BYTES32, nullable=False),
    pa.field("receipt_root", BYTES32, nullable=False),
    pa.field("logs_bloom", pa.binary(), nullable=False),
    pa.field("difficulty", CURRENCY, nullable=False),
    pa.field("total_difficulty", CURRENCY, nullable=True),
    pa.field("gas_limit", pa.uint64(), nullable=False),
    pa.field("gas_used", pa.uint64(), nullable=False),
    pa.field("extra_data", pa.binary(), nullable=False),
    pa.field("mix_hash", BYTES32, nullable=False),
    pa.field("nonce", pa.uint64(), nullable=False),
    pa.field("base_fee_per_gas", CURRENCY, nullable=True),
    pa.field("withdrawals_root", BYTES32, nullable=True),
    pa.field("blob_gas_used", pa.uint64(), nullable=True),
    pa.field("excess_blob_gas", pa.uint64(), nullable=True),
    pa.field("parent_beacon_root", BYTES32, nullable=True),
    pa.field("requests_hash", BYTES32, nullable=True),
])

BLOCK_SECONDS = 12
# Block N at TIMESTAMP_AT_24M + 12 * (N - 24,000,000): block 24,000,099 at 2025-12-13
# 00:25:59 UTC (the Quickstart's), block 0 of an "anvil" chain in 2016 (still positive).
TIMESTAMP_AT_24M = 1_765_584_371
EMPTY_OMMERS = bytes.fromhex("1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347")


@dataclasses.dataclass(frozen=True)
class Block:
    number: int
    hash: bytes
    parent_hash: bytes
    timestamp: int  # Unix seconds
    generation: int


def _digest(*parts) -> bytes:
    return hashlib.sha256(":".join(str(p) for p in parts).encode("utf-8")).digest()


class Chain:
    """The blocks table: canonical blocks by number, every block ever made by hash (forks
    stay findable, as ampd's fork context finds non-canonical segments)."""

    def __init__(self, start_block: int, initial_blocks: int, network: str, seed: int):
        self.start_block = start_block
        self.network = network
        self.seed = seed
        self.cond = threading.Condition()
        self.version = 0  # changes on every new block or reorg (a "table update")
        self.canonical: dict[int, Block] = {}
        self.by_hash: dict[bytes, Block] = {}
        self.generations: dict[int, int] = {}
        self.reorgs = 0
        self.head: int | None = None
        with self.cond:
            for _ in range(initial_blocks):
                self._append()

    def _make(self, number: int, parent_hash: bytes) -> Block:
        generation = self.generations.get(number, -1) + 1
        self.generations[number] = generation
        block_hash = _digest("ampd-standin", self.seed, self.network, number, generation,
                             parent_hash.hex())
        block = Block(number, block_hash, parent_hash,
                      TIMESTAMP_AT_24M + BLOCK_SECONDS * (number - 24_000_000), generation)
        self.canonical[number] = block
        self.by_hash[block_hash] = block
        return block

    def _parent_of(self, number: int) -> bytes:
        if number == 0:
            return ZERO_HASH
        if number - 1 in self.canonical:
            return self.canonical[number - 1].hash
        # The block before the dataset's first block: known by hash only (as the parent).
        return _digest("ampd-standin-before-start", self.seed, self.network, number - 1)

    def _append(self) -> None:
        number = self.start_block if self.head is None else self.head + 1
        self._make(number, self._parent_of(number))
        self.head = number
        self.version += 1
        self.cond.notify_all()

    def advance(self, reorg_at: dict[int, int], reorg_every: int, reorg_depth: int,
                initial_head: int) -> None:
        with self.cond:
            self._append()
            head = self.head
            if head in reorg_at:
                self._reorg(reorg_at[head])
            if reorg_every > 0 and (head - initial_head) % reorg_every == 0:
                self._reorg(reorg_depth)

    def reorg(self, depth: int) -> None:
        with self.cond:
            self._reorg(depth)

    def _reorg(self, depth: int) -> None:
        if self.head is None or not 1 <= depth <= self.head - self.start_block + 1:
            print(f"ampd stand-in: reorg of depth {depth} ignored (head {self.head})",
                  file=sys.stderr, flush=True)
            return
        fork = self.head - depth + 1
        for number in range(fork, self.head + 1):
            self._make(number, self._parent_of(number))
        self.reorgs += 1
        self.version += 1
        print(f"ampd stand-in: reorg head={self.head} depth={depth} fork={fork}",
              file=sys.stderr, flush=True)
        self.cond.notify_all()

    # --- blocks-table lookups (streaming_query.rs blocks_table_fetch/contains) ---

    def fetch(self, number: int) -> Block | None:
        return self.canonical.get(number)

    def fetch_any(self, number: int, block_hash: bytes) -> Block | None:
        block = self.by_hash.get(block_hash)
        return block if block is not None and block.number == number else None

    def contains(self, number: int, block_hash: bytes) -> bool:
        block = self.canonical.get(number)
        return block is not None and block.hash == block_hash

    def synced_range(self) -> BlockRange | None:
        if self.head is None:
            return None
        first, last = self.canonical[self.start_block], self.canonical[self.head]
        return BlockRange(self.start_block, self.head, self.network, last.hash,
                          first.parent_hash, last.timestamp)


def _column_values(name: str, blocks: list[Block]) -> pa.Array:
    field = BLOCKS_SCHEMA.field(name)

    def derived(label: str, size: int) -> list[bytes]:
        return [hashlib.sha256(b.hash + label.encode()).digest()[:size] for b in blocks]

    def number(label: str, modulus: int, offset: int = 0) -> list[int]:
        return [offset + int.from_bytes(v, "big") % modulus for v in derived(label, 8)]

    if name in ("_block_num", "block_num"):
        values = [b.number for b in blocks]
    elif name == "timestamp":
        values = [b.timestamp * 1_000_000_000 for b in blocks]
    elif name == "hash":
        values = [b.hash for b in blocks]
    elif name == "parent_hash":
        values = [b.parent_hash for b in blocks]
    elif name == "ommers_hash":
        values = [EMPTY_OMMERS for _ in blocks]
    elif name == "miner":
        values = derived("miner", 20)
    elif name in ("state_root", "transactions_root", "receipt_root", "mix_hash",
                  "withdrawals_root", "parent_beacon_root"):
        values = derived(name, 32)
    elif name == "logs_bloom":
        values = [v * 8 for v in derived("bloom", 32)]  # 256 bytes
    elif name == "difficulty":
        values = [decimal.Decimal(0) for _ in blocks]
    elif name == "total_difficulty":
        values = [decimal.Decimal(58_750_003_716_598_352_816_469) for _ in blocks]
    elif name == "gas_limit":
        values = [30_000_000 + 1_000 * (b.number % 7) for b in blocks]
    elif name == "gas_used":
        values = number("gas_used", 29_000_000, 21_000)
    elif name == "extra_data":
        values = [b"ampd stand-in" for _ in blocks]
    elif name == "nonce":
        values = [0 for _ in blocks]
    elif name == "base_fee_per_gas":
        values = [decimal.Decimal(v) for v in number("base_fee", 90_000_000_000, 1_000_000)]
    elif name == "blob_gas_used":
        values = [131_072 * v for v in number("blob_gas", 7)]
    elif name == "excess_blob_gas":
        values = number("excess_blob_gas", 1_000_000)
    elif name == "requests_hash":
        values = [None if b.number % 3 else v for b, v in zip(blocks, derived(name, 32))]
    else:
        raise KeyError(name)
    return pa.array(values, type=field.type)


def blocks_batch(blocks: list[Block], columns: list[str]) -> pa.RecordBatch:
    schema = pa.schema([BLOCKS_SCHEMA.field(c) for c in columns])
    return pa.RecordBatch.from_arrays([_column_values(c, blocks) for c in columns],
                                      schema=schema)


# --------------------------------------------------------------------------------------
# A small SQL subset (the stand-in is not a query engine):
#   SELECT * | item, … FROM <dataset>.blocks [WHERE col OP n [AND …] | col BETWEEN a AND b]
#   [GROUP BY col, …] [LIMIT n] [SETTINGS key = value, …] [;]
# where an item is a column or COUNT(*) [AS name]; a stream takes aggregates only when the
# first GROUP BY key is _block_num (incrementalizer.rs since #1877).
# --------------------------------------------------------------------------------------

class ServerError(Exception):
    """An error ampd would send: a gRPC code and `error_with_causes` text."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def with_causes(top: str, *causes: str) -> str:
    """ampd's `error_with_causes`: "<top> | Caused by: <a> -> <b>"."""
    return f"{top} | Caused by: {' -> '.join(causes)}" if causes else top


def sql_parse_error(detail: str) -> ServerError:
    return ServerError(grpc.StatusCode.INVALID_ARGUMENT,
                       with_causes("SQL parse error", f"sql parser error: {detail}"))


_TOKEN = re.compile(r"""\s*(?:(?P<num>\d+)|(?P<str>'(?:[^']|'')*')|(?P<qid>"(?:[^"]|"")*")|
                        (?P<id>[A-Za-z_][A-Za-z0-9_]*)|(?P<op><=|>=|<>|!=|[=<>*,.;()]))""",
                    re.VERBOSE)


def _tokens(sql: str) -> list[tuple[str, str]]:
    out, at = [], 0
    while at < len(sql):
        if sql[at:].strip() == "":
            break
        match = _TOKEN.match(sql, at)
        if not match:
            raise sql_parse_error(f"Expected: an SQL statement, found: {sql[at:at + 10]!r}")
        kind = match.lastgroup
        text = match.group(kind)
        if kind == "qid":
            text = text[1:-1].replace('""', '"')
        out.append((kind, text))
        at = match.end()
    return out


@dataclasses.dataclass
class Query:
    sql: str
    columns: list[str]
    filters: list[tuple[str, str, int]]
    limit: int | None
    settings: dict[str, tuple[str, str]]
    group_by: list[str] = dataclasses.field(default_factory=list)
    count_item: tuple[int, str] | None = None  # (position in the select list, output name)

    @property
    def grouped(self) -> bool:
        return bool(self.group_by) or self.count_item is not None

    @property
    def incremental_grouping(self) -> bool:
        return not self.grouped or (bool(self.group_by) and self.group_by[0] == "_block_num")

    @property
    def schema(self) -> pa.Schema:
        fields = [BLOCKS_SCHEMA.field(c) for c in self.columns]
        if self.count_item is not None:
            fields.insert(self.count_item[0], pa.field(self.count_item[1], pa.int64(), False))
        return pa.schema(fields)

    def empty(self) -> pa.RecordBatch:
        return pa.RecordBatch.from_arrays([pa.array([], f.type) for f in self.schema],
                                          schema=self.schema)

    def batches(self, rows: list[Block]) -> list[pa.RecordBatch]:
        """The result batches over these rows (LIMIT applied): DataFusion-sized chunks, or,
        grouped, one batch of groups in the order their first rows came."""
        if not self.grouped:
            rows = rows if self.limit is None else rows[:self.limit]
            return [blocks_batch(rows[i:i + BATCH_ROWS], self.columns)
                    for i in range(0, len(rows), BATCH_ROWS)]
        values = {c: _column_values(c, rows).to_pylist() for c in self.group_by}
        counts: dict[tuple, int] = {}
        for i in range(len(rows)):
            key = tuple(values[c][i] for c in self.group_by)
            counts[key] = counts.get(key, 0) + 1
        if not self.group_by and not counts:
            counts[()] = 0  # COUNT(*) of nothing is one row: 0
        groups = list(counts.items())[:self.limit] if self.limit is not None else list(counts.items())
        arrays = [pa.array([key[self.group_by.index(c)] for key, _ in groups],
                           type=BLOCKS_SCHEMA.field(c).type) for c in self.columns]
        if self.count_item is not None:
            arrays.insert(self.count_item[0], pa.array([n for _, n in groups], pa.int64()))
        return [pa.RecordBatch.from_arrays(arrays, schema=self.schema)]

    def stream_setting(self) -> bool:
        """helpers.rs `is_streaming`: top-level SETTINGS stream = <boolean literal true>."""
        kind, value = self.settings.get("stream", ("", ""))
        return kind == "id" and value.lower() == "true"

    def keep(self, block: Block) -> bool:
        for column, op, value in self.filters:
            actual = block.number if column in ("block_num", "_block_num") else \
                _column_values(column, [block])[0].as_py()
            if not {"=": actual == value, "<": actual < value, "<=": actual <= value,
                    ">": actual > value, ">=": actual >= value, "<>": actual != value,
                    "!=": actual != value}[op]:
                return False
        return True


def parse_query(sql: str, dataset: str) -> Query:
    if not sql.strip():
        # flight.rs: `sql_query.query.parse::<SqlStr>()` → Error::InvalidQuery
        raise ServerError(grpc.StatusCode.INVALID_ARGUMENT,
                          f"invalid query: string cannot be empty or contain only whitespace, "
                          f"got: {sql}")
    tokens = _tokens(sql)
    at = 0

    def peek(offset: int = 0) -> tuple[str, str]:
        return tokens[at + offset] if at + offset < len(tokens) else ("end", "")

    def keyword(word: str) -> bool:
        kind, text = peek()
        return kind == "id" and text.lower() == word

    def expect_keyword(word: str) -> None:
        nonlocal at
        if not keyword(word):
            raise sql_parse_error(f"Expected: {word.upper()}, found: {peek()[1] or 'EOF'}")
        at += 1

    def identifier() -> str:
        nonlocal at
        kind, text = peek()
        if kind not in ("id", "qid"):
            raise sql_parse_error(f"Expected: identifier, found: {text or 'EOF'}")
        at += 1
        return text

    def integer() -> int:
        nonlocal at
        kind, text = peek()
        if kind != "num":
            raise sql_parse_error(f"Expected: a number, found: {text or 'EOF'}")
        at += 1
        return int(text)

    expect_keyword("select")
    columns: list[str] = []
    count_item = None
    if peek() == ("op", "*"):
        at += 1
        columns = list(BLOCKS_SCHEMA.names)
    else:
        while True:
            if keyword("count") and peek(1) == ("op", "("):
                if peek(2) != ("op", "*") or peek(3) != ("op", ")"):
                    raise sql_parse_error("the stand-in aggregates only COUNT(*)")
                at += 4
                name = "count(*)"
                if keyword("as"):
                    at += 1
                    name = identifier()
                count_item = (len(columns), name)
            else:
                columns.append(identifier())
            if peek() != ("op", ","):
                break
            at += 1
    expect_keyword("from")
    schema_name = identifier()
    if peek() != ("op", "."):
        raise ServerError(grpc.StatusCode.INVALID_ARGUMENT, with_causes(
            "Failed to resolve table references from SQL",
            f"table reference '{schema_name}' must be qualified by a dataset"))
    at += 1
    table = identifier()
    if schema_name != dataset:
        raise ServerError(grpc.StatusCode.INTERNAL, with_causes(
            "error creating logical catalog", f"dataset '{schema_name}' not found"))
    if table != "blocks":
        raise ServerError(grpc.StatusCode.INTERNAL, with_causes(
            "error creating logical catalog",
            f"table '{table}' not found in dataset '{schema_name}'"))
    filters: list[tuple[str, str, int]] = []
    if keyword("where"):
        at += 1
        while True:
            column = identifier()
            if keyword("between"):
                at += 1
                low = integer()
                expect_keyword("and")
                filters += [(column, ">=", low), (column, "<=", integer())]
            else:
                kind, op = peek()
                if kind != "op" or op not in ("=", "<", "<=", ">", ">=", "<>", "!="):
                    raise sql_parse_error(f"Expected: an operator, found: {op or 'EOF'}")
                at += 1
                filters.append((column, op, integer()))
            if not keyword("and"):
                break
            at += 1
    group_by: list[str] = []
    if keyword("group"):
        at += 1
        expect_keyword("by")
        while True:
            group_by.append(identifier())
            if peek() != ("op", ","):
                break
            at += 1
    limit = None
    if keyword("limit"):
        at += 1
        limit = integer()
    settings: dict[str, tuple[str, str]] = {}
    if keyword("settings"):
        at += 1
        while True:
            key = identifier().lower()
            if peek() != ("op", "="):
                raise sql_parse_error(f"Expected: =, found: {peek()[1] or 'EOF'}")
            at += 1
            kind, text = peek()
            if kind not in ("id", "num", "str"):
                raise sql_parse_error(f"Expected: a value, found: {text or 'EOF'}")
            at += 1
            settings[key] = (kind, text)
            if peek() != ("op", ","):
                break
            at += 1
    if peek() == ("op", ";"):
        at += 1
    if at != len(tokens):
        raise sql_parse_error(f"Expected: end of statement, found: {peek()[1]}")
    for column in columns + [f[0] for f in filters] + group_by:
        if column not in BLOCKS_SCHEMA.names:
            valid = ", ".join(f"{schema_name}.blocks.{n}" for n in BLOCKS_SCHEMA.names)
            raise ServerError(grpc.StatusCode.INVALID_ARGUMENT, with_causes(
                "invalid plan",
                f"Schema error: No field named {column}. Valid fields are {valid}."))
    for column, _, _ in filters:
        if BLOCKS_SCHEMA.field(column).type != pa.uint64():
            raise sql_parse_error(f"the stand-in compares only integer columns, not {column}")
    if (group_by or count_item is not None) and set(columns) - set(group_by):
        raise ServerError(grpc.StatusCode.INVALID_ARGUMENT, with_causes(
            "invalid plan", "Error during planning: Column in SELECT must be in GROUP BY or an "
            f"aggregate function: {sorted(set(columns) - set(group_by))[0]}"))
    return Query(sql, columns, filters, limit, settings, group_by, count_item)


# --------------------------------------------------------------------------------------
# IPC encoding of FlightData (arrow-flight's SchemaAsIpc and encode_record_batch)
# --------------------------------------------------------------------------------------

GRPC_TARGET_MAX_FLIGHT_SIZE_BYTES = 2 * 1024 * 1024  # arrow-flight's encode.rs
BATCH_ROWS = 8192  # DataFusion's default batch size


def schema_ipc(schema: pa.Schema) -> bytes:
    """The FlightInfo.schema bytes: an encapsulated IPC schema message (ipc_schema)."""
    return schema.serialize().to_pybytes()


def schema_flight_data(schema: pa.Schema):
    message = pa.ipc.read_message(schema.serialize())
    return FlightData(data_header=message.metadata.to_pybytes())


def split_batch_for_grpc_response(batch: pa.RecordBatch) -> list[pa.RecordBatch]:
    """flight.rs `split_batch_for_grpc_response`: 0-row batches kept; otherwise
    ceil(size / 2 MiB) slices of rows/n rows."""
    if batch.num_rows == 0:
        return [batch]
    size = batch.get_total_buffer_size()
    pieces = max(1, -(-size // GRPC_TARGET_MAX_FLIGHT_SIZE_BYTES))
    rows = max(1, batch.num_rows // pieces)
    return [batch.slice(offset, rows) for offset in range(0, batch.num_rows, rows)]


def batch_flight_data(batch: pa.RecordBatch, metadata: bytes) -> list:
    out = []
    for piece in split_batch_for_grpc_response(batch):
        message = pa.ipc.read_message(piece.serialize())
        out.append(FlightData(data_header=message.metadata.to_pybytes(),
                              data_body=message.body.to_pybytes(), app_metadata=metadata))
    return out


# --------------------------------------------------------------------------------------
# A TCP relay in front of the gRPC server, so that a scripted failure can reset the
# connection a stream runs on (grpcio gives a handler no way to drop its connection).
# --------------------------------------------------------------------------------------

class Relay:
    def __init__(self, upstream_port: int):
        self.upstream_port = upstream_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.pairs: dict[int, tuple[socket.socket, socket.socket]] = {}
        self.forwarded: dict[int, float] = {}  # when each pair last forwarded bytes
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            except OSError:
                client.close()
                continue
            for s in (client, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            key = upstream.getsockname()[1]
            with self.lock:
                self.pairs[key] = (client, upstream)
            threading.Thread(target=self._pump, args=(client, upstream, key),
                             daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, key),
                             daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, key: int) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
                self.forwarded[key] = time.monotonic()
        except OSError:
            pass
        self._close(key, reset=False)

    def _close(self, key: int, reset: bool) -> None:
        with self.lock:
            pair = self.pairs.pop(key, None)
        if pair is None:
            return
        for s in pair:
            try:
                if reset:  # RST instead of FIN: the peer sees "connection reset"
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
                    # A pump blocked in recv() on this socket holds it open past close():
                    # waking it lets the close (and the reset) happen now, not whenever
                    # that peer next sends (a streaming client never does).
                    s.shutdown(socket.SHUT_RD)
            except OSError:
                pass
            try:
                s.close()
            except OSError:
                pass

    def drop(self, peer: str) -> bool:
        """Reset the connection whose upstream end is `peer` (grpc's "ipv4:127.0.0.1:P")."""
        match = re.search(r":(\d+)$", peer or "")
        if not match:
            return False
        key = int(match.group(1))
        with self.lock:
            known = key in self.pairs
            pair = self.pairs.get(key)
        if pair is not None:
            self._drain(key, pair[0])
        self._close(key, reset=True)
        return known

    def _drain(self, key: int, client: socket.socket, limit_s: float = 5.0) -> None:
        """Let what the server sent before the failure reach the client first: the
        relay goes quiet (nothing forwarded for 200 ms) and the client has acknowledged
        every byte, so that the reset cuts the stream where the script says."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            quiet = time.monotonic() - self.forwarded.get(key, 0.0) >= 0.2
            try:
                unacked = struct.unpack("i", fcntl.ioctl(client.fileno(), termios.TIOCOUTQ,
                                                         b"\0\0\0\0"))[0]
            except OSError:
                return
            if quiet and unacked == 0:
                return
            time.sleep(0.02)


# --------------------------------------------------------------------------------------
# The Flight service
# --------------------------------------------------------------------------------------

FAILURE_KINDS = ("internal", "drop", "stall", "unavailable", "resource-exhausted")
FAILURE_POINTS = ("start", "data", "end")


@dataclasses.dataclass
class ScriptedFailure:
    ordinal: int
    kind: str
    point: str


class Aborted(Exception):
    """The client went away (or the server stops): end the handler quietly."""


class StandIn:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.chain = Chain(args.start_block, args.blocks, args.network, args.seed)
        self.initial_head = args.start_block + args.blocks - 1
        self.lock = threading.Lock()
        self.microbatches_started = 0
        self.failures = {f.ordinal: f for f in args.fail_microbatch}
        self.flight_info_failures = list(args.fail_flight_info)
        self.relay: Relay | None = None
        self.stopping = threading.Event()
        # --await-streams: each open stream, and the chain version it has sent all of and
        # waits past (None while it sends).
        self.streams: dict[int, int | None] = {}
        self.next_stream = 0

    def all_streams_wait(self, version: int) -> bool:
        """A stream is open and every open stream has sent the chain at `version`: one
        that waits past an older version has yet to send what changed since."""
        with self.lock:
            return bool(self.streams) and all(seen == version for seen in self.streams.values())

    def _open_stream(self) -> int:
        with self.lock:
            self.next_stream += 1
            self.streams[self.next_stream] = None
            return self.next_stream

    def _stream_waits(self, stream: int, version: int | None) -> None:
        with self.lock:
            self.streams[stream] = version

    def _close_stream(self, stream: int) -> None:
        with self.lock:
            del self.streams[stream]

    def log(self, text: str) -> None:
        print(f"ampd stand-in: {text}", file=sys.stderr, flush=True)

    # --- GetFlightInfo ---

    def get_flight_info(self, descriptor, context):
        metadata = {}
        for key, value in context.invocation_metadata():
            metadata.setdefault(key, value)  # tonic's MetadataMap::get: the first value
        try:
            with self.lock:
                scripted = self.flight_info_failures[0] if self.flight_info_failures else None
                if scripted is not None:
                    scripted[1] -= 1
                    if scripted[1] <= 0:
                        self.flight_info_failures.pop(0)
            if scripted is not None:
                raise ServerError(scripted[0],
                                  f"scripted failure of GetFlightInfo ({scripted[0].name})")
            info = self._flight_info(descriptor, metadata)
        except ServerError as error:
            self.log(f"GetFlightInfo: {error.code.name}: {error.message}")
            context.abort(error.code, error.message)
        return info

    def _flight_info(self, descriptor, metadata: dict):
        raw_resume = metadata.get("amp-resume")
        cursor = None
        if raw_resume is not None:
            raw = raw_resume if isinstance(raw_resume, bytes) else raw_resume.encode("utf-8")
            cursor = parse_cursor(raw)
        stream_header = metadata.get("amp-stream")
        override = None
        if isinstance(stream_header, str):
            override = {"true": True, "1": True, "false": False, "0": False}.get(
                stream_header.lower())
        if descriptor.type == DESCRIPTOR_CMD:
            packed = any_pb2.Any()
            try:
                packed.ParseFromString(descriptor.cmd)
            except DecodeError as error:
                raise ServerError(grpc.StatusCode.INVALID_ARGUMENT,
                                  f"ProtocolBuffers decoding error: failed to decode Protobuf "
                                  f"message: {error}") from None
            if packed.type_url != COMMAND_TYPE_URL:
                raise ServerError(grpc.StatusCode.INVALID_ARGUMENT,
                                  f"unsupported flight descriptor command: {packed.type_url}")
            command = CommandStatementQuery()
            try:
                command.ParseFromString(packed.value)
            except DecodeError as error:
                raise ServerError(grpc.StatusCode.INVALID_ARGUMENT,
                                  f"ProtocolBuffers decoding error: failed to decode Protobuf "
                                  f"message: CommandStatementQuery: {error}") from None
        elif descriptor.type in (DESCRIPTOR_PATH, DESCRIPTOR_UNKNOWN):
            raise ServerError(grpc.StatusCode.INVALID_ARGUMENT,
                              f"unsupported flight descriptor type: {descriptor.type}")
        else:
            raise ServerError(grpc.StatusCode.INVALID_ARGUMENT,
                              f"ProtocolBuffers decoding error: invalid enumeration value "
                              f"{descriptor.type}")
        query = parse_query(command.query, self.args.dataset_name)
        is_streaming = override if override is not None else query.stream_setting()
        self.log(f"GetFlightInfo: stream={is_streaming} cursor={cursor is not None} "
                 f"sql={command.query!r}")
        ticket = encode_ticket(command.query, is_streaming, cursor)
        return FlightInfo(schema=schema_ipc(query.schema), flight_descriptor=descriptor,
                          endpoint=[FlightEndpoint(ticket=Ticket(ticket=ticket))],
                          ordered=False, total_records=-1, total_bytes=-1)

    # --- DoGet ---

    def do_get(self, ticket, context):
        cancelled = threading.Event()

        def on_done():
            cancelled.set()
            with self.chain.cond:
                self.chain.cond.notify_all()

        context.add_callback(on_done)
        try:
            try:
                sql, is_streaming, cursor = decode_ticket(ticket.ticket)
            except TicketDecodeError as error:
                raise ServerError(grpc.StatusCode.INVALID_ARGUMENT, with_causes(
                    "ticket decoding error",
                    f"Error during planning: Failed to deserialize remote plan: {error}"))
            query = parse_query(sql, self.args.dataset_name)
            if is_streaming:
                yield from self._stream(query, cursor, context, cancelled)
            else:
                yield from self._batch(query)
        except ServerError as error:
            self.log(f"DoGet: {error.code.name}: {error.message}")
            context.abort(error.code, error.message)
        except Aborted:
            return

    def _batch(self, query: Query):
        with self.chain.cond:
            synced = self.chain.synced_range()
            blocks = [] if synced is None else [
                self.chain.canonical[n] for n in range(synced.start, synced.end + 1)]
        ranges = [synced] if synced is not None else []
        rows = [b for b in blocks if query.keep(b)]
        yield schema_flight_data(query.schema)
        data = app_metadata(ranges, False)
        for batch in query.batches(rows) or [query.empty()]:  # NonEmptyRecordBatchStream
            yield from batch_flight_data(batch, data)
        yield from batch_flight_data(query.empty(), app_metadata(ranges, True))

    def _wait(self, cancelled: threading.Event, context, predicate, timeout: float | None = None):
        """Wait (the chain's condition held by the caller) until predicate() or timeout;
        raise Aborted when the client went away or the server stops."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not predicate():
            if cancelled.is_set() or self.stopping.is_set() or not context.is_active():
                raise Aborted()
            left = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
            if left <= 0:
                return
            self.chain.cond.wait(left)
        if cancelled.is_set() or self.stopping.is_set():
            raise Aborted()

    def _next_range(self, prev: tuple[int, bytes] | None):
        """next_microbatch_range under the chain's lock: (range, limited, rows) or None."""
        chain = self.chain
        if chain.head is None or chain.head < chain.start_block:
            return None  # no common watermark yet
        if prev is None:
            first = chain.fetch(chain.start_block)
            start, prev_hash = chain.start_block, first.parent_hash
        elif chain.contains(*prev):
            start, prev_hash = prev[0] + 1, prev[1]
        else:  # reorg_base
            min_fork = prev[0]
            fork = chain.fetch_any(prev[0], prev[1])
            while fork is not None:
                if chain.contains(fork.number, fork.hash):
                    break
                min_fork = fork.number
                fork = chain.fetch_any(max(fork.number - 1, 0), fork.parent_hash)
            base = chain.fetch(min_fork)
            if base is None:
                return None  # the blocks table lacks it: no microbatch (yet, or ever)
            start, prev_hash = min_fork, base.parent_hash
        limit = start + self.args.microbatch_max_blocks - 1
        limited = chain.head > limit
        end = limit if limited else chain.head
        if end < start:
            return None
        end_block = chain.fetch(end)
        block_range = BlockRange(start, end, chain.network, end_block.hash, prev_hash,
                                 end_block.timestamp)
        rows = [chain.canonical[n] for n in range(start, end + 1)]
        return block_range, limited, rows

    def _stream(self, query: Query, cursor, context, cancelled: threading.Event):
        if query.limit is not None:
            raise ServerError(grpc.StatusCode.INVALID_ARGUMENT,
                              "invalid query: non-incremental queries are not supported for "
                              "streaming, query contains non-incremental operation: Limit")
        if not query.incremental_grouping:
            raise ServerError(grpc.StatusCode.INVALID_ARGUMENT,
                              "invalid query: non-incremental queries are not supported for "
                              "streaming, query contains non-incremental operation: Aggregate")
        if self.chain.head is None:
            # flight.rs: no table synced → the batch-style empty stream, then the end.
            yield schema_flight_data(query.schema)
            yield from batch_flight_data(query.empty(), app_metadata([], True))
            return
        prev = None
        if cursor is not None:
            network = self.chain.network
            if network not in cursor:
                raise ServerError(grpc.StatusCode.INTERNAL, with_causes(
                    "streaming query execution error", "failed to convert cursor",
                    f"expected cursor for network '{network}', but cursor only contains "
                    f"networks: [{','.join(sorted(cursor))}]"))
            prev = cursor[network]
        stream = self._open_stream()
        try:
            yield from self._microbatches(query, prev, context, cancelled, stream)
        finally:
            self._close_stream(stream)

    def _waiting_for_the_chain(self, cancelled, context, seen_version: int, stream: int) -> None:
        """TableUpdates::changed: wait for a new block or a reorg, counted as waiting."""
        self._stream_waits(stream, seen_version)
        try:
            self._wait(cancelled, context, lambda: self.chain.version != seen_version)
        finally:
            self._stream_waits(stream, None)

    def _microbatches(self, query: Query, prev, context, cancelled: threading.Event,
                      stream: int):
        first_message = True
        ready = True
        seen_version = -1
        while True:
            with self.chain.cond:
                if not ready:
                    self._waiting_for_the_chain(cancelled, context, seen_version, stream)
                ready = False
                seen_version = self.chain.version
                computed = self._next_range(prev)
            if computed is None:
                continue
            block_range, limited, blocks = computed
            ready = limited  # a limited microbatch continues at once (set_ready)
            with self.lock:
                self.microbatches_started += 1
                ordinal = self.microbatches_started
                failure = self.failures.pop(ordinal, None)
            self.log(f"microbatch #{ordinal} [{block_range.start}..{block_range.end}]"
                     + (f" failing ({failure.kind} at {failure.point})" if failure else ""))
            if failure and failure.point == "start":
                yield from self._fail(failure, context, cancelled)
            if first_message:
                first_message = False
                yield schema_flight_data(query.schema)
            data_metadata = app_metadata([block_range], False)
            keepalive = batch_flight_data(query.empty(), data_metadata)
            yield from keepalive  # keep_alive_stream: the interval's first tick is immediate
            delay = self.args.microbatch_delay_ms / 1000
            if delay > 0:  # "execution" time: keep-alives every keepalive_interval
                until = time.monotonic() + delay
                while (left := until - time.monotonic()) > 0:
                    with self.chain.cond:
                        self._wait(cancelled, context, lambda: False,
                                   min(left, self.args.keepalive_interval_s))
                    if until - time.monotonic() > 0:
                        yield from keepalive
            rows = [b for b in blocks if query.keep(b)]
            sent_data = False
            for batch in query.batches(rows):
                yield from batch_flight_data(batch, data_metadata)
                if failure and failure.point == "data" and not sent_data:
                    sent_data = True
                    yield from self._fail(failure, context, cancelled)
            if failure and failure.point in ("data", "end"):
                yield from self._fail(failure, context, cancelled)
            yield from batch_flight_data(query.empty(), app_metadata([block_range], True))
            prev = (block_range.end, block_range.hash)

    def _fail(self, failure: ScriptedFailure, context, cancelled: threading.Event):
        where = {"start": "failed to get next microbatch range -> failed to get latest source "
                          "watermark -> failed to fetch the blocks table -> failed to execute "
                          "the SQL -> query execution error",
                 "data": "failed to stream item",
                 "end": "failed to stream item"}[failure.point]
        cause = f"External error: scripted failure of microbatch {failure.ordinal}"
        if failure.kind == "internal":
            raise ServerError(grpc.StatusCode.INTERNAL, with_causes(
                "streaming query execution error", "streaming query execution error",
                where, cause))
        if failure.kind == "resource-exhausted":
            raise ServerError(grpc.StatusCode.RESOURCE_EXHAUSTED, with_causes(
                "query execution error",
                f"Resources exhausted: scripted failure of microbatch {failure.ordinal}"))
        if failure.kind == "unavailable":
            raise ServerError(grpc.StatusCode.UNAVAILABLE,
                              f"scripted failure of microbatch {failure.ordinal}: unavailable")
        if failure.kind == "drop":
            dropped = self.relay is not None and self.relay.drop(context.peer())
            self.log(f"dropped the connection of {context.peer()}: {dropped}")
            raise Aborted()
        if failure.kind == "stall":
            with self.chain.cond:
                self._wait(cancelled, context, lambda: False)
        return
        yield  # a generator


def _method_handlers(service: StandIn) -> grpc.GenericRpcHandler:
    def unimplemented(name: str, streaming: bool):
        def handler(request, context):
            context.abort(grpc.StatusCode.UNIMPLEMENTED, name)
        def stream_handler(request, context):
            context.abort(grpc.StatusCode.UNIMPLEMENTED, name)
            yield  # pragma: no cover
        return stream_handler if streaming else handler

    serialize = lambda message: message.SerializeToString()  # noqa: E731
    handlers = {
        "GetFlightInfo": grpc.unary_unary_rpc_method_handler(
            service.get_flight_info, request_deserializer=FlightDescriptor.FromString,
            response_serializer=serialize),
        "DoGet": grpc.unary_stream_rpc_method_handler(
            service.do_get, request_deserializer=Ticket.FromString,
            response_serializer=serialize),
        # flight.rs: Status::unimplemented("<method>") for these (Handshake panics in ampd;
        # it is left unregistered here: UNIMPLEMENTED from grpcio).
        "PollFlightInfo": grpc.unary_unary_rpc_method_handler(
            unimplemented("poll_flight_info", False), request_deserializer=lambda b: b,
            response_serializer=serialize),
        "GetSchema": grpc.unary_unary_rpc_method_handler(
            unimplemented("get_schema", False), request_deserializer=lambda b: b,
            response_serializer=serialize),
        "ListFlights": grpc.unary_stream_rpc_method_handler(
            unimplemented("list_flights", True), request_deserializer=lambda b: b,
            response_serializer=serialize),
        "ListActions": grpc.unary_stream_rpc_method_handler(
            unimplemented("list_actions", True), request_deserializer=lambda b: b,
            response_serializer=serialize),
        "DoAction": grpc.unary_stream_rpc_method_handler(
            unimplemented("do_action", True), request_deserializer=lambda b: b,
            response_serializer=serialize),
    }
    return grpc.method_handlers_generic_handler(SERVICE, handlers)


# --------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------

_CODES = {"internal": grpc.StatusCode.INTERNAL, "unavailable": grpc.StatusCode.UNAVAILABLE,
          "invalid_argument": grpc.StatusCode.INVALID_ARGUMENT,
          "resource_exhausted": grpc.StatusCode.RESOURCE_EXHAUSTED,
          "deadline_exceeded": grpc.StatusCode.DEADLINE_EXCEEDED,
          "not_found": grpc.StatusCode.NOT_FOUND, "aborted": grpc.StatusCode.ABORTED,
          "unauthenticated": grpc.StatusCode.UNAUTHENTICATED,
          "permission_denied": grpc.StatusCode.PERMISSION_DENIED}


def _reorg_at(text: str) -> tuple[int, int]:
    head, _, depth = text.partition(":")
    return int(head), int(depth)


def _fail_microbatch(text: str) -> ScriptedFailure:
    parts = text.split(":")
    if len(parts) not in (2, 3) or parts[1] not in FAILURE_KINDS:
        raise argparse.ArgumentTypeError(f"N:KIND[:POINT], KIND one of {FAILURE_KINDS}")
    point = parts[2] if len(parts) == 3 else "data"
    if point not in FAILURE_POINTS:
        raise argparse.ArgumentTypeError(f"POINT one of {FAILURE_POINTS}")
    return ScriptedFailure(int(parts[0]), parts[1], point)


def _fail_flight_info(text: str) -> list:
    code, _, count = text.partition(":")
    if code.lower() not in _CODES:
        raise argparse.ArgumentTypeError(f"CODE one of {sorted(_CODES)}")
    return [_CODES[code.lower()], int(count or 1)]


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--start-block", type=int, default=24_000_000)
    parser.add_argument("--blocks", type=int, default=100, help="blocks that exist at start")
    parser.add_argument("--network", default="mainnet")
    parser.add_argument("--dataset-name", default="acme/eth_mainnet")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--block-interval-ms", type=int, default=0)
    parser.add_argument("--max-head", type=int, default=0)
    parser.add_argument("--reorg-every", type=int, default=0)
    parser.add_argument("--reorg-depth", type=int, default=1)
    parser.add_argument("--reorg-at", type=_reorg_at, action="append", default=[])
    parser.add_argument("--await-streams", action="store_true",
                        help="add a block only when a stream is open and has sent the whole "
                             "chain, so a slow reader still meets every reorg (tests)")
    parser.add_argument("--microbatch-max-blocks", type=int, default=1000,
                        help="ampd's server_microbatch_max_interval")
    parser.add_argument("--keepalive-interval-s", type=float, default=30.0,
                        help="ampd's keep_alive_interval (ampd never goes below 30)")
    parser.add_argument("--microbatch-delay-ms", type=int, default=0,
                        help="time each microbatch 'executes' before its data")
    parser.add_argument("--fail-microbatch", type=_fail_microbatch, action="append",
                        default=[], metavar="N:KIND[:POINT]")
    parser.add_argument("--fail-flight-info", type=_fail_flight_info, action="append",
                        default=[], metavar="CODE:COUNT")
    args = parser.parse_args(argv)
    if args.microbatch_max_blocks < 1:
        parser.error("--microbatch-max-blocks must be at least 1")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    service = StandIn(args)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=64),
                         options=[("grpc.so_reuseport", 0)])
    server.add_generic_rpc_handlers((_method_handlers(service),))
    grpc_port = server.add_insecure_port(
        f"{args.host}:{0 if any(f.kind == 'drop' for f in args.fail_microbatch) else args.port}")
    server.start()
    port = grpc_port
    if any(f.kind == "drop" for f in args.fail_microbatch):
        service.relay = Relay(grpc_port)
        port = service.relay.port
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())

    reorg_at = dict(args.reorg_at)

    def tick() -> None:
        interval = args.block_interval_ms / 1000
        while not stop.wait(interval):
            if args.max_head and service.chain.head is not None and \
                    service.chain.head >= args.max_head:
                continue
            if args.await_streams and not service.all_streams_wait(service.chain.version):
                continue
            service.chain.advance(reorg_at, args.reorg_every, args.reorg_depth,
                                  service.initial_head)

    if args.block_interval_ms > 0:
        threading.Thread(target=tick, daemon=True).start()
    print(f"ampd stand-in listening on grpc://127.0.0.1:{port}", flush=True)
    stop.wait()
    service.stopping.set()
    with service.chain.cond:
        service.chain.cond.notify_all()
    server.stop(grace=0.5).wait(2)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # no interpreter teardown (grpc's threads)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
