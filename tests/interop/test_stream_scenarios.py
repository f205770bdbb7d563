"""Scripted dev-server scenarios for `ampdelta load --stream`, each checked exactly.

Every scenario drives the dev server's live chain (`--block-interval-ms`, `--reorg-every`,
`--reorg-depth`, `--reorg-at`, `--max-head`) into one kind of reorg, runs the loader with
`--until-block` = the chain's final head, and then requires the table to equal the chain
exactly, read with both deltalake and DuckDB:

- every block from QUICKSTART_FIRST to the final head exactly once, with the hash of the
  server's canonical chain (a batch query on the same server);
- the ranges recorded in the live files' `ampdelta.blockRanges` tags, with the spans the
  stream's compaction coalesced them into (`ampdelta.blockSpans`), tile the chain
  (consecutive, hash-linked, canonical) and every row's `_amp_batch_id` is the Python SDK's id
  (amp-protocol.md §3.6) of the recorded range that holds its block, which its own file's
  tags name (the undo finds rows through those tags); a row in a span is held by a span of
  its own file (the undo finds those by block number).

The last scenario turns reorg detection off and shows that the undo is what keeps blocks
from appearing twice. Helpers (the loader subprocess, the canonical chain) come from
test_stream_crash.py.
"""

from __future__ import annotations

import collections
import hashlib
import json
import re
import subprocess
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import readers
from conftest import QUICKSTART_DATASET, QUICKSTART_FIRST, QUICKSTART_LAST, both_servers, \
    cli_env, cli_path, run_dev_server
import test_stream_crash
from test_stream_crash import REORG_RE, RESULT_RE, Loader, canonical_hashes, hex_hash, \
    repeated, running_loader

NETWORK = "mainnet"
INITIAL_HEAD = QUICKSTART_LAST  # the dev server's head at start; --reorg-every counts from it
RANGES_TAG = "ampdelta.blockRanges"
SPANS_TAG = "ampdelta.blockSpans"
LOADER_TIMEOUT_S = 30.0
SUMMARY_RE = re.compile(r"(\w+)=(\S+)")


# --- The Python SDK's batch id (amp-protocol.md §3.6) ---------------------------------------

def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sdk_batch_id(network: str, start: int, end: int, block_hash: str | None,
                 prev_hash: str | None) -> str:
    end_hash = block_hash or sha256_hex(f"{network}:{start}:{end}")
    return sha256_hex(f"{network}:{start}:{end}:{end_hash}:{prev_hash or ''}")[:16]


def range_id(r: dict) -> str:
    return sdk_batch_id(r["network"], r["start"], r["end"], r.get("hash"), r.get("prev_hash"))


def range_key(r: dict) -> tuple:
    return (r["network"], r["start"], r["end"], r.get("hash"), r.get("prev_hash"))


def test_sdk_batch_id_matches_the_spec_test_vectors():
    assert sdk_batch_id("ethereum", 100, 102, "0xaaa", None) == "17871ff804370164"
    assert sdk_batch_id("ethereum", 100, 110, "0xabc123", None) == "507ba6138502b1dd"
    assert sdk_batch_id(
        "anvil", 0, 2, "0x0deee2eaa7adb2b28c7fa731f79ea86e77e375f8ee0a0f2619ba6ec3eb2f68e6",
        "0x" + "0" * 64) == "ccb8c042acbe11a0"
    assert sdk_batch_id("blocks", 0, 250, None, None) == "a9dcacd2074b17c8"


# --- The Delta log: live files, their tags, the commits -------------------------------------

LOG_JSON_RE = re.compile(r"(\d{20})\.json")


def log_versions(table: Path) -> list[int]:
    return sorted(int(m.group(1)) for f in (table / "_delta_log").iterdir()
                  if (m := LOG_JSON_RE.fullmatch(f.name)))


