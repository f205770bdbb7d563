"""An SDK stream that runs for a long time through reorgs and is killed (-9) five times
(issue 51): every restart replays from the first block, as the SDK does, and in the end the
table holds every canonical block once, and no version is emptier than its neighbours but a
reorg's undo.

`make test` runs it compressed (AMPDELTA_SDK_SOAK_S, default 60 s); `make soak-sdk` runs
the 30 minutes.
"""
from __future__ import annotations

import os
import random
import time

import pytest

import ampdelta.sdk
from conftest import (QUICKSTART_DATASET, QUICKSTART_FIRST, QUICKSTART_LAST, cli_env, cli_path,
                      run_dev_server)
from sdk_harness import (SdkStream, assert_no_version_emptier_outside_reorgs, canonical_chain,
                         is_reorg_undo, table_chain, versions)

SOAK_S = float(os.environ.get("AMPDELTA_SDK_SOAK_S") or 60)
SEED = int(os.environ.get("AMPDELTA_SOAK_SEED") or 20261207)
KILLS = 5
BLOCK_INTERVAL_MS = 150
REORG_EVERY = 7
BLOCKS = f'SELECT block_num, hash FROM "{QUICKSTART_DATASET}".blocks'


def highest(table) -> int:
    if not any((table / "_delta_log").glob("*.json")):
        return -1
    chain = table_chain(table)
    return max(chain) if chain else -1


@pytest.mark.timeout(int(SOAK_S * 2) + 600)
def test_an_sdk_stream_killed_five_times_through_reorgs_keeps_every_block_once(tmp_path):
    ampdelta.sdk.register()
    rng = random.Random(SEED)
    # The chain grows for about 85% of the run, then stops at a head no reorg is due at.
    head = QUICKSTART_LAST + int(SOAK_S * 0.85 * 1000 / BLOCK_INTERVAL_MS)
    while (head - QUICKSTART_LAST) % REORG_EVERY == 0:
        head += 1
    table = tmp_path / "blocks"
    kills_at = sorted(rng.uniform(0.05, 0.8) * SOAK_S for _ in range(KILLS))
    restarts = 0  # after a reorg inside a committed microbatch: the SDK cannot reconnect
    started = time.monotonic()
    with run_dev_server("--block-interval-ms", str(BLOCK_INTERVAL_MS), "--max-head", str(head),
                        "--reorg-every", str(REORG_EVERY), "--reorg-depth", "3") as server:
        for number, kill_at in enumerate(kills_at):
            # Run (restarting as a supervisor would after a reorg that began inside a
            # committed microbatch: the SDK cannot reconnect) until the kill's instant.
            while time.monotonic() - started < kill_at:
                with SdkStream(server.url, table, "blocks", f"lake-{number}", BLOCKS,
                               with_reorg_detection=False) as stream:
                    while stream.proc.poll() is None and time.monotonic() - started < kill_at:
                        time.sleep(0.05)
                    stream.kill()
                failed = [r for r in stream.results if not r["success"]]
                if failed:
                    assert "run the stream again" in failed[0]["error"], \
                        f"run {number}: {failed}\n{stream.stderr_tail()}"
                    restarts += 1
            time.sleep(rng.uniform(0.0, 1.5))  # down a while: reorgs may happen meanwhile
        deadline = time.monotonic() + max(120.0, SOAK_S)
        while True:
            with SdkStream(server.url, table, "blocks", "lake-last", BLOCKS,
                           with_reorg_detection=False) as stream:
                stream.wait_for(lambda results: highest(table) == head or
                                any(not r["success"] for r in results),
                                deadline - time.monotonic(), f"the final head {head} loaded")
                assert stream.interrupt() == 0, stream.stderr_tail()
            failed = [r for r in stream.results if not r["success"]]
            if not failed and highest(table) == head:
                break
            assert failed and "run the stream again" in failed[0]["error"], stream.results
            restarts += 1
        chain = canonical_chain(cli_path(), cli_env(), server.url, QUICKSTART_DATASET)
    expected = {block: chain[block] for block in range(QUICKSTART_FIRST, head + 1)}
    assert table_chain(table) == expected
    history = assert_no_version_emptier_outside_reorgs(table)
    undos = [c for c in history if is_reorg_undo(c)]
    print(f"\nsoak {SOAK_S:.0f} s: {head - QUICKSTART_LAST} blocks past the initial head, "
          f"{KILLS} kill -9 restarts, {restarts} restarts after a reorg inside a committed "
          f"microbatch, {len(history)} versions, {len(undos)} reorg undos, "
          f"{sum(1 for c in history if c['operation'] == 'DELETE') - len(undos)} other deletes")
    assert not [c for c in history if c["operation"] == "DELETE" and not is_reorg_undo(c)]
