"""ampdelta.ray.backfill on a local Ray cluster (2 CPUs), against the dev server: three
shards load every block exactly once (checked against a batch query of the same SQL, read
back by deltalake, DuckDB and Polars); a shard task that raises on its first attempt and
another whose worker dies after its first commit are retried by Ray and the table still
holds every block once; a re-run loads nothing; then_stream hands over to the live stream
of a growing chain.

Ray's start-up is slow, so one cluster serves the module.
"""
from __future__ import annotations

import collections
import importlib.util
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
INTEROP = HERE.parent / "interop"


def _server_helpers():
    """run_dev_server & co from tests/python/conftest.py when it has them, else from
    tests/interop/conftest.py (loaded under its own name: its hooks stay unregistered)."""
    conftest = sys.modules.get("conftest")
    if conftest is not None and hasattr(conftest, "run_dev_server"):
        return conftest
    spec = importlib.util.spec_from_file_location("ampdelta_interop_conftest",
                                                  INTEROP / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_helpers = _server_helpers()
run_dev_server = _helpers.run_dev_server
if str(INTEROP) not in sys.path:
    sys.path.append(str(INTEROP))
import readers  # noqa: E402  (tests/interop/readers.py)

# Keep the local cluster on the loopback interface (Ray otherwise binds its node to the
# machine's outward address), and send no usage statistics. Read when ray is imported.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
ray = pytest.importorskip("ray")
import ampdelta  # noqa: E402
import ampdelta.ray  # noqa: E402

pytestmark = pytest.mark.timeout(120)

FIRST = 24_000_000  # the dev server's first block
TXS_PER_BLOCK = 5
BLOCKS = 600
REORG_BUFFER = 20
PARTITION = 25
TXS = 'SELECT block_num, tx_index, block_hash, gas_used FROM "acme/eth_mainnet".transactions'
COLUMNS = ["block_num", "tx_index", "block_hash", "gas_used"]


@pytest.fixture(scope="module")
def ray_cluster():
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=200 << 20,
             log_to_driver=True, configure_logging=False)
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def chain():
    """600 still blocks of 5 transactions."""
    with run_dev_server("--blocks", str(BLOCKS), "--txs-per-block", str(TXS_PER_BLOCK)) as server:
        yield server


def rows_of(table) -> list:
    """The table's rows as sorted (block_num, tx_index, block_hash, gas_used) tuples."""
    table = table.select(COLUMNS)
    values = [table.column(name).to_pylist() for name in COLUMNS]
    return sorted(zip(*values))


def check_exactly_once(rows: list, first: int, last: int, what: str) -> None:
    keys = collections.Counter((r[0], r[1]) for r in rows)
    twice = sorted(k for k, c in keys.items() if c > 1)
    assert not twice, f"{what}: rows loaded twice, e.g. {twice[:10]}"
    blocks = collections.Counter(b for b, _ in keys)
    expected = set(range(first, last + 1))
    assert set(blocks) == expected, (
        f"{what}: missing {sorted(expected - set(blocks))[:10]}, "
        f"unexpected {sorted(set(blocks) - expected)[:10]}")
    short = sorted(b for b, c in blocks.items() if c != TXS_PER_BLOCK)
    assert not short, f"{what}: blocks without all their transactions: {short[:10]}"


def check_table(table: Path, expected: list, names=("deltalake", "duckdb", "polars")) -> None:
    for name in names:
        got = rows_of(readers.READERS[name](table))
        check_exactly_once(got, expected[0][0], expected[-1][0], f"{table} read by {name}")
        assert got == expected, f"{table} read by {name}: rows differ from the batch query"


@pytest.fixture(scope="module")
def batch_rows(chain) -> list:
    return rows_of(ampdelta.Client(chain.url).sql(TXS).to_arrow())


@pytest.fixture(scope="module")
def backfilled(ray_cluster, chain, tmp_path_factory):
    table = tmp_path_factory.mktemp("ray") / "txs"
    lines = []
    result = ampdelta.ray.backfill(chain.url, TXS, str(table), num_shards=3,
                                   partition_size=PARTITION, reorg_buffer=REORG_BUFFER,
                                   progress=lines.append)
    return table, result, lines


