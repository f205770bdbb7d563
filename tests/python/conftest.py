"""Fixtures of the Python package's tests (docs/python.md).

The tests run in a venv where the ampdelta wheel is installed, with $AMPDELTA_CLI naming the
CLI binary, which is used only to start the dev server (`ampdelta dev-server --port 0`).
Everything about servers and readers is the interop harness's (tests/interop/conftest.py
and readers.py), imported, not copied:

- tests/interop goes on sys.path, so `import readers` (and the interop test modules'
  helpers) work;
- tests/interop/conftest.py is imported under another module name, and its public names
  are re-exported here. pytest registers hooks and fixtures by the names a conftest
  module holds, so its hooks (the dev server's stderr in failure reports, the default
  60 s timeout, the os._exit at the end of the session that sidesteps deltalake 1.6.6's
  abort at interpreter exit after to_pyarrow_table(), exit 134 in ~15% of runs) and its
  fixtures (quickstart_url, dev_server_factory, …) work here as they do there. Interop
  modules that say `from conftest import …` find the same names in this module, which is
  the one pytest imported as `conftest`.
"""

from __future__ import annotations

import collections
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

PYTHON_TESTS_DIR = Path(__file__).resolve().parent
INTEROP_DIR = PYTHON_TESTS_DIR.parent / "interop"
if str(INTEROP_DIR) not in sys.path:
    sys.path.insert(0, str(INTEROP_DIR))


from shared_conftest import (  # noqa: E402  (tests/interop)
    reexport_interop_conftest, use_session_connections_file)

use_session_connections_file()
reexport_interop_conftest(globals())

# Named explicitly for readers of this file (they are among the names re-exported above).
from ampdelta_interop_conftest import (  # noqa: E402
    QUICKSTART_DATASET, QUICKSTART_FIRST, QUICKSTART_LAST, DevServer, cli_path,
    dev_server_factory, pytest_collection_modifyitems, pytest_runtest_makereport,
    pytest_sessionfinish, pytest_unconfigure, quickstart_server, quickstart_url,
    run_dev_server)

import readers  # noqa: E402  (tests/interop/readers.py)

SEED_SCRIPTS = PYTHON_TESTS_DIR / "seed_scripts"
HELPER_SCRIPTS = PYTHON_TESTS_DIR / "scripts"
SHIM_DIR = PYTHON_TESTS_DIR / "shim"

BLOCKS_SQL = f'SELECT block_num, timestamp, hash, gas_used FROM "{QUICKSTART_DATASET}".blocks'
QUICKSTART_BLOCK_NUMBERS = list(range(QUICKSTART_FIRST, QUICKSTART_LAST + 1))

# The SDK's LoadResult.__str__ (amp-protocol.md §3.2).
RESULT_RE = re.compile(r"^✅ Loaded (\d+) rows to (\S+) in (\d+\.\d\d)s$")
REORG_RE = re.compile(r"^🔄 Reorg detected: (\d+) ranges invalidated$")
FAILURE_RE = re.compile(r"^❌ Failed to load to (\S+): (.+)$")

# The independent readers every table is read back with.
READER_NAMES = ("deltalake", "polars", "duckdb")

# deltalake 1.6.6 can abort a process at exit after it read a table (see the module doc).
# A script's exit status is judged by exit_status(), which maps exactly that abort, after
# the script finished, to the status the script would have had.
DELTALAKE_EXIT_ABORT = "terminate called without an active exception"


# --- The package ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def client(quickstart_url):
    """A Client of the module's Quickstart server."""
    import ampdelta
    return ampdelta.Client(quickstart_url)


def delta_config(path, **extra) -> dict:
    return {"table_path": str(path), **extra}


# --- Servers ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def transactions_server():
    """The Quickstart's 17,153 transactions: 1009 blocks of 17, sent by the dev server as
    ampd sends them (8192 + 8192 + 769 rows)."""
    with run_dev_server("--blocks", "1009", "--txs-per-block", "17") as server:
        yield server


@pytest.fixture(scope="session")
def big_server():
    """A chain whose full transactions load takes a while (Ctrl-C, GIL): 6000 blocks of 17."""
    with run_dev_server("--blocks", "6000", "--txs-per-block", "17") as server:
        yield server


@pytest.fixture
def live_server(dev_server_factory):
    """The Quickstart chain, growing by a block every 250 ms (no reorgs)."""
    return dev_server_factory("--block-interval-ms", "250", "--microbatch-max-blocks", "10")


INITIAL_HEAD = QUICKSTART_LAST
REORG_EVERY = 7
REORG_DEPTH = 3


