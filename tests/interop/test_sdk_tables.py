"""Tables the Python SDK wrote, continued by ampdelta (issue 19).

The SDK's writes are emulated as it makes them (amp-protocol.md §3.6, §4): one
`write_deltalake` per non-empty record batch with `schema_mode="merge"` (deltalake's type
mapping: uint32 -> integer, fixed binary -> binary, timestamps -> µs UTC) and its
`_amp_batch_id` column. ampdelta then appends, merges and streams into those tables; the
results are read back by deltalake, DuckDB and Polars (and Spark for the streamed one).
"""
import subprocess
import time

import pyarrow as pa
import pytest

import readers
from conftest import QUICKSTART_FIRST, cli_env, cli_path
from test_flight_protocol import open_query, parse_app_metadata
from test_stream_scenarios import sdk_batch_id

TXS = 'SELECT block_num, tx_index, tx_hash, gas_used FROM "acme/eth_mainnet".transactions'
LOGS = ('SELECT block_num, tx_index, log_index, address, topic0 '
        'FROM "acme/eth_mainnet".logs')
BLOCKS = 'SELECT block_num, hash, gas_used FROM "acme/eth_mainnet".blocks'
READERS = {name: readers.READERS[name] for name in ("deltalake", "duckdb", "polars")}


def sdk_load(url, sql, table, mode="append"):
    """The SDK's load: DoGet, then one write_deltalake per non-empty batch."""
    from deltalake import write_deltalake

    client, _info, reader = open_query(url, sql)
    rows = 0
    with client:
        while True:
            try:
                chunk = reader.read_chunk()
            except StopIteration:
                break
            batch = chunk.data
            if batch.num_rows == 0:
                continue
            metadata = parse_app_metadata(chunk)
            batch_id = "|".join(
                sdk_batch_id(r["network"], r["numbers"]["start"], r["numbers"]["end"],
                             r.get("hash"), r.get("prev_hash"))
                for r in metadata["ranges"])
            data = pa.Table.from_batches([batch]).append_column(
                "_amp_batch_id", pa.array([batch_id] * batch.num_rows, pa.string()))
            write_deltalake(str(table), data, mode=mode, schema_mode="merge")
            rows += batch.num_rows
    return rows


def ampdelta(*args, timeout=120):
    return subprocess.run([str(cli_path()), *args], env=cli_env(), capture_output=True,
                          text=True, timeout=timeout)


def load(url, table, sql, *extra):
    return ampdelta("load", "--server", url, "--table", str(table), "--sql", sql,
                    "--config", '{"optimize_after_write": false}', *extra)


def schema_types(table):
    from deltalake import DeltaTable

    return {f.name: str(f.type.type) for f in DeltaTable(str(table)).schema().fields}


def test_the_sdks_overwrite_keeps_769_of_the_quickstarts_17153_transactions(
        dev_server_factory, tmp_path):
    # 1009 blocks x 17 transactions = 17,153 rows, sent as 8192 + 8192 + 769 as ampd does.
    server = dev_server_factory("--blocks", "1009", "--txs-per-block", "17")
    table = tmp_path / "tx"
    assert sdk_load(server.url, TXS, table, mode="overwrite") == 17_153
    for name, read in READERS.items():
        assert read(table).num_rows == 769, name
    done = load(server.url, table, TXS, "--mode", "overwrite")
    assert done.returncode == 0, done.stderr
    for name, read in READERS.items():
        assert read(table).num_rows == 17_153, name


@pytest.mark.parametrize("sql,keys", [(TXS, "block_num,tx_index"),
                                      (LOGS, "block_num,log_index")],
                         ids=["transactions", "logs"])
