#!/usr/bin/env python3
"""Column statistics of real Amp Parquet (../shared/fixtures/amp-snapshots) next to the dev
server's synthetic chain: per column the distinct and null ratios, list lengths, and the
compressed bytes per row under Snappy and ZSTD (each table re-encoded by pyarrow with
dictionaries on, so both sides get the same writer).

The fixtures hold one block each (eth_rpc block 15,000,000: 348 transactions, 719 logs), so
the synthetic side is measured the same way: blocks of the fixture's transaction count, each
block's rows encoded on their own, bytes summed over blocks and divided by rows.

Usage: bench/chain_stats.py [--blocks 24] [--check]   (--check: exit 1 when a checked column
is more than --tolerance off; the test tests/interop/test_chain_calibration.py runs it)
"""
import argparse
import collections
import io
import json
import pathlib
import signal
import subprocess
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT.parent / "shared" / "fixtures" / "amp-snapshots"
CODECS = ("snappy", "zstd")
# The fixture the synthetic chain is shaped after (Ethereum mainnet, evm-rpc schemas).
REFERENCE = "eth_rpc"
TABLES = ("transactions", "logs")
# Columns smaller than this (bytes per row) in the fixture are block-level values or all
# null: Parquet page overhead, not data. They are reported but not checked.
MIN_CHECKED_BYTES_PER_ROW = 1.0


def fixture_table(dataset: str, table: str) -> pa.Table:
    files = sorted((FIXTURES / dataset / table).glob("*/*.parquet"))
    if not files:
        raise FileNotFoundError(f"no Parquet under {FIXTURES / dataset / table}")
    return pq.read_table(files[-1])


def column_bytes(table: pa.Table, codec: str) -> collections.Counter:
    """Compressed bytes of each top-level column when `table` is written as one file."""
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression=codec)
    meta = pq.ParquetFile(io.BytesIO(buffer.getvalue())).metadata
    out = collections.Counter()
    for group in range(meta.num_row_groups):
        for index in range(meta.num_columns):
            chunk = meta.row_group(group).column(index)
            out[chunk.path_in_schema.split(".")[0]] += chunk.total_compressed_size
    return out


def profile(blocks: list[pa.Table]) -> dict:
    """Per-column statistics over `blocks` (each one block's rows)."""
    rows = sum(t.num_rows for t in blocks)
    total = {codec: collections.Counter() for codec in CODECS}
    for table in blocks:
        for codec in CODECS:
            total[codec].update(column_bytes(table, codec))
    columns = {}
    for name in blocks[0].column_names:
        nulls = sum(t.column(name).null_count for t in blocks)
        entry = {"null_ratio": nulls / rows}
        column_type = blocks[0].schema.field(name).type
        if pa.types.is_list(column_type):
            lengths = [pc.sum(pc.list_value_length(t.column(name))).as_py() or 0 for t in blocks]
            valid = rows - nulls
            entry["mean_list_length"] = sum(lengths) / valid if valid else 0.0
        else:
            distinct = sum(len(pc.unique(t.column(name))) for t in blocks)
            entry["distinct_ratio"] = distinct / rows
        for codec in CODECS:
            entry[f"{codec}_bytes_per_row"] = total[codec][name] / rows
        columns[name] = entry
    return {"rows": rows, "blocks": len(blocks), "columns": columns,
            **{f"{codec}_bytes_per_row": sum(total[codec].values()) / rows for codec in CODECS}}


