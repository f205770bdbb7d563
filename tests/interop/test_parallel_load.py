"""Parallel backfills (`ampdelta load --workers N …`, docs/scale-out.md) read back by
independent readers: every block's rows exactly once for 1, 2, 4 and 8 workers on a new
and an existing table, re-runs that overlap, a worker killed with SIGKILL and the command
re-run, the hand-off to a live stream while blocks arrive and the head reorgs, the seed's
parallel scenario (17,153 transactions, 4 workers) by all four readers, shard
processes writing one table on the S3 emulator, one of them killed and re-run, and the
final compaction stitching the partitions' row groups into a file every reader reads.
"""
from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import emulator_s3
import readers
from conftest import QUICKSTART_FIRST, cli_env, cli_path, run_dev_server
from test_stream_crash import canonical_hashes, hex_hash

TXS = 'SELECT block_num, tx_index, block_hash, gas_used FROM "acme/eth_mainnet".transactions'
TXS_PER_BLOCK = 5
# Partitions load blocks at least this far below the head; a stream loads the rest.
BUFFER = ("--reorg-buffer", "20")


def load(url: str, table, *extra: str, env_extra: dict | None = None,
         timeout: float = 180) -> subprocess.CompletedProcess:
    env = cli_env()
    env.update(env_extra or {})
    return subprocess.run([str(cli_path()), "load", "--server", url, "--table", str(table),
                           "--sql", TXS, *extra], env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def describe(proc: subprocess.CompletedProcess) -> str:
    return f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-4000:]}"


def check_exactly_once(rows, first: int, last: int, what: str,
                       txs_per_block: int = TXS_PER_BLOCK) -> None:
    """Each (block_num, tx_index) of first..last once, no other block."""
    keys = list(zip(rows.column("block_num").to_pylist(), rows.column("tx_index").to_pylist()))
    twice = {k: c for k, c in collections.Counter(keys).items() if c > 1}
    assert not twice, f"{what}: rows loaded twice, e.g. {sorted(twice)[:10]}"
    blocks = collections.Counter(b for b, _ in keys)
    expected = set(range(first, last + 1))
    missing = sorted(expected - set(blocks))
    extra = sorted(set(blocks) - expected)
    assert not missing and not extra, f"{what}: missing {missing[:10]}, unexpected {extra[:10]}"
    short = {b: c for b, c in blocks.items() if c != txs_per_block}
    assert not short, f"{what}: blocks without all their transactions: {sorted(short.items())[:10]}"


def check_readers(table, first: int, last: int, names=("deltalake", "duckdb")) -> None:
    for name in names:
        check_exactly_once(readers.READERS[name](table), first, last, f"{table} read by {name}")


@pytest.fixture(scope="module")
def chain():
    """400 still blocks of 5 transactions."""
    with run_dev_server("--blocks", "400", "--txs-per-block", str(TXS_PER_BLOCK)) as server:
        yield server


@pytest.mark.parametrize("workers", [1, 2, 4, 8])
@pytest.mark.parametrize("table_state", ["new", "existing"])
def test_workers_load_every_block_exactly_once(tmp_path, chain, workers, table_state):
    table = tmp_path / "txs"
    first = QUICKSTART_FIRST
    if table_state == "existing":
        # A table another load created, holding blocks below the backfill's range.
        plain = subprocess.run(
            [str(cli_path()), "load", "--server", chain.url, "--table", str(table), "--sql",
             f"{TXS} WHERE block_num < {QUICKSTART_FIRST + 40}"],
            env=cli_env(), capture_output=True, text=True, timeout=120)
        assert plain.returncode == 0, describe(plain)
        done = load(chain.url, table, "--workers", str(workers), "--min-block",
                    str(QUICKSTART_FIRST + 40), "--partition-size", "30", *BUFFER)
    else:
        done = load(chain.url, table, "--workers", str(workers), "--partition-size", "30",
                    *BUFFER)
    assert done.returncode == 0, describe(done)
    assert "partitions_failed=0" in done.stderr, describe(done)
    check_readers(table, first, QUICKSTART_FIRST + 399)


