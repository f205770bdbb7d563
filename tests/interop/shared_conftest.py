"""tests/interop/conftest.py for the other Python suites (tests/python, tests/wheel).

Their conftest modules call reexport_interop_conftest(globals()): the interop conftest is
imported under another module name, once, and its public names are put into the calling
conftest. pytest registers hooks and fixtures by the names a conftest module holds, so the
interop harness's hooks (the dev server's stderr in failure reports, the default timeout,
the os._exit at the end of the session) and fixtures work there as they do here.
"""

import importlib.util
import os
import sys
import tempfile
from pathlib import Path

MODULE_NAME = "ampdelta_interop_conftest"


def reexport_interop_conftest(namespace: dict):
    module = sys.modules.get(MODULE_NAME)
    if module is None:
        spec = importlib.util.spec_from_file_location(
            MODULE_NAME, Path(__file__).resolve().parent / "conftest.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[MODULE_NAME] = module
        spec.loader.exec_module(module)
    for name, value in vars(module).items():
        if not name.startswith("_") and name != "annotations":
            namespace.setdefault(name, value)
    return module


def use_session_connections_file() -> None:
    """configure_connection saves connections (as the SDK does) to $FLIGHT_SQL_CONNECTIONS,
    else ~/.flight_sql_connections.json: the tests' own go to a file of this session's."""
    os.environ["FLIGHT_SQL_CONNECTIONS"] = os.path.join(
        tempfile.mkdtemp(prefix="ampdelta-connections-"), "connections.json")
