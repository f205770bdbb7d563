"""Tables downstream engines can follow: the change data feed, in-commit timestamps and the
protocol each table property asks for, read back by Spark (delta-spark, the reference),
deltalake (delta-rs), DuckDB and Polars.

A commit that removes or rewrites rows (a reorg undo, a delete, a merge) on a table with
delta.enableChangeDataFeed=true records the rows it changed in _change_data files; appends
and overwrites need none (readers infer them from add and remove). A downstream consumer
that replays the feed from version 0 must end with exactly the table's rows.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pytest

import readers
from conftest import QUICKSTART_DATASET, QUICKSTART_FIRST, QUICKSTART_LAST, cli_env, \
    cli_path, fixtures_dir, run_dev_server
from test_stream_crash import canonical_hashes, hex_hash, last_quiet_head, live_chain_args

BLOCKS_SQL = f'SELECT block_num, hash, gas_used FROM "{QUICKSTART_DATASET}".blocks'
CDF = "delta.enableChangeDataFeed=true"
ICT = "delta.enableInCommitTimestamps=true"
DV = "delta.enableDeletionVectors=true"
CLUSTER = "cluster by block_num"  # --cluster-by block_num, not a property
MAP = "delta.columnMapping.mode=name"
V2 = "delta.checkpointPolicy=v2"
WIDEN = "delta.enableTypeWidening=true"
ROWS = "delta.enableRowTracking=true"


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(cli_path()), *args], capture_output=True, text=True,
                          env=cli_env(), timeout=timeout, stdin=subprocess.DEVNULL)


def describe(proc: subprocess.CompletedProcess) -> str:
    return f"{proc.args}\nexit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"


def blocks(first: int = QUICKSTART_FIRST, last: int = QUICKSTART_LAST) -> str:
    return f"{BLOCKS_SQL} WHERE block_num >= {first} AND block_num <= {last}"


def load(url: str, table: Path, *extra: str, sql: str = BLOCKS_SQL) -> None:
    proc = run_cli("load", "--server", url, "--table", str(table), "--sql", sql,
                   "--quiet", "--config", '{"optimize_after_write": false}', *extra)
    assert proc.returncode == 0, describe(proc)


def commit_actions(table: Path, version: int) -> list[dict]:
    path = table / "_delta_log" / f"{version:020d}.json"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def protocol_of(table: Path, version: int = 0) -> dict:
    for action in commit_actions(table, version):
        if "protocol" in action:
            return action["protocol"]
    raise AssertionError(f"no protocol in version {version} of {table}")


def latest_version(table: Path) -> int:
    """The newest commit in the log (-1 before the first); temporary files are not commits."""
    log = table / "_delta_log"
    return max((int(p.stem) for p in log.glob("*.json") if p.stem.isdigit()), default=-1)


def cdc_actions(table: Path) -> dict[int, list[dict]]:
    out = {}
    for version in range(latest_version(table) + 1):
        found = [a["cdc"] for a in commit_actions(table, version) if "cdc" in a]
        if found:
            out[version] = found
    return out


def replay(changes: pa.Table) -> collections.Counter:
    """Apply a change feed (every commit, in order) to an empty table: the multiset of
    (block_num, hash) it ends with. A delete of a row that is not there fails."""
    rows = sorted(zip(changes.column("_commit_version").to_pylist(),
                      changes.column("_change_type").to_pylist(),
                      changes.column("block_num").to_pylist(),
                      (hex_hash(h) for h in changes.column("hash").to_pylist())))
    state = collections.Counter()
    # Within a commit deletes come first: a commit's inserts never depend on its deletes.
    order = {"delete": 0, "update_preimage": 0, "insert": 1, "update_postimage": 1}
    rows.sort(key=lambda r: (r[0], order[r[1]]))
    for version, kind, block, block_hash in rows:
        key = (block, block_hash)
        if order[kind] == 0:
            assert state[key] > 0, f"version {version} {kind}s {key}, which is not there"
            state[key] -= 1
            if state[key] == 0:
                del state[key]
        else:
            state[key] += 1
    return state


def table_rows(table: pa.Table) -> collections.Counter:
    return collections.Counter(zip(table.column("block_num").to_pylist(),
                                   (hex_hash(h) for h in table.column("hash").to_pylist())))


def deltalake_changes(table: Path, starting_version: int = 0) -> pa.Table:
    from deltalake import DeltaTable

    return pa.table(DeltaTable(str(table)).load_cdf(starting_version=starting_version)
                    .read_all())


def spark_changes(table: Path, starting_version: int = 0) -> pa.Table:
    spark = readers.spark_session()
    return (spark.read.format("delta").option("readChangeFeed", "true")
            .option("startingVersion", starting_version).load(str(table))
            .select("block_num", "hash", "_change_type", "_commit_version").toArrow())


# --- Protocols -------------------------------------------------------------------------------

PROTOCOLS = [
    # (properties, minReaderVersion, minWriterVersion, readerFeatures, writerFeatures)
    ((), 1, 2, None, None),
    ((CDF,), 1, 4, None, None),
    # Listed features include what writer version 2 implied, as Spark lists them (Spark
    # counts the NOT NULL columns as invariants and refuses a protocol without them).
    ((ICT,), 1, 7, None, {"inCommitTimestamp", "appendOnly", "invariants"}),
    ((CDF, ICT), 1, 7, None, {"inCommitTimestamp", "changeDataFeed", "appendOnly",
                              "invariants"}),
    ((DV,), 3, 7, {"deletionVectors"}, {"deletionVectors", "appendOnly", "invariants"}),
    ((CDF, ICT, DV), 3, 7, {"deletionVectors"},
     {"deletionVectors", "inCommitTimestamp", "changeDataFeed", "appendOnly", "invariants"}),
    # Clustering by block number adds its two writer features to whatever the properties ask.
    ((CDF, CLUSTER), 1, 7, None,
     {"changeDataFeed", "clustering", "domainMetadata", "appendOnly", "invariants"}),
    ((DV, ICT, CLUSTER), 3, 7, {"deletionVectors"},
     {"deletionVectors", "inCommitTimestamp", "clustering", "domainMetadata", "appendOnly",
      "invariants"}),
    # Reader features that Spark and Databricks tables have (docs/downstream.md "Readers").
    ((MAP,), 3, 7, {"columnMapping"}, {"columnMapping", "appendOnly", "invariants"}),
    ((V2,), 3, 7, {"v2Checkpoint"}, {"v2Checkpoint", "appendOnly", "invariants"}),
    ((WIDEN,), 3, 7, {"typeWidening"}, {"typeWidening", "appendOnly", "invariants"}),
    ((MAP, DV, CDF, ICT), 3, 7, {"columnMapping", "deletionVectors"},
     {"columnMapping", "deletionVectors", "inCommitTimestamp", "changeDataFeed", "appendOnly",
      "invariants"}),
    ((V2, WIDEN, CLUSTER), 3, 7, {"v2Checkpoint", "typeWidening"},
     {"v2Checkpoint", "typeWidening", "clustering", "domainMetadata", "appendOnly",
      "invariants"}),
    # Row tracking is a writer feature: the reader version stays, as Spark leaves it.
    ((ROWS,), 1, 7, None, {"rowTracking", "domainMetadata", "appendOnly", "invariants"}),
    ((ROWS, CLUSTER), 1, 7, None,
     {"rowTracking", "domainMetadata", "clustering", "appendOnly", "invariants"}),
    ((ROWS, MAP, DV, CDF, ICT), 3, 7, {"columnMapping", "deletionVectors"},
     {"rowTracking", "domainMetadata", "columnMapping", "deletionVectors", "inCommitTimestamp",
      "changeDataFeed", "appendOnly", "invariants"}),
]


@pytest.mark.parametrize("properties,reader,writer,reader_features,writer_features", PROTOCOLS,
                         ids=["none", "cdf", "ict", "cdf+ict", "dv", "cdf+ict+dv",
                              "cdf+cluster", "dv+ict+cluster", "map", "v2", "widen",
                              "map+dv+cdf+ict", "v2+widen+cluster", "rows", "rows+cluster",
                              "rows+map+dv+cdf+ict"])
def test_each_combination_of_properties_gets_its_protocol_and_every_reader_reads_it(
        tmp_path, quickstart_url, properties, reader, writer, reader_features,
        writer_features):
    table = tmp_path / "t"
    args = [arg for prop in properties
            for arg in (("--cluster-by", "block_num") if prop == CLUSTER else ("--property", prop))]
    load(quickstart_url, table, *args)
    protocol = protocol_of(table)
    assert protocol["minReaderVersion"] == reader, protocol
    assert protocol["minWriterVersion"] == writer, protocol
    assert (set(protocol["readerFeatures"]) if "readerFeatures" in protocol else None) \
        == reader_features, protocol
    assert (set(protocol["writerFeatures"]) if "writerFeatures" in protocol else None) \
        == writer_features, protocol
    # A delete after the load: every reader `table info` says reads the table sees 90 rows,
    # the others refuse it naming a feature (deltalake 1.6.6 deletion vectors, say).
    proc = run_cli("table", "delete", str(table), "--where", f"block_num < {QUICKSTART_FIRST + 10}")
    assert proc.returncode == 0, describe(proc)
    info = json.loads(run_cli("table", "info", str(table), "--json").stdout)
    claims = {r["name"]: r for r in info["readers"]}
    for name in ("duckdb", "spark", "polars", "deltalake"):
        if not claims[name]["reads"]:
            with pytest.raises(Exception, match="|".join(claims[name]["cannot_read"])):
                readers.READERS[name](table)
            continue
        got = readers.READERS[name](table)
        assert got.num_rows == 90, (name, got.num_rows)
        assert min(got.column("block_num").to_pylist()) == QUICKSTART_FIRST + 10, name
    if DV in properties:
        # The delete marked the rows in a deletion vector.
        assert any("add" in a and a["add"].get("deletionVector")
                   for a in commit_actions(table, 1)), commit_actions(table, 1)
    if ROWS in properties:
        # Spark reads a row ID for every row, each once.
        ids = [r["id"] for r in readers.spark_session().sql(
            f"SELECT _metadata.row_id AS id FROM delta.`{table}`").collect()]
        assert len(ids) == 90 and len(set(ids)) == 90 and None not in ids
    if CDF in properties:
        assert list(cdc_actions(table)) == [1], cdc_actions(table)
    else:
        assert not (table / "_change_data").exists()


# --- The change data feed --------------------------------------------------------------------

def test_a_delete_reads_as_deletes_of_exactly_its_rows(tmp_path, quickstart_url):
    table = tmp_path / "t"
    load(quickstart_url, table, "--property", CDF)
    cut = QUICKSTART_FIRST + 25
    for where in (f"block_num < {cut}", f"block_num = {QUICKSTART_LAST}"):
        proc = run_cli("table", "delete", str(table), "--where", where)
        assert proc.returncode == 0, describe(proc)
    for changes in (deltalake_changes(table), spark_changes(table)):
        deleted = sorted(b for b, t in zip(changes.column("block_num").to_pylist(),
                                           changes.column("_change_type").to_pylist())
                         if t == "delete")
        assert deleted == list(range(QUICKSTART_FIRST, cut)) + [QUICKSTART_LAST]
        assert replay(changes) == table_rows(readers.read_deltalake(table))
    # One file-rewriting delete each: both record change data files.
    recorded = cdc_actions(table)
    assert list(recorded) == [1, 2], recorded
    for cdc in recorded[1] + recorded[2]:
        assert cdc["path"].startswith("_change_data/cdc-") and cdc["dataChange"] is False
        assert (table / cdc["path"]).stat().st_size == cdc["size"]


def test_a_merge_reads_as_updates_and_inserts(tmp_path, quickstart_url):
    table = tmp_path / "t"
    load(quickstart_url, table, "--property", CDF, sql=blocks(last=QUICKSTART_FIRST + 89))
    load(quickstart_url, table, "--mode", "merge", "--merge-keys", "block_num",
         sql=blocks(first=QUICKSTART_FIRST + 80))
    for changes in (deltalake_changes(table, 1), spark_changes(table, 1)):
        kinds = collections.Counter(changes.column("_change_type").to_pylist())
        assert kinds == {"update_preimage": 10, "update_postimage": 10, "insert": 10}, kinds
    full = spark_changes(table)
    assert replay(full) == table_rows(readers.read_deltalake(table))
    assert readers.read_deltalake(table).num_rows == 100


def test_an_existing_table_turns_the_feed_on_with_a_property(tmp_path, quickstart_url):
    table = tmp_path / "t"
    load(quickstart_url, table, sql=blocks(last=QUICKSTART_FIRST + 49))
    assert protocol_of(table) == {"minReaderVersion": 1, "minWriterVersion": 2}
    load(quickstart_url, table, "--property", CDF, sql=blocks(first=QUICKSTART_FIRST + 50))
    upgraded = commit_actions(table, 1)
    assert {"protocol": {"minReaderVersion": 1, "minWriterVersion": 4}} in upgraded, upgraded
    metadata = next(a["metaData"] for a in upgraded if "metaData" in a)
    assert metadata["configuration"]["delta.enableChangeDataFeed"] == "true"
    proc = run_cli("table", "delete", str(table), "--where", f"block_num >= {QUICKSTART_FIRST + 95}")
    assert proc.returncode == 0, describe(proc)
    changes = spark_changes(table, 1)
    kinds = collections.Counter(changes.column("_change_type").to_pylist())
    assert kinds == {"insert": 50, "delete": 5}, kinds
    # The same property again changes nothing: no metadata in the next commit.
    load(quickstart_url, table, "--property", CDF, sql=blocks(first=QUICKSTART_LAST + 1))
    assert all("metaData" not in a for v in range(3, latest_version(table) + 1)
               for a in commit_actions(table, v))


REORG_BLOCK_INTERVAL_MS = 40
MIN_REORGS = 5


def slow_chain_args(max_head: int) -> list[str]:
    """The crash test's live chain with reorgs, a block every REORG_BLOCK_INTERVAL_MS, each
    once the stream has been sent the head (so the loader meets every reorg)."""
    args = live_chain_args(max_head)
    args[args.index("--block-interval-ms") + 1] = str(REORG_BLOCK_INTERVAL_MS)
    return [*args, "--await-streams"]


def start_stream(url: str, table: Path, until_block: int, stdout) -> subprocess.Popen:
    """`ampdelta load --stream` with the change data feed on, until `until_block`."""
    return subprocess.Popen(
        [str(cli_path()), "load", "--server", url, "--table", str(table), "--sql", BLOCKS_SQL,
         "--stream", "--commit-interval-ms", "50", "--property", CDF, "--until-block",
         str(until_block), "--config", '{"optimize_after_write": false}'],
        stdout=stdout, stderr=subprocess.PIPE, text=True, env=cli_env(),
        stdin=subprocess.DEVNULL)


def test_a_spark_stream_follows_an_ampdelta_stream_through_reorgs(tmp_path):
    """A Spark structured stream on the change feed, run incrementally (availableNow, one
    checkpoint) while ampdelta streams a chain that reorgs, ends with exactly the canonical
    rows; deltalake's load_cdf agrees."""
    spark = readers.spark_session()  # started before the chain: it takes a while
    max_head = last_quiet_head(200)
    table = tmp_path / "blocks"
    sink = tmp_path / "sink"
    checkpoint = tmp_path / "checkpoint"

    def follow() -> None:
        if not (table / "_delta_log").exists():
            return
        query = (spark.readStream.format("delta").option("readChangeFeed", "true")
                 .option("startingVersion", 0).load(str(table))
                 .select("block_num", "hash", "_change_type", "_commit_version")
                 .writeStream.format("delta").option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start(str(sink)))
        query.awaitTermination(300)

    with run_dev_server(*slow_chain_args(max_head)) as server:
        loader = start_stream(server.url, table, max_head, subprocess.PIPE)
        runs = 0
        try:
            while loader.poll() is None:
                follow()
                runs += 1
                time.sleep(0.5)
            out, err = loader.communicate(timeout=60)
        finally:
            if loader.poll() is None:
                loader.kill()
                loader.wait()
        assert loader.returncode == 0, f"exit {loader.returncode}\n{out}\n{err}"
        follow()
        chain = canonical_hashes(server.url)

    reorgs = [v for v in range(latest_version(table) + 1)
              if any("commitInfo" in a and a["commitInfo"]["operation"] == "DELETE"
                     for a in commit_actions(table, v))]
    assert len(reorgs) >= MIN_REORGS, f"only {len(reorgs)} reorg undos"
    assert set(cdc_actions(table)) == set(reorgs), "every undo, and only undos, record changes"
    canonical = collections.Counter(chain.items())
    assert table_rows(readers.read_deltalake(table)) == canonical
    followed = spark.read.format("delta").load(str(sink)).toArrow()
    assert replay(followed) == canonical, f"the Spark stream ({runs + 1} runs) diverged"
    assert replay(deltalake_changes(table)) == canonical
    # Each undo deleted only rows of blocks the chain replaced: never a canonical row.
    changes = deltalake_changes(table)
    for block, kind, block_hash in zip(changes.column("block_num").to_pylist(),
                                       changes.column("_change_type").to_pylist(),
                                       changes.column("hash").to_pylist()):
        if kind == "delete":
            assert chain[block] != hex_hash(block_hash), f"block {block} deleted while canonical"


