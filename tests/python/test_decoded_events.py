"""Decoded events from Python: Amp's evm_decode_log queries run unchanged through
`client.sql(q).to_arrow()` and `.load(...)`, Decimal256 (uint160, uint128) included, and every
reader sees the server's values (as text, the default wide-integer policy)."""

from __future__ import annotations

import decimal

import pyarrow as pa

from conftest import QUICKSTART_DATASET, delta_config, read_all

SWAPS = (
    "SELECT block_num, log_index, address,\n"
    "       evm_decode_log(topic1, topic2, topic3, data,\n"
    "         'Swap(address indexed sender, address indexed recipient, int256 amount0, "
    "int256 amount1, uint160 sqrtPriceX96, uint128 liquidity, int24 tick)') AS swap\n"
    f'FROM "{QUICKSTART_DATASET}".logs\n'
    "WHERE topic0 = evm_topic('Swap(address,address,int256,int256,uint160,uint128,int24)')")


def stored(row: dict) -> dict:
    """A row as the table stores it: Decimal values as their decimal text."""
    swap = {k: (str(int(v)) if isinstance(v, decimal.Decimal) else v)
            for k, v in row["swap"].items()}
    return {**row, "swap": swap}


def test_a_decoded_events_query_reads_and_loads_unchanged(client, tmp_path):
    sent = client.sql(SWAPS).to_arrow()
    assert sent.num_rows > 0
    assert sent.schema.field("swap").type["liquidity"].type == pa.decimal256(76, 0)
    client.configure_connection("swaps", "deltalake", delta_config(tmp_path / "swaps"))
    result = client.sql(SWAPS).load(connection="swaps", destination="swaps", read_all=True)
    assert result.success and result.rows_loaded == sent.num_rows, result
    expected = sorted((stored(r) for r in sent.to_pylist()),
                      key=lambda r: (r["block_num"], r["log_index"]))
    for name, table in read_all(tmp_path / "swaps").items():
        got = sorted(table.to_pylist(), key=lambda r: (r["block_num"], r["log_index"]))
        got = [{**r, "address": bytes(r["address"]),
                "swap": {k: bytes(v) if isinstance(v, (bytes, bytearray)) else v
                         for k, v in r["swap"].items()}} for r in got]
        assert got == expected, name
