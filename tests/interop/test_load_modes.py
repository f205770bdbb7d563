"""`ampdelta load` modes (merge, upsert, commit_every_rows, error, ignore), read back by every
independent reader."""
import inspect
import json
import pathlib
import subprocess

import pytest

import readers
from conftest import QUICKSTART_BLOCKS, QUICKSTART_FIRST, cli_env, cli_path

BLOCKS = 'SELECT block_num, timestamp, hash, gas_used FROM "acme/eth_mainnet".blocks'
TXS = 'SELECT block_num, tx_index, gas_used FROM "acme/eth_mainnet".transactions'
# optimize_after_write (on by default) adds an OPTIMIZE version after a load: off wherever
# versions are counted.
NO_OPTIMIZE = ("--config", '{"optimize_after_write": false}')
ALL_BLOCKS = list(range(QUICKSTART_FIRST, QUICKSTART_FIRST + QUICKSTART_BLOCKS))
# The readers that can time travel (read_*(path, version=N)).
VERSIONED = [name for name, read in readers.READERS.items()
             if "version" in inspect.signature(read).parameters]


def load(url, table, sql, *extra):
    return subprocess.run([str(cli_path()), "load", "--server", url, "--table", str(table),
                           "--sql", sql, *extra], env=cli_env(), capture_output=True, text=True,
                          timeout=120)


def loaded(url, table, sql, *extra):
    """Run a load that must succeed; return its stderr key=value pairs."""
    done = load(url, table, sql, *extra)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("✅ Loaded "), done.stdout
    return dict(pair.split("=", 1) for pair in done.stderr.split() if "=" in pair)


def version(table):
    from deltalake import DeltaTable

    return DeltaTable(str(table)).version()


def newest_commit(table):
    from deltalake import DeltaTable

    return DeltaTable(str(table)).history(1)[0]


def log_actions(table, number, kind):
    """The `kind` actions (add, remove, commitInfo) of commit `number`, read from the log."""
    log = pathlib.Path(table) / "_delta_log" / f"{number:020d}.json"
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [line[kind] for line in lines if kind in line]


def parquet_files(table):
    return sorted(p for p in pathlib.Path(table).rglob("*.parquet") if "_delta_log" not in p.parts)


def column(got, name):
    return got.column(name).to_pylist()


def pairs(got):
    return sorted(zip(column(got, "block_num"), column(got, "tx_index")))


@pytest.mark.timeout(180)
def test_merge_replaces_matching_keys_inserts_the_rest_and_keeps_history(
        quickstart_url, dev_server_factory, tmp_path):
    # Another seed: the same block numbers with other hashes, so updated rows are visible.
    other = dev_server_factory("--seed", "1")
    table = tmp_path / "blocks"
    loaded(quickstart_url, table, f"{BLOCKS} WHERE block_num < 24000060", *NO_OPTIMIZE)
    source = f"{BLOCKS} WHERE block_num >= 24000040"
    merged = loaded(other.url, table, source, "--mode", "merge", "--merge-keys", "block_num",
                    *NO_OPTIMIZE)
    assert (merged["commits"], merged["table_version"]) == ("1", "1"), merged
    assert (merged["rows_inserted"], merged["rows_updated"]) == ("40", "20"), merged
    assert version(table) == 1

    reference = tmp_path / "seed1"
    loaded(other.url, reference, source, *NO_OPTIMIZE)
    seed1 = readers.read_deltalake(str(reference))
    seed1 = dict(zip(column(seed1, "block_num"), column(seed1, "hash")))
    before = readers.read_deltalake(str(table), version=0)
    before = dict(zip(column(before, "block_num"), column(before, "hash")))
    assert all(before[b] != seed1[b] for b in range(24000040, 24000060))
    expected = {b: h for b, h in before.items() if b < 24000040} | seed1
    assert sorted(expected) == ALL_BLOCKS

    for name, read in readers.READERS.items():
        got = read(str(table))
        assert got.num_rows == 100, name
        assert sorted(column(got, "block_num")) == ALL_BLOCKS, name
        assert dict(zip(column(got, "block_num"), column(got, "hash"))) == expected, name
    for name in VERSIONED:
        previous = readers.READERS[name](str(table), version=0)
        assert sorted(column(previous, "block_num")) == ALL_BLOCKS[:60], name

    commit = newest_commit(table)
    assert commit["operation"] == "MERGE"
    assert commit["version"] == 1
    metrics = commit["operationMetrics"]
    assert (metrics["numTargetRowsUpdated"], metrics["numTargetRowsInserted"]) == ("20", "40")
    assert (metrics["numTargetRowsCopied"], metrics["numSourceRows"]) == ("40", "60")