# --- In-commit timestamps --------------------------------------------------------------------

def test_in_commit_timestamps_order_commits_whatever_the_file_times(tmp_path, quickstart_url):
    table = tmp_path / "t"
    for first in range(QUICKSTART_FIRST, QUICKSTART_FIRST + 40, 10):
        load(quickstart_url, table, "--property", ICT, sql=blocks(first, first + 9))
    stamps = []
    for version in range(4):
        actions = commit_actions(table, version)
        assert "commitInfo" in actions[0], f"version {version}: commitInfo must come first"
        stamps.append(actions[0]["commitInfo"]["inCommitTimestamp"])
    assert stamps == sorted(stamps) and len(set(stamps)) == 4, stamps
    # File times that contradict the commit order (an object store's copy, a restore from
    # backup) change nothing: readers date versions by their in-commit timestamps.
    for version in range(4):
        path = table / "_delta_log" / f"{version:020d}.json"
        os.utime(path, (1_000_000_000 - version * 1000,) * 2)
    spark = readers.spark_session()
    history = {row["version"]: row["timestamp"] for row in
               spark.sql(f"DESCRIBE HISTORY delta.`{table}`").collect()}
    # Spark gives naive UTC datetimes (the session time zone); round, as a float of
    # seconds times 1000 can fall just short of the millisecond.
    epoch = datetime(1970, 1, 1)
    assert [round((history[v] - epoch).total_seconds() * 1000) for v in range(4)] == stamps, \
        history
    as_of = datetime.fromtimestamp(stamps[1] / 1000, tz=timezone.utc).strftime(
        "%Y-%m-%d %H:%M:%S.%f")[:-3]
    rows = (spark.read.format("delta").option("timestampAsOf", as_of).load(str(table))
            .count())
    assert rows == 20, rows
    # ampdelta's own history shows the in-commit timestamps, and takes them back (to the
    # millisecond) for time travel.
    proc = run_cli("table", "history", str(table), "--json")
    assert proc.returncode == 0, describe(proc)
    printed = {entry["version"]: entry["timestamp"] for entry in json.loads(proc.stdout)}
    for version in range(4):
        scan = run_cli("table", "scan", str(table), "--timestamp", printed[version],
                       "--format", "count")
        assert scan.returncode == 0, describe(scan)
        assert scan.stdout.startswith(f"rows={10 * (version + 1)} "), describe(scan)
    for name in ("deltalake", "duckdb", "polars"):
        assert readers.READERS[name](table).num_rows == 40, name