def read_commit(table: Path, version: int) -> list[dict]:
    text = (table / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def live_adds(table: Path) -> dict[str, dict]:
    """path -> add action of the latest version, replayed from the log (add.tags included,
    which deltalake's get_add_actions does not expose)."""
    versions = log_versions(table)
    assert versions, f"{table}: no commits"
    files: dict[str, dict] = {}
    first = 0
    if versions[0] != 0:  # early commits cleaned up: start from the newest checkpoint
        last = json.loads((table / "_delta_log" / "_last_checkpoint").read_text())
        first = last["version"] + 1
        checkpoint = pq.read_table(
            table / "_delta_log" / f"{last['version']:020d}.checkpoint.parquet")
        for add in checkpoint.column("add").to_pylist():
            if add:
                add = dict(add, tags=dict(add.get("tags") or []))
                files[add["path"]] = add
    for version in (v for v in versions if v >= first):
        for action in read_commit(table, version):
            if "add" in action:
                files[action["add"]["path"]] = action["add"]
            elif "remove" in action:
                files.pop(action["remove"]["path"], None)
    return files


def reorg_commits(table: Path) -> list[dict]:
    """commitInfo (plus the commit's removes) of every reorg undo, oldest first."""
    undos = []
    for version in log_versions(table):
        actions = read_commit(table, version)
        info = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
        if "reorg: " in info.get("operationParameters", {}).get("predicate", ""):
            undos.append(dict(info, version=version,
                              removes=[a["remove"] for a in actions if "remove" in a]))
    return undos


def file_ranges(add: dict, tag: str = RANGES_TAG) -> list[dict]:
    """The ranges (or with SPANS_TAG, the spans) one stream recorded on a file."""
    # One stream per table here: its key is the tag + "." + the stream's app id.
    tags = add.get("tags") or {}
    keys = [k for k in tags if k.startswith(tag + ".ampdelta-stream-")]
    assert len(keys) <= 1, f"data file {add['path']} has several {tag}.* tags: {tags}"
    ranges = json.loads(tags[keys[0]]) if keys else []
    assert isinstance(ranges, list), f"{add['path']}: bad {tag} {ranges!r}"
    return ranges


def file_record(add: dict) -> tuple[list[dict], list[dict]]:
    """A file's recorded ranges and spans; every live file of a stream records some."""
    ranges, spans = file_ranges(add), file_ranges(add, SPANS_TAG)
    assert ranges or spans, f"data file {add['path']} records no range: {add.get('tags')}"
    return ranges, spans


# --- Running the loader ----------------------------------------------------------------------

def run_loader(url: str, table: Path, logs: Path, name: str, until_block: int, *extra: str,
               timeout_s: float = LOADER_TIMEOUT_S) -> Loader:
    """`ampdelta load --stream --until-block N EXTRA` until it exits; require exit 0 and a
    final result line."""
    with running_loader(url, table, logs, name, "--until-block", str(until_block),
                        *extra) as loader:
        try:
            loader.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            pass
        outcome = (f"still running after {timeout_s:.0f} s" if loader.proc.returncode is None
                   else f"exited with {loader.proc.returncode}")
        assert loader.proc.returncode == 0, f"{name} {outcome}\n{loader.describe()}"
    lines = loader.stdout().splitlines()
    assert lines and RESULT_RE.match(lines[-1]) and RESULT_RE.match(lines[-1]).group(3) is None, (
        f"{name}: no final result line\n{loader.describe()}")
    assert "runtime error" not in loader.stderr(), loader.describe()  # UBSan
    return loader


def reorg_lines(loader: Loader) -> list[str]:
    return [line for line in loader.stdout().splitlines() if REORG_RE.match(line)]


def summary(loader: Loader) -> dict[str, str]:
    """The `key=value …` line the stream load prints on stderr when it ends."""
    lines = [line for line in loader.stderr().splitlines() if "table_version=" in line]
    assert lines, f"no summary on stderr\n{loader.describe()}"
    return dict(SUMMARY_RE.findall(lines[-1]))


def quiet_head(blocks_to_grow: int, reorg_every: int) -> int:
    """A --max-head about blocks_to_grow past INITIAL_HEAD at which no --reorg-every reorg is
    scheduled, so the chain is final once it gets there."""
    head = INITIAL_HEAD + blocks_to_grow
    while (head - INITIAL_HEAD) % reorg_every == 0:
        head += 1
    return head


def live_chain(interval_ms: int, max_head: int, *extra: str, paced: bool = False) -> list[str]:
    """A chain that grows a block every interval_ms up to max_head. Paced, it adds a block
    only once the loader's stream has been sent the head (--await-streams): a loader however
    slow then meets every reorg, instead of catching up after the chain has settled."""
    return ["--block-interval-ms", str(interval_ms), "--max-head", str(max_head), *extra,
            *(["--await-streams"] if paced else [])]


# --- The exact check -------------------------------------------------------------------------

def recorded_ranges(live: dict[str, dict]) -> list[dict]:
    """The distinct ranges and spans named by the live files' tags, by start (a span has
    "span": True)."""
    distinct = {}
    for add in live.values():
        ranges, spans = file_record(add)
        for r in ranges:
            distinct[range_key(r)] = r
        for r in spans:
            distinct[range_key(r)] = dict(r, span=True)
    return sorted(distinct.values(), key=lambda r: (r["start"], r["end"]))


def check_live_files_match_deltalake(table: Path, live: dict[str, dict]) -> None:
    from deltalake import DeltaTable

    dt = DeltaTable(str(table))
    paths = pa.table(dt.get_add_actions(flatten=True)).column("path").to_pylist()
    assert sorted(paths) == sorted(live), (
        f"{table}: the log replay and deltalake disagree on the live files\n"
        f"replay only: {sorted(set(live) - set(paths))}\n"
        f"deltalake only: {sorted(set(paths) - set(live))}")


def check_file_tags_name_their_rows(table: Path, live: dict[str, dict]) -> None:
    """Every row of every live file: its _amp_batch_id is the id of a range in the file's own
    tags holding its block."""
    for path, add in live.items():
        ids = collections.defaultdict(list)
        ranges, spans = file_record(add)
        for r in ranges:
            ids[range_id(r)].append(r)
        rows = pq.read_table(table / path, columns=["block_num", "_amp_batch_id"])
        for block, batch_id in zip(rows.column("block_num").to_pylist(),
                                   rows.column("_amp_batch_id").to_pylist()):
            if any(r["start"] <= block <= r["end"] for r in spans):
                continue
            assert any(r["start"] <= block <= r["end"] for r in ids.get(batch_id, [])), (
                f"{table}/{path}: block {block} has _amp_batch_id {batch_id!r}, which is not "
                f"the id of a range holding it in the file's tags {ranges}, and no span of "
                f"the file {spans} holds it")


def check_canonical(table: Path, url: str, last_block: int) -> dict:
    """The latest version equals the chain QUICKSTART_FIRST..last_block exactly, read by
    deltalake and by DuckDB; the recorded ranges tile it and name every row's batch id."""
    chain = canonical_hashes(url)
    expected = list(range(QUICKSTART_FIRST, last_block + 1))
    assert sorted(chain) == expected, (
        f"the dev server's chain is {min(chain)}..{max(chain)}, not at --max-head {last_block}")

    live = live_adds(table)
    check_live_files_match_deltalake(table, live)
    ranges = recorded_ranges(live)
    # The committed microbatches that survive: consecutive, hash-linked, on the canonical chain.
    assert ranges[0]["start"] == QUICKSTART_FIRST, ranges[:3]
    assert ranges[-1]["end"] == last_block, ranges[-3:]
    for before, after in zip(ranges, ranges[1:]):
        assert after["start"] == before["end"] + 1, (
            f"{table}: recorded ranges overlap or leave a gap: {before} then {after}")
        assert after["prev_hash"] == before["hash"], (
            f"{table}: recorded ranges not hash-linked: {before} then {after}")
    for r in ranges:
        assert r["network"] == NETWORK, r
        assert r["hash"] == chain[r["end"]], f"{table}: recorded range not canonical: {r}"
        if r["start"] > QUICKSTART_FIRST:
            assert r["prev_hash"] == chain[r["start"] - 1], f"{table}: bad prev_hash: {r}"
    id_of_block = {}  # a span's rows keep their microbatch's id, which no tag names
    for r in ranges:
        if not r.get("span"):
            for block in range(r["start"], r["end"] + 1):
                id_of_block[block] = range_id(r)

    for name in ("deltalake", "duckdb"):
        rows = readers.READERS[name](table)
        what = f"{table} read by {name}"
        block_nums = rows.column("block_num").to_pylist()
        twice = repeated(block_nums)
        assert not twice, f"{what}: repeated blocks {dict(sorted(twice.items())[:20])}"
        missing = sorted(set(expected) - set(block_nums))
        extra = sorted(set(block_nums) - set(expected))
        assert not missing and not extra, f"{what}: missing {missing[:20]}, unexpected {extra[:20]}"
        stale = [(n, hex_hash(h), chain[n])
                 for n, h in zip(block_nums, rows.column("hash").to_pylist())
                 if hex_hash(h) != chain[n]]
        assert not stale, f"{what}: {len(stale)} rows with a non-canonical hash, e.g. {stale[:5]}"
        wrong_ids = [(n, i, id_of_block[n])
                     for n, i in zip(block_nums, rows.column("_amp_batch_id").to_pylist())
                     if n in id_of_block and i != id_of_block[n]]
        assert not wrong_ids, (
            f"{what}: {len(wrong_ids)} rows whose _amp_batch_id is not the SDK id of the "
            f"recorded range holding the block (block, id, expected), e.g. {wrong_ids[:5]}")
    check_file_tags_name_their_rows(table, live)
    return {"rows": len(expected), "files": len(live), "ranges": len(ranges),
            "spans": sum(1 for r in ranges if r.get("span"))}


# --- 1. Reorgs at the head ---------------------------------------------------------------------

HEAD_REORG_EVERY = 7


@pytest.mark.parametrize("depth", [2, 3, 5])
@both_servers()
def test_reorgs_at_the_head_are_undone_exactly(tmp_path, server_kind, depth):
    max_head = quiet_head(60, HEAD_REORG_EVERY)  # about 1.2 s of chain, ~8 reorgs
    table = tmp_path / "blocks"
    with run_dev_server(*live_chain(20, max_head, "--reorg-every", str(HEAD_REORG_EVERY),
                                    "--reorg-depth", str(depth), paced=True),
                        kind=server_kind) as server:
        loader = run_loader(server.url, table, tmp_path / "logs", "load", max_head)
        reorgs = reorg_lines(loader)
        assert reorgs, f"the loader saw no reorg\n{loader.describe()}"
        stats = summary(loader)
        # Pending microbatches are committed before an undo, so undos remove committed rows.
        assert int(stats["rows_undone"]) > 0, loader.describe()
        result = check_canonical(table, server.url, max_head)
    print(f"depth {depth}: {len(reorgs)} reorgs, {stats}, {result}")


# --- 2. A reorg deeper than a commit group -----------------------------------------------------

@both_servers()
def test_reorg_across_commit_groups(tmp_path, server_kind):
    reorg_every = 20
    max_head = quiet_head(70, reorg_every)  # reorgs of depth 8 at heads +20, +40, +60
    table = tmp_path / "blocks"
    with run_dev_server(*live_chain(20, max_head, "--reorg-every", str(reorg_every),
                                    "--reorg-depth", "8", paced=True),
                        kind=server_kind) as server:
        loader = run_loader(server.url, table, tmp_path / "logs", "load", max_head,
                            "--commit-rows", "3")
        assert reorg_lines(loader), f"the loader saw no reorg\n{loader.describe()}"
        result = check_canonical(table, server.url, max_head)
    undos = reorg_commits(table)
    assert undos, "no reorg commit in the log"
    # Commit groups hold ~3 blocks and every group writes its own file, so an 8-block undo
    # touches files of several commits.
    widest = max(len(u["removes"]) for u in undos)
    assert widest >= 2, (
        f"no undo touched more than one committed file: "
        f"{[(u['version'], u['operationParameters'], len(u['removes'])) for u in undos]}")
    print(f"{len(undos)} undos, up to {widest} files each; {result}")


# --- 2b. A reorg deeper than the reorg window, into compacted spans -----------------------------

def test_reorg_deeper_than_the_window_undoes_compacted_spans(tmp_path, monkeypatch):
    # A commit per block, a 3-block window and a compaction every 5 commits: most of the table
    # is compacted into spans by the time a reorg of depth 15 at head +40 reaches 12 blocks
    # below the window. The undo must find the spans' rows by block number (all of a span
    # goes, and the server sends its blocks again). Blocks come every 150 ms, so even the
    # sanitizer build commits (and compacts) block by block before the reorg.
    monkeypatch.setattr(test_stream_crash, "LOAD_CONFIG", '{"optimize_after_write": true}')
    reorg_head = QUICKSTART_LAST + 40
    max_head = reorg_head + 5
    table = tmp_path / "blocks"
    with run_dev_server(*live_chain(150, max_head, "--reorg-at", f"{reorg_head}:15",
                                    paced=True)) as server:
        loader = run_loader(server.url, table, tmp_path / "logs", "load", max_head,
                            "--commit-rows", "1", "--reorg-window", "3", "--compact-every", "5",
                            timeout_s=60.0)
        assert reorg_lines(loader), f"the loader saw no reorg\n{loader.describe()}"
        result = check_canonical(table, server.url, max_head)
    undos = reorg_commits(table)
    span_undos = [u for u in undos
                  if any(k.startswith(SPANS_TAG + ".") for r in u["removes"]
                         for k in (r.get("tags") or {}))]
    assert span_undos, (
        f"no undo removed a compacted file: "
        f"{[(u['version'], u['operationParameters'], len(u['removes'])) for u in undos]}")
    print(f"{len(undos)} undos, {len(span_undos)} into spans; {result}")


# --- 3. A partial reorg: the fork inside a committed microbatch ---------------------------------

@both_servers()
def test_partial_reorg_inside_a_committed_microbatch(tmp_path, server_kind):
    # Microbatches of 50 blocks: the Quickstart chain arrives as 24000000..49 and ..50..99.
    # When the head reaches 24000100 the newest 3 blocks are replaced: the fork, 24000098, is
    # strictly inside the committed 24000050..99, whose first 48 blocks the server will not
    # re-send on its own. The interval leaves the loader a second to commit ..99 first.
    reorg_head, depth = QUICKSTART_LAST + 1, 3
    fork = reorg_head - depth + 1
    max_head = reorg_head + 1
    table = tmp_path / "blocks"
    with run_dev_server("--microbatch-max-blocks", "50",
                        *live_chain(1000, max_head, "--reorg-at", f"{reorg_head}:{depth}",
                                    paced=True),
                        kind=server_kind) as server:
        loader = run_loader(server.url, table, tmp_path / "logs", "load", max_head)
        reorgs = reorg_lines(loader)
        assert reorgs, f"no 🔄 Reorg detected line\n{loader.describe()}"
        result = check_canonical(table, server.url, max_head)
    undos = reorg_commits(table)
    assert len(undos) == 1, [u["operationParameters"] for u in undos]
    # The whole microbatch 24000050..99 was undone, not just the blocks from the fork on.
    deleted = int(undos[0]["operationMetrics"]["numDeletedRows"])
    assert deleted >= QUICKSTART_LAST - 24_000_050 + 1, (undos[0], loader.describe())
    print(f"fork {fork}: {reorgs}, undo deleted {deleted} rows; {result}")


# --- 4. A reorg that happened while the loader was down ----------------------------------------

@both_servers()
def test_reorg_right_after_a_restart(tmp_path, server_kind):
    # A live chain with small reorgs; the first run stops at FIRST_STOP. While it is down the
    # scripted reorg at DEEP_REORG_HEAD replaces 25 blocks, reaching below everything the first
    # run committed past DEEP_REORG_HEAD - 24: the block at the table's resume cursor is gone.
    reorg_every = 7
    first_stop = INITIAL_HEAD + 11
    deep_reorg_head, deep_depth = INITIAL_HEAD + 31, 25
    fork = deep_reorg_head - deep_depth + 1
    max_head = quiet_head(46, reorg_every)
    assert (deep_reorg_head - INITIAL_HEAD) % reorg_every != 0 and fork < first_stop
    table = tmp_path / "blocks"
    logs = tmp_path / "logs"
    with run_dev_server(*live_chain(50, max_head, "--reorg-every", str(reorg_every),
                                    "--reorg-depth", "2",
                                    "--reorg-at", f"{deep_reorg_head}:{deep_depth}"),
                        kind=server_kind) as server:
        first = run_loader(server.url, table, logs, "first", first_stop)
        first_version = max(log_versions(table))
        stopped = readers.read_deltalake(table)
        block_nums = stopped.column("block_num").to_pylist()
        assert not repeated(block_nums), first.describe()
        cursor = max(block_nums)
        cursor_hash = hex_hash(stopped.column("hash").to_pylist()[block_nums.index(cursor)])
        assert fork <= cursor < deep_reorg_head, (
            f"the first run committed up to {cursor}: the deep reorg at {deep_reorg_head} "
            f"(fork {fork}) must happen after it stopped\n{first.describe()}")

        deadline = time.monotonic() + 20
        chain = canonical_hashes(server.url)
        while max(chain) < deep_reorg_head:
            assert time.monotonic() < deadline, f"the chain is stuck at {max(chain)}"
            time.sleep(0.1)
            chain = canonical_hashes(server.url)
        assert chain[cursor] != cursor_hash, (
            f"block {cursor} (the table's cursor) was not reorged while the loader was down")

        restarted = run_loader(server.url, table, logs, "restarted", max_head)
        lines = restarted.stdout().splitlines()
        assert REORG_RE.match(lines[0]), (
            f"the restarted loader's first result is not the reorg below its cursor "
            f"{cursor}\n{restarted.describe()}")
        result = check_canonical(table, server.url, max_head)
    undo = next(u for u in reorg_commits(table) if u["version"] > first_version)
    predicate = undo["operationParameters"]["predicate"]
    span = re.search(rf"reorg: {NETWORK}:(\d+)-(\d+)", predicate)
    assert span, predicate
    # The first undo after the restart starts at or below the fork and reaches the cursor.
    assert int(span.group(1)) <= fork and int(span.group(2)) >= cursor, (predicate, cursor)
    print(f"first run stopped at {cursor}; restart: {lines[0]!r}, {predicate}; {result}")


# --- 5. Without reorg detection --------------------------------------------------------------

@both_servers()
def test_without_reorg_detection_reorged_blocks_stay_twice(tmp_path, server_kind):
    # The chain of test_reorgs_at_the_head_are_undone_exactly[3], in one-block microbatches so
    # that no fork falls strictly inside a microbatch: a partial reorg without detection is
    # test_partial_reorg_without_detection_keeps_loading.
    max_head = quiet_head(60, HEAD_REORG_EVERY)
    table = tmp_path / "blocks"
    with run_dev_server("--microbatch-max-blocks", "1",
                        *live_chain(20, max_head, "--reorg-every", str(HEAD_REORG_EVERY),
                                    "--reorg-depth", "3", paced=True), kind=server_kind) as server:
        loader = run_loader(server.url, table, tmp_path / "logs", "load", max_head,
                            "--no-reorg-detection")
        assert not reorg_lines(loader), loader.describe()
        stats = summary(loader)
        # It saw the reorgs and undid nothing.
        assert int(stats["reorgs"]) > 0 and int(stats.get("rows_undone", "0")) == 0, stats
        chain = canonical_hashes(server.url)
    assert not reorg_commits(table)
    expected = set(range(QUICKSTART_FIRST, max_head + 1))
    assert sorted(chain) == sorted(expected)
    counts = {}
    for name in ("deltalake", "duckdb"):
        rows = readers.READERS[name](table)
        block_nums = rows.column("block_num").to_pylist()
        hashes = [hex_hash(h) for h in rows.column("hash").to_pylist()]
        assert set(block_nums) == expected, f"{name}: blocks missing or unexpected"
        twice = repeated(block_nums)
        # The server re-sent the reorged blocks and nothing removed the old ones.
        assert twice, f"{name}: no block twice although the loader saw reorgs ({stats})"
        canonical = collections.Counter(n for n, h in zip(block_nums, hashes) if h == chain[n])
        assert all(canonical[n] == 1 for n in expected), (
            f"{name}: not every block exactly once with its canonical hash")
        stale = [(n, h) for n, h in zip(block_nums, hashes) if h != chain[n]]
        assert len(stale) == sum(c - 1 for c in twice.values()), (
            f"{name}: the extra copies should be exactly the reorged-away blocks")
        counts[name] = (rows.num_rows, len(twice))
    assert counts["deltalake"] == counts["duckdb"], counts
    # The rows still carry batch ids named by their files' tags.
    check_file_tags_name_their_rows(table, live_adds(table))
    print(f"{stats}; rows, blocks twice: {counts}")


@both_servers()
def test_partial_reorg_without_detection_keeps_loading(tmp_path, server_kind):
    # The chain of test_partial_reorg_inside_a_committed_microbatch: the fork, 24000098, is
    # strictly inside the received microbatch 24000050..99. Without detection the loader
    # should load what arrives: 24000098..99 of both chains, nothing undone.
    reorg_head, depth = QUICKSTART_LAST + 1, 3
    max_head = reorg_head + 1
    table = tmp_path / "blocks"
    with run_dev_server("--microbatch-max-blocks", "50",
                        *live_chain(1000, max_head, "--reorg-at", f"{reorg_head}:{depth}",
                                    paced=True),
                        kind=server_kind) as server:
        loader = run_loader(server.url, table, tmp_path / "logs", "load", max_head,
                            "--no-reorg-detection")
        chain = canonical_hashes(server.url)
    rows = readers.read_deltalake(table)
    block_nums = rows.column("block_num").to_pylist()
    assert set(block_nums) == set(range(QUICKSTART_FIRST, max_head + 1)), loader.describe()
    assert repeated(block_nums) == {reorg_head - 2: 2, reorg_head - 1: 2}, loader.describe()
    hashes = [hex_hash(h) for h in rows.column("hash").to_pylist()]
    canonical = collections.Counter(n for n, h in zip(block_nums, hashes) if h == chain[n])
    assert set(canonical.values()) == {1} and len(canonical) == len(chain)


# --- 6. A chain from genesis that reorgs inside its first microbatch -------------------------

@both_servers()
def test_reorg_inside_the_first_microbatch_of_a_chain_from_genesis(tmp_path, server_kind):
    # anvil, as amp's own reorg tests run it: the chain starts at block 0, the first
    # microbatch is everything synced at subscribe time (0..4), and the reorg at head 6
    # replaces 4..6: the fork, 4, is strictly inside 0..4, whose earlier rows the server
    # will not re-send, and there is no block before 0 to resume after (ampd-fidelity.md B3).
    network, initial, reorg_head, depth, max_head = "anvil", 5, 6, 3, 8
    table = tmp_path / "blocks"
    with run_dev_server("--start-block", "0", "--blocks", str(initial), "--network", network,
                        "--block-interval-ms", "1000", "--max-head", str(max_head),
                        "--reorg-at", f"{reorg_head}:{depth}", "--await-streams",
                        kind=server_kind) as server:
        loader = run_loader(server.url, table, tmp_path / "logs", "load", max_head)
        assert reorg_lines(loader), f"the loader saw no reorg\n{loader.describe()}"
        chain = canonical_hashes(server.url)
    assert sorted(chain) == list(range(max_head + 1))
    for name in ("deltalake", "duckdb"):
        rows = readers.READERS[name](table)
        block_nums = rows.column("block_num").to_pylist()
        assert sorted(block_nums) == list(range(max_head + 1)), (name, sorted(block_nums))
        stale = [n for n, h in zip(block_nums, rows.column("hash").to_pylist())
                 if hex_hash(h) != chain[n]]
        assert not stale, f"{name}: rows of the replaced chain: {stale}"
    ranges = recorded_ranges(live_adds(table))
    assert ranges[0]["start"] == 0 and ranges[0]["prev_hash"] == "0x" + "0" * 64, ranges[0]
    check_file_tags_name_their_rows(table, live_adds(table))


# --- A delete is respected: deleted blocks are not reloaded --------------------------------------

def test_a_delete_of_every_row_keeps_the_streams_progress_on_an_empty_file(tmp_path):
    """`table delete --all` on a streamed table removes the rows, not the recorded ranges: they
    move to a 0-row file every reader accepts, and the restarted stream loads only new blocks."""
    first_head = INITIAL_HEAD + 10
    table = tmp_path / "blocks"
    # A run stops once a commit reaches its block, and a microbatch may pass it (up to 4
    # blocks with 5-block microbatches when the chain outran a slow start): the second run's
    # blocks follow wherever the first one stopped.
    chain = live_chain(20, first_head + 20, "--microbatch-max-blocks", "5")
    with run_dev_server(*chain, kind="dev-server") as server:
        run_loader(server.url, table, tmp_path / "logs", "first", first_head)
        before = recorded_ranges(live_adds(table))
        loaded_to = max(r["end"] for r in before)
        assert first_head <= loaded_to < first_head + 5, before
        proc = subprocess.run([str(cli_path()), "table", "delete", str(table), "--all"],
                              capture_output=True, text=True, env=cli_env(), timeout=60,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stderr}"
        live = live_adds(table)
        assert len(live) == 1, live
        (empty,) = live.values()
        assert json.loads(empty["stats"])["numRecords"] == 0, empty
        assert recorded_ranges(live) == before
        for name, read in readers.READERS.items():
            rows = read(table)
            assert rows.num_rows == 0, f"{name} read {rows.num_rows} rows of an emptied table"
            assert "block_num" in rows.column_names, f"{name}: {rows.column_names}"
        run_loader(server.url, table, tmp_path / "logs", "second", loaded_to + 5)
        blocks = sorted(readers.read_deltalake(table).column("block_num").to_pylist())
        reached = max(r["end"] for r in recorded_ranges(live_adds(table)))
        assert loaded_to + 5 <= reached < loaded_to + 10, recorded_ranges(live_adds(table))
        assert blocks == list(range(loaded_to + 1, reached + 1)), (loaded_to, blocks)


# --- Streaming aggregates grouped first by _block_num (ampd since #1877) --------------------------

@both_servers()
def test_a_stream_of_an_aggregate_grouped_by_block_num_loads_each_block_once(tmp_path, server_kind):
    """One row per block, computed per microbatch, each block once; grouped by anything else
    first, the same stream is refused at DoGet as non-incremental (a server error, exit 3)
    and no table is made."""
    max_head = INITIAL_HEAD + 30
    table = tmp_path / "counts"
    grouped = (f'SELECT _block_num, COUNT(*) AS n FROM "{QUICKSTART_DATASET}".blocks '
               "GROUP BY _block_num")

    def load(sql: str, target: Path) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(cli_path()), "load", "--server", server.url, "--table", str(target), "--sql",
             sql, "--stream", "--until-block", str(max_head), "--commit-interval-ms", "50"],
            capture_output=True, text=True, env=cli_env(), timeout=LOADER_TIMEOUT_S,
            stdin=subprocess.DEVNULL)

    with run_dev_server(*live_chain(20, max_head, "--microbatch-max-blocks", "7"),
                        kind=server_kind) as server:
        done = load(grouped, table)
        assert done.returncode == 0, f"exit {done.returncode}\n{done.stderr}"
        refused = load(f'SELECT gas_used, COUNT(*) FROM "{QUICKSTART_DATASET}".blocks '
                       "GROUP BY gas_used, _block_num", tmp_path / "refused")
    assert refused.returncode == 3, f"exit {refused.returncode}\n{refused.stderr}"  # server
    assert "non-incremental operation: Aggregate" in refused.stderr, refused.stderr
    assert not (tmp_path / "refused" / "_delta_log").exists()  # no table was made
    for name in ("deltalake", "duckdb"):
        rows = readers.READERS[name](table)
        blocks = rows.column("_block_num").to_pylist()
        assert sorted(blocks) == list(range(QUICKSTART_FIRST, max_head + 1)), (name, blocks)
        assert set(rows.column("n").to_pylist()) == {1}, name