def test_ampdelta_appends_and_merges_into_tables_the_sdk_wrote(quickstart_url, tmp_path,
                                                               sql, keys):
    table = tmp_path / "sdk"
    half = QUICKSTART_FIRST + 50
    sdk_rows = sdk_load(quickstart_url, f"{sql} WHERE block_num < {half}", table)
    types = schema_types(table)
    assert types["tx_index"] == "integer", types  # deltalake keeps uint32's width
    done = load(quickstart_url, table, f"{sql} WHERE block_num >= {half}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert schema_types(table) == types  # the table's types won
    # A merge of the whole result updates the first half and changes nothing else.
    merged = load(quickstart_url, table, sql, "--mode", "merge", "--merge-keys", keys)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    full = readers.read_deltalake(table)
    assert full.num_rows > sdk_rows
    key_columns = keys.split(",")
    for name, read in READERS.items():
        got = read(table)
        assert got.num_rows == full.num_rows, name
        pairs = set(zip(*(got.column(k).to_pylist() for k in key_columns)))
        assert len(pairs) == got.num_rows, f"{name}: a key repeated"


def test_a_stream_takes_over_an_sdk_table_exactly_once(dev_server_factory, tmp_path):
    server = dev_server_factory("--microbatch-max-blocks", "20")
    table = tmp_path / "blocks"
    sdk_load(server.url, f"{BLOCKS} WHERE block_num < {QUICKSTART_FIRST + 70}", table)
    before = readers.read_deltalake(table).num_rows
    last = QUICKSTART_FIRST + 99
    refused = load(server.url, table, BLOCKS, "--stream", "--until-block", str(last))
    assert refused.returncode == 2, refused.stderr
    assert "already holds 70 rows" in refused.stderr
    assert "--takeover after-table-max" in refused.stderr
    assert readers.read_deltalake(table).num_rows == before
    taken = load(server.url, table, BLOCKS, "--stream", "--until-block", str(last),
                 "--takeover", "after-table-max", "--reorg-window", "8")
    assert taken.returncode == 0, taken.stderr
    # The chain never reorged: the block the server re-sends after the takeover is the
    # stream's first, not a reorg (it used to be counted, logged and undone as one).
    assert "Reorg detected" not in taken.stdout, taken.stdout
    assert "reorgs=0" in taken.stderr, taken.stderr
    history = ampdelta("table", "history", str(table))
    # One DELETE: the takeover's own (no second one undoing a reorg that never was).
    assert history.returncode == 0 and history.stdout.count(" DELETE ") == 1, history.stdout
    expected = list(range(QUICKSTART_FIRST, last + 1))
    for name, read in {**READERS, "spark": readers.read_spark}.items():
        got = sorted(read(table).column("block_num").to_pylist())
        assert got == expected, f"{name}: blocks missing or repeated"


def test_a_bad_takeover_mode_is_a_usage_error(quickstart_url, tmp_path):
    done = load(quickstart_url, tmp_path / "t", BLOCKS, "--stream", "--takeover", "later")
    assert done.returncode == 2
    assert "after-table-max or from-block:N" in done.stderr


def canonical_hashes(url):
    client, _info, reader = open_query(
        url, 'SELECT block_num, hash FROM "acme/eth_mainnet".blocks')
    with client:
        table = reader.read_all()
    return dict(zip(table.column("block_num").to_pylist(),
                    (h.hex() for h in table.column("hash").to_pylist())))


def test_a_stream_takes_over_sdk_logs_made_stale_by_a_reorg_at_the_takeover_point(
        dev_server_factory, tmp_path):
    # The SDK loads blocks ..99; then the head reaches 101 and blocks 98..101 are replaced:
    # the SDK's rows for 98 and 99 are no longer canonical when the stream takes over.
    first, reorg_head, last = QUICKSTART_FIRST, QUICKSTART_FIRST + 101, QUICKSTART_FIRST + 104
    server = dev_server_factory("--block-interval-ms", "1500", "--max-head", str(last),
                                "--reorg-at", f"{reorg_head}:4")
    logs = ("SELECT block_num, block_hash, tx_index, log_index, address "
            'FROM "acme/eth_mainnet".logs')
    table = tmp_path / "logs"
    sdk_load(server.url, f"{logs} WHERE block_num < {first + 100}", table)
    assert schema_types(table)["log_index"] == "integer"
    deadline = time.monotonic() + 60
    while max(canonical_hashes(server.url)) < last:
        assert time.monotonic() < deadline, "the dev server's head did not advance"
        time.sleep(0.2)
    canonical = canonical_hashes(server.url)
    stale = {row["block_num"] for row in readers.read_deltalake(table).to_pylist()
             if row["block_hash"].hex() != canonical[row["block_num"]]}
    assert stale == {first + 98, first + 99}, "the reorg came before the SDK's load"
    taken = load(server.url, table, logs, "--stream", "--until-block", str(last),
                 "--takeover", "after-table-max", "--reorg-window", "5")
    assert taken.returncode == 0, taken.stderr
    assert schema_types(table)["log_index"] == "integer"  # the SDK's type stays
    source_client, _info, reader = open_query(server.url, logs)
    with source_client:
        source = reader.read_all()
    expected = sorted(zip(source.column("block_num").to_pylist(),
                          source.column("log_index").to_pylist()))
    for name, read in READERS.items():
        got = read(table)
        pairs = sorted(zip(got.column("block_num").to_pylist(),
                           got.column("log_index").to_pylist()))
        assert pairs == expected, f"{name}: logs missing or repeated"
        hashes = {(b, bytes(h).hex()) for b, h in zip(got.column("block_num").to_pylist(),
                                                       got.column("block_hash").to_pylist())}
        assert all(h == canonical[b] for b, h in hashes), f"{name}: a stale block stayed"