# --- Bad input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("prop,words", [
    ("delta.enableChangeDataFeed=maybe", ["delta.enableChangeDataFeed", "true or false"]),
    ("delta.columnMapping.mode=name", ["delta.columnMapping.mode",
                                       "only when a table is created"]),
    ("delta.feature.clustering=supported", ["protocol directly"]),
    ("delta.minWriterVersion=7", ["protocol directly"]),
    ("noequals", ["KEY=VALUE"]),
    ("=true", ["KEY=VALUE"]),
    (ICT, ["only when a table is created"]),
])
def test_a_bad_property_is_refused_and_the_table_stays_as_it_was(tmp_path, quickstart_url,
                                                                  prop, words):
    table = tmp_path / "t"
    load(quickstart_url, table, sql=blocks(last=QUICKSTART_FIRST + 9))
    before = sorted(p.name for p in (table / "_delta_log").iterdir())
    proc = run_cli("load", "--server", quickstart_url, "--table", str(table), "--sql",
                   BLOCKS_SQL, "--property", prop)
    assert proc.returncode == 2, describe(proc)
    for word in words:
        assert word in proc.stderr, describe(proc)
    assert sorted(p.name for p in (table / "_delta_log").iterdir()) == before


# --- A table Spark made ------------------------------------------------------------------------