@pytest.mark.timeout(120)
def test_merge_rewrites_only_the_files_whose_key_stats_may_match(quickstart_url, tmp_path):
    from deltalake import DeltaTable

    table = tmp_path / "blocks"
    loaded(quickstart_url, table, f"{BLOCKS} WHERE block_num < 24000050", *NO_OPTIMIZE)
    loaded(quickstart_url, table, f"{BLOCKS} WHERE block_num >= 24000050", *NO_OPTIMIZE)
    low, high = log_actions(table, 0, "add")[0], log_actions(table, 1, "add")[0]
    source = f"{BLOCKS} WHERE block_num BETWEEN 24000090 AND 24000109"
    merged = loaded(quickstart_url, table, source, "--mode", "merge", "--merge-keys", "block_num",
                    *NO_OPTIMIZE)
    assert (merged["rows_inserted"], merged["rows_updated"]) == ("0", "10"), merged
    assert version(table) == 2
    # Only the file holding blocks 50..99 is rewritten; blocks 0..49 stay where they were.
    assert [r["path"] for r in log_actions(table, 2, "remove")] == [high["path"]]
    added = log_actions(table, 2, "add")
    assert len(added) == 1 and json.loads(added[0]["stats"])["numRecords"] == 50
    metrics = log_actions(table, 2, "commitInfo")[0]["operationMetrics"]
    assert metrics["numTargetFilesRemoved"] == "1"
    assert metrics["numTargetRowsCopied"] == "40"
    live = sorted(pathlib.PurePath(uri).name for uri in DeltaTable(str(table)).file_uris())
    assert live == sorted([low["path"], added[0]["path"]])
    for name, read in readers.READERS.items():
        got = read(str(table))
        assert sorted(column(got, "block_num")) == ALL_BLOCKS, name


@pytest.mark.timeout(120)
def test_upsert_keeps_the_last_row_of_each_key_within_one_load(quickstart_url, tmp_path):
    table = tmp_path / "last"
    # 8 transactions per block, in tx_index order: the last one of each block wins.
    sql = 'SELECT block_num, tx_index FROM "acme/eth_mainnet".transactions'
    upserted = loaded(quickstart_url, table, sql, "--mode", "upsert", "--merge-keys", "block_num",
                      *NO_OPTIMIZE)
    assert (upserted["commits"], upserted["table_version"]) == ("1", "0"), upserted
    assert (upserted["rows_inserted"], upserted["rows_updated"]) == ("100", "0"), upserted
    assert newest_commit(table)["operation"] == "MERGE"
    for name, read in readers.READERS.items():
        got = read(str(table))
        assert got.num_rows == 100, name
        assert pairs(got) == [(b, 7) for b in ALL_BLOCKS], name
    # Upserting the same rows again changes nothing but still commits one MERGE.
    again = loaded(quickstart_url, table, sql, "--mode", "upsert", "--merge-keys", "block_num",
                   *NO_OPTIMIZE)
    assert (again["rows_inserted"], again["rows_updated"]) == ("0", "100"), again
    assert newest_commit(table)["operation"] == "MERGE"
    assert version(table) == 1
    for name, read in readers.READERS.items():
        assert pairs(read(str(table))) == [(b, 7) for b in ALL_BLOCKS], name


@pytest.mark.timeout(120)
def test_merge_on_composite_keys_matches_whole_keys_only(quickstart_url, tmp_path):
    table = tmp_path / "tx"
    loaded(quickstart_url, table, f"{TXS} WHERE tx_index < 4", *NO_OPTIMIZE)
    merged = loaded(quickstart_url, table, f"{TXS} WHERE block_num >= 24000050",
                    "--mode", "merge", "--merge-keys", "block_num,tx_index", *NO_OPTIMIZE)
    # 50 blocks x 8 transactions: tx 0..3 already there (updated), tx 4..7 new (inserted).
    assert (merged["rows_inserted"], merged["rows_updated"]) == ("200", "200"), merged
    assert version(table) == 1
    commit = newest_commit(table)
    assert commit["operation"] == "MERGE"
    assert commit["operationParameters"]["predicate"] == (
        "target.block_num = source.block_num AND target.tx_index = source.tx_index")
    expected = sorted((b, t) for b in ALL_BLOCKS for t in range(8) if t < 4 or b >= 24000050)
    assert len(expected) == 600
    for name, read in readers.READERS.items():
        got = read(str(table))
        assert got.num_rows == 600, name
        assert pairs(got) == expected, name  # sorted: a duplicated pair would show here