def test_overlapping_reruns_load_only_the_missing_blocks(tmp_path, chain):
    table = tmp_path / "txs"
    middle = load(chain.url, table, "--workers", "3", "--partition-size", "17",
                  "--min-block", str(QUICKSTART_FIRST + 100), "--max-block",
                  str(QUICKSTART_FIRST + 219), *BUFFER)
    assert middle.returncode == 0, describe(middle)
    whole = load(chain.url, table, "--workers", "4", "--partition-size", "45", *BUFFER)
    assert whole.returncode == 0, describe(whole)
    assert f"Loaded {(400 - 120) * TXS_PER_BLOCK} rows" in whole.stdout, describe(whole)
    again = load(chain.url, table, "--workers", "2", *BUFFER)
    assert again.returncode == 0 and "Loaded 0 rows" in again.stdout, describe(again)
    check_readers(table, QUICKSTART_FIRST, QUICKSTART_FIRST + 399)


def test_a_query_grouped_by_block_loads_the_same_rows_split_as_whole(tmp_path, chain):
    grouped = ("SELECT block_num, COUNT(*) AS txs, MAX(gas_used) AS gas "
               'FROM "acme/eth_mainnet".transactions\n-- per block\nGROUP BY block_num')
    whole, split = tmp_path / "whole", tmp_path / "split"
    # An aggregate cannot stream: the split load stops at a final block.
    last = QUICKSTART_FIRST + 379
    for table, extra in ((whole, ()), (split, ("--workers", "3", "--partition-size", "7",
                                                "--max-block", str(last), *BUFFER))):
        done = subprocess.run([str(cli_path()), "load", "--server", chain.url, "--table",
                               str(table), "--sql", grouped, *extra], env=cli_env(),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, describe(done)
    for name in ("deltalake", "duckdb"):
        rows = lambda table: sorted(
            (r["block_num"], r["txs"], r["gas"])
            for r in readers.READERS[name](table).select(["block_num", "txs", "gas"])
            .to_pylist())
        expected = [row for row in rows(whole) if row[0] <= last]
        assert len(expected) == 380 and rows(split) == expected, name
    # Without --max-block the blocks of the reorg window would need a stream: refused
    # before anything is loaded.
    refused = subprocess.run([str(cli_path()), "load", "--server", chain.url, "--table",
                              str(tmp_path / "refused"), "--sql", grouped, "--workers", "2",
                              *BUFFER], env=cli_env(), capture_output=True, text=True,
                             timeout=120)
    assert refused.returncode != 0 and "--max-block" in refused.stderr, describe(refused)
    assert not (tmp_path / "refused").exists()


def test_a_load_killed_with_sigkill_and_run_again_loads_every_block_once(tmp_path):
    blocks = 3000
    with run_dev_server("--blocks", str(blocks), "--txs-per-block", str(TXS_PER_BLOCK)) as server:
        table = tmp_path / "txs"
        args = [str(cli_path()), "load", "--server", server.url, "--table", str(table),
                "--sql", TXS, "--workers", "2", "--partition-size", "25"]
        proc = subprocess.Popen(args, env=cli_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        # Kill it once some partitions are committed and others are in flight.
        deadline = time.monotonic() + 60
        committed = 0
        while committed < 5 and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            committed += " rows in " in line
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()
        assert committed >= 5, "the load ended before it could be killed"
        partial = readers.read_deltalake(table).num_rows
        assert 0 < partial < blocks * TXS_PER_BLOCK, partial
        rerun = load(server.url, table, "--workers", "2", "--partition-size", "25")
        assert rerun.returncode == 0, describe(rerun)
        assert "partitions_skipped=0" in rerun.stderr, describe(rerun)
        check_readers(table, QUICKSTART_FIRST, QUICKSTART_FIRST + blocks - 1)


def test_hand_off_while_blocks_arrive_and_the_head_reorgs_loads_every_block_once(tmp_path):
    # The chain grows every 40 ms and reorgs 3 blocks every 7 new ones, from the backfill's
    # first probe until well into the stream.
    last = QUICKSTART_FIRST + 300 + 120
    while (last - QUICKSTART_FIRST - 300) % 7 == 0:
        last += 1
    with run_dev_server("--blocks", "300", "--txs-per-block", str(TXS_PER_BLOCK),
                        "--block-interval-ms", "40", "--max-head", str(last),
                        "--reorg-every", "7", "--reorg-depth", "3") as server:
        table = tmp_path / "txs"
        done = load(server.url, table, "--workers", "4", "--then-stream", "--until-block",
                    str(last), "--commit-interval-ms", "50", "--reorg-buffer", "30")
        assert done.returncode == 0, describe(done)
        assert "Reorg detected" in done.stdout, describe(done)
        # The stream started after the backfill's last block, not at the dataset's start.
        handoff = int(done.stderr.split("handoff_block=")[1].split()[0])
        assert QUICKSTART_FIRST + 250 <= handoff <= last, describe(done)
        chain = canonical_hashes(server.url)
        assert max(chain) == last
        for name in ("deltalake", "duckdb"):
            rows = readers.READERS[name](table)
            check_exactly_once(rows, QUICKSTART_FIRST, last, f"{table} read by {name}")
            stale = sorted({b for b, h in zip(rows.column("block_num").to_pylist(),
                                              rows.column("block_hash").to_pylist())
                            if hex_hash(h) != chain[b]})
            assert not stale, f"{name}: rows of reorged blocks remain: {stale[:10]}"


def test_a_stream_started_after_a_backfill_continues_after_it(tmp_path, chain):
    table = tmp_path / "txs"
    backfill = load(chain.url, table, "--workers", "2", "--max-block",
                    str(QUICKSTART_FIRST + 249), *BUFFER)
    assert backfill.returncode == 0, describe(backfill)
    stream = load(chain.url, table, "--stream", "--until-block", str(QUICKSTART_FIRST + 399))
    assert stream.returncode == 0, describe(stream)
    check_readers(table, QUICKSTART_FIRST, QUICKSTART_FIRST + 399)


def test_the_seeds_parallel_scenario_reads_back_exactly_the_sources_rows(tmp_path):
    # The Quickstart's transactions as the SDK's docs load them with 4 workers: the SDK
    # writes 150,000 rows for 17,153; every reader must see 17,153, each once.
    with run_dev_server("--blocks", "1009", "--txs-per-block", "17") as server:
        table = tmp_path / "txs"
        done = load(server.url, table, "--workers", "4")
        assert done.returncode == 0, describe(done)
        assert "Loaded 17153 rows" in done.stdout, describe(done)
        for name in ("deltalake", "duckdb", "polars", "spark"):
            rows = readers.READERS[name](table)
            assert rows.num_rows == 17_153, name
            check_exactly_once(rows, QUICKSTART_FIRST, QUICKSTART_FIRST + 1008,
                               f"{table} read by {name}", txs_per_block=17)


def test_shard_processes_on_s3_load_every_block_once_with_one_killed_and_rerun(tmp_path):
    blocks = 1200
    last = QUICKSTART_FIRST + blocks - 1 - 20  # final blocks only
    with emulator_s3.start_s3_emulator() as s3, \
            run_dev_server("--blocks", str(blocks), "--txs-per-block",
                           str(TXS_PER_BLOCK)) as server:
        s3.create_bucket("ampdelta")
        uri = s3.uri("ampdelta", "txs")
        options = [arg for key, value in s3.storage_options().items()
                   for arg in ("--storage-option", f"{key}={value}")]
        common = ["--workers", "2", "--partition-size", "20", "--max-block", str(last),
                  *BUFFER, *options]

        def start(index: int, env_extra: dict[str, str], *extra: str) -> subprocess.Popen:
            env = cli_env()
            env.update(env_extra)
            return subprocess.Popen(
                [str(cli_path()), "load", "--server", server.url, "--table", uri, "--sql", TXS,
                 *common, *extra], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True, stdin=subprocess.DEVNULL)

        # Shard 0 from a Kubernetes Indexed Job's index, 1 from a Slurm array's, 2 by flag
        # (which wins over an environment that says otherwise).
        shards = [start(0, {"JOB_COMPLETION_INDEX": "0"}, "--shards", "3"),
                  start(1, {"SLURM_ARRAY_TASK_ID": "1"}, "--shards", "3"),
                  start(2, {"JOB_COMPLETION_INDEX": "0"}, "--shard", "2/3", "--shards", "3")]
        # Kill shard 1 once it has committed a few partitions.
        committed = 0
        deadline = time.monotonic() + 90
        while committed < 3 and time.monotonic() < deadline:
            line = shards[1].stderr.readline()
            if not line:
                break
            committed += " rows in " in line
        shards[1].send_signal(signal.SIGKILL)
        outcomes = []
        for proc in shards:
            out, err = proc.communicate(timeout=240)
            outcomes.append((proc.returncode, out, err))
        assert outcomes[1][0] == -signal.SIGKILL, outcomes[1]
        for code, out, err in (outcomes[0], outcomes[2]):
            assert code == 0 and "partitions_failed=0" in err, (code, out, err[-3000:])
        rerun = subprocess.run(
            [str(cli_path()), "load", "--server", server.url, "--table", uri, "--sql", TXS,
             *common, "--shard", "1/3"], env=cli_env(), capture_output=True, text=True,
            timeout=240)
        assert rerun.returncode == 0, describe(rerun)
        assert "shard=1/3" in rerun.stderr and "partitions_failed=0" in rerun.stderr, \
            describe(rerun)
        from deltalake import DeltaTable
        check_exactly_once(DeltaTable(uri, storage_options=s3.storage_options())
                           .to_pyarrow_table(), QUICKSTART_FIRST, last, f"{uri} by deltalake")
        check_exactly_once(readers.read_duckdb_s3(uri, s3.endpoint, s3.access_key_id,
                                                  s3.secret_access_key),
                           QUICKSTART_FIRST, last, f"{uri} by duckdb")


def test_bad_parallel_options_fail_with_a_clear_error_and_write_nothing(tmp_path, chain):
    table = tmp_path / "txs"
    cases = [
        (["--workers", "0"], "--workers"),
        (["--shard", "3/3"], "--shard expects i/N"),
        (["--shards", "2"], "--shards needs the shard index"),
        (["--workers", "2", "--max-block", str(QUICKSTART_FIRST + 400)],
         "past the server's head"),
        (["--workers", "2", "--max-block", str(QUICKSTART_FIRST + 390), *BUFFER],
         "within the reorg window"),
        (["--workers", "2", "--min-block", str(QUICKSTART_FIRST + 399), "--max-block",
          str(QUICKSTART_FIRST + 10)], "is above max_block"),
        (["--workers", "2", "--stream"], "--then-stream"),
        (["--workers", "2", "--mode", "overwrite"], "parallel loads append"),
        (["--workers", "2", "--batch-size", "0"], "--batch-size"),
    ]
    for extra, message in cases:
        proc = load(chain.url, table, *extra)
        assert proc.returncode != 0 and message in proc.stderr, (extra, describe(proc))
        assert not table.exists(), extra
    env = {"SLURM_ARRAY_TASK_ID": "5"}
    proc = load(chain.url, table, "--shards", "3", env_extra=env)
    assert proc.returncode != 0 and "not a shard index below --shards 3" in proc.stderr, \
        describe(proc)
    limited = subprocess.run(
        [str(cli_path()), "load", "--server", chain.url, "--table", str(table), "--sql",
         f"{TXS}\n-- the first ten\nLIMIT 10", "--workers", "2", *BUFFER],
        env=cli_env(), capture_output=True, text=True, timeout=60)
    assert limited.returncode != 0 and "LIMIT" in limited.stderr, describe(limited)
    assert not table.exists()


def test_a_backfills_final_compaction_stitches_its_partitions_for_every_reader(tmp_path):
    # Four partitions of 40,000 rows, one row group each: the compaction after the last
    # copies their row groups into one file (no decode, no encode) that every reader
    # reads, Spark with a filter that its statistics and column indexes prune by.
    txs = 400
    last = QUICKSTART_FIRST + 399
    with run_dev_server("--blocks", "440", "--txs-per-block", str(txs)) as server:
        table = tmp_path / "txs"
        done = load(server.url, table, "--workers", "4", "--partition-size", "100",
                    "--max-block", str(last), *BUFFER)
        assert done.returncode == 0, describe(done)
        assert "optimize_files_stitched=4" in done.stderr, describe(done)
    from deltalake import DeltaTable
    files = DeltaTable(str(table)).file_uris()
    assert len(files) == 1, files
    footer = pq.ParquetFile(files[0]).metadata
    assert [footer.row_group(i).num_rows for i in range(footer.num_row_groups)] == [40_000] * 4
    adds = [json.loads(line)["add"] for line in
            sorted((table / "_delta_log").glob("*.json"))[-1].read_text().splitlines()
            if '"add"' in line]
    stats = json.loads(adds[0]["stats"])
    assert stats["numRecords"] == 160_000
    assert (stats["minValues"]["block_num"], stats["maxValues"]["block_num"]) == (
        QUICKSTART_FIRST, last)
    assert stats["nullCount"]["block_num"] == 0
    for name in ("deltalake", "duckdb", "polars", "spark"):
        check_exactly_once(readers.READERS[name](table), QUICKSTART_FIRST, last,
                           f"{table} read by {name}", txs_per_block=txs)
    spark = readers.spark_session()
    low, high = QUICKSTART_FIRST + 150, QUICKSTART_FIRST + 160
    picked = spark.read.format("delta").load(str(table)).where(
        f"block_num BETWEEN {low} AND {high}").toArrow()
    check_exactly_once(picked, low, high, "Spark's filtered read", txs_per_block=txs)