def test_ampdelta_keeps_a_spark_tables_change_feed_and_commit_timestamps(tmp_path):
    """delta-rs/cdc_ict_table (written by Spark 4.1 with Delta 4.3: change data feed and
    in-commit timestamps, partitioned by birthyear): ampdelta's delete records its change
    in the partition's _change_data folder and dates its commit after Spark's; checkpoint
    and vacuum keep both features."""
    import shutil

    table = tmp_path / "people"
    shutil.copytree(fixtures_dir() / "delta-rs" / "cdc_ict_table", table)
    # Hadoop's local checksum sidecars (.*.crc) no longer match the fixture's files; they
    # are no part of the table.
    for sidecar in table.rglob(".*.crc"):
        sidecar.unlink()
    before = latest_version(table)
    previous_ict = commit_actions(table, before)[0]["commitInfo"]["inCommitTimestamp"]
    proc = run_cli("table", "delete", str(table), "--where", "age > 40")
    assert proc.returncode == 0, describe(proc)
    actions = commit_actions(table, before + 1)
    assert actions[0]["commitInfo"]["inCommitTimestamp"] > previous_ict, actions[0]
    files = cdc_actions(table)[before + 1]
    assert [f["partitionValues"] for f in files] == [{"birthyear": "1986"}], files
    assert all(f["path"].startswith("_change_data/birthyear=1986/cdc-") for f in files), files
    spark = readers.spark_session()
    changes = (spark.read.format("delta").option("readChangeFeed", "true")
               .option("startingVersion", before + 1).load(str(table))
               .select("name", "birthyear", "age", "_change_type").collect())
    assert [tuple(r) for r in changes] == [("Steve", 1986, 41, "delete")], changes
    cdf = deltalake_changes(table, before + 1).select(["name", "birthyear", "_change_type"])
    assert cdf.to_pylist() == [{"name": "Steve", "birthyear": 1986, "_change_type": "delete"}]
    for args in (("checkpoint",), ("vacuum", "--retention-hours", "0", "--force")):
        proc = run_cli("table", args[0], str(table), *args[1:])
        assert proc.returncode == 0, describe(proc)
    after = spark.read.format("delta").load(str(table)).collect()
    assert [r["name"] for r in after] == ["Kate"], after
    history = spark.sql(f"DESCRIBE HISTORY delta.`{table}`").collect()
    # Spark dates ampdelta's commits (delete, vacuum start and end) by their in-commit
    # timestamps: after the fixture's last, in commit order.
    ours = [t for v, t in sorted((row["version"], row["timestamp"]) for row in history)
            if v >= before]
    assert len(ours) >= 3 and ours == sorted(set(ours)), ours


