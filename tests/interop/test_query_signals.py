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

import pytest

from conftest import QUICKSTART_DATASET, QUICKSTART_LAST, cli_env, cli_path, run_dev_server
from scripted_flight import ScriptedFlightServer
from test_load_signals import rows, signal_cli

LOGS_SQL = f'SELECT * FROM "{QUICKSTART_DATASET}".logs'


def interrupt(args: list[str], sig: signal.Signals, after_stdout: str | None,
              wait_s: float = 0.5) -> subprocess.CompletedProcess:
    """`ampdelta query ARGS`, sent `sig` `wait_s` after a stdout line holding
    `after_stdout` (or after its handlers are in); exits within two seconds with the
    signal's code."""
    done, _ = signal_cli(["query", *args], sig, wait_s, ready=after_stdout, ready_on="stdout")
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
