"""Decoded events end to end: Amp's EVM functions on the dev server, checked against eth_abi
(an ABI codec independent of the C++ one), and the loader storing what they return —
structs of addresses, int24, uint160/uint128 (Decimal256) and uint256/int256 (text) —
in batch, merge, parallel backfill and a stream through reorgs, read back equal by
deltalake, DuckDB, Polars and Spark.
"""
import collections
import decimal
import os
import subprocess
import sys
from pathlib import Path

import eth_abi
import pyarrow as pa
import pytest
from eth_utils import keccak

import readers
from conftest import QUICKSTART_FIRST, QUICKSTART_LAST, cli_env, cli_path, run_dev_server

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from amp_flight import do_get  # noqa: E402

LOGS = '"acme/eth_mainnet".logs'

# The synthetic chain's catalogued events (devserver/chain_shape.cc), as users write them.
ERC20_TRANSFER = "Transfer(address indexed from, address indexed to, uint256 value)"
APPROVAL = "Approval(address indexed owner, address indexed spender, uint256 value)"
SYNC = "Sync(uint112 reserve0, uint112 reserve1)"
SWAP_V2 = ("Swap(address indexed sender, uint256 amount0In, uint256 amount1In, "
           "uint256 amount0Out, uint256 amount1Out, address indexed to)")
SWAP_V3 = ("Swap(address indexed sender, address indexed recipient, int256 amount0, "
           "int256 amount1, uint160 sqrtPriceX96, uint128 liquidity, int24 tick)")
DEPOSIT = "Deposit(address indexed dst, uint256 wad)"
WITHDRAWAL = "Withdrawal(address indexed src, uint256 wad)"
ERC721_TRANSFER = "Transfer(address indexed from, address indexed to, uint256 indexed tokenId)"
CATALOGUE = [ERC20_TRANSFER, APPROVAL, SYNC, SWAP_V2, SWAP_V3, DEPOSIT, WITHDRAWAL,
             ERC721_TRANSFER]

# The example query, verbatim but for the dataset name.
SWAP_QUERY = (
    "SELECT block_num, log_index, address,\n"
    "       evm_decode_log(topic1, topic2, topic3, data,\n"
    f"         '{SWAP_V3}') AS swap\n"
    f"FROM {LOGS}\n"
    "WHERE topic0 = evm_topic('Swap(address,address,int256,int256,uint160,uint128,int24)')")
APPROVAL_QUERY = (
    "SELECT block_num, log_index, tx_hash, evm_decode_hex(address) AS token, "
    f"evm_decode_log(topic1, topic2, topic3, data, '{APPROVAL}') AS approval, "
    f"shift_units(evm_decode_log(topic1, topic2, topic3, data, '{APPROVAL}')['value'], -18) "
    f"AS tokens FROM {LOGS} WHERE topic0 = evm_topic('Approval(address,address,uint256)')")

UINT256_MAX = 2**256 - 1


def params(signature: str) -> list[tuple[str, bool, str]]:
    """(type, indexed, name) of each parameter of a flat event signature."""
    inner = signature[signature.index("(") + 1:signature.rindex(")")]
    out = []
    for part in inner.split(","):
        words = part.split()
        out.append((words[0], "indexed" in words, words[-1]))
    return out


def canonical(signature: str) -> str:
    return signature[:signature.index("(")] + "(" + ",".join(t for t, _, _ in params(signature)) + ")"


def amp_value(sol_type: str, value):
    """eth_abi's value as Amp's Arrow type holds it (docs/evm-functions.md): intN up to 64
    bits and Decimal up to 251 bits as integers, 256-bit integers as decimal text,
    addresses as 20 bytes."""
    if sol_type == "address":
        return bytes.fromhex(value[2:])
    if sol_type in ("uint256", "int256"):
        return str(value)
    return value


