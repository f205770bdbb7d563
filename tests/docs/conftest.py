"""Fixtures of the doc tests (tests/docs/test_docs.py): the interop harness's servers and
hooks (tests/interop/conftest.py), re-exported as tests/python does."""

from __future__ import annotations

import sys
from pathlib import Path

DOCS_TESTS_DIR = Path(__file__).resolve().parent
INTEROP_DIR = DOCS_TESTS_DIR.parent / "interop"
for directory in (DOCS_TESTS_DIR, INTEROP_DIR):
    if str(directory) not in sys.path:
        sys.path.insert(0, str(directory))

from shared_conftest import (  # noqa: E402  (tests/interop)
    reexport_interop_conftest, use_session_connections_file)

use_session_connections_file()
reexport_interop_conftest(globals())