def synthetic_blocks(cli: str, table: str, txs_per_block: int, logs_per_tx: int,
                     blocks: int, env: dict | None = None) -> list[pa.Table]:
    """Fetch `table` from a dev server serving `blocks` blocks; return one table per block."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    from amp_flight import do_get
    server = subprocess.Popen(
        [cli, "dev-server", "--port", "0", "--blocks", str(blocks),
         "--txs-per-block", str(txs_per_block), "--logs-per-tx", str(logs_per_tx)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = server.stdout.readline()
        if "listening on" not in line:
            raise RuntimeError(f"dev server did not start: {line!r}")
        data = do_get(line.split()[-1], f'SELECT * FROM "acme/eth_mainnet".{table}').read_all()
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    numbers = data.column("block_num")
    out = []
    for number in pc.unique(numbers).to_pylist():
        out.append(data.filter(pc.equal(numbers, number)).combine_chunks())
    return out


def compare(reference: dict, synthetic: dict, tolerance: float) -> list[dict]:
    """Rows of the comparison table; `checked` rows carry `ok`."""
    rows = []
    for name, ref in reference["columns"].items():
        syn = synthetic["columns"][name]
        row = {"column": name}
        checked = all(ref[f"{c}_bytes_per_row"] >= MIN_CHECKED_BYTES_PER_ROW for c in CODECS)
        for codec in CODECS:
            key = f"{codec}_bytes_per_row"
            row[f"fixture_{codec}"] = ref[key]
            row[f"synthetic_{codec}"] = syn[key]
        row["checked"] = checked
        if checked:
            row["ok"] = all(abs(syn[f"{c}_bytes_per_row"] / ref[f"{c}_bytes_per_row"] - 1) <= tolerance
                            for c in CODECS)
        for stat in ("distinct_ratio", "null_ratio", "mean_list_length"):
            if stat in ref:
                row[f"fixture_{stat}"] = ref[stat]
                row[f"synthetic_{stat}"] = syn[stat]
        rows.append(row)
    total = {"column": "(all columns)", "checked": True}
    for codec in CODECS:
        key = f"{codec}_bytes_per_row"
        total[f"fixture_{codec}"] = reference[key]
        total[f"synthetic_{codec}"] = synthetic[key]
    total["ok"] = all(abs(synthetic[f"{c}_bytes_per_row"] / reference[f"{c}_bytes_per_row"] - 1)
                      <= tolerance for c in CODECS)
    rows.append(total)
    return rows


def markdown(table: str, rows: list[dict]) -> str:
    lines = [f"`{table}`: compressed bytes per row, fixture ({REFERENCE}) vs synthetic",
             "", "| column | Snappy fixture | Snappy synthetic | ZSTD fixture | ZSTD synthetic "
             "| distinct fixture / synthetic | null fixture / synthetic | checked |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        distinct = (f"{r['fixture_distinct_ratio']:.2f} / {r['synthetic_distinct_ratio']:.2f}"
                    if "fixture_distinct_ratio" in r else "")
        nulls = (f"{r['fixture_null_ratio']:.2f} / {r['synthetic_null_ratio']:.2f}"
                 if "fixture_null_ratio" in r else "")
        verdict = ("ok" if r["ok"] else "**off**") if r["checked"] else "(small)"
        lines.append(f"| {r['column']} | {r['fixture_snappy']:.2f} | {r['synthetic_snappy']:.2f} "
                     f"| {r['fixture_zstd']:.2f} | {r['synthetic_zstd']:.2f} | {distinct} | {nulls} "
                     f"| {verdict} |")
    return "\n".join(lines)


def calibration(cli: str, blocks: int, tolerance: float, env: dict | None = None) -> dict:
    """Compare every calibrated table; return {table: rows}."""
    out = {}
    reference_txs = fixture_table(REFERENCE, "transactions")
    reference_logs = fixture_table(REFERENCE, "logs")
    txs_per_block = reference_txs.num_rows
    logs_per_tx = max(1, round(reference_logs.num_rows / txs_per_block))
    for table in TABLES:
        reference = profile([fixture_table(REFERENCE, table)])
        synthetic = profile(synthetic_blocks(cli, table, txs_per_block, logs_per_tx, blocks, env))
        out[table] = compare(reference, synthetic, tolerance)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cli", default=str(ROOT / "build/release/tools/ampdelta/ampdelta"))
    parser.add_argument("--blocks", type=int, default=24)
    parser.add_argument("--tolerance", type=float, default=0.25)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = calibration(args.cli, args.blocks, args.tolerance)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for table, rows in result.items():
            print(markdown(table, rows) + "\n")
    off = [f"{t}.{r['column']}" for t, rows in result.items() for r in rows
           if r["checked"] and not r["ok"]]
    if off:
        print(f"off by more than {args.tolerance:.0%}: {', '.join(off)}", file=sys.stderr)
    return 1 if args.check and off else 0


if __name__ == "__main__":
    sys.exit(main())
