"""Shared fixtures for the interop tests: locating the ampdelta CLI and running its
dev server (`ampdelta dev-server --port 0`) as a subprocess.

The CLI comes from $AMPDELTA_CLI (the Makefile sets it) or, when that is unset,
build/asan/tools/ampdelta/ampdelta under the repository root.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

INTEROP_DIR = Path(__file__).resolve().parent
REPO_ROOT = INTEROP_DIR.parents[1]
if str(INTEROP_DIR) not in sys.path:
    sys.path.insert(0, str(INTEROP_DIR))  # so `import readers` works

DEFAULT_CLI = REPO_ROOT / "build" / "asan" / "tools" / "ampdelta" / "ampdelta"
FIXTURES_DIR = (REPO_ROOT / ".." / "shared" / "fixtures").resolve()

LISTENING_RE = re.compile(
    r"^(?:ampdelta dev-server|ampd stand-in) listening on (grpc://127\.0\.0\.1:(\d+))\s*$")
STARTUP_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0

# Programs the suites start take Ctrl-C as from a terminal. A suite run in the background
# by a non-interactive shell (`make test &`; make_test.sh's jobs beside a phase) inherits
# SIGINT ignored, and so would every program it starts: Python then never installs its
# handler, a Python child sent Ctrl-C never raises KeyboardInterrupt, and its test hangs.
# A handler here (reset to the default action in each exec'd child) undoes the inherited
# ignore.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Quickstart chain served by default: 100 blocks from 24,000,000 on network "mainnet".
QUICKSTART_DATASET = "acme/eth_mainnet"
QUICKSTART_FIRST = 24_000_000
QUICKSTART_BLOCKS = 100
QUICKSTART_LAST = QUICKSTART_FIRST + QUICKSTART_BLOCKS - 1


def cli_env() -> dict[str, str]:
    """Environment for the (ASan-built) CLI: system allocator, no leak check."""
    env = dict(os.environ)
    env["ARROW_DEFAULT_MEMORY_POOL"] = "system"
    env["ASAN_OPTIONS"] = "detect_leaks=0:detect_container_overflow=0"
    return env


def cli_path() -> Path:
    configured = os.environ.get("AMPDELTA_CLI")
    path = Path(configured) if configured else DEFAULT_CLI
    if not path.is_file() or not os.access(path, os.X_OK):
        pytest.fail(
            f"ampdelta CLI not found or not executable at {path} "
            f"({'from $AMPDELTA_CLI' if configured else 'default; set $AMPDELTA_CLI'}). "
            "Build it first (make build).",
            pytrace=False,
        )
    return path


def fixtures_dir() -> Path:
    """/work/shared/fixtures (../shared/fixtures from the repo root); skip, or fail in CI, if missing."""
    if not FIXTURES_DIR.is_dir():
        message = f"shared fixtures missing: {FIXTURES_DIR} (expected ../shared/fixtures from {REPO_ROOT})"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return FIXTURES_DIR


# The servers the streaming tests run against: ampdelta's own dev server, and a stand-in for
# Amp's real server written from ampd's source (ampd_standin.py), so that a misunderstanding
# the dev server and the client share does not cancel out.
DEV_SERVER = "dev-server"
AMPD_STANDIN = "ampd-standin"
SERVER_KINDS = (DEV_SERVER, AMPD_STANDIN)
STANDIN_SCRIPT = INTEROP_DIR / "ampd_standin.py"


def both_servers(dev_marks=(), ampd_marks=()):
    """Parametrise a test's `server_kind` over both servers, with marks (e.g. an xfail for a
    known divergence) on either."""
    return pytest.mark.parametrize("server_kind", [
        pytest.param(DEV_SERVER, id=DEV_SERVER, marks=list(dev_marks)),
        pytest.param(AMPD_STANDIN, id=AMPD_STANDIN, marks=list(ampd_marks))])


class DevServer:
    """A running `ampdelta dev-server` subprocess, or (kind AMPD_STANDIN) the ampd stand-in,
    which takes the same chain options (--blocks, --start-block, --network,
    --block-interval-ms, --max-head, --reorg-every, --reorg-depth, --reorg-at,
    --microbatch-max-blocks) and prints the same kind of first line."""

    def __init__(self, args: list[str], kind: str = DEV_SERVER, port: int = 0):
        if kind not in SERVER_KINDS:
            raise ValueError(f"unknown server kind {kind!r}")
        self.kind = kind
        if kind == DEV_SERVER:
            self.args = [str(cli_path()), "dev-server", "--port", str(port), *args]
            env = cli_env()
        else:
            self.args = [sys.executable, str(STANDIN_SCRIPT), "--port", str(port), *args]
            env = dict(os.environ, PYTHONUNBUFFERED="1")
        self._stderr = tempfile.NamedTemporaryFile(
            prefix=f"ampdelta-{kind}-", suffix=".stderr", delete=False)
        self.proc = subprocess.Popen(
            self.args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=self._stderr, env=env, text=True, bufsize=1)
        self.url, self.port = self._wait_listening()

    def _wait_listening(self) -> tuple[str, int]:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        line = ""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.1)
            if ready:
                line = self.proc.stdout.readline()
                break
            if self.proc.poll() is not None:
                break
        match = LISTENING_RE.match(line)
        if not match:
            self.stop()
            raise RuntimeError(
                f"{self.kind} did not start: {' '.join(self.args)}\n"
                f"first stdout line: {line!r}, exit code: {self.proc.returncode}\n"
                f"stderr:\n{self.stderr_text()}")
        return match.group(1), int(match.group(2))

    def stderr_text(self) -> str:
        try:
            return Path(self._stderr.name).read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after a timeout; return the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=STOP_TIMEOUT_S)
        if self.proc.stdout:
            self.proc.stdout.close()
        self._stderr.close()
        return self.proc.returncode

    def cleanup(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self._stderr.name)


# Servers started by the running test, for the failure report hook below.
_ACTIVE: list[DevServer] = []


@contextlib.contextmanager
def run_dev_server(*extra_args: str, kind: str = DEV_SERVER, port: int = 0):
    """Start `ampdelta dev-server --port PORT EXTRA_ARGS` (or, with kind AMPD_STANDIN,
    `ampd_standin.py --port PORT EXTRA_ARGS`), yield the DevServer, stop it. PORT 0 picks a
    free port; a given one restarts a server where a client expects it."""
    server = DevServer([str(a) for a in extra_args], kind, port)
    _ACTIVE.append(server)
    try:
        yield server
    finally:
        server.stop()
        _ACTIVE.remove(server)
        _FINISHED.append(server)


@contextlib.contextmanager
def refusing_port(port: int = 0):
    """Yield a port on 127.0.0.1 that refuses connections while the block runs: a socket
    is bound to it but does not listen. A port probed and closed again could be taken by a
    server of a concurrent test (xdist runs several); a bound one cannot, since the kernel's
    ephemeral picks skip it. PORT 0 picks one; a given port (one a stopped server left, with
    its connections in TIME_WAIT) is bound with SO_REUSEADDR."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        if port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        # Cleared once bound, so that no server binding this port by name takes it either.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 0)
        yield sock.getsockname()[1]