def decode_with_eth_abi(signature: str, topics: list, data: bytes) -> dict:
    """The event as Amp's evm_decode_log returns it: indexed parameters first."""
    fields = params(signature)
    indexed = [(t, n) for t, i, n in fields if i]
    body = [(t, n) for t, i, n in fields if not i]
    out = {}
    for (sol_type, name), topic in zip(indexed, topics):
        out[name] = None if topic is None else amp_value(sol_type, eth_abi.decode([sol_type], topic)[0])
    try:
        values = eth_abi.decode([t for t, _ in body], data) if body else []
    except Exception:  # not this event's encoding: Amp gives nulls
        values = [None] * len(body)
    for (sol_type, name), value in zip(body, values):
        out[name] = None if value is None else amp_value(sol_type, value)
    return out


def normalized(value):
    """A value as every reader can be compared on: Decimals as ints, struct fields in order."""
    if isinstance(value, dict):
        return {k: normalized(v) for k, v in value.items()}
    if isinstance(value, decimal.Decimal):
        return int(value)
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return value


def keyed(table: pa.Table) -> dict:
    """Rows by (block_num, log_index), values normalized; duplicates fail."""
    out = {}
    for row in table.to_pylist():
        key = (row["block_num"], row["log_index"])
        assert key not in out, f"row {key} twice"
        out[key] = {k: normalized(v) for k, v in row.items() if not k.startswith("_amp")}
    return out


def as_stored(rows: dict) -> dict:
    """The server's rows as the default wide-integer policy stores them: Decimal256 values
    (uint160, uint128) as their decimal text."""
    def store(value, path=""):
        if isinstance(value, dict):
            return {k: store(v, k) for k, v in value.items()}
        if isinstance(value, int) and not isinstance(value, bool) and path in WIDE_FIELDS:
            return str(value)
        return value
    return {key: store(row) for key, row in rows.items()}


WIDE_FIELDS = {"sqrtPriceX96", "liquidity"}


