"""ampdelta: the Amp Python SDK's Delta Lake loader API on ampdelta's native engine.

    from ampdelta import Client            # was: from amp import Client

docs/python.md describes the package.
"""

import os as _os
import sys as _sys

# Arrow's allocator is chosen at its first allocation, from ARROW_DEFAULT_MEMORY_POOL. The
# engine runs markedly faster on jemalloc, which keeps freed pages for reuse, than on the
# wheel's default mimalloc (docs/benchmarks.md), so ampdelta picks it as its CLI does —
# unless a pool was chosen, or pyarrow was imported (and may have allocated) already.
if "pyarrow" not in _sys.modules:
    _os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")

import pyarrow as _pyarrow  # noqa: E402

# The extension links pyarrow's own Arrow C++ libraries, whose ABI changes with each major
# version: refuse another major version before loading it.
_SUPPORTED_PYARROW_MAJOR = 26
if int(str(_pyarrow.__version__).split(".")[0]) != _SUPPORTED_PYARROW_MAJOR:
    raise ImportError(
        f"ampdelta supports pyarrow {_SUPPORTED_PYARROW_MAJOR}.x only (it is built against "
        f"Arrow C++ {_SUPPORTED_PYARROW_MAJOR}), but pyarrow {_pyarrow.__version__} is "
        f"installed: pip install 'pyarrow>={_SUPPORTED_PYARROW_MAJOR},"
        f"<{_SUPPORTED_PYARROW_MAJOR + 1}'")

from . import _native  # noqa: E402
from ._client import Client, ParallelConfig, QueryBuilder  # noqa: E402
from ._errors import (  # noqa: E402
    CommitConflictError, CorruptLogError, Error, InternalError, InvalidInputError,
    NotFoundError, PreconditionFailedError, ProtocolError, ReorgError, ServerError,
    StorageError, UnsupportedFeatureError)
from ._results import BlockRange, LoadMode, LoadResult  # noqa: E402
from ._table import Table  # noqa: E402

__version__ = _native.__version__

__all__ = [
    "BlockRange", "Client", "CommitConflictError", "CorruptLogError", "Error",
    "InternalError", "InvalidInputError", "LoadMode", "LoadResult", "NotFoundError",
    "ParallelConfig", "PreconditionFailedError", "ProtocolError", "QueryBuilder",
    "ReorgError", "ServerError", "StorageError", "Table", "UnsupportedFeatureError",
]
