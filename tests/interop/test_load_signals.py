"""SIGINT and SIGTERM stop a batch load and a parallel backfill within a second at any
moment (issue 33): while the server plans, before its first batch, in the middle of a
result it then stalls, while rows flow, and while a failed load waits to retry. The exit
code is 130 or 143 (as a shell reports the signal), nothing is committed by the stopped
load, and a backfill counts the partition it interrupted as stopped, not failed.

The moments come from random.Random(seed); AMPDELTA_SIGNAL_SEED=S replays them.
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

from conftest import QUICKSTART_DATASET, cli_env, cli_path, refusing_port, run_dev_server
from scripted_flight import ScriptedFlightServer

SEED = int(os.environ.get("AMPDELTA_SIGNAL_SEED") or 20261204)
# A second, plus the margin the ASan build needs to tear down and check for leaks.
EXIT_WITHIN_S = 2.0
EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}
SIGNALS = (signal.SIGINT, signal.SIGTERM)
BLOCKS_SQL = f'SELECT block_num, hash FROM "{QUICKSTART_DATASET}".blocks'


def rows(count: int) -> pa.Table:
    return pa.table({"block_num": pa.array(range(24_000_000, 24_000_000 + count), pa.int64()),
                     "hash": pa.array([b"h"] * count, pa.binary())})


def log_files(table: Path) -> list[str]:
    log = table / "_delta_log"
    return sorted(p.name for p in log.iterdir()) if log.is_dir() else []


def wait_for_handlers(proc: subprocess.Popen) -> None:
    """Wait until the CLI catches SIGINT and SIGTERM (the kernel's SigCgt mask), so that
    the random moment counts from there: on a busy machine the ASan build takes longer
    than the shortest moment just to start, and a signal before the handlers would kill
    it by default instead of stopping it."""
    wanted = (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGTERM - 1))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        with open(f"/proc/{proc.pid}/status", encoding="ascii") as status:
            caught = next(int(line.split()[1], 16) for line in status
                          if line.startswith("SigCgt:"))
        if caught & wanted == wanted:
            return
        time.sleep(0.005)
    pytest.fail(f"the CLI did not install its signal handlers within 60 s (exit {proc.poll()})")


def signal_cli(args: list[str], sig: signal.Signals, wait_s: float, ready: str | None = None,
               ready_on: str = "stderr") -> tuple[subprocess.CompletedProcess, float]:
    """Run the CLI, send `sig` `wait_s` seconds after its handlers are in (or after a line of
    `ready_on` holding `ready`), check it exits within EXIT_WITHIN_S with the signal's code,
    and return its outcome and how long it took to exit after the signal."""
    proc = subprocess.Popen([str(cli_path()), *args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=cli_env())
    wait_for_handlers(proc)
    seen = []
    if ready is not None:
        pipe = proc.stderr if ready_on == "stderr" else proc.stdout
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = pipe.readline()
            if not line:
                break
            seen.append(line)
            if ready in line:
                break
    time.sleep(wait_s)
    assert proc.poll() is None, f"ended before the signal: {''.join(seen)}{proc.communicate()}"
    sent = time.monotonic()
    proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"{args}: no exit within 30 s of {sig.name}\n{''.join(seen)}{err}")
    waited = time.monotonic() - sent
    if ready_on == "stderr":
        err = "".join(seen) + err
    else:
        out = "".join(seen) + out
    done = subprocess.CompletedProcess(args, proc.returncode, out, err)
    assert done.returncode == EXIT_CODES[sig], describe(done, sig)
    assert waited < EXIT_WITHIN_S, f"exited {waited:.2f} s after {sig.name}\n{describe(done, sig)}"
    assert "internal error" not in done.stderr, describe(done, sig)
    assert "ERROR: AddressSanitizer" not in done.stderr, describe(done, sig)
    return done, waited


def stop_at(args: list[str], table: Path, sig: signal.Signals, wait_s: float,
            ready: str | None = None) -> tuple[subprocess.CompletedProcess, float]:
    """signal_cli for a load into `table`; a stopped batch load commits nothing."""
    before = log_files(table)
    done, waited = signal_cli(args, sig, wait_s, ready)
    if "--workers" not in args:
        assert log_files(table) == before, describe(done, sig)
    return done, waited


def describe(proc: subprocess.CompletedProcess, sig: signal.Signals) -> str:
    return (f"{sig.name}: {proc.args}\nexit {proc.returncode}\nstdout:\n{proc.stdout}\n"
            f"stderr:\n{proc.stderr[-3000:]}")


def load_args(url: str, table: Path, *extra: str, sql: str = BLOCKS_SQL) -> list[str]:
    return ["load", "--server", url, "--table", str(table), "--sql", sql, "--quiet", *extra]


@pytest.mark.parametrize("script", [
    {"plan": "stall"},                               # the server never answers the plan
    {"delay_s": 60},                                 # the schema, then silence
    {"batch_rows": 100, "then": "stall"},            # 500 rows, then silence mid-result
], ids=["planning", "before-the-first-batch", "mid-result"])
def test_a_stalled_batch_load_stops_at_once_on_either_signal(tmp_path, script):
    rng = random.Random(f"{SEED}-{sorted(script.items())}")
    with ScriptedFlightServer(rows(500), script) as server:
        for trial, sig in enumerate(SIGNALS * 2):
            table = tmp_path / f"t{trial}"
            stop_at(load_args(server.url, table), table, sig, rng.uniform(0.2, 1.5))


def test_a_flowing_batch_load_stops_before_its_commit(tmp_path):
    rng = random.Random(f"{SEED}-flowing")
    with run_dev_server("--blocks", "4000", "--txs-per-block", "40") as server:
        sql = f'SELECT * FROM "{QUICKSTART_DATASET}".transactions'
        for trial, sig in enumerate(SIGNALS * 2):
            table = tmp_path / f"t{trial}"
            stop_at(load_args(server.url, table, sql=sql), table, sig, rng.uniform(0.3, 1.0))


def test_a_retrying_batch_load_stops_during_its_back_off(tmp_path):
    rng = random.Random(f"{SEED}-retrying")
    retry = '{"resilience": {"retry": {"max_retries": 5, "initial_backoff_ms": 4000}}}'
    with refusing_port() as port:
        for trial, sig in enumerate(SIGNALS):
            table = tmp_path / f"t{trial}"
            stop_at(load_args(f"grpc://127.0.0.1:{port}", table, "--config", retry), table,
                    sig, rng.uniform(0.2, 0.6), ready="retry")


def test_a_stalled_backfill_stops_at_once_and_counts_no_failed_partition(tmp_path):
    rng = random.Random(f"{SEED}-backfill")
    # Every query (the coverage probe and each partition) gets 5 batches over blocks
    # 24000000..24000004, then silence.
    with ScriptedFlightServer(rows(500), {"batch_rows": 100, "then": "stall"}) as server:
        for trial, sig in enumerate(SIGNALS):
            table = tmp_path / f"t{trial}"
            done, _ = stop_at(
                load_args(server.url, table, "--workers", "2", "--partition-size", "2",
                          "--min-block", "24000000", "--max-block", "24000003",
                          "--reorg-buffer", "1"),
                table, sig, rng.uniform(0.3, 1.2))
            assert "partitions_failed=0" in done.stderr, describe(done, sig)
            assert "partitions_stopped=" in done.stderr, describe(done, sig)
            assert "stopped" in done.stderr, describe(done, sig)


def test_a_python_program_the_suite_starts_raises_keyboard_interrupt_on_ctrl_c():
    """The harness, not the loader: a suite started in the background (SIGINT ignored, as
    a non-interactive shell's `&` leaves it) still starts programs that take Ctrl-C as
    from a terminal (conftest.py), or every Ctrl-C test of a Python program hangs."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; print('ready', flush=True); "
         "time.sleep(30); sys.exit(3)"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=10)
    assert "KeyboardInterrupt" in err, err
    assert proc.returncode == -signal.SIGINT, err  # Python's exit on KeyboardInterrupt
