"""`ampdelta query` stops on Ctrl-C (SIGINT) and SIGTERM like `load` does (issue 50): a
stream waiting on a still chain, a stream asked for more microbatches than the chain has, a
batch query while the server plans or stalls mid-result. It exits within two seconds with
130 or 143 (the README's exit codes) and still prints what it read: a stream its
`microbatches=N cursor=…` line, from which `--resume` continues.
"""
from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from conftest import QUICKSTART_DATASET, QUICKSTART_LAST, cli_env, cli_path, run_dev_server
from scripted_flight import ScriptedFlightServer
from test_load_signals import EXIT_CODES, EXIT_WITHIN_S, rows, wait_for_handlers

LOGS_SQL = f'SELECT * FROM "{QUICKSTART_DATASET}".logs'


def interrupt(args: list[str], sig: signal.Signals, after_stdout: str | None,
              wait_s: float = 0.5) -> subprocess.CompletedProcess:
    """Run `ampdelta query ARGS`, send `sig` `wait_s` after a stdout line starting with
    `after_stdout` (or after the handlers are in), and return the outcome."""
    proc = subprocess.Popen([str(cli_path()), "query", *args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=cli_env())
    wait_for_handlers(proc)
    seen = []
    if after_stdout is not None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            seen.append(line)
            if line.startswith(after_stdout):
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
        pytest.fail(f"query {args}: no exit within 30 s of {sig.name}\n{err}")
    waited = time.monotonic() - sent
    done = subprocess.CompletedProcess(args, proc.returncode, "".join(seen) + out, err)
    shown = f"{sig.name}: {args}\nexit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{err}"
    assert done.returncode == EXIT_CODES[sig], shown
    assert waited < EXIT_WITHIN_S, f"exited {waited:.2f} s after {sig.name}\n{shown}"
    assert "ERROR: AddressSanitizer" not in err, shown
    return done


def summary_cursor(stdout: str) -> dict:
    last = stdout.strip().splitlines()[-1]
    assert last.startswith("microbatches="), stdout
    return json.loads(last.split(" cursor=", 1)[1])


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_stream_on_a_still_chain_stops_on_a_signal_with_its_cursor(sig):
    with run_dev_server() as server:
        done = interrupt(["--server", server.url, "--stream", "--sql", LOGS_SQL], sig,
                         after_stdout="microbatch ")
    assert summary_cursor(done.stdout)["mainnet"]["number"] == QUICKSTART_LAST


def test_more_microbatches_than_a_still_chain_has_stop_on_ctrl_c():
    """The README's `--max-microbatches 3` against a chain that does not grow."""
    with run_dev_server() as server:
        done = interrupt(["--server", server.url, "--stream", "--max-microbatches", "3",
                          "--sql", LOGS_SQL], signal.SIGINT, after_stdout="microbatch ")
    assert done.stdout.strip().splitlines()[-1].startswith("microbatches=1 "), done.stdout


@pytest.mark.parametrize("script", [
    {"plan": "stall"},                       # the server never answers the plan
    {"batch_rows": 100, "then": "stall"},    # rows, then silence mid-result
], ids=["planning", "mid-result"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_batch_query_on_a_stalled_server_stops_on_a_signal(script, sig):
    with ScriptedFlightServer(rows(500), script) as server:
        interrupt(["--server", server.url, "--sql", "SELECT block_num, hash FROM t"], sig,
                  after_stdout=None, wait_s=1.0)


def test_a_stream_whose_reader_went_away_stops_with_141():
    """`ampdelta query --stream … | head -1`: once the reader closes the pipe the stream
    stops, also while it waits for blocks, instead of running for ever."""
    with run_dev_server() as server:
        proc = subprocess.Popen([str(cli_path()), "query", "--server", server.url, "--stream",
                                 "--sql", LOGS_SQL], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=cli_env())
        first = proc.stdout.readline()
        assert first.startswith("microbatch "), first
        proc.stdout.close()
        try:
            code = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail("query --stream went on after its reader closed the pipe")
        proc.stderr.close()
    assert code == 141, code
