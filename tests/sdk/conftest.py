"""Fixtures of the tests that drive ampdelta through the real Amp Python SDK (tests/sdk):
they run in build/sdk-venv (scripts/sdk_venv.sh: CPython 3.12, the vendored SDK of
../shared/vendor/amp-python, its deltalake, and the abi3 wheel), with the interop harness's
servers and hooks (tests/interop/conftest.py) re-exported as tests/python does."""

from __future__ import annotations

import sys
from pathlib import Path

SDK_TESTS_DIR = Path(__file__).resolve().parent
INTEROP_DIR = SDK_TESTS_DIR.parent / "interop"
if str(INTEROP_DIR) not in sys.path:
    sys.path.insert(0, str(INTEROP_DIR))

from shared_conftest import (  # noqa: E402  (tests/interop)
    reexport_interop_conftest, use_session_connections_file)

use_session_connections_file()
reexport_interop_conftest(globals())
