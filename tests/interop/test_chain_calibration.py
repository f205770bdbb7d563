"""The dev server's synthetic chain has the statistics of real chain data: each column's
compressed bytes per row (Snappy and ZSTD) is within 25% of Parquet written by a real Amp
server (../shared/fixtures/amp-snapshots/eth_rpc), so benchmarks on it measure the work a
real load does. bench/chain_stats.py prints the full table."""
import os
import sys

import pyarrow as pa
import pytest

from conftest import REPO_ROOT, cli_env, cli_path

sys.path.insert(0, str(REPO_ROOT / "bench"))
import chain_stats  # noqa: E402

TOLERANCE = 0.25


@pytest.fixture(scope="module")
def calibration():
    return chain_stats.calibration(str(cli_path()), blocks=24, tolerance=TOLERANCE,
                                   env=cli_env())


@pytest.mark.timeout(180)
@pytest.mark.parametrize("table", chain_stats.TABLES)
def test_synthetic_columns_compress_like_real_amp_parquet(calibration, table):
    rows = calibration[table]
    report = chain_stats.markdown(table, rows)
    print(report)
    checked = [r for r in rows if r["checked"]]
    # Every column that carries data is checked; only block-level and all-null ones are not.
    assert len(checked) >= (15 if table == "transactions" else 10), report
    off = [r["column"] for r in checked if not r["ok"]]
    assert not off, f"{table}: {off} off by more than {TOLERANCE:.0%}\n{report}"


def test_a_column_shaped_like_random_bytes_is_caught():
    """The check would fail the old generator: random 20-byte addresses cost ~21 bytes a
    row where real `to` addresses cost ~13."""
    table = chain_stats.fixture_table(chain_stats.REFERENCE, "transactions")
    reference = chain_stats.profile([table])
    index = table.schema.get_field_index("to")
    random_to = pa.array([os.urandom(20) for _ in range(table.num_rows)], pa.binary(20))
    randomised = chain_stats.profile([table.set_column(index, "to", random_to)])
    rows = {r["column"]: r for r in chain_stats.compare(reference, randomised, TOLERANCE)}
    assert rows["to"]["checked"] and not rows["to"]["ok"]
    assert rows["tx_hash"]["ok"]