def quiet_head(blocks_to_grow: int, reorg_every: int = REORG_EVERY) -> int:
    """A --max-head about blocks_to_grow past the Quickstart's head at which no
    --reorg-every reorg is scheduled: the chain is final once it gets there."""
    head = INITIAL_HEAD + blocks_to_grow
    while (head - INITIAL_HEAD) % reorg_every == 0:
        head += 1
    return head


@pytest.fixture
def reorg_server(dev_server_factory):
    """A chain growing every 100 ms to REORG_MAX_HEAD, replacing its newest 3 blocks after
    every 7 new ones; yields (server, final head)."""
    head = quiet_head(30)
    server = dev_server_factory("--block-interval-ms", "100", "--max-head", str(head),
                                "--reorg-every", str(REORG_EVERY), "--reorg-depth",
                                str(REORG_DEPTH), "--microbatch-max-blocks", "5")
    return server, head


def closed_port_url() -> str:
    """grpc:// URL of a port nothing listens on (bound, then closed)."""
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"grpc://127.0.0.1:{port}"


# --- Scripts in subprocesses -------------------------------------------------------------

def script_env(server_url: str | None, home: Path) -> dict[str, str]:
    """The environment of a script's subprocess.

    - PYTHONPATH=tests/python/shim: its sitecustomize.py sends the seed's hard-coded
      grpc://localhost:1602 to the test's dev server ($AMPDELTA_TEST_SERVER), so the seed
      scripts run with only their import line changed (see that file).
    - HOME: a directory of the test's own, so the SDK's connection file
      (~/.flight_sql_connections.json, which lets one script use a connection another
      configured) is the test's, never the user's.
    - PYTHONUNBUFFERED: each printed line reaches the test at once.
    """
    env = {k: v for k, v in os.environ.items()
           if k not in ("FLIGHT_SQL_CONNECTIONS", "AMP_AUTH_TOKEN", "PYTHONPATH")}
    env["PYTHONPATH"] = str(SHIM_DIR)
    env["PYTHONUNBUFFERED"] = "1"
    home.mkdir(parents=True, exist_ok=True)
    env["HOME"] = str(home)
    if server_url:
        env["AMPDELTA_TEST_SERVER"] = server_url
    else:
        env.pop("AMPDELTA_TEST_SERVER", None)
    return env


def exit_status(returncode: int, stderr: str) -> int:
    """The script's status, except that deltalake's abort at interpreter exit (SIGABRT with
    its message, after everything else) counts as a normal exit 0."""
    if returncode in (-signal.SIGABRT, 128 + signal.SIGABRT) and \
            stderr.rstrip().endswith(DELTALAKE_EXIT_ABORT):
        return 0
    return returncode


