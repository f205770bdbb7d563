"""Fixtures of the wheel matrix tests (test_wheel_anywhere.py's docstring lists them).

These tests run in fresh venvs of the built wheel on several interpreters, each with its
own requirements-*.txt, and some of those venvs have no pyarrow. So nothing here imports
pyarrow, deltalake, polars or DuckDB: a test imports what it needs itself (with
pytest.importorskip where the module is optional). The only plugins assumed are pytest's
own and pytest-timeout.

The dev server comes from the interop harness, imported, not copied, as
tests/python/conftest.py does it: tests/interop/conftest.py (stdlib + pytest at its top
level) is loaded under another module name and its public names are re-exported here, so
pytest registers its hooks (the dev server's stderr in failure reports, the default
per-test timeout, the os._exit at the end of the session) and fixtures in this directory
too. Clean interpreter exit is checked by test_exit_cleanly_50_times in subprocesses,
which is why the session's own os._exit does not hide anything these tests look for.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

WHEEL_TESTS_DIR = Path(__file__).resolve().parent
INTEROP_DIR = WHEEL_TESTS_DIR.parent / "interop"
if str(INTEROP_DIR) not in sys.path:
    sys.path.insert(0, str(INTEROP_DIR))


from shared_conftest import (  # noqa: E402  (tests/interop)
    reexport_interop_conftest, use_session_connections_file)

use_session_connections_file()
reexport_interop_conftest(globals())

# Named explicitly for readers of this file (they are among the names re-exported above).
from ampdelta_interop_conftest import (  # noqa: E402
    QUICKSTART_DATASET, QUICKSTART_FIRST, QUICKSTART_LAST, DevServer, cli_env, cli_path,
    pytest_collection_modifyitems, pytest_runtest_makereport, pytest_sessionfinish,
    pytest_unconfigure, quickstart_server, quickstart_url, run_dev_server)

BLOCKS_SQL = f'SELECT block_num, hash FROM "{QUICKSTART_DATASET}".blocks'
QUICKSTART_BLOCK_NUMBERS = list(range(QUICKSTART_FIRST, QUICKSTART_LAST + 1))
EXIT_SCRIPT = WHEEL_TESTS_DIR / "exit_script.py"


def installed(module: str) -> bool:
    """Whether `module` can be imported in this venv (without importing it)."""
    return importlib.util.find_spec(module) is not None


@pytest.fixture(scope="module")
def dev_server():
    """`ampdelta dev-server --port 0` ($AMPDELTA_CLI) serving the Quickstart chain
    ("acme/eth_mainnet", blocks 24,000,000..24,000,099), for the module's tests."""
    with run_dev_server() as server:
        yield server


@pytest.fixture(scope="module")
def dev_url(dev_server) -> str:
    return dev_server.url


def python_env() -> dict:
    """The environment of the Python subprocesses: no Arrow memory-pool override, so the
    pool they pick is the default one."""
    env = dict(os.environ)
    env.pop("ARROW_DEFAULT_MEMORY_POOL", None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run_python(code: str, *args: str, timeout: float = 120.0,
               env: dict | None = None) -> subprocess.CompletedProcess:
    """`sys.executable -c code args…` (this venv's interpreter), its output captured."""
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                          text=True, timeout=timeout, env=env or python_env(),
                          stdin=subprocess.DEVNULL, cwd=str(WHEEL_TESTS_DIR))


def describe(proc: subprocess.CompletedProcess) -> str:
    return (f"exit {proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}\n"
            f"--- stderr\n{proc.stderr[-4000:]}")
