"""ampdelta: the Amp Python SDK's Delta Lake loader API on ampdelta's native engine.

    from ampdelta import Client            # was: from amp import Client

docs/python.md describes the package.
"""

# The extension carries its own Arrow C++ (under private names) and exchanges data through
# the Arrow PyCapsule interface: pyarrow, of any version from 14, is used when installed and
# never required; its own Arrow libraries are never loaded by ampdelta.
from . import _native
from ._arrow import ArrowStream, ArrowTable  # noqa: E402
from ._client import Client, ParallelConfig, QueryBuilder  # noqa: E402
from ._errors import (  # noqa: E402
    CommitConflictError, CorruptLogError, Error, InternalError, InvalidInputError,
    NotFoundError, PreconditionFailedError, ProtocolError, ReorgError, ServerError,
    StorageError, UnsupportedFeatureError)
from ._results import BlockRange, LoadMode, LoadResult  # noqa: E402
from ._table import Table  # noqa: E402
from . import loaders  # noqa: E402  (ampdelta.loaders.DeltaLakeLoader)

__version__ = _native.__version__

__all__ = [
    "ArrowStream", "ArrowTable", "BlockRange", "Client", "CommitConflictError", "CorruptLogError", "Error",
    "InternalError", "InvalidInputError", "LoadMode", "LoadResult", "NotFoundError",
    "ParallelConfig", "PreconditionFailedError", "ProtocolError", "QueryBuilder",
    "ReorgError", "ServerError", "StorageError", "Table", "UnsupportedFeatureError",
]