def describe(proc) -> str:
    return (f"{' '.join(map(str, proc.args))}\nexit {proc.returncode}\n"
            f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")


def run_script(script: Path, cwd: Path, server_url: str | None, *args: str,
               timeout: float = 120) -> subprocess.CompletedProcess:
    """Run `python SCRIPT ARGS` in cwd and require success."""
    proc = subprocess.run([sys.executable, str(script), *map(str, args)], cwd=cwd,
                          env=script_env(server_url, cwd / ".home"), capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    assert exit_status(proc.returncode, proc.stderr) == 0, describe(proc)
    return proc


# A suite started as a background job (`cmd &` in a script) inherits SIGINT ignored, and
# an ignored signal stays ignored across exec: the scripts the Ctrl-C tests interrupt would
# never see it. Handled signals reset to their default at exec, so handling SIGINT here (as
# an interactive Python does) gives every script its default, without a preexec_fn (unsafe
# in a process with threads).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


class RunningScript:
    """A script subprocess whose stdout is read line by line."""

    def __init__(self, script: Path, cwd: Path, server_url: str | None, *args: str):
        self.args = [sys.executable, str(script), *map(str, args)]
        self._stderr_path = cwd / f".{script.stem}.{time.monotonic_ns()}.stderr"
        self._stderr = open(self._stderr_path, "wb")
        # A script starts with SIGINT as a terminal gives it, whatever ran this suite: a
        # shell's background job ignores SIGINT, its children inherit that, and Python then
        # never raises KeyboardInterrupt, so the Ctrl-C tests would test nothing.
        self.proc = subprocess.Popen(self.args, cwd=cwd, env=script_env(server_url, cwd / ".home"),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=self._stderr, text=True, bufsize=1)
        self.lines: list[str] = []

    def wait_for(self, predicate, timeout: float) -> list[str]:
        """Read lines until predicate(lines) holds; fail on timeout or an early exit."""
        deadline = time.monotonic() + timeout
        while not predicate(self.lines):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                pytest.fail(f"timed out after {timeout} s\n{self.describe()}")
            ready, _, _ = select.select([self.proc.stdout], [], [], min(remaining, 0.2))
            if ready:
                line = self.proc.stdout.readline()
                if line == "":
                    self.proc.wait(timeout=10)
                    pytest.fail(f"exited before the expected output\n{self.describe()}")
                self.lines.append(line.rstrip("\n"))
        return self.lines

    def interrupt(self, timeout: float = 15) -> float:
        """SIGINT; read the rest of stdout; return the seconds until the exit."""
        sent = time.monotonic()
        self.proc.send_signal(signal.SIGINT)
        try:
            rest, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            pytest.fail(f"no exit within {timeout} s of SIGINT\n{self.describe()}")
        self.lines.extend(rest.splitlines())
        return time.monotonic() - sent

    def stderr(self) -> str:
        self._stderr.flush()
        return self._stderr_path.read_text(errors="replace")

    def describe(self) -> str:
        return (f"{' '.join(self.args)}\nexit {self.proc.returncode}\nstdout:\n"
                + "\n".join(self.lines) + f"\nstderr:\n{self.stderr()}")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        if self.proc.stdout:
            self.proc.stdout.close()
        self._stderr.close()


@pytest.fixture
def script_runner():
    """start(script, cwd, url, *args) -> RunningScript; every one is killed at the end."""
    started: list[RunningScript] = []

    def start(script: Path, cwd: Path, server_url: str | None, *args: str) -> RunningScript:
        running = RunningScript(script, cwd, server_url, *args)
        started.append(running)
        return running

    yield start
    for running in started:
        running.close()


def assert_keyboard_interrupt_exit(running: RunningScript) -> None:
    """The script ended by an uncaught KeyboardInterrupt: Python prints its traceback and
    then dies of SIGINT (exit -2)."""
    stderr = running.stderr()
    status = exit_status(running.proc.returncode, stderr)
    assert status == -signal.SIGINT or (status == 0 and "KeyboardInterrupt" in stderr), \
        running.describe()
    assert stderr.rstrip().splitlines()[-1:] == ["KeyboardInterrupt"] or \
        "\nKeyboardInterrupt\n" in stderr, running.describe()


# --- Reading tables back -----------------------------------------------------------------

def read_all(path, names=READER_NAMES) -> dict:
    """name -> pyarrow.Table of the table at path, per independent reader."""
    return {name: readers.READERS[name](str(path)) for name in names}


def column(table, name) -> list:
    return table.column(name).to_pylist()


def hex_of(value) -> str:
    return "0x" + bytes(value).hex()


def rows_by_block(table, value_column: str = "hash") -> dict[int, str]:
    """block_num -> hex value; fails if a block appears twice."""
    blocks = column(table, "block_num")
    twice = sorted(b for b, n in collections.Counter(blocks).items() if n > 1)
    assert not twice, f"blocks repeated: {twice[:10]}"
    return dict(zip(blocks, (hex_of(v) for v in column(table, value_column))))


def assert_readers_see(path, blocks: list[int] | None = None, hashes: dict | None = None,
                       num_rows: int | None = None, names=READER_NAMES) -> dict:
    """Every reader sees the same rows: num_rows, each of `blocks` once (block tables), with
    `hashes` (block -> "0x…"). Returns the tables read."""
    got = read_all(path, names)
    for name, table in got.items():
        if num_rows is not None:
            assert table.num_rows == num_rows, f"{name}: {table.num_rows} rows, not {num_rows}"
        if blocks is not None:
            assert sorted(column(table, "block_num")) == sorted(blocks), name
        if hashes is not None:
            assert rows_by_block(table) == hashes, f"{name}: other hashes"
    return got


def delta_version(path) -> int:
    from deltalake import DeltaTable
    return DeltaTable(str(path)).version()


def is_delta_table(path) -> bool:
    from deltalake import DeltaTable
    return Path(path).exists() and DeltaTable.is_deltatable(str(path))


def server_hashes(url: str) -> dict[int, str]:
    """block_num -> "0x…" hash of the server's chain now, by the CLI's `query` (the C++
    client, not the Python package): the reference the tables are checked against."""
    from test_stream_crash import canonical_hashes  # tests/interop
    return canonical_hashes(url)


def rows_per_version(path) -> list[int]:
    """Row count of every version of the table, oldest first (deltalake time travel)."""
    return [readers.read_deltalake(str(path), version=v).num_rows
            for v in range(delta_version(path) + 1)]


def history_operations(path) -> list[tuple[int, str]]:
    """(version, operation) of every commit, oldest first."""
    from deltalake import DeltaTable
    return sorted((h["version"], h["operation"]) for h in DeltaTable(str(path)).history())
