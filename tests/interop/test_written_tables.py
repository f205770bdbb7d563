"""Tables written by `ampdelta table write|delete|checkpoint`, read back by four independent
Delta readers (delta-rs, DuckDB delta_scan, Polars, Spark + delta-spark).

Input is generated with pyarrow into tmp_path as Arrow IPC files. Expected rows are the
input converted with ampdelta's Amp → Delta type mapping (UInt* → signed, FixedSizeBinary →
binary, Timestamp(ns, tz) → timestamp µs UTC truncated, Timestamp(ns) → timestamp_ntz,
Dictionary → value type, …). Rows from every reader are turned into Python objects with the
small type differences between readers removed, sorted by a key, and compared exactly.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import re
import shutil
import subprocess
import time
import urllib.parse
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from conftest import cli_env, cli_path
from readers import READERS, read_deltalake, read_duckdb, read_polars, read_spark, spark_session

CLI_TIMEOUT_S = 120
UTC = dt.timezone.utc
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
INT64_MAX = 2**63 - 1

# Readers that can read an older version.
TIME_TRAVEL_READERS = {
    "deltalake": read_deltalake,
    "polars": read_polars,
    "spark": read_spark,
}


# --------------------------------------------------------------------------------------
# CLI helpers


def run_cli(*args, timeout: float = CLI_TIMEOUT_S) -> subprocess.CompletedProcess:
    return subprocess.run([str(cli_path()), *map(str, args)], capture_output=True, text=True,
                          env=cli_env(), timeout=timeout, stdin=subprocess.DEVNULL)


def describe(proc) -> str:
    return f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"


def parse_summary(line: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in line.split() if "=" in item)


def write_ipc(path: Path, table: pa.Table) -> Path:
    with ipc.new_file(str(path), table.schema) as writer:
        writer.write_table(table)
    return path


_input_counter = 0


def new_input(tmp_path: Path, table: pa.Table, name: str | None = None) -> Path:
    global _input_counter
    _input_counter += 1
    inputs = tmp_path / "inputs"
    inputs.mkdir(exist_ok=True)
    return write_ipc(inputs / (name or f"in{_input_counter:04d}.arrow"), table)


def table_write(path: Path, *inputs: Path, args=(), expect_ok: bool = True):
    cmd = ["table", "write", path]
    for item in inputs:
        cmd += ["--input", item]
    proc = run_cli(*cmd, *args)
    if expect_ok:
        assert proc.returncode == 0, describe(proc)
        return parse_summary(proc.stdout.strip().splitlines()[-1])
    return proc


def write(tmp_path: Path, path: Path, table: pa.Table, *args: str) -> dict[str, str]:
    """Write one pyarrow table into the Delta table at path; return the summary fields."""
    return table_write(path, new_input(tmp_path, table), args=args)


def cli_json(*args):
    proc = run_cli(*args, "--json")
    assert proc.returncode == 0, describe(proc)
    return json.loads(proc.stdout)


def log_versions(path: Path) -> list[int]:
    return sorted(int(p.name[:20]) for p in (path / "_delta_log").glob("*.json")
                  if re.fullmatch(r"\d{20}\.json", p.name))


def log_actions(path: Path, version: int) -> list[dict]:
    text = (path / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def actions_of(path: Path, version: int, kind: str) -> list[dict]:
    return [a[kind] for a in log_actions(path, version) if kind in a]


def log_snapshot_files(path: Path) -> set[str]:
    return {p.name for p in (path / "_delta_log").iterdir()}


# --------------------------------------------------------------------------------------
# Normalising reader output


def norm(value):
    """A reader's Python value in one canonical form."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            return value.astimezone(UTC)
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, decimal.Decimal):
        return value
    if isinstance(value, dict):
        return {k: norm(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = list(value)
        # Maps: pyarrow gives [(key, value)], Polars [{'key': .., 'value': ..}].
        if items and all(isinstance(i, dict) and set(i) == {"key", "value"} for i in items):
            return [(norm(i["key"]), norm(i["value"])) for i in items]
        if isinstance(value, tuple):
            return tuple(norm(v) for v in value)
        return [norm(v) for v in items]
    return value


def rows_of(table: pa.Table, key) -> list[dict]:
    keys = [key] if isinstance(key, str) else list(key)
    rows = [{k: norm(v) for k, v in row.items()} for row in table.to_pylist()]

    def sort_key(row):
        return tuple((row[k] is None, row[k] if row[k] is not None else 0) for k in keys)

    return sorted(rows, key=sort_key)


def expected_rows(rows: list[dict], key) -> list[dict]:
    return rows_of(pa.Table.from_pylist([]), key) if not rows else sorted(
        [{k: norm(v) for k, v in row.items()} for row in rows],
        key=lambda row: tuple((row[k] is None, row[k] if row[k] is not None else 0)
                              for k in ([key] if isinstance(key, str) else key)))


def first_difference(got: list[dict], want: list[dict]) -> str:
    if len(got) != len(want):
        return f"{len(got)} rows, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            cols = sorted(set(g) | set(w))
            diffs = [f"  {c}: got {g.get(c, '<missing>')!r}, expected {w.get(c, '<missing>')!r}"
                     for c in cols if g.get(c, "<missing>") != w.get(c, "<missing>")]
            return f"row {i} differs:\n" + "\n".join(diffs)
    return "no difference"


def assert_readers(path: Path, want: list[dict], key, readers=None, version=None):
    """Every reader sees exactly `want` (rows as dicts) at `version` (latest if None)."""
    readers = readers or (READERS if version is None else TIME_TRAVEL_READERS)
    want_rows = expected_rows(want, key)
    want_cols = set(want[0]) if want else None
    failures = []
    for name, reader in readers.items():
        try:
            table = reader(path) if version is None else reader(path, version=version)
        except Exception as exc:  # noqa: BLE001 - report every reader's failure together
            failures.append(f"[{name}] read failed: {type(exc).__name__}: {str(exc)[:2000]}")
            continue
        got = rows_of(table, key)
        if want_cols is not None and set(table.column_names) != want_cols:
            failures.append(f"[{name}] columns {sorted(table.column_names)} != {sorted(want_cols)}")
            continue
        if got != want_rows:
            failures.append(f"[{name}] (version {version}) {first_difference(got, want_rows)}")
    assert not failures, "\n".join(failures)


# --------------------------------------------------------------------------------------
# Amp-shaped data

BYTES32 = pa.binary(32)
ADDRESS = pa.binary(20)
EVM_CURRENCY = pa.decimal128(38, 0)
AMP_TS = pa.timestamp("ns", tz="+00:00")
MAX_DEC38 = decimal.Decimal("9" * 38)

ACCESS_LIST_ITEM = pa.struct([
    pa.field("address", ADDRESS, nullable=False),
    pa.field("storage_keys", pa.list_(pa.field("item", BYTES32, nullable=False)), nullable=False),
])
AUTHORIZATION_ITEM = pa.struct([
    pa.field("chain_id", pa.uint64(), nullable=False),
    pa.field("address", ADDRESS, nullable=False),
    pa.field("nonce", pa.uint64(), nullable=False),
    pa.field("y_parity", pa.bool_(), nullable=False),
    pa.field("r", BYTES32, nullable=False),
    pa.field("s", BYTES32, nullable=False),
])

# evm-rpc `transactions`, exactly as in amp-protocol.md §2 (name, type, nullable).
TRANSACTIONS_SCHEMA = pa.schema([
    pa.field("_block_num", pa.uint64(), nullable=False),
    pa.field("block_hash", BYTES32, nullable=False),
    pa.field("block_num", pa.uint64(), nullable=False),
    pa.field("timestamp", AMP_TS, nullable=False),
    pa.field("tx_index", pa.uint32(), nullable=False),
    pa.field("tx_hash", BYTES32, nullable=False),
    pa.field("to", ADDRESS, nullable=True),
    pa.field("nonce", pa.uint64(), nullable=False),
    pa.field("gas_price", EVM_CURRENCY, nullable=True),
    pa.field("gas_limit", pa.uint64(), nullable=False),
    pa.field("value", pa.utf8(), nullable=False),
    pa.field("input", pa.binary(), nullable=False),
    pa.field("r", BYTES32, nullable=False),
    pa.field("s", BYTES32, nullable=False),
    pa.field("v_parity", pa.bool_(), nullable=False),
    pa.field("chain_id", pa.uint64(), nullable=True),
    pa.field("gas_used", pa.uint64(), nullable=False),
    pa.field("type", pa.int32(), nullable=False),
    pa.field("max_fee_per_gas", EVM_CURRENCY, nullable=True),
    pa.field("max_priority_fee_per_gas", EVM_CURRENCY, nullable=True),
    pa.field("max_fee_per_blob_gas", EVM_CURRENCY, nullable=True),
    pa.field("from", ADDRESS, nullable=False),
    pa.field("status", pa.bool_(), nullable=False),
    pa.field("state_root", BYTES32, nullable=True),
    pa.field("access_list", pa.list_(pa.field("item", ACCESS_LIST_ITEM, nullable=False)),
             nullable=True),
    pa.field("blob_versioned_hashes", pa.list_(pa.field("item", BYTES32, nullable=False)),
             nullable=True),
    pa.field("authorization_list", pa.list_(pa.field("item", AUTHORIZATION_ITEM, nullable=False)),
             nullable=True),
])

# The Delta types ampdelta must declare for them (schemaString, type names).
TRANSACTIONS_DELTA_TYPES = {
    "_block_num": "long", "block_hash": "binary", "block_num": "long", "timestamp": "timestamp",
    "tx_index": "long", "tx_hash": "binary", "to": "binary", "nonce": "long",
    "gas_price": "decimal(38,0)", "gas_limit": "long", "value": "string", "input": "binary",
    "r": "binary", "s": "binary", "v_parity": "boolean", "chain_id": "long", "gas_used": "long",
    "type": "integer", "max_fee_per_gas": "decimal(38,0)",
    "max_priority_fee_per_gas": "decimal(38,0)", "max_fee_per_blob_gas": "decimal(38,0)",
    "from": "binary", "status": "boolean", "state_root": "binary",
    "access_list": {"type": "array", "containsNull": False, "elementType": {
        "type": "struct", "fields": [("address", "binary"), ("storage_keys", {
            "type": "array", "elementType": "binary"})]}},
    "blob_versioned_hashes": {"type": "array", "elementType": "binary"},
    "authorization_list": {"type": "array", "elementType": {
        "type": "struct", "fields": [("chain_id", "long"), ("address", "binary"),
                                     ("nonce", "long"), ("y_parity", "boolean"),
                                     ("r", "binary"), ("s", "binary")]}},
}


def h(n: int, size: int = 32, salt: int = 0) -> bytes:
    """Deterministic pseudo-hash bytes."""
    out = bytearray()
    x = (n * 0x9E3779B97F4A7C15 + salt * 0xC2B2AE3D27D4EB4F + 1) & (2**64 - 1)
    while len(out) < size:
        x = (x * 6364136223846793005 + 1442695040888963407) & (2**64 - 1)
        out += x.to_bytes(8, "big")
    return bytes(out[:size])


def ns_to_expected(ns: int) -> dt.datetime:
    """Timestamp(ns) → Delta timestamp (µs, UTC), truncated."""
    return EPOCH + dt.timedelta(microseconds=ns // 1000)


BASE_TS_NS = 1_700_000_000_123_456_789  # sub-µs digits, so truncation is visible


def transactions_rows(first_block: int, blocks: int, txs_per_block: int = 3) -> list[dict]:
    """Python rows in the Amp (input) form: unsigned ints, ns timestamps as ints."""
    rows = []
    for b in range(first_block, first_block + blocks):
        for i in range(txs_per_block):
            n = b * 100 + i
            special = n % 7 == 0
            rows.append({
                "_block_num": b,
                "block_hash": h(b, salt=1),
                "block_num": b,
                "timestamp": BASE_TS_NS + (b - first_block) * 12_000_000_000 + i * 1_001,
                "tx_index": (2**32 - 1) if (special and i == 2) else i,
                "tx_hash": h(n, salt=2),
                "to": None if i == 1 else h(n, 20, salt=3),
                "nonce": INT64_MAX if special else n,
                "gas_price": None if i == 2 else (MAX_DEC38 if special else decimal.Decimal(n * 10**9)),
                "gas_limit": 21000 + n,
                "value": str(10**30 + n) if not special else "0",
                "input": b"" if i == 0 else h(n, 4 + (n % 50), salt=4),
                "r": h(n, salt=5),
                "s": h(n, salt=6),
                "v_parity": n % 2 == 0,
                "chain_id": None if i == 2 else 1,
                "gas_used": 21000 + (n % 1000),
                "type": -1 if special else i,
                "max_fee_per_gas": None if i != 1 else decimal.Decimal(2 * 10**10 + n),
                "max_priority_fee_per_gas": None if i != 1 else decimal.Decimal(10**9),
                "max_fee_per_blob_gas": None if not special else decimal.Decimal(1),
                "from": h(n, 20, salt=7),
                "status": n % 5 != 0,
                "state_root": None if n % 3 else h(n, salt=8),
                "access_list": (None if i == 0 else [] if i == 1 else [
                    {"address": h(n, 20, salt=9), "storage_keys": [h(n, salt=10), h(n, salt=11)]},
                    {"address": h(n, 20, salt=12), "storage_keys": []},
                ]),
                "blob_versioned_hashes": None if i != 2 else [h(n, salt=13)] * (1 + n % 3),
                "authorization_list": None if not special else [
                    {"chain_id": INT64_MAX, "address": h(n, 20, salt=14), "nonce": 7,
                     "y_parity": True, "r": h(n, salt=15), "s": h(n, salt=16)}],
            })
    return rows


def transactions_table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=TRANSACTIONS_SCHEMA)


def transactions_expected(rows: list[dict]) -> list[dict]:
    out = []
    for row in rows:
        row = dict(row)
        row["timestamp"] = ns_to_expected(row["timestamp"])
        out.append(row)
    return out


def delta_type_shape(delta_type):
    """A schemaString type reduced to the shape used in TRANSACTIONS_DELTA_TYPES."""
    if isinstance(delta_type, str):
        return delta_type
    kind = delta_type["type"]
    if kind == "array":
        return {"type": "array", "elementType": delta_type_shape(delta_type["elementType"])}
    if kind == "struct":
        return {"type": "struct",
                "fields": [(f["name"], delta_type_shape(f["type"])) for f in delta_type["fields"]]}
    if kind == "map":
        return {"type": "map", "keyType": delta_type_shape(delta_type["keyType"]),
                "valueType": delta_type_shape(delta_type["valueType"])}
    return delta_type


def strip_contains_null(shape):
    if isinstance(shape, dict):
        return {k: strip_contains_null(v) for k, v in shape.items() if k != "containsNull"}
    if isinstance(shape, list):
        return [strip_contains_null(v) for v in shape]
    if isinstance(shape, tuple):
        return tuple(strip_contains_null(v) for v in shape)
    return shape


def table_metadata(path: Path) -> dict:
    """The latest metaData action (from the JSON commits)."""
    meta = None
    for version in log_versions(path):
        for action in log_actions(path, version):
            if "metaData" in action:
                meta = action["metaData"]
    assert meta is not None
    return meta


def table_protocol(path: Path) -> dict:
    proto = None
    for version in log_versions(path):
        for action in log_actions(path, version):
            if "protocol" in action:
                proto = action["protocol"]
    assert proto is not None
    return proto


# ======================================================================================
# 1. Every Amp column type


@pytest.mark.timeout(600)
def test_amp_transactions_schema_all_readers(tmp_path):
    path = tmp_path / "transactions"
    rows = transactions_rows(1_000, 12)
    # Two commits, several files each, so stats and multi-file reads are exercised too.
    s1 = write(tmp_path, path, transactions_table(rows[:20]), "--max-rows-per-file", "7")
    s2 = write(tmp_path, path, transactions_table(rows[20:]), "--max-rows-per-file", "7")
    assert (s1["version"], s2["version"]) == ("0", "1")
    assert s1["rows"] == "20" and s2["rows"] == str(len(rows) - 20)

    schema = json.loads(table_metadata(path)["schemaString"])
    got_types = {f["name"]: delta_type_shape(f["type"]) for f in schema["fields"]}
    assert [f["name"] for f in schema["fields"]] == TRANSACTIONS_SCHEMA.names
    assert got_types == strip_contains_null(TRANSACTIONS_DELTA_TYPES)
    proto = table_protocol(path)
    assert "timestampNtz" not in proto.get("readerFeatures", [])

    assert_readers(path, transactions_expected(rows), key=("block_num", "tx_index"))


def amp_extra_types_table(n: int = 9) -> tuple[pa.Table, list[dict]]:
    """Map, timestamp without tz, and the remaining Arrow types of the mapping."""
    base_ns = 1_600_000_000_987_654_321
    ids = list(range(n))
    ts_ntz = [None if i == 4 else base_ns + i * 86_400_000_000_123 for i in ids]
    ts_utc = [base_ns + i * 1_999 for i in ids]
    maps = [None if i == 3 else [] if i == 5 else [(f"k{i}", i * 10), (f"z{i}", None)] for i in ids]
    words = ["alpha", "beta", None, "gamma", "alpha", "beta", "δέλτα", "", "alpha"][:n]
    table = pa.table({
        "id": pa.array(ids, pa.uint64()),
        "u8": pa.array([255 - i for i in ids], pa.uint8()),
        "u16": pa.array([65535 - i for i in ids], pa.uint16()),
        "u32": pa.array([4294967295 - i for i in ids], pa.uint32()),
        "i8": pa.array([-128 + i for i in ids], pa.int8()),
        "i16": pa.array([-32768 + i for i in ids], pa.int16()),
        "f32": pa.array([i + 0.5 for i in ids], pa.float32()),
        "f64": pa.array([None if i == 2 else i / 3 for i in ids], pa.float64()),
        "ts_ntz": pa.array(ts_ntz, pa.timestamp("ns")),
        "ts_utc_us": pa.array([t // 1000 for t in ts_utc], pa.timestamp("us", tz="UTC")),
        "ts_ms": pa.array([t // 1_000_000 for t in ts_utc], pa.timestamp("ms", tz="+00:00")),
        "day": pa.array([19000 + i for i in ids], pa.date32()),
        "large_text": pa.array([None if i == 1 else f"large-{i}" for i in ids], pa.large_utf8()),
        "large_bin": pa.array([h(i, i) for i in ids], pa.large_binary()),
        "dict_text": pa.array(words, pa.utf8()).dictionary_encode(),
        "fixed_list": pa.array([[i, i + 1, i + 2] for i in ids], pa.list_(pa.int64(), 3)),
        "large_list": pa.array([None if i == 6 else [f"e{j}" for j in range(i % 4)] for i in ids],
                               pa.large_list(pa.utf8())),
        "attrs": pa.array(maps, pa.map_(pa.utf8(), pa.uint64())),
        "nested": pa.array([{"a": i, "b": [h(i, 20)], "c": {"d": f"x{i}"}} for i in ids],
                           pa.struct([("a", pa.uint16()), ("b", pa.list_(ADDRESS)),
                                      ("c", pa.struct([("d", pa.large_utf8())]))])),
        "dec": pa.array([decimal.Decimal(f"{i}.{i:02d}") for i in ids], pa.decimal128(10, 2)),
    })
    expected = []
    for i in ids:
        expected.append({
            "id": i, "u8": 255 - i, "u16": 65535 - i, "u32": 4294967295 - i,
            "i8": -128 + i, "i16": -32768 + i, "f32": i + 0.5,
            "f64": None if i == 2 else i / 3,
            "ts_ntz": None if ts_ntz[i] is None else
            dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=ts_ntz[i] // 1000),
            "ts_utc_us": ns_to_expected(ts_utc[i]),
            "ts_ms": EPOCH + dt.timedelta(milliseconds=ts_utc[i] // 1_000_000),
            "day": dt.date(1970, 1, 1) + dt.timedelta(days=19000 + i),
            "large_text": None if i == 1 else f"large-{i}",
            "large_bin": h(i, i),
            "dict_text": words[i],
            "fixed_list": [i, i + 1, i + 2],
            "large_list": None if i == 6 else [f"e{j}" for j in range(i % 4)],
            "attrs": None if maps[i] is None else list(maps[i]),
            "nested": {"a": i, "b": [h(i, 20)], "c": {"d": f"x{i}"}},
            "dec": decimal.Decimal(f"{i}.{i:02d}"),
        })
    return table, expected


EXTRA_DELTA_TYPES = {
    "id": "long", "u8": "short", "u16": "integer", "u32": "long", "i8": "byte", "i16": "short",
    "f32": "float", "f64": "double", "ts_ntz": "timestamp_ntz", "ts_utc_us": "timestamp",
    "ts_ms": "timestamp", "day": "date", "large_text": "string", "large_bin": "binary",
    "dict_text": "string", "fixed_list": {"type": "array", "elementType": "long"},
    "large_list": {"type": "array", "elementType": "string"},
    "attrs": {"type": "map", "keyType": "string", "valueType": "long"},
    "nested": {"type": "struct", "fields": [
        ("a", "integer"), ("b", {"type": "array", "elementType": "binary"}),
        ("c", {"type": "struct", "fields": [("d", "string")]})]},
    "dec": "decimal(10,2)",
}


@pytest.mark.timeout(300)
def test_map_ntz_and_other_arrow_types_all_readers(tmp_path):
    path = tmp_path / "extra"
    table, expected = amp_extra_types_table()
    summary = write(tmp_path, path, table)
    assert summary["version"] == "0"

    proto = table_protocol(path)
    assert proto["minReaderVersion"] == 3 and proto["minWriterVersion"] == 7, proto
    assert "timestampNtz" in proto.get("readerFeatures", []), proto
    assert "timestampNtz" in proto.get("writerFeatures", []), proto
    schema = json.loads(table_metadata(path)["schemaString"])
    got_types = {f["name"]: delta_type_shape(f["type"]) for f in schema["fields"]}
    assert got_types == EXTRA_DELTA_TYPES

    assert_readers(path, expected, key="id")


# ======================================================================================
# 2. Partitioning: special characters, nulls, Hive folders with Spark's escaping

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
# Spark's ExternalCatalogUtils.escapePathName (non-Windows): these characters and
# control characters become %XX (upper-case hex); everything else, including spaces and
# non-ASCII, stays as is.
SPARK_ESCAPED = set('"#%\'*/:=?\\{[]^\x7f') | {chr(c) for c in range(0x01, 0x20)}


def spark_escape(value) -> str:
    if value is None or value == "":
        return HIVE_NULL
    return "".join(f"%{ord(c):02X}" if c in SPARK_ESCAPED else c for c in str(value))


SPECIAL_NETWORKS = ["a/b", "x y", "p%q", "c:d", "é", "", None, "null", "plain", "q=1?#[x]{y}^*'\"\\"]


def partitioned_input() -> tuple[pa.Table, list[dict]]:
    rows = []
    rid = 0
    for n_index, network in enumerate(SPECIAL_NETWORKS):
        for day_offset in (0, 1):
            for k in range(2):
                day = None if (n_index == 2 and day_offset == 1) else \
                    dt.date(2024, 2, 28) + dt.timedelta(days=day_offset)
                rows.append({"id": rid, "network": network, "day": day,
                             "bucket": (rid % 3) - 1 if rid % 5 else None,
                             "block_num": 1000 + rid, "payload": f"row-{rid}"})
                rid += 1
    table = pa.table({
        "id": pa.array([r["id"] for r in rows], pa.uint64()),
        "network": pa.array([r["network"] for r in rows], pa.utf8()),
        "day": pa.array([r["day"] for r in rows], pa.date32()),
        "bucket": pa.array([r["bucket"] for r in rows], pa.int32()),
        "block_num": pa.array([r["block_num"] for r in rows], pa.uint64()),
        "payload": pa.array([r["payload"] for r in rows], pa.utf8()),
    })
    # An empty-string partition value is a null partition value in Delta
    # (PROTOCOL.md "Partition Value Serialization"), so it reads back as null.
    expected = [dict(r, network=None if r["network"] == "" else r["network"]) for r in rows]
    return table, expected


def data_file_dirs(path: Path) -> set[str]:
    """Directories (relative to the table root) holding the table's parquet files."""
    return {str(p.parent.relative_to(path)) for p in path.rglob("*.parquet")
            if "_delta_log" not in p.parts}


@pytest.mark.timeout(600)
def test_partition_values_special_characters(tmp_path):
    path = tmp_path / "partitioned"
    table, expected = partitioned_input()
    summary = write(tmp_path, path, table, "--partition-by", "network,day,bucket")
    assert summary["version"] == "0", summary

    meta = table_metadata(path)
    assert meta["partitionColumns"] == ["network", "day", "bucket"]

    # Folder names: Hive style, Spark's escaping; the add paths are those folders as URIs.
    want_dirs = set()
    for r in table.to_pylist():
        want_dirs.add("/".join([f"network={spark_escape(r['network'])}",
                                f"day={spark_escape(r['day'] and r['day'].isoformat())}",
                                f"bucket={spark_escape(r['bucket'])}"]))
    assert data_file_dirs(path) == want_dirs
    adds = actions_of(path, 0, "add")
    seen = set()
    for add in adds:
        decoded = urllib.parse.unquote(add["path"])
        assert (path / decoded).is_file(), f"add path {add['path']!r} → {decoded!r} is not a file"
        folder = decoded.rsplit("/", 1)[0]
        assert folder in want_dirs
        pv = add["partitionValues"]
        assert set(pv) == {"network", "day", "bucket"}
        parts = dict(p.split("=", 1) for p in folder.split("/"))
        for column in ("network", "day", "bucket"):
            if parts[column] == HIVE_NULL:
                assert pv[column] in (None, ""), (add["path"], pv)
            else:
                assert spark_escape(pv[column]) == parts[column], (add["path"], pv)
        seen.add(folder)
    assert seen == want_dirs

    assert_readers(path, expected, key="id")

    # Spark writing the same rows produces the same folder names.
    spark_path = tmp_path / "spark_partitioned"
    spark = spark_session()
    spark.createDataFrame(table.to_pandas(types_mapper=None) if False else
                          table.cast(pa.schema([pa.field("id", pa.int64()), ("network", pa.utf8()),
                                                ("day", pa.date32()), ("bucket", pa.int32()),
                                                ("block_num", pa.int64()), ("payload", pa.utf8())]))
                          .to_pylist()) \
        .write.format("delta").partitionBy("network", "day", "bucket").save(str(spark_path))
    assert data_file_dirs(spark_path) == want_dirs

    # Filters on partition columns prune by partition value in every reader.
    spark_rows = spark.read.format("delta").load(str(path)).where("network = 'a/b'").toArrow()
    assert sorted(spark_rows.column("id").to_pylist()) == \
        [r["id"] for r in expected if r["network"] == "a/b"]
    spark_null = spark.read.format("delta").load(str(path)).where("network IS NULL").toArrow()
    assert sorted(spark_null.column("id").to_pylist()) == \
        [r["id"] for r in expected if r["network"] is None]
    dl = read_deltalake_filtered(path, [("network", "=", "p%q")])
    assert sorted(dl.column("id").to_pylist()) == [r["id"] for r in expected if r["network"] == "p%q"]


def read_deltalake_filtered(path, filters) -> pa.Table:
    from deltalake import DeltaTable

    return DeltaTable(str(path)).to_pyarrow_table(filters=filters)


@pytest.mark.timeout(300)
def test_partition_by_timestamp_bool_unsigned(tmp_path):
    path = tmp_path / "partitioned_ts"
    ts_ns = [BASE_TS_NS, BASE_TS_NS, BASE_TS_NS + 3_600_000_000_999, 0]
    table = pa.table({
        "id": pa.array([0, 1, 2, 3], pa.int64()),
        "ts": pa.array(ts_ns, AMP_TS),
        "flag": pa.array([True, False, None, True], pa.bool_()),
        "block_num": pa.array([INT64_MAX, 5, 5, 0], pa.uint64()),
    })
    write(tmp_path, path, table, "--partition-by", "ts,flag,block_num")
    expected = [{"id": i, "ts": ns_to_expected(ts_ns[i]), "flag": [True, False, None, True][i],
                 "block_num": [INT64_MAX, 5, 5, 0][i]} for i in range(4)]
    assert_readers(path, expected, key="id")
