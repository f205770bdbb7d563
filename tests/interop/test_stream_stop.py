"""SIGINT stops `ampdelta load --stream` within a second at any moment, including while the
server sends nothing at all (ampd sends not even the schema before a stream's first
microbatch, and nothing between microbatches), and leaves the table consistent.

The moments come from random.Random(seed); AMPDELTA_STOP_SEED=S replays them.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time

import pytest

import readers
from conftest import QUICKSTART_DATASET, QUICKSTART_FIRST, both_servers, cli_env, cli_path, \
    run_dev_server

SEED = int(os.environ.get("AMPDELTA_STOP_SEED") or 20261203)
TRIALS = 10
STREAM_SQL = f'SELECT block_num, hash, gas_used FROM "{QUICKSTART_DATASET}".blocks'
# The exit must follow SIGINT within a second plus the commit in progress; the ASan build
# is several times slower than a release build, hence the margin.
EXIT_WITHIN_S = 2.0

def stop_at_random_moments(url: str, tmp_path, label: str, rng: random.Random) -> list[float]:
    with readers.DeltaLakeChild() as deltalake:
        return stop_at_random_moments_reading_with(deltalake, url, tmp_path, label, rng)


def stop_at_random_moments_reading_with(deltalake: readers.DeltaLakeChild, url: str, tmp_path,
                                        label: str, rng: random.Random) -> list[float]:
    waits = []
    table = tmp_path / label
    for trial in range(TRIALS):
        log = table / "_delta_log"
        before = sorted(p.name for p in log.iterdir()) if log.is_dir() else []
        proc = subprocess.Popen(
            [str(cli_path()), "load", "--server", url, "--table", str(table), "--sql",
             STREAM_SQL, "--stream", "--commit-interval-ms", "50", "--config",
             '{"optimize_after_write": false}'],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, env=cli_env())
        time.sleep(rng.uniform(0.05, 1.5))
        assert proc.poll() is None, proc.communicate()
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"{label} trial {trial}: no exit within 30 s of SIGINT\n{err}")
        waited = time.monotonic() - sent
        waits.append(waited)
        if proc.returncode == -signal.SIGINT:
            # The signal came before the process installed its handler (still starting):
            # it died of it, having written nothing.
            after = sorted(p.name for p in log.iterdir()) if log.is_dir() else []
            assert after == before, f"{label} trial {trial}: killed while writing\n{err}"
            print(f"{label} trial {trial}: SIGINT during start-up")
            continue
        # Stopped by SIGINT after its last commit: exit 130, as a shell reports it.
        assert proc.returncode == 130, f"{label} trial {trial}: exit {proc.returncode}\n{err}"
        assert waited < EXIT_WITHIN_S, f"{label} trial {trial}: exited {waited:.2f} s after SIGINT"
        if (table / "_delta_log").is_dir():
            blocks = deltalake.read(table, block_nums=True)["block_nums"]
            assert len(blocks) == len(set(blocks)), f"{label} trial {trial}: blocks repeated"
            if blocks:
                assert sorted(blocks) == list(range(QUICKSTART_FIRST, max(blocks) + 1))
    return waits


@pytest.mark.timeout(240)
@both_servers()
def test_sigint_stops_an_idle_stream_within_a_second(tmp_path, server_kind):
    """At the head of a still chain the server sends nothing: the first run loads the 100
    blocks, every later one resumes at the head and waits."""
    rng = random.Random(SEED)
    with run_dev_server(kind=server_kind) as server:
        waits = stop_at_random_moments(server.url, tmp_path, "idle", rng)
    print(f"idle: SIGINT to exit {max(waits):.2f} s at most, {sorted(waits)[len(waits) // 2]:.2f} median")


@pytest.mark.timeout(240)
@both_servers()
def test_sigint_stops_a_busy_stream_within_a_second_after_its_commit(tmp_path, server_kind):
    rng = random.Random(SEED + 1)
    with run_dev_server("--block-interval-ms", "10", "--microbatch-max-blocks", "5",
                        "--reorg-every", "17", "--reorg-depth", "2", kind=server_kind) as server:
        waits = stop_at_random_moments(server.url, tmp_path, "busy", rng)
    print(f"busy: SIGINT to exit {max(waits):.2f} s at most, {sorted(waits)[len(waits) // 2]:.2f} median")


@pytest.mark.timeout(120)
@both_servers()
def test_a_resumed_stream_that_hears_nothing_says_so(tmp_path, server_kind):
    """ampd sends nothing for a cursor it cannot serve; at the head of a still chain it sends
    nothing either. A stream resumed with a cursor that gets no microbatch for --stall-warning
    seconds says so in its log (once), and still stops at SIGINT with the table unchanged."""
    table = tmp_path / "stalled"
    args = [str(cli_path()), "load", "--table", str(table), "--sql", STREAM_SQL, "--stream",
            "--commit-interval-ms", "50", "--until-block", str(QUICKSTART_FIRST + 99)]
    with run_dev_server(kind=server_kind) as server:
        first = subprocess.run([*args[:2], "--server", server.url, *args[2:]], capture_output=True,
                               text=True, env=cli_env(), timeout=60, stdin=subprocess.DEVNULL)
        assert first.returncode == 0, first.stderr
        versions = sorted(p.name for p in (table / "_delta_log").iterdir())
        proc = subprocess.Popen(
            [str(cli_path()), "load", "--server", server.url, "--table", str(table), "--sql",
             STREAM_SQL, "--stream", "--stall-warning", "0.5"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=cli_env())
        time.sleep(2.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    warnings = [line for line in err.splitlines() if "no microbatch for 0.5 s" in line]
    assert len(warnings) == 1, err
    assert '"number":24000099' in warnings[0], warnings[0]  # the cursor it resumed with
    assert "stalls=1" in err, err  # and in the summary
    assert sorted(p.name for p in (table / "_delta_log").iterdir()) == versions
