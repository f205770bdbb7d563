"""ampdelta.Table: table maintenance, the same engine calls as `ampdelta table …`."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional

from . import _native
from ._json_text import json_text as _json
from ._errors import InvalidInputError, raise_if_error


class Table:
    """A Delta table at a path or URL (s3://, az://, gs://, file://)."""

    def __init__(self, path: str, storage_options: Optional[Dict[str, str]] = None):
        if isinstance(path, os.PathLike):
            path = os.fspath(path)
        if not isinstance(path, str) or not path:
            raise InvalidInputError("Table() needs a table path or URL")
        _json(path, "the table path")  # refuses text that is not valid Unicode
        self.path = path
        self.storage_options = dict(storage_options or {})

    def __repr__(self) -> str:
        return f"Table({self.path!r})"

    def _run(self, operation: str, **args: Any):
        out, error = _native.table_operation(
            self.path, _json(self.storage_options, "storage_options"), operation,
            _json(args, f"{operation}()'s arguments"))
        raise_if_error(error)
        return json.loads(out)

    def version(self) -> int:
        return self._run("version")["version"]

    def history(self, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        """Commits newest first: version, timestamp (ms), operation, parameters, metrics."""
        return self._run("history", limit=_count(limit or 0, "limit"))

    def optimize(self, target_size: int = 128 * 1024 * 1024,
                 compression: str = "zstd") -> Dict[str, Any]:
        """Compact small files (version None when nothing needed it)."""
        if compression is None:
            compression = "zstd"
        if not isinstance(compression, str):
            raise InvalidInputError("optimize(): compression must be a codec name")
        return self._run("optimize", target_size=_count(target_size, "target_size"),
                         compression=compression)

    def vacuum(self, retention_hours: Optional[float] = None, dry_run: bool = False,
               enforce_retention_duration: bool = True, full: bool = False) -> Dict[str, Any]:
        """Delete files no version within the retention reads (dry_run: only list them)."""
        if retention_hours is not None and (isinstance(retention_hours, bool) or
                                            not isinstance(retention_hours, (int, float))):
            raise InvalidInputError("vacuum(): retention_hours must be a number")
        return self._run("vacuum", retention_hours=retention_hours, dry_run=bool(dry_run),
                         enforce_retention_duration=bool(enforce_retention_duration),
                         full=bool(full))

    def delete(self, predicate: Optional[str] = None) -> Dict[str, Any]:
        """Delete the rows matching a SQL predicate; without one, every row."""
        return self._run("delete", predicate=predicate)

    def restore(self, version: int) -> Dict[str, Any]:
        """Make the latest version's content equal an earlier version's."""
        return self._run("restore", version=_count(version, "version"))

    def checkpoint(self) -> Dict[str, Any]:
        return self._run("checkpoint")


def _count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
        raise InvalidInputError(f"{name} must be an integer from 0 to 2**63-1, got {value!r}")
    return value
