"""Exceptions: one class per engine error code (ampdelta/util/status.h)."""

from __future__ import annotations

import json


class Error(Exception):
    """A failed ampdelta operation. `code` is the engine's error code
    ('server_error', …), `error_class` its class ('server', 'storage', …), and `result`
    the failed LoadResult for loads (None otherwise)."""

    code = "internal"

    def __init__(self, message: str, *, code: str | None = None,
                 error_class: str = "internal", result=None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.error_class = error_class
        self.result = result


class InvalidInputError(Error, ValueError):
    """Bad input: configuration, options, SQL, a predicate or a table path."""
    code = "invalid_input"


class NotFoundError(Error):
    """The table, file or object does not exist."""
    code = "not_found"


class ServerError(Error):
    """The Amp server, or the connection to it, failed."""
    code = "server_error"


class ProtocolError(Error):
    """The Amp server broke its own protocol."""
    code = "protocol_error"


class ReorgError(Error):
    """A reorg invalidated data the operation relied on."""
    code = "reorg_detected"


class CommitConflictError(Error):
    """Another writer committed a conflicting change first."""
    code = "commit_conflict"


class UnsupportedFeatureError(Error):
    """The table uses a Delta feature ampdelta does not implement."""
    code = "unsupported_feature"


class CorruptLogError(Error):
    """The table's log is damaged or inconsistent."""
    code = "corrupt_log"


class PreconditionFailedError(Error):
    """A conditional write found its precondition violated."""
    code = "precondition_failed"


class StorageError(Error):
    """The object store failed (disk full, read-only, permissions, HTTP errors)."""
    code = "storage_error"


class InternalError(Error):
    """An unexpected failure."""
    code = "internal"


_BY_CODE = {cls.code: cls for cls in (
    InvalidInputError, NotFoundError, ServerError, ProtocolError, ReorgError,
    CommitConflictError, UnsupportedFeatureError, CorruptLogError, PreconditionFailedError,
    StorageError, InternalError)}


for _cls in (Error, *_BY_CODE.values()):
    _cls.__module__ = "ampdelta"  # tracebacks say ampdelta.ServerError


def error_from(failure: dict, result=None) -> Error:
    """The exception for the engine's error object {code, class, message}."""
    code = failure.get("code", "internal")
    cls = _BY_CODE.get(code, InternalError)
    return cls(failure.get("message", ""), code=code,
               error_class=failure.get("class", "internal"), result=result)


def raise_if_error(error_json: str | None) -> None:
    if error_json is not None:
        raise error_from(json.loads(error_json))