# Stopped servers whose stderr is attached to the report of the test that used them.
_FINISHED: list[DevServer] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    servers = list(_ACTIVE) + list(_FINISHED)
    if report.failed:
        for server in servers:
            report.sections.append(
                (f"{server.kind} stderr ({' '.join(server.args[1:])})", server.stderr_text()))
    if report.when == "teardown":
        for server in _FINISHED:
            server.cleanup()
        _FINISHED.clear()


@pytest.fixture
def dev_server_factory():
    """Call with extra CLI args to start a dev server; it is stopped when the test ends."""
    with contextlib.ExitStack() as stack:
        def start(*extra_args: str) -> DevServer:
            return stack.enter_context(run_dev_server(*extra_args))
        yield start


@pytest.fixture(scope="module")
def quickstart_server():
    """The default server: the Quickstart chain (100 blocks from 24,000,000), still."""
    with run_dev_server() as server:
        yield server


@pytest.fixture(scope="module")
def quickstart_url(quickstart_server) -> str:
    return quickstart_server.url


@pytest.fixture(scope="module")
def streaming_server():
    """The Quickstart chain with 30-block streaming microbatches."""
    with run_dev_server("--microbatch-max-blocks", "30") as server:
        yield server


# A hang guard, not a performance check: `make test` runs two tests at a time on two cores,
# and the first Spark read in each worker starts a JVM inside some test's time.
DEFAULT_TEST_TIMEOUT_S = 120


def pytest_collection_modifyitems(config, items):
    """Bound every interop test (pytest-timeout); long ones carry their own mark."""
    for item in items:
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(DEFAULT_TEST_TIMEOUT_S))


# deltalake 1.6.6 aborts the interpreter at exit in about 15% of runs after
# to_pyarrow_table() ("terminate called without an active exception", exit 134), with every
# test passed. The session leaves with pytest's own status instead, without the interpreter
# teardown that runs deltalake's destructors.
_SESSION_STATUS = [0]


def pytest_sessionfinish(session, exitstatus):
    _SESSION_STATUS[0] = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(_SESSION_STATUS[0])
