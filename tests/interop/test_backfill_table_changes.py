"""What a parallel backfill treats as loaded comes from the table's live files, never from
records that can outlive the rows (issue 33): after a restore, an overwrite, a delete, an
expired `txn` record, another engine's OPTIMIZE or a copied file, a re-run of the same
backfill loads exactly what is missing, and `ampdelta verify` names what is wrong with the
table before it does. Each table is read back by deltalake and DuckDB (Spark where Spark
changed it)."""
from __future__ import annotations

import json
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

import readers
from conftest import QUICKSTART_FIRST, cli_env, cli_path, run_dev_server
from test_parallel_load import TXS, TXS_PER_BLOCK, check_exactly_once, check_readers

FIRST = QUICKSTART_FIRST
# Four partitions of 20 blocks, one worker: a commit each, versions 0..3 in block order.
LAST = FIRST + 79
GRID = ("--workers", "1", "--partition-size", "20", "--min-block", str(FIRST),
        "--max-block", str(LAST), "--reorg-buffer", "20")
EXIT_FINDINGS = 7


def cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([str(cli_path()), *args], env=cli_env(), capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def describe(proc: subprocess.CompletedProcess) -> str:
    return f"{proc.args}\nexit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-4000:]}"


def backfill(url: str, table: Path, *extra: str) -> subprocess.CompletedProcess:
    return cli("load", "--server", url, "--table", str(table), "--sql", TXS, *GRID, *extra)


def summary(proc: subprocess.CompletedProcess) -> dict[str, str]:
    """The key=value summary line a parallel load prints on stderr."""
    for line in reversed(proc.stderr.splitlines()):
        if "partitions=" in line:
            return dict(part.split("=", 1) for part in line.split() if "=" in part)
    raise AssertionError(describe(proc))


def verify(table: Path) -> tuple[subprocess.CompletedProcess, dict]:
    proc = cli("verify", str(table), "--json")
    assert proc.returncode in (0, EXIT_FINDINGS), describe(proc)
    return proc, json.loads(proc.stdout)


def live_adds(table: Path) -> dict[str, dict]:
    """The live files' add actions, from the JSON commits (no checkpoint in these tables)."""
    adds: dict[str, dict] = {}
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                adds[action["add"]["path"]] = action["add"]
            elif "remove" in action:
                adds.pop(action["remove"]["path"], None)
    return adds


def append_commit(table: Path, *actions: dict) -> None:
    log = table / "_delta_log"
    version = max(int(p.stem) for p in log.glob("*.json")) + 1
    lines = [{"commitInfo": {"operation": "WRITE"}}, *actions]
    (log / f"{version:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in lines))


@pytest.fixture(scope="module")
def chain():
    """200 still blocks of 5 transactions."""
    with run_dev_server("--blocks", "200", "--txs-per-block", str(TXS_PER_BLOCK)) as server:
        yield server


NO_OPTIMIZE = ("--config", '{"optimize_after_write": false}')


@pytest.fixture
def backfilled(chain, tmp_path) -> Path:
    """Four partitions, a file each (no compaction after the backfill)."""
    table = tmp_path / "txs"
    done = backfill(chain.url, table, *NO_OPTIMIZE)
    assert done.returncode == 0, describe(done)
    assert summary(done)["partitions_loaded"] == "4", describe(done)
    return table


def test_a_rerun_after_a_restore_loads_what_the_restore_took_back(chain, tmp_path):
    # Compacted after the backfill (the default): one file names all four partitions.
    table = tmp_path / "txs"
    done = backfill(chain.url, table)
    assert done.returncode == 0, describe(done)
    assert len(live_adds(table)) == 1
    proc, report = verify(table)
    assert proc.returncode == 0, report
    assert report["backfilled"], report
    restored = cli("table", "restore", str(table), "--version", "1")
    assert restored.returncode == 0, describe(restored)
    # verify names the records the rows contradict and the blocks missing from the plan.
    proc, report = verify(table)
    assert proc.returncode == EXIT_FINDINGS, describe(proc)
    assert report["counts"].get("stale_record") == 2, report
    assert report["counts"].get("gap") == 1, report
    gap = next(f for f in report["findings"] if f["kind"] == "gap")
    assert (gap["first_block"], gap["last_block"]) == (FIRST + 40, LAST), gap
    # A stream of the query refuses to continue after the gap…
    stream = cli("load", "--server", chain.url, "--table", str(table), "--sql", TXS,
                 "--stream", "--until-block", str(FIRST + 150))
    assert stream.returncode == 2, describe(stream)
    assert f"{FIRST + 40}-{LAST} are missing" in stream.stderr, describe(stream)
    # …and the re-run loads exactly the two partitions back (it used to load nothing).
    again = backfill(chain.url, table)
    assert again.returncode == 0, describe(again)
    assert summary(again)["partitions_loaded"] == "2", describe(again)
    assert f"Loaded {40 * TXS_PER_BLOCK} rows" in again.stdout, describe(again)
    assert "no live file holds their rows" in again.stderr, describe(again)
    check_readers(table, FIRST, LAST)
    proc, report = verify(table)
    assert proc.returncode == 0, report


def test_a_rerun_after_an_overwrite_of_some_blocks_loads_the_rest(chain, backfilled):
    table = backfilled
    some = f"{TXS} WHERE block_num >= {FIRST} AND block_num <= {FIRST + 39}"
    overwrite = cli("load", "--server", chain.url, "--table", str(table), "--sql", some,
                    "--mode", "overwrite")
    assert overwrite.returncode == 0, describe(overwrite)
    proc, report = verify(table)
    assert proc.returncode == EXIT_FINDINGS and report["counts"].get("gap") == 1, report
    again = backfill(chain.url, table)
    assert again.returncode == 0, describe(again)
    assert summary(again)["partitions_loaded"] == "2", describe(again)
    check_readers(table, FIRST, LAST)


def test_an_overwrite_inside_a_partition_is_refused_naming_it_with_the_table_kept(
        chain, backfilled):
    table = backfilled
    some = f"{TXS} WHERE block_num >= {FIRST} AND block_num <= {FIRST + 29}"
    overwrite = cli("load", "--server", chain.url, "--table", str(table), "--sql", some,
                    "--mode", "overwrite")
    assert overwrite.returncode == 0, describe(overwrite)
    before = sorted(p.name for p in (table / "_delta_log").iterdir())
    again = backfill(chain.url, table)
    assert again.returncode == 6, describe(again)
    assert (f"blocks {FIRST + 20}-{FIRST + 39} of mainnet hold 50 of the 100 rows"
            in again.stderr), describe(again)
    assert sorted(p.name for p in (table / "_delta_log").iterdir()) == before
    proc, report = verify(table)
    assert report["counts"].get("missing_rows") == 1, report


def test_a_rerun_after_the_records_expired_loads_nothing_twice(chain, tmp_path):
    table = tmp_path / "txs"
    retention = ("--property", "delta.setTransactionRetentionDuration=interval 1 millisecond")
    first = backfill(chain.url, table, *retention)
    assert first.returncode == 0, describe(first)
    # A later commit ages the first run's records out.
    later = cli("load", "--server", chain.url, "--table", str(table), "--sql", TXS,
                "--workers", "1", "--partition-size", "20", "--min-block", str(LAST + 1),
                "--max-block", str(LAST + 20), "--reorg-buffer", "20")
    assert later.returncode == 0, describe(later)
    again = backfill(chain.url, table)
    assert again.returncode == 0, describe(again)
    assert summary(again)["partitions_loaded"] == "0", describe(again)
    check_readers(table, FIRST, LAST + 20)
    proc, report = verify(table)
    assert proc.returncode == 0, report


def test_verify_finds_a_partitions_file_added_twice(backfilled):
    table = backfilled
    adds = live_adds(table)
    source = sorted(adds)[1]
    shutil.copy(table / source, table / ("copy-" + source))
    append_commit(table, {"add": dict(adds[source], path="copy-" + source)})
    proc, report = verify(table)
    assert proc.returncode == EXIT_FINDINGS, describe(proc)
    doubled = [f for f in report["findings"]
               if f["kind"] == "duplicate_block" and "rows are there twice" in f["message"]]
    assert len(doubled) == 1, report
    assert "holds 200 rows; its backfill commit loaded 100" in doubled[0]["message"], doubled


def test_verify_finds_two_commits_of_the_same_blocks(backfilled):
    """The table a re-run after expired records used to leave: every partition twice."""
    table = backfilled
    adds = live_adds(table)
    source = sorted(adds)[0]
    tags = adds[source]["tags"]
    key = next(k for k in tags if k.startswith("ampdelta.backfill."))
    part = json.loads(tags[key])[0]
    shutil.copy(table / source, table / ("again-" + source))
    twin = dict(part, rows=part["rows"] + 1)  # a second commit of the same blocks
    append_commit(table, {"add": dict(adds[source], path="again-" + source,
                                      tags={key: json.dumps([twin])})})
    proc, report = verify(table)
    assert proc.returncode == EXIT_FINDINGS, describe(proc)
    assert any("loaded by two backfill commits" in f["message"]
               for f in report["findings"]), report


def test_a_rerun_after_sparks_optimize_dropped_the_tags_loads_nothing(chain, backfilled):
    table = backfilled
    spark = readers.spark_session()
    spark.sql(f"OPTIMIZE delta.`{table}`").collect()
    assert not any(a.get("tags") for a in live_adds(table).values())
    again = backfill(chain.url, table)
    assert again.returncode == 0, describe(again)
    assert summary(again)["partitions_loaded"] == "0", describe(again)
    check_readers(table, FIRST, LAST)
    check_exactly_once(readers.read_spark(table), FIRST, LAST, "read by spark")
    proc, report = verify(table)
    assert proc.returncode == 0, report


def test_a_delete_of_whole_partitions_is_respected_by_the_rerun(chain, backfilled):
    """ampdelta's own delete keeps the tags (an empty file carries them): deleted rows
    are the user's choice, and a re-run does not bring them back."""
    table = backfilled
    deleted = cli("table", "delete", str(table), "--where",
                  f"block_num >= {FIRST + 20} AND block_num <= {FIRST + 39}")
    assert deleted.returncode == 0, describe(deleted)
    again = backfill(chain.url, table)
    assert again.returncode == 0, describe(again)
    assert summary(again)["partitions_loaded"] == "0", describe(again)
    rows = readers.read_deltalake(table)
    assert sorted(set(rows.column("block_num").to_pylist())) == \
        list(range(FIRST, FIRST + 20)) + list(range(FIRST + 40, LAST + 1))


def test_concurrent_reruns_with_different_grids_after_a_restore_load_each_block_once(
        chain, backfilled):
    table = backfilled
    restored = cli("table", "restore", str(table), "--version", "0")
    assert restored.returncode == 0, describe(restored)
    results: list[subprocess.CompletedProcess] = []
    grids = (("--partition-size", "20"), ("--partition-size", "7"))

    def run(grid):
        results.append(cli("load", "--server", chain.url, "--table", str(table), "--sql", TXS,
                           "--workers", "2", *grid, "--min-block", str(FIRST), "--max-block",
                           str(LAST), "--reorg-buffer", "20"))

    threads = [threading.Thread(target=run, args=(grid,)) for grid in grids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for proc in results:
        assert proc.returncode == 0, describe(proc)
    check_readers(table, FIRST, LAST)
    proc, report = verify(table)
    assert proc.returncode == 0, report


@pytest.mark.parametrize("takeover", ["after-table-max", f"from-block:{FIRST + 50}"])
def test_a_stream_taking_over_a_backfill_verifies_clean_and_a_rerun_loads_nothing(
        chain, backfilled, takeover):
    """The stream replaces the backfill's rows from its takeover block on: verify must not
    call the records of those blocks stale, nor the blocks loaded twice."""
    table = backfilled
    last = FIRST + 199  # the chain's head: a stream stops at a commit reaching --until-block
    stream = cli("load", "--server", chain.url, "--table", str(table), "--sql", TXS,
                 "--stream", "--takeover", takeover, "--reorg-window", "10",
                 "--until-block", str(last))
    assert stream.returncode == 0, describe(stream)
    check_readers(table, FIRST, last)
    proc, report = verify(table)
    assert proc.returncode == 0, report
    again = backfill(chain.url, table)
    assert again.returncode == 0, describe(again)
    assert "Loaded 0 rows" in again.stdout, describe(again)
    check_readers(table, FIRST, last)


def stream(url: str, table: Path, *extra: str) -> subprocess.CompletedProcess:
    return cli("load", "--server", url, "--table", str(table), "--sql", TXS, "--stream",
               "--until-block", str(FIRST + 199), *extra)


def test_a_restore_to_before_a_takeover_inside_the_backfill_is_completed_by_the_stream(
        chain, backfilled):
    """The takeover record outlives the stream's rows: blocks from it on stay the
    stream's, which takes over again after the blocks the restore brought back (the
    backfill and the stream used to point at each other, and the table kept a gap)."""
    table = backfilled  # versions 0..3: partitions of 20 blocks
    taken = stream(chain.url, table, "--takeover", f"from-block:{FIRST + 50}")
    assert taken.returncode == 0, describe(taken)
    restored = cli("table", "restore", str(table), "--version", "2")  # blocks 0..59
    assert restored.returncode == 0, describe(restored)
    again = backfill(chain.url, table)
    assert again.returncode == 0, describe(again)
    assert "no live file holds their rows" not in again.stderr, describe(again)
    resumed = stream(chain.url, table)
    assert resumed.returncode == 0, describe(resumed)
    check_readers(table, FIRST, FIRST + 199)
    proc, report = verify(table)
    assert proc.returncode == 0, report


def test_a_stream_stopped_between_its_takeover_and_its_first_rows_is_no_finding(
        chain, backfilled):
    """The takeover's DELETE commit alone (a kill -9 before the stream's first data
    commit): the blocks from the takeover on are the stream's, not a backfill gap, and
    restarting the stream completes the table."""
    table = backfilled
    taken = stream(chain.url, table, "--takeover", f"from-block:{FIRST + 50}")
    assert taken.returncode == 0, describe(taken)
    takeover_version = 4  # the versions after the four partitions: the takeover first
    restored = cli("table", "restore", str(table), "--version", str(takeover_version))
    assert restored.returncode == 0, describe(restored)
    proc, report = verify(table)
    assert proc.returncode == 0, report
    again = backfill(chain.url, table)
    assert again.returncode == 0, describe(again)
    assert "Loaded 0 rows" in again.stdout, describe(again)
    resumed = stream(chain.url, table)
    assert resumed.returncode == 0, describe(resumed)
    check_readers(table, FIRST, FIRST + 199)
    proc, report = verify(table)
    assert proc.returncode == 0, report


def test_a_takeover_after_the_tables_last_block_warns_and_verify_names_the_gap(
        chain, backfilled):
    table = backfilled
    taken = stream(chain.url, table, "--takeover", f"from-block:{LAST + 2}")
    assert taken.returncode == 0, describe(taken)
    assert f"blocks {LAST + 1}-{LAST + 1} are in no load" in taken.stderr, describe(taken)
    proc, report = verify(table)
    assert proc.returncode == EXIT_FINDINGS, report
    gap = [f for f in report["findings"] if f["kind"] == "gap"]
    assert [(f["first_block"], f["last_block"]) for f in gap] == [(LAST + 1, LAST + 1)], report