def run_cli(*args, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([str(cli_path()), *map(str, args)], capture_output=True, text=True,
                          env=cli_env(), timeout=timeout, stdin=subprocess.DEVNULL)


def load(url: str, table: Path, sql: str, *extra) -> subprocess.CompletedProcess:
    done = run_cli("load", "--server", url, "--table", table, "--sql", sql, *extra)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def chain():
    """A dev server with enough blocks that every catalogued event occurs many times."""
    with run_dev_server("--blocks", "300") as server:
        yield server.url


def test_evm_topic_is_the_keccak_of_the_canonical_signature(chain):
    selects = ", ".join(f"evm_topic('{sig}') AS t{i}" for i, sig in enumerate(CATALOGUE))
    row = do_get(chain, f"SELECT {selects} FROM {LOGS} LIMIT 1").read_all().to_pylist()[0]
    for i, sig in enumerate(CATALOGUE):
        assert row[f"t{i}"] == keccak(text=canonical(sig)), sig
    # Amp's own test vectors (evm_topic.rs and sql-tests.yaml).
    assert row["t0"].hex() == "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
    assert row["t4"].hex() == "c42079f94a6350d7e6235f29174924f928cc2ac818eb64fed8004e115fbcca67"


def test_every_catalogued_event_decodes_as_eth_abi_decodes_it(chain):
    raw = do_get(chain, f"SELECT block_num, log_index, topic0, topic1, topic2, topic3, data "
                        f"FROM {LOGS}").read_all()
    by_key = {(r["block_num"], r["log_index"]): r for r in raw.to_pylist()}
    shares = collections.Counter(r["topic0"] for r in by_key.values())
    for sig in CATALOGUE:
        decoded = do_get(chain, f"SELECT block_num, log_index, evm_decode_log(topic1, topic2, "
                                f"topic3, data, '{sig}') AS e FROM {LOGS} WHERE topic0 = "
                                f"evm_topic('{canonical(sig)}')").read_all()
        assert decoded.num_rows > 20, (sig, decoded.num_rows)
        names = [n for _, i, n in params(sig) if i] + [n for _, i, n in params(sig) if not i]
        assert decoded.schema.field("e").type.names == names, sig
        full = 0
        for row in decoded.to_pylist():
            log = by_key[(row["block_num"], row["log_index"])]
            expected = decode_with_eth_abi(sig, [log["topic1"], log["topic2"], log["topic3"]],
                                           log["data"])
            assert normalized(row["e"]) == expected, (sig, row, log)
            full += all(v is not None for v in expected.values())
        assert full > 10, (sig, full)
    # Realistic proportions: Transfer about half of all logs, each other event present.
    transfers = shares[keccak(text="Transfer(address,address,uint256)")] / len(by_key)
    assert 0.40 < transfers < 0.60, transfers
    for sig in (APPROVAL, SYNC, SWAP_V2, SWAP_V3, DEPOSIT, WITHDRAWAL):
        share = shares[keccak(text=canonical(sig))] / len(by_key)
        assert 0.004 < share < 0.12, (sig, share)


def test_approvals_include_unlimited_allowances_and_swaps_negative_amounts(chain):
    rows = do_get(chain, APPROVAL_QUERY).read_all().to_pylist()
    values = [r["approval"]["value"] for r in rows]
    assert str(UINT256_MAX) in values
    unlimited = [r["tokens"] for r in rows if r["approval"]["value"] == str(UINT256_MAX)]
    digits = str(UINT256_MAX)
    assert unlimited[0] == digits[:-18] + "." + digits[-18:]
    swaps = do_get(chain, SWAP_QUERY).read_all()
    assert swaps.schema.field("swap").type["sqrtPriceX96"].type == pa.decimal256(76, 0)
    amounts = [int(r["swap"]["amount0"]) for r in swaps.to_pylist()]
    assert min(amounts) < 0 < max(amounts)
    assert max(int(r["swap"]["sqrtPriceX96"]) for r in swaps.to_pylist()) > 10**38


@pytest.mark.parametrize("name,sql", [("swaps", SWAP_QUERY), ("approvals", APPROVAL_QUERY)])
def test_decoded_events_load_and_every_reader_reads_what_the_server_sent(chain, tmp_path,
                                                                         name, sql):
    sent = as_stored(keyed(do_get(chain, sql).read_all()))
    table = tmp_path / name
    load(chain, table, sql)
    for reader, read in readers.READERS.items():
        got = keyed(read(table))
        assert got == sent, f"{reader} reads other rows than the server sent"


def test_decimal_policy_stores_decimal38_and_refuses_a_value_that_does_not_fit(chain, tmp_path):
    # Decimal256 values that fit 38 digits: gas as uint128.
    sql = (f"SELECT block_num, evm_decode_type(evm_encode_type(gas_used, 'uint128'), "
           f"'uint128') AS gas FROM \"acme/eth_mainnet\".blocks")
    table = tmp_path / "gas"
    load(chain, table, sql, "--wide-integers", "decimal")
    sent = {r["block_num"]: r["gas"] for r in do_get(chain, sql).read_all().to_pylist()}
    for reader, read in readers.READERS.items():
        got = read(table)
        assert got.schema.field("gas").type == pa.decimal128(38, 0), reader
        assert {r["block_num"]: r["gas"] for r in got.to_pylist()} == sent, reader
    # A later load with the default policy goes into the table's decimal column.
    load(chain, table, sql + " WHERE block_num < 24000010")
    again = readers.read_duckdb(table)
    assert again.schema.field("gas").type == pa.decimal128(38, 0)
    assert again.num_rows == len(sent) + 10
    # A uint160 price of 48 digits does not fit decimal(38, 0): the load fails, naming it,
    # and leaves no table.
    refused = tmp_path / "swaps"
    done = run_cli("load", "--server", chain, "--table", refused, "--sql", SWAP_QUERY,
                   "--wide-integers", "decimal")
    assert done.returncode == 2, f"{done.returncode}\n{done.stderr}"
    assert "column 'swap.sqrtPriceX96' has value" in done.stderr, done.stderr
    assert "does not fit the table's type decimal(38,0)" in done.stderr, done.stderr
    assert not (refused / "_delta_log").exists()


# A word of 0xff bytes (-1 as int64, sign-extended) decoded as a (uint64) tuple: a struct
# whose UInt64 field holds 2^64-1.
UINT64_MAX = 2**64 - 1
UINT64_PAIR = "evm_decode_type(evm_encode_type(-1, 'int64'), '(uint64)')"


def test_uint64_fields_above_the_largest_long_are_kept_and_columns_say_how(chain, tmp_path):
    # A decoded uint64 field holds 2^64-1: stored as decimal(20,0), every reader reads it.
    sql = (f"SELECT block_num, {UINT64_PAIR} AS t, gas_used "
           f"FROM \"acme/eth_mainnet\".blocks WHERE block_num < 24000005")
    table = tmp_path / "fields"
    load(chain, table, sql)
    sent = {r["block_num"]: r for r in do_get(chain, sql).read_all().to_pylist()}
    assert {r["t"]["c0"] for r in sent.values()} == {UINT64_MAX}, sent
    for reader, read in readers.READERS.items():
        got = read(table)
        assert got.schema.field("t").type.field("c0").type == pa.decimal128(20, 0), reader
        assert got.schema.field("gas_used").type == pa.int64(), reader  # the seed's i64
        assert {r["block_num"]: normalized(r) for r in got.to_pylist()} == sent, reader
    # Selected as a column it is long, as the SDK stores uint64 columns: the load fails
    # naming the value and the policy that keeps it, and leaves no table.
    column = (f"SELECT block_num, {UINT64_PAIR}['c0'] AS nonce "
              f"FROM \"acme/eth_mainnet\".blocks WHERE block_num < 24000005")
    refused = tmp_path / "column"
    done = run_cli("load", "--server", chain, "--table", refused, "--sql", column)
    assert done.returncode == 2, f"{done.returncode}\n{done.stderr}"
    assert f"column 'nonce' has value {UINT64_MAX}" in done.stderr, done.stderr
    assert '"uint64": "decimal"' in done.stderr, done.stderr
    assert not (refused / "_delta_log").exists()
    # With --uint64 decimal the column is decimal(20,0) and block_num stays long.
    load(chain, refused, column, "--uint64", "decimal")
    for reader, read in readers.READERS.items():
        got = read(refused)
        assert got.schema.field("nonce").type == pa.decimal128(20, 0), reader
        assert got.schema.field("block_num").type == pa.int64(), reader
        assert {int(r["nonce"]) for r in got.to_pylist()} == {UINT64_MAX}, reader


def test_merge_on_block_and_log_index_keeps_one_row_per_log(chain, tmp_path):
    table = tmp_path / "swaps"
    for _ in range(2):
        load(chain, table, SWAP_QUERY, "--mode", "merge", "--merge-keys", "block_num,log_index")
    sent = as_stored(keyed(do_get(chain, SWAP_QUERY).read_all()))
    assert keyed(readers.read_duckdb(table)) == sent


def test_a_parallel_backfill_of_decoded_events_equals_the_batch_load(chain, tmp_path):
    table = tmp_path / "swaps"
    load(chain, table, SWAP_QUERY, "--workers", "3", "--partition-size", "40")
    sent = as_stored(keyed(do_get(chain, SWAP_QUERY).read_all()))
    assert keyed(readers.read_polars(table)) == sent
    assert keyed(readers.read_spark(table)) == sent


def test_a_decoded_stream_through_reorgs_ends_with_the_canonical_events(tmp_path):
    sql = (f"SELECT block_num, log_index, evm_decode_log(topic1, topic2, topic3, data, "
           f"'{ERC20_TRANSFER}') AS transfer FROM {LOGS} WHERE topic0 = "
           f"evm_topic('Transfer(address,address,uint256)')")
    last = QUICKSTART_LAST + 40
    table = tmp_path / "transfers"
    # A paced chain: it grows a block only once the stream has been sent the head, so the
    # loader meets every reorg (depth 3 every 7 blocks) however slow it runs.
    with run_dev_server("--block-interval-ms", "20", "--max-head", str(last), "--reorg-every",
                        "7", "--reorg-depth", "3", "--await-streams") as server:
        done = run_cli("load", "--server", server.url, "--table", table, "--sql", sql,
                       "--stream", "--until-block", last, "--commit-interval-ms", "50",
                       timeout=240)
        assert done.returncode == 0, f"{done.returncode}\n{done.stdout}\n{done.stderr}"
        assert "reorg" in done.stdout.lower(), done.stdout
        canonical_rows = keyed(do_get(server.url, sql + f" AND block_num <= {last}").read_all())
    assert {b for b, _ in canonical_rows} <= set(range(QUICKSTART_FIRST, last + 1))
    for reader in ("deltalake", "duckdb"):
        got = keyed(readers.READERS[reader](table))
        assert got == canonical_rows, f"{reader}: the stream's table is not the canonical chain"


def test_the_events_demo_loads_the_swaps_the_dev_server_serves(tmp_path):
    for run in range(2):  # a second run replaces the rows of the table the demo made
        done = subprocess.run([str(cli_path()), "demo", "--events"], capture_output=True,
                              text=True, env=cli_env(), timeout=180, cwd=tmp_path,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 0, f"{done.returncode}\n{done.stdout}\n{done.stderr}"
        assert "evm_decode_log" in done.stdout and f"version {run + 1}" in done.stdout
    # Decoded addresses show as hex, not raw bytes.
    assert "struct[7]" in done.stdout and "{0x" in done.stdout, done.stdout
    with run_dev_server() as server:
        sent = as_stored(keyed(do_get(server.url, SWAP_QUERY).read_all()))
    assert sent
    assert keyed(readers.read_duckdb(tmp_path / "data" / "swaps")) == sent


def test_change_data_feed_and_deletion_vectors_on_a_table_of_decoded_structs(chain, tmp_path):
    table = tmp_path / "swaps"
    load(chain, table, SWAP_QUERY, "--property", "delta.enableChangeDataFeed=true",
         "--property", "delta.enableDeletionVectors=true")
    load(chain, table, SWAP_QUERY, "--mode", "merge", "--merge-keys", "block_num,log_index")
    cut = QUICKSTART_FIRST + 150
    done = run_cli("table", "delete", table, "--where", f"block_num < {cut}")
    assert done.returncode == 0, done.stderr
    sent = as_stored(keyed(do_get(chain, SWAP_QUERY).read_all()))
    kept = {k: v for k, v in sent.items() if k[0] >= cut}
    assert 0 < len(kept) < len(sent)
    for reader in ("spark", "duckdb", "polars"):  # deltalake 1.6.6 refuses DV tables
        assert keyed(readers.READERS[reader](table)) == kept, reader
    # Spark's change feed: the inserts, the merge's pre/post images, the deletes.
    feed = (readers.spark_session().read.format("delta").option("readChangeFeed", "true")
            .option("startingVersion", 0).load(os.path.abspath(table)))
    counts = {(r[0], r[1]): r[2] for r in feed.groupBy("_change_type", "_commit_version")
              .count().collect()}
    assert counts == {("insert", 0): len(sent), ("update_preimage", 1): len(sent),
                      ("update_postimage", 1): len(sent), ("delete", 2): len(sent) - len(kept)}
    deleted = feed.filter("_change_type = 'delete'").select("swap.liquidity").collect()
    assert {r[0] for r in deleted} == {v["swap"]["liquidity"] for k, v in sent.items()
                                      if k[0] < cut}


@pytest.mark.parametrize("option", ["--partition-by", "--cluster-by"])
def test_partitioning_on_a_decoded_field_is_refused_with_how_to_flatten_it(chain, tmp_path,
                                                                          option):
    table = tmp_path / "swaps"
    done = run_cli("load", "--server", chain, "--table", table, "--sql", SWAP_QUERY, option,
                   "swap.tick")
    assert done.returncode == 2, done.stderr
    assert "'swap.tick' is a field of the struct column 'swap'" in done.stderr, done.stderr
    assert "swap['tick'] AS tick" in done.stderr, done.stderr
    assert not (table / "_delta_log").exists()
    # Flattened, the field partitions the table.
    flat = SWAP_QUERY.replace(" AS swap\n", " AS swap, evm_decode_log(topic1, topic2, topic3, "
                              f"data, '{SWAP_V3}')['tick'] AS tick\n")
    assert flat != SWAP_QUERY
    load(chain, table, flat, option, "tick")
    assert readers.read_duckdb(table).num_rows == len(keyed(do_get(chain, SWAP_QUERY).read_all()))
