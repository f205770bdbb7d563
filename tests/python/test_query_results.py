"""Reading (docs/python.md "Reading"): `client.sql(q).to_arrow()` is a pyarrow.Table equal to
what the CLI's `ampdelta query` prints and to what a plain pyarrow.flight client (the SDK's
calls, tests/interop/test_flight_protocol.py) receives; `to_reader()` streams the same rows
batch by batch; a streaming query is refused by both."""

from __future__ import annotations

import csv
import datetime as dt
import io
import subprocess

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import ampdelta
from conftest import BLOCKS_SQL, QUICKSTART_DATASET, cli_env, cli_path, describe

TX_SQL = (f'SELECT block_num, tx_index, tx_hash, "to", value, status, gas_price, type '
          f'FROM "{QUICKSTART_DATASET}".transactions')


def cli_csv(url: str, sql: str) -> list[list[str]]:
    proc = subprocess.run([str(cli_path()), "query", "--server", url, "--format", "csv",
                           "--sql", sql], capture_output=True, text=True, env=cli_env(),
                          timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, describe(proc)
    return list(csv.reader(io.StringIO(proc.stdout, newline="")))


UNITS_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def cli_texts(array: pa.ChunkedArray) -> list[str]:
    """The values as `ampdelta query --format csv` writes them (tools/ampdelta/
    table_format.cc): binary as 0x-hex, timestamps as `YYYY-MM-DD HH:MM:SS[.frac] UTC`,
    booleans true/false, nulls empty, the rest as Arrow prints them."""
    kind = array.type
    if pa.types.is_timestamp(kind):
        per = UNITS_PER_SECOND[kind.unit]
        width = len(str(per)) - 1
        out = []
        for raw in pc.cast(array, pa.int64()).to_pylist():
            if raw is None:
                out.append("")
                continue
            seconds, fraction = divmod(raw, per)
            text = dt.datetime.fromtimestamp(seconds, dt.timezone.utc).strftime(
                "%Y-%m-%d %H:%M:%S")
            if fraction:
                text += "." + str(fraction).rjust(width, "0")
            out.append(text + (" UTC" if kind.tz else ""))
        return out
    values = array.to_pylist()
    if pa.types.is_binary(kind) or pa.types.is_fixed_size_binary(kind) or \
            pa.types.is_large_binary(kind):
        return ["" if v is None else "0x" + v.hex() for v in values]
    if pa.types.is_boolean(kind):
        return ["" if v is None else ("true" if v else "false") for v in values]
    return ["" if v is None else str(v) for v in values]


def as_cli_rows(table: pa.Table) -> list[list[str]]:
    columns = [cli_texts(table.column(i)) for i in range(table.num_columns)]
    return [table.column_names] + [list(row) for row in zip(*columns)]


@pytest.mark.parametrize("sql", [BLOCKS_SQL, TX_SQL], ids=["blocks", "transactions"])
def test_to_arrow_equals_the_cli_query_and_a_plain_flight_client(quickstart_url, sql):
    from test_flight_protocol import run_query  # tests/interop

    table = ampdelta.Client(quickstart_url).sql(sql).to_arrow()
    assert isinstance(table, pa.Table)
    flight = run_query(quickstart_url, sql).table()
    assert table.schema.equals(flight.schema), f"{table.schema}\n!=\n{flight.schema}"
    assert table.equals(flight)
    assert as_cli_rows(table) == cli_csv(quickstart_url, sql)


@pytest.mark.timeout(60)
def test_to_arrow_of_several_server_batches(transactions_server):
    sql = f'SELECT * FROM "{QUICKSTART_DATASET}".transactions'
    from test_flight_protocol import run_query

    table = ampdelta.Client(transactions_server.url).sql(sql).to_arrow()
    assert table.num_rows == 17_153
    assert table.equals(run_query(transactions_server.url, sql).table())


@pytest.mark.timeout(60)
def test_to_reader_streams_the_same_rows_batch_by_batch(transactions_server):
    sql = f'SELECT block_num, tx_index, tx_hash FROM "{QUICKSTART_DATASET}".transactions'
    client = ampdelta.Client(transactions_server.url)
    reader = client.sql(sql).to_reader()
    assert isinstance(reader, pa.RecordBatchReader)
    batches = list(reader)
    assert len(batches) > 1, "one batch for a result the server sent in three"
    streamed = pa.Table.from_batches(batches, schema=reader.schema)
    assert streamed.num_rows == 17_153
    assert streamed.equals(client.sql(sql).to_arrow())


@pytest.mark.timeout(30)
@pytest.mark.parametrize("method", ["to_arrow", "to_reader"])
def test_a_streaming_query_is_refused(client, method):
    query = client.sql(f"{BLOCKS_SQL} SETTINGS stream = true")
    with pytest.raises(ampdelta.Error) as info:
        result = getattr(query, method)()
        if method == "to_reader":
            result.read_all()
    assert "stream" in str(info.value).lower(), str(info.value)


def test_a_query_error_raises_with_the_servers_message(client):
    with pytest.raises(ampdelta.Error) as info:
        client.sql(f'SELECT nope FROM "{QUICKSTART_DATASET}".blocks').to_arrow()
    assert "invalid query" in str(info.value) or "INVALID_ARGUMENT" in str(info.value), \
        str(info.value)