@pytest.mark.timeout(120)
def test_commit_every_rows_commits_in_slices_of_one_batch(quickstart_url, tmp_path):
    table = tmp_path / "tx"
    stats = loaded(quickstart_url, table, TXS, "--commit-every-rows", "200", *NO_OPTIMIZE)
    commits = int(stats["commits"])
    assert commits == 4, stats  # 800 rows, 200 per commit
    assert version(table) == int(stats["table_version"]) == commits - 1
    for name, read in readers.READERS.items():
        assert read(str(table)).num_rows == 800, name
    for name in VERSIONED:
        assert readers.READERS[name](str(table), version=0).num_rows == 200, name


@pytest.mark.timeout(120)
def test_commit_every_rows_commits_between_batches_and_readers_see_every_row(
        dev_server_factory, tmp_path):
    # 2,100 blocks x 8 transactions = 16,800 rows: more than one server batch (16,384 rows).
    server = dev_server_factory("--blocks", "2100")
    table = tmp_path / "tx"
    sql = 'SELECT block_num, tx_index FROM "acme/eth_mainnet".transactions'
    stats = loaded(server.url, table, sql, "--commit-every-rows", "200", *NO_OPTIMIZE)
    commits = int(stats["commits"])
    assert commits >= 2, stats
    assert version(table) == int(stats["table_version"]) == commits - 1
    operations = [log_actions(table, v, "commitInfo")[0]["operation"] for v in range(commits)]
    assert operations == ["WRITE"] * commits
    expected = [(b, t) for b in range(QUICKSTART_FIRST, QUICKSTART_FIRST + 2100) for t in range(8)]
    for name, read in readers.READERS.items():
        got = read(str(table))
        assert got.num_rows == 16800, name
        assert pairs(got) == expected, name
    # Each commit is a slice: the first version holds some rows, not all of them.
    for name in VERSIONED:
        first = readers.READERS[name](str(table), version=0).num_rows
        assert 200 <= first < 16800, name


@pytest.mark.timeout(120)
def test_error_and_ignore_modes_leave_an_existing_table_alone(quickstart_url, tmp_path):
    table = tmp_path / "blocks"
    loaded(quickstart_url, table, f"{BLOCKS} WHERE block_num < 24000010", *NO_OPTIMIZE)
    files = parquet_files(table)
    error = load(quickstart_url, table, BLOCKS, "--mode", "error", *NO_OPTIMIZE)
    assert error.returncode == 2, error.stdout + error.stderr  # bad input: the table exists
    assert "table already exists" in error.stdout and "(mode error)" in error.stdout, error.stdout
    assert version(table) == 0
    ignore = load(quickstart_url, table, BLOCKS, "--mode", "ignore", *NO_OPTIMIZE)
    assert ignore.returncode == 0, ignore.stdout + ignore.stderr
    assert ignore.stdout.startswith("✅ Loaded 0 rows to "), ignore.stdout
    assert version(table) == 0
    assert parquet_files(table) == files
    for name, read in readers.READERS.items():
        got = read(str(table))
        assert got.num_rows == 10, name
        assert sorted(column(got, "block_num")) == ALL_BLOCKS[:10], name
    # On a new table both simply write.
    for mode in ("error", "ignore"):
        fresh = tmp_path / mode
        stats = loaded(quickstart_url, fresh, BLOCKS, "--mode", mode, *NO_OPTIMIZE)
        assert stats["table_version"] == "0", (mode, stats)
        assert sorted(column(readers.read_deltalake(str(fresh)), "block_num")) == ALL_BLOCKS, mode


@pytest.mark.timeout(60)
def test_merge_errors_name_the_problem_and_leave_the_table(quickstart_url, tmp_path):
    table = tmp_path / "blocks"
    loaded(quickstart_url, table, f"{BLOCKS} WHERE block_num < 24000010", *NO_OPTIMIZE)
    files = parquet_files(table)
    cases = [
        (("--mode", "merge"), "mode 'merge' needs merge_keys: the columns that identify a row"),
        (("--mode", "upsert"), "mode 'upsert' needs merge_keys"),
        (("--mode", "merge", "--merge-keys", "tx_index"),
         "merge key column 'tx_index' not found in the data"),
        (("--mode", "upsert", "--merge-keys", "block_num,tx_hash"),
         "merge key column 'tx_hash' not found in the data"),
        (("--mode", "merge", "--merge-keys", "block_num", "--commit-every-rows", "10"),
         "commit_every_rows cannot be combined with mode 'merge'"),
    ]
    for args, message in cases:
        bad = load(quickstart_url, table, BLOCKS, *args, *NO_OPTIMIZE)
        assert bad.returncode == 2, (args, bad.stdout, bad.stderr)  # bad input
        assert message in bad.stdout, (args, bad.stdout)
        assert version(table) == 0, args
        assert parquet_files(table) == files, args
    assert sorted(column(readers.read_deltalake(str(table)), "block_num")) == ALL_BLOCKS[:10]
