"""Running ampdelta as a service (docs/operations.md): the metrics endpoint scraped and parsed
with prometheus_client's own parser, the health endpoints through a server outage, JSON logs
(every line an object, the documented events, no secret), and the documented exit codes.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

import readers
from conftest import (QUICKSTART_DATASET, QUICKSTART_LAST, cli_env, cli_path, refusing_port,
                      run_dev_server)

STREAM_SQL = f'SELECT block_num, hash, gas_used FROM "{QUICKSTART_DATASET}".blocks'
BATCH_SQL = f'SELECT block_num, hash FROM "{QUICKSTART_DATASET}".blocks'
LISTEN_TIMEOUT_S = 20.0
RESULT_RE = re.compile(r"^✅ Loaded (\d+) rows")
REORG_RE = re.compile(r"^🔄 Reorg detected")


# --- A loader with an ops endpoint ------------------------------------------------------------

class Loader:
    """`ampdelta --log-format json --log-level info load … --metrics-addr 127.0.0.1:0` with
    stdout and stderr in files; `url` is the endpoint it reported."""

    def __init__(self, tmp: Path, args: list[str], name: str = "load"):
        self.out_path = tmp / f"{name}.stdout"
        self.err_path = tmp / f"{name}.stderr"
        self.args = [str(cli_path()), "--log-format", "json", "--log-level", "info", "load",
                     "--metrics-addr", "127.0.0.1:0", *args]
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=err, env=cli_env())
        self.url = self._wait_for_listen()

    def _wait_for_listen(self) -> str:
        deadline = time.monotonic() + LISTEN_TIMEOUT_S
        while time.monotonic() < deadline:
            for record in self.records():
                if record["event"] == "listen":
                    return record["fields"]["url"]
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        pytest.fail(f"no listen event\n{self.describe()}")

    def records(self) -> list[dict]:
        """Every complete stderr line, parsed: each must be one JSON object."""
        text = self.err_path.read_text(errors="replace")
        lines = text.split("\n")[:-1]  # the last piece may still be being written
        records = []
        for line in lines:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                pytest.fail(f"a stderr line is not JSON: {line!r}\n{self.describe()}")
            assert list(record) == ["time", "level", "event", "fields"], line
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", record["time"]), line
            records.append(record)
        return records

    def stdout(self) -> str:
        return self.out_path.read_text(errors="replace")

    def describe(self) -> str:
        return (f"{' '.join(self.args)}\nexit {self.proc.poll()}\nstdout:\n{self.stdout()}\n"
                f"stderr:\n{self.err_path.read_text(errors='replace')}")

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=5) as reply:
                return reply.status, reply.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def status_or_none(self, path: str) -> int | None:
        """get()'s status, or None when the connection is refused or reset (the endpoint
        turns away clients over its per-address limit until it has seen others leave)."""
        try:
            return self.get(path)[0]
        except OSError:
            return None

    def scrape(self) -> dict[str, float]:
        """/metrics parsed by prometheus_client: sample name{labels} -> value."""
        status, body = self.get("/metrics")
        assert status == 200, body
        samples = {}
        for family in text_string_to_metric_families(body):
            for sample in family.samples:
                labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
                samples[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
        return samples

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        return self.proc.returncode


@contextlib.contextmanager
def running(tmp: Path, args: list[str], name: str = "load"):
    loader = Loader(tmp, args, name)
    try:
        yield loader
    finally:
        loader.stop(signal.SIGKILL)


def wait_for(condition, timeout: float, what: str, loader: Loader):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    pytest.fail(f"{what} within {timeout} s\n{loader.describe()}")


# --- Metrics follow the load --------------------------------------------------------------------

@pytest.mark.timeout(180)
def test_metrics_follow_a_stream_with_reorgs_and_match_the_table(tmp_path):
    max_head = QUICKSTART_LAST + 80
    table = tmp_path / "blocks"
    with run_dev_server("--block-interval-ms", "30", "--max-head", str(max_head),
                        "--reorg-every", "9", "--reorg-depth", "2", "--await-streams") as server:
        with running(tmp_path, ["--server", server.url, "--table", str(table), "--sql",
                                STREAM_SQL, "--stream", "--commit-rows", "1"]) as loader:
            # Scrape until the final chain is committed, then once more at rest.
            scrapes = [loader.scrape()]
            while scrapes[-1].get("ampdelta_committed_block{network=mainnet}", 0) < max_head:
                assert loader.proc.poll() is None, loader.describe()
                time.sleep(0.25)
                scrapes.append(loader.scrape())
            time.sleep(1.5)  # past the commit interval: nothing left to commit
            scrapes.append(loader.scrape())
            code = loader.stop(signal.SIGINT)
    assert code == 130, loader.describe()
    assert len(scrapes) >= 5, f"only {len(scrapes)} scrapes\n{loader.describe()}"
    rows = [s.get("ampdelta_rows_loaded_total", 0) for s in scrapes]
    assert rows == sorted(rows) and rows[-1] > rows[0], rows
    last = scrapes[-1]
    out = loader.stdout().splitlines()
    reorg_lines = [line for line in out if REORG_RE.match(line)]
    commit_lines = [line for line in out if RESULT_RE.match(line)][:-1]  # not the total
    assert reorg_lines, loader.describe()
    # The counters agree with the loader's own lines…
    assert last["ampdelta_reorgs_total"] == len(reorg_lines)
    assert last["ampdelta_commits_total"] == len(commit_lines)
    # …and with the table an independent reader sees: what was loaded minus what was undone.
    table_rows = readers.READERS["deltalake"](table).num_rows
    assert last["ampdelta_rows_loaded_total"] - last["ampdelta_rows_undone_total"] == table_rows
    assert last["ampdelta_committed_block{network=mainnet}"] == max_head
    assert last["ampdelta_head_block{network=mainnet}"] >= \
        last["ampdelta_committed_block{network=mainnet}"]
    assert last["ampdelta_commit_duration_seconds_count"] == len(commit_lines)
    assert last["ampdelta_checkpoint_duration_seconds_count"] >= 1  # every 10 commits
    assert last["process_resident_memory_bytes"] > 1e6
    assert last["process_cpu_seconds_total"] > 0
    # The documented events, in order where order is defined.
    events = [r["event"] for r in loader.records()]
    for event in ("listen", "connect", "commit", "reorg", "checkpoint", "summary", "stop"):
        assert event in events, f"no {event} event: {sorted(set(events))}"
    assert events.index("listen") < events.index("connect") < events.index("commit")
    stop = [r for r in loader.records() if r["event"] == "stop"][-1]["fields"]
    assert stop["reason"] == "signal" and stop["exit_code"] == 130, stop


@pytest.mark.timeout(180)
def test_readiness_follows_the_server_going_away_and_coming_back(tmp_path):
    table = tmp_path / "blocks"
    with run_dev_server() as server:
        port = server.port
        loader = Loader(tmp_path, ["--server", server.url, "--table", str(table), "--sql",
                                   STREAM_SQL, "--stream", "--ready-max-age", "60",
                                   "--config", '{"resilience": {"retry": {"max_retries": 100, '
                                   '"initial_backoff_ms": 200, "max_backoff_ms": 500}}}'])
        try:
            assert loader.get("/healthz") == (200, "ok\n")
            wait_for(lambda: loader.get("/readyz")[0] == 200, 30, "ready", loader)
            server.stop()
            # The port is held while the server is away, so that no concurrent test's server
            # takes it; it is released just before the server comes back on it.
            with refusing_port(port):
                wait_for(lambda: loader.get("/readyz")[0] == 503, 30,
                         "unready without a server", loader)
                status, body = loader.get("/readyz")
                assert "not connected" in body, body
                assert loader.get("/healthz")[0] == 200  # alive all the while
            with run_dev_server(port=port):
                wait_for(lambda: loader.get("/readyz")[0] == 200, 60, "ready again", loader)
            assert loader.scrape()["ampdelta_retries_total{class=server}"] >= 1
            assert loader.get("/nope")[0] == 404
        finally:
            code = loader.stop(signal.SIGTERM)
    assert code == 143, loader.describe()  # stopped by SIGTERM after its last commit


def test_a_bad_metrics_address_is_bad_input(tmp_path):
    for address in ("nonsense", "127.0.0.1:99999", "256.1.1.1:80"):
        proc = subprocess.run([str(cli_path()), "load", "--server", "grpc://127.0.0.1:1",
                               "--table", str(tmp_path / "t"), "--sql", BATCH_SQL,
                               "--metrics-addr", address], capture_output=True, text=True,
                              env=cli_env(), timeout=60, stdin=subprocess.DEVNULL)
        assert proc.returncode == 2, (address, proc.stderr)
        assert "--metrics-addr" in proc.stderr, proc.stderr
        assert not (tmp_path / "t").exists()


# --- Logs ------------------------------------------------------------------------------------

def test_json_logs_carry_the_batch_events_and_never_a_secret(tmp_path):
    token = "tok-SECRET-4bd1"
    table = tmp_path / "blocks"
    with run_dev_server("--require-token", token) as server:
        # A server URL with user-info, a token and a storage secret: none may be echoed.
        url = server.url.replace("grpc://", "grpc://alice:pw-SECRET-9c2e@")
        proc = subprocess.run(
            [str(cli_path()), "--log-format", "json", "--log-level", "debug", "load",
             "--server", url, "--token", token, "--table", str(table), "--sql", BATCH_SQL,
             "--storage-option", "AWS_SECRET_ACCESS_KEY=key-SECRET-77aa", "--count"],
            capture_output=True, text=True, env=cli_env(), timeout=120,
            stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    for secret in ("SECRET", "pw-", token):
        assert secret not in proc.stderr and secret not in proc.stdout, secret
    records = [json.loads(line) for line in proc.stderr.splitlines()]
    events = [r["event"] for r in records]
    for event in ("connect", "commit", "summary", "stop"):
        assert event in events, events
    commit = next(r for r in records if r["event"] == "commit")["fields"]
    assert commit["rows"] == 100 and commit["version"] == 0, commit
    assert "***" in next(r for r in records if r["event"] == "connect")["fields"]["server"]


def test_a_batch_load_without_a_terminal_prints_progress_lines_with_an_eta(tmp_path):
    with run_dev_server("--blocks", "3000", "--txs-per-block", "50") as server:
        proc = subprocess.run(
            [str(cli_path()), "load", "--server", server.url, "--table", str(tmp_path / "t"),
             "--sql", f'SELECT * FROM "{QUICKSTART_DATASET}".transactions', "--count",
             "--progress-interval", "0.05", "--batch-size", "5000"],
            capture_output=True, text=True, env=cli_env(), timeout=300,
            stdin=subprocess.DEVNULL)
        quiet = subprocess.run(
            [str(cli_path()), "load", "--server", server.url, "--table", str(tmp_path / "q"),
             "--sql", BATCH_SQL, "--quiet", "--progress-interval", "0.01"],
            capture_output=True, text=True, env=cli_env(), timeout=120,
            stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if " progress " in line]
    assert lines, proc.stderr
    fields = dict(re.findall(r"(\w+)=(\S+)", lines[-1]))
    assert int(fields["total_rows"]) == 150_000, lines[-1]
    assert "eta_s" in fields and float(fields["mb_per_s"]) > 0, lines[-1]
    assert quiet.returncode == 0 and "progress" not in quiet.stderr, quiet.stderr


# --- Exit codes --------------------------------------------------------------------------------

class Refusing(http.server.BaseHTTPRequestHandler):
    """An S3 endpoint that refuses everything (403 AccessDenied)."""

    def _refuse(self):
        body = b"<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"
        self.send_response(403)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _refuse

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def refusing_s3():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def load(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(cli_path()), "load", *args], capture_output=True, text=True,
                          env=cli_env(), timeout=timeout, stdin=subprocess.DEVNULL)


def test_exit_codes_name_the_class_of_failure(tmp_path):
    with run_dev_server() as server:
        ok = load("--server", server.url, "--table", str(tmp_path / "ok"), "--sql", BATCH_SQL)
        assert ok.returncode == 0, ok.stderr
        bad = load("--server", server.url, "--table", str(tmp_path / "bad"), "--sql",
                   BATCH_SQL, "--config", '{"batch_size": 10}')
        assert bad.returncode == 2 and "unknown key 'batch_size'" in bad.stderr, bad.stderr
        sql = load("--server", server.url, "--table", str(tmp_path / "sql"), "--sql",
                   "SELECT nope FROM nowhere")
        assert sql.returncode == 3 and "INVALID_ARGUMENT" in sql.stderr, sql.stderr
        with refusing_s3() as endpoint:
            denied = load("--server", server.url, "--table", "s3://bucket/t", "--sql",
                          BATCH_SQL, "--storage-option", f"AWS_ENDPOINT_URL={endpoint}",
                          "--storage-option", "AWS_ALLOW_HTTP=true",
                          "--storage-option", "AWS_ACCESS_KEY_ID=k",
                          "--storage-option", "AWS_SECRET_ACCESS_KEY=s",
                          "--storage-option", "AWS_REGION=us-east-1")
        assert denied.returncode == 4 and "AccessDenied" in denied.stderr, denied.stderr
    with refusing_port() as port:
        unreachable = load("--server", f"grpc://127.0.0.1:{port}", "--table",
                           str(tmp_path / "down"), "--sql", BATCH_SQL, "--config",
                           '{"resilience": {"retry": {"enabled": false}}}')
    assert unreachable.returncode == 3, unreachable.stderr
    for name in ("bad", "sql", "down"):
        assert not (tmp_path / name).exists(), name


@pytest.mark.timeout(180)
def test_two_loaders_of_one_stream_the_loser_exits_with_a_conflict(tmp_path):
    table = tmp_path / "blocks"
    args = ["--table", str(table), "--sql", STREAM_SQL, "--stream", "--commit-rows", "1",
            "--config", '{"optimize_after_write": false}']
    with run_dev_server("--block-interval-ms", "20") as server:
        first = load("--server", server.url, *args, "--until-block", str(QUICKSTART_LAST))
        assert first.returncode == 0, first.stderr
        procs = [subprocess.Popen([str(cli_path()), "load", "--server", server.url, *args],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, env=cli_env())
                 for _ in range(2)]
        try:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and all(p.poll() is None for p in procs):
                time.sleep(0.1)
            loser = next((p for p in procs if p.poll() is not None), None)
            assert loser is not None, "both loaders still running after 90 s"
            err = loser.communicate(timeout=10)[1]
            assert loser.returncode == 5, err
            assert "another loader is writing stream" in err, err
        finally:
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGINT)
                    p.communicate(timeout=30)
    winner = next(p for p in procs if p is not loser)
    assert winner.returncode == 130, winner.stderr.read() if winner.stderr else ""


# --- What an attacker or an unlucky operator does (red-team findings) ---------------------------

@contextlib.contextmanager
def black_hole():
    """A TCP server that accepts connections and never says a word (a server stuck
    planning, or a firewall that swallows packets)."""
    import socket
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted = []
    stop = threading.Event()

    def accept():
        listener.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                accepted.append(listener.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"grpc://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        for sock in accepted:
            sock.close()
        listener.close()


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
@pytest.mark.parametrize("mode", ["batch", "stream", "count"])
def test_a_signal_stops_a_load_whose_server_never_answers_the_plan(tmp_path, mode, sig, code):
    extra = {"batch": [], "stream": ["--stream"], "count": ["--count"]}[mode]
    with black_hole() as url:
        proc = subprocess.Popen(
            [str(cli_path()), "load", "--server", url, "--table", str(tmp_path / "t"), "--sql",
             BATCH_SQL, *extra], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=cli_env())
        time.sleep(2)
        assert proc.poll() is None, proc.communicate()
        sent = time.monotonic()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    assert time.monotonic() - sent < 5, f"took {time.monotonic() - sent:.1f} s"
    # Nothing was written; a stream's write lease (taken before it connects) was released.
    left = sorted(p.relative_to(tmp_path / "t").as_posix()
                  for p in (tmp_path / "t").rglob("*")) if (tmp_path / "t").exists() else []
    assert left in ([], ["_ampdelta_leases"]), left


def test_secrets_in_a_malformed_config_or_a_mistyped_url_are_not_echoed(tmp_path):
    bad_json = load("--server", "grpc://127.0.0.1:1", "--table", str(tmp_path / "t"),
                    "--sql", BATCH_SQL, "--config",
                    '{"storage_options": {"AWS_SECRET_ACCESS_KEY": "wJalr-SECRET-KEY}}')
    assert bad_json.returncode == 2, bad_json.stderr
    assert "not JSON" in bad_json.stderr and "SECRET" not in bad_json.stderr, bad_json.stderr
    no_scheme = load("--server", "alice:pw-SECRET@127.0.0.1:1", "--table",
                     str(tmp_path / "t"), "--sql", BATCH_SQL)
    assert no_scheme.returncode == 2, no_scheme.stderr
    assert "SECRET" not in no_scheme.stderr and "***@127.0.0.1:1" in no_scheme.stderr


def test_in_json_format_every_stderr_line_is_json_even_for_usage_errors(tmp_path):
    for args in (["load", "--bogus"], ["--log-level", "loud", "load"], ["nonsense"],
                 ["load", "--table", "t"], ["load", "--sql", "x", "--ready-max-age", "-1"]):
        proc = subprocess.run([str(cli_path()), "--log-format", "json", *args],
                              capture_output=True, text=True, env=cli_env(), timeout=60,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 2, (args, proc.stderr)
        lines = proc.stderr.splitlines()
        assert lines, args
        for line in lines:
            record = json.loads(line)
            assert record["event"] == "error" and record["fields"]["message"], line


def test_garbage_http_requests_write_nothing_to_the_log_and_the_endpoint_stays_up(tmp_path):
    import socket
    with run_dev_server() as server:
        with running(tmp_path, ["--server", server.url, "--table", str(tmp_path / "t"),
                                "--sql", STREAM_SQL, "--stream", "--ready-max-age", "0"]
                     ) as loader:
            wait_for(lambda: loader.get("/readyz")[0] == 200, 30, "ready", loader)
            host, port = loader.url.removeprefix("http://").rsplit(":", 1)
            idle = []
            for payload in (b"\x16\x03\x01garbage\r\n\r\n", b"GET /" + b"a" * 100_000 +
                            b" HTTP/1.1\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n"):
                with socket.create_connection((host, int(port)), timeout=5) as sock:
                    sock.sendall(payload)
                    with contextlib.suppress(OSError):
                        sock.recv(1024)
            for _ in range(40):  # clients that never finish a request
                with contextlib.suppress(OSError):
                    sock = socket.create_connection((host, int(port)), timeout=5)
                    sock.sendall(b"GET /metrics HTTP/1.1\r\nX-Slow: ")
                    idle.append(sock)
            for sock in idle:
                sock.close()
            wait_for(lambda: loader.status_or_none("/healthz") == 200, 15, "alive", loader)
            # A quiet stream at the chain's head stays ready with --ready-max-age 0.
            time.sleep(1.5)
            assert loader.get("/readyz")[0] == 200
            records = loader.records()  # every line is JSON (checked inside)
            assert not [r for r in records if r["event"] in ("http", "message")], records


def test_a_stream_whose_reader_goes_away_stops_after_its_commit(tmp_path):
    with run_dev_server("--block-interval-ms", "50") as server:
        proc = subprocess.Popen(
            [str(cli_path()), "load", "--server", server.url, "--table", str(tmp_path / "t"),
             "--sql", STREAM_SQL, "--stream", "--commit-interval-ms", "100"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, env=cli_env())
        first = proc.stdout.readline()
        assert first.startswith("✅"), first
        proc.stdout.close()  # `| head -1`
        proc.wait(timeout=30)
        err = proc.stderr.read()
    assert proc.returncode == 141, err  # stopped, not killed by SIGPIPE (-13)
    assert "ampdelta: error" not in err, err