def test_three_shards_load_every_block_exactly_once(chain, backfilled, batch_rows):
    table, result, lines = backfilled
    assert len(batch_rows) == BLOCKS * TXS_PER_BLOCK
    last = FIRST + BLOCKS - 1
    # The driver fixed the range: every final block, below the reorg window of the head.
    assert (result.min_block, result.max_block, result.head) == (
        FIRST, last - REORG_BUFFER, last), result
    assert [s["shard"] for s in result.shards] == [0, 1, 2]
    assert sorted(line["shard"] for line in lines) == [0, 1, 2]  # progress, one per shard
    cells = -(-(BLOCKS - REORG_BUFFER) // PARTITION)
    assert all(s["ok"] and s["partitions_failed"] == 0 for s in result.shards), result.shards
    assert sum(s["partitions_loaded"] for s in result.shards) == cells, result.shards
    assert all(s["partitions"] == cells // 3 for s in result.shards), result.shards
    # The reorg window's blocks came through the driver's run after the shards.
    assert result.tail_rows == REORG_BUFFER * TXS_PER_BLOCK, result
    assert result.rows == BLOCKS * TXS_PER_BLOCK, result
    assert result.optimize is not None, "compact=True compacts once"
    assert result.table_version == ampdelta.Table(str(table)).version()
    check_table(table, batch_rows)


def test_a_rerun_loads_nothing(chain, backfilled, batch_rows, capsys):
    table, first_run, _ = backfilled
    version = ampdelta.Table(str(table)).version()
    again = ampdelta.ray.backfill(chain.url, TXS, str(table), num_shards=3,
                                  partition_size=PARTITION, reorg_buffer=REORG_BUFFER)
    assert again.rows == 0 and again.partitions["loaded"] == 0, again
    assert again.optimize is None and again.table_version == version, again
    err = capsys.readouterr().err
    assert "shard 2/3 done" in err, err  # progress=True: a line per shard on stderr
    check_table(table, batch_rows, names=("deltalake",))


def test_failed_tasks_are_retried_and_load_every_block_once(ray_cluster, chain, batch_rows,
                                                            tmp_path):
    flags = tmp_path / "flags"
    flags.mkdir()
    table = tmp_path / "txs"

    # Runs in each task (pickled by value): shard 0 raises before loading on its first
    # attempt; shard 1's worker process dies right after its first partition committed.
    def hook(shard):
        import os as _os
        flag = flags / f"shard-{shard}"
        if shard == 0 and not flag.exists():
            flag.touch()
            raise RuntimeError("injected failure before loading")
        if shard == 1 and not flag.exists():
            def kill_after_first_commit(result):
                if "partition_id" in (result.metadata or {}) and result.rows_loaded:
                    flag.touch()
                    _os._exit(1)
            return kill_after_first_commit
        return None

    result = ampdelta.ray.backfill(chain.url, TXS, str(table), num_shards=3,
                                   partition_size=PARTITION, reorg_buffer=REORG_BUFFER,
                                   max_task_retries=2, progress=False, _task_hook=hook)
    assert (flags / "shard-0").exists() and (flags / "shard-1").exists(), \
        "the failures were not injected"
    cells = -(-(BLOCKS - REORG_BUFFER) // PARTITION)
    by_shard = {s["shard"]: s for s in result.shards}
    # Shard 1's retry planned only what its killed attempt had not committed.
    assert by_shard[1]["partitions"] < cells // 3, by_shard[1]
    assert by_shard[0]["partitions_loaded"] == cells // 3, by_shard[0]
    assert result.rows < BLOCKS * TXS_PER_BLOCK, result  # the killed attempt's rows stay
    check_table(table, batch_rows, names=("deltalake", "duckdb"))


def test_a_max_block_in_the_reorg_window_is_refused_before_any_task(ray_cluster, chain,
                                                                     tmp_path):
    with pytest.raises(ampdelta.InvalidInputError, match="reorg window"):
        ampdelta.ray.backfill(chain.url, TXS, str(tmp_path / "txs"), num_shards=3,
                              max_block=FIRST + BLOCKS - 1, reorg_buffer=REORG_BUFFER,
                              progress=False)
    assert not (tmp_path / "txs" / "_delta_log").exists()


def test_then_stream_hands_over_to_the_live_stream(ray_cluster, tmp_path):
    last = FIRST + 399
    with run_dev_server("--blocks", "300", "--txs-per-block", str(TXS_PER_BLOCK),
                        "--block-interval-ms", "40", "--max-head", str(last)) as server:
        table = tmp_path / "txs"
        handoff = ampdelta.ray.backfill(server.url, TXS, str(table), num_shards=2,
                                        partition_size=PARTITION, reorg_buffer=REORG_BUFFER,
                                        then_stream=True, until_block=last, progress=False)
        assert isinstance(handoff, ampdelta.ray.StreamHandOff)
        backfill = handoff.backfill
        assert backfill.max_block is not None and backfill.max_block < last - REORG_BUFFER
        with handoff:
            results = list(handoff)
        assert results and all(r.success for r in results)
        expected = rows_of(ampdelta.Client(server.url).sql(TXS).to_arrow())
        assert expected[-1][0] == last
        check_table(table, expected, names=("deltalake", "duckdb"))


def test_without_ray_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=r"pip install 'ray\[data\]'"):
        ampdelta.ray.backfill("grpc://127.0.0.1:1", TXS, "/nonexistent", num_shards=2)
