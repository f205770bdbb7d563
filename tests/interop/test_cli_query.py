"""`ampdelta query` (the C++ Amp client) against `ampdelta dev-server`."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from conftest import cli_env, cli_path, refusing_port

QUICKSTART_SQL = 'SELECT block_num, timestamp, hash, gas_used FROM "acme/eth_mainnet".blocks'
CLI_TIMEOUT_S = 60


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(cli_path()), *args], capture_output=True, text=True,
                          env=cli_env(), timeout=CLI_TIMEOUT_S, stdin=subprocess.DEVNULL)


def describe(proc: subprocess.CompletedProcess) -> str:
    return f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"


def test_query_quickstart(quickstart_url):
    proc = run_cli("query", "--server", quickstart_url, "--sql", QUICKSTART_SQL)
    assert proc.returncode == 0, describe(proc)
    last = proc.stdout.strip().splitlines()[-1]
    assert re.fullmatch(
        r"rows=100 .*ranges=mainnet\[24000000\.\.24000099\] ranges_complete=true", last), last
    assert "24000000" in proc.stdout  # the table shows the first rows


def test_query_csv_prints_every_row(quickstart_url):
    proc = run_cli("query", "--server", quickstart_url, "--format", "csv", "--sql",
                   'SELECT block_num FROM "acme/eth_mainnet".blocks')
    assert proc.returncode == 0, describe(proc)
    # RFC 4180: a header record, then the records (text mode reads CRLF as \n); the
    # summary goes to stderr.
    assert proc.stdout == "block_num\n" + "".join(
        f"{n}\n" for n in range(24_000_000, 24_000_100)), describe(proc)
    assert proc.stderr.startswith("rows=100 "), describe(proc)


@pytest.mark.timeout(60)
def test_query_stream_max_microbatches(streaming_server):
    proc = run_cli("query", "--server", streaming_server.url, "--stream",
                   "--max-microbatches", "4", "--sql",
                   'SELECT block_num FROM "acme/eth_mainnet".blocks')
    assert proc.returncode == 0, describe(proc)
    lines = proc.stdout.strip().splitlines()
    microbatches = [line for line in lines if line.startswith("microbatch ")]
    assert [re.search(r"mainnet\[(\d+)\.\.(\d+)\]", line).groups() for line in microbatches] == [
        ("24000000", "24000029"), ("24000030", "24000059"),
        ("24000060", "24000089"), ("24000090", "24000099")]
    summary = lines[-1]
    assert summary.startswith("microbatches=4 cursor=")
    cursor = json.loads(summary.split("cursor=", 1)[1])
    assert cursor["mainnet"]["number"] == 24_000_099
    assert re.fullmatch(r"0x[0-9a-f]{64}", cursor["mainnet"]["hash"])


def test_query_bad_sql(quickstart_url):
    proc = run_cli("query", "--server", quickstart_url, "--sql",
                   'SELECT nope FROM "acme/eth_mainnet".blocks')
    assert proc.returncode != 0, describe(proc)
    errors = proc.stderr.strip().splitlines()
    assert len(errors) == 1, describe(proc)
    assert "INVALID_ARGUMENT" in errors[0] and "invalid query" in errors[0], errors[0]
    assert "rows=" not in proc.stdout


def test_query_unreachable_server():
    with refusing_port() as port:
        proc = run_cli("query", "--server", f"grpc://127.0.0.1:{port}", "--sql", QUICKSTART_SQL)
    assert proc.returncode != 0, describe(proc)
    assert "UNAVAILABLE" in proc.stderr, describe(proc)