def test_a_property_that_is_not_utf8_is_bad_input(tmp_path, quickstart_url):
    for prop in (b"delta.enableChangeDataFeed=\xff\xfe", b"\xffkey=true"):
        proc = subprocess.run([os.fsencode(cli_path()), b"load", b"--server",
                               quickstart_url.encode(), b"--table", os.fsencode(tmp_path / "t"),
                               b"--sql", BLOCKS_SQL.encode(), b"--property", prop],
                              capture_output=True, env=cli_env(), timeout=60,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 2, proc.stderr
        assert b"not UTF-8" in proc.stderr, proc.stderr
        assert not (tmp_path / "t").exists()


def test_a_stream_sets_its_properties_once_and_leaves_a_later_change_alone(tmp_path):
    """A stream started with --property sets it in its first commit; an operator who turns
    the feed off meanwhile is not overridden by the stream's later commits."""
    # A chain far longer than the test waits: the stream is stopped (SIGTERM, after its
    # commit) once it has appended and undone a reorg (a DELETE, with its change data) after
    # the switch: both kinds of its commits leave the property alone.
    max_head = last_quiet_head(3000)
    table = tmp_path / "blocks"

    def committed_after(version: int) -> collections.Counter:
        operations = collections.Counter()
        for later in range(version + 1, latest_version(table) + 1):
            for action in commit_actions(table, later):
                if "commitInfo" in action:
                    operations[action["commitInfo"]["operation"]] += 1
        return operations

    def wait_until(done, what: str) -> None:
        deadline = time.monotonic() + 60
        while not done():
            assert loader.poll() is None, loader.stderr.read()
            assert time.monotonic() < deadline, f"no {what} within 60 s"
            time.sleep(0.05)

    with run_dev_server(*slow_chain_args(max_head)) as server:
        loader = start_stream(server.url, table, max_head, subprocess.DEVNULL)
        try:
            wait_until(lambda: latest_version(table) >= 1, "first commit")
            load(server.url, table, "--property", "delta.enableChangeDataFeed=false",
                 sql=blocks(last=QUICKSTART_FIRST - 1))  # no rows: the property alone
            switched = latest_version(table)
            wait_until(lambda: committed_after(switched)["DELETE"] >= 1
                       and committed_after(switched)["STREAMING UPDATE"] >= 1,
                       "reorg undo and append after the switch")
            loader.terminate()
            assert loader.wait(timeout=60) == 143, loader.stderr.read()
        finally:
            if loader.poll() is None:
                loader.kill()
                loader.wait()
    later = range(switched + 1, latest_version(table) + 1)
    for version in later:
        for action in commit_actions(table, version):
            assert "metaData" not in action, (version, action)
    config = readers.spark_session().sql(f"DESCRIBE DETAIL delta.`{table}`").collect()[0][
        "properties"]
    assert config.get("delta.enableChangeDataFeed") == "false", config


def test_vacuum_removes_change_data_older_than_the_retention(tmp_path, quickstart_url):
    table = tmp_path / "t"
    load(quickstart_url, table, "--property", CDF)
    proc = run_cli("table", "delete", str(table), "--where", f"block_num < {QUICKSTART_FIRST + 5}")
    assert proc.returncode == 0, describe(proc)
    change_files = list((table / "_change_data").rglob("*.parquet"))
    assert len(change_files) == 1
    proc = run_cli("table", "vacuum", str(table))  # the default retention keeps them
    assert proc.returncode == 0, describe(proc)
    assert change_files[0].exists()
    old = time.time() - 3600
    os.utime(change_files[0], (old, old))
    proc = run_cli("table", "vacuum", str(table), "--retention-hours", "0.5", "--force")
    assert proc.returncode == 0, describe(proc)
    assert not change_files[0].exists(), describe(proc)
    assert readers.read_deltalake(table).num_rows == 95
