"""Client and QueryBuilder: the SDK's entry points (amp-protocol.md §3.1) on the engine."""

from __future__ import annotations

import atexit
import contextlib
import copy
import fcntl
import json
import math
import os
import tempfile
import threading
import time
import warnings
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional

from . import _native
from ._arrow import ArrowStream, pyarrow_module, reader_from_capsule
from ._errors import InvalidInputError, error_from, raise_if_error
from ._json_text import json_text as _json
from ._results import LoadMode, LoadResult, result_from
from ._table import Table

LOADER = "deltalake"


@dataclass
class ParallelConfig:
    """The SDK's ParallelConfig (with stream=True): a parallel backfill; without
    max_block it hands over to a live stream, as the SDK's hybrid mode does."""
    num_workers: int
    table_name: Optional[str] = None
    min_block: Optional[int] = None
    max_block: Optional[int] = None
    partition_size: Optional[int] = None
    block_column: str = "block_num"
    reorg_buffer: Optional[int] = None
    stop_on_error: bool = False


# Keywords of load() beyond the SDK's LoadConfig, passed to the engine as they are.
_ENGINE_KEYWORDS = {
    "batch_size", "merge_keys", "commit_every_rows", "with_reorg_detection",
    "until_block", "block_column", "idle_timeout", "stream_commit_rows",
    "stream_commit_interval", "reorg_window", "stall_warning",
}
_PARALLEL_KEYWORDS = {
    "num_workers", "partition_size", "min_block", "max_block", "then_stream",
    "stop_on_error", "reorg_buffer", "partition_attempts",
}
# The SDK's LoadConfig fields it accepts and ampdelta needs nothing for.
_ACCEPTED_SDK_KEYWORDS = {"create_table", "schema_evolution", "resume", "resume_watermark"}
# The SDK's LoadConfig retry fields: the connection's resilience.retry for this load.
_RETRY_KEYWORDS = {"max_retries", "retry_delay"}
_WRITER_PROPERTIES = ("compression", "compression_level", "max_row_group_size")

# Live loads, stopped and joined at exit so no loader thread outlives the interpreter.
_LIVE_JOBS: "weakref.WeakSet" = weakref.WeakSet()


_EXIT_WAIT_SECONDS = 30.0


@atexit.register
def _stop_live_jobs() -> None:
    # No load starts once the interpreter is exiting: a job started later ends at once
    # with an error (the extension checks under the lock that starts jobs).
    _native.refuse_new_loads()
    jobs = list(_LIVE_JOBS)
    for job in jobs:
        job.stop()
    # Give stopping loads time to end (a stream its commit), but never hang the exit on a
    # server that does not answer.
    deadline = time.monotonic() + _EXIT_WAIT_SECONDS
    for job in jobs:
        job.join_for(max(deadline - time.monotonic(), 0.0))


class Client:
    """An Amp server plus named loader connections: `Client(url, auth_token=None)`.

    Without auth_token the engine uses $AMP_AUTH_TOKEN, as the SDK does."""

    def __init__(self, url: Optional[str] = None, query_url: Optional[str] = None,
                 admin_url: Optional[str] = None, registry_url: Optional[str] = None,
                 auth_token: Optional[str] = None, auth: bool = False):
        self.url = url or query_url
        if not self.url:
            raise InvalidInputError("Client() needs the server's url, like 'grpc://localhost:1602'")
        if not isinstance(self.url, str):
            raise InvalidInputError(f"Client() url must be a string, got {type(self.url).__name__}")
        _json(self.url, "the url")
        if auth_token is not None:
            if not isinstance(auth_token, str) or not auth_token:
                raise InvalidInputError("Client() auth_token must be a non-empty string")
            if not all(" " <= c <= "~" for c in auth_token):
                raise InvalidInputError(
                    "Client() auth_token must be printable ASCII (it is sent as a header); "
                    "check for a newline or stray characters")
        self.auth_token = auth_token
        self._connections: Dict[str, Dict[str, Any]] = {}

    def configure_connection(self, name: str, loader: str, config: Dict[str, Any]) -> None:
        """Name a `deltalake` connection; raises ValueError for a bad configuration."""
        if not isinstance(name, str) or not name:
            raise InvalidInputError("configure_connection() needs a connection name")
        if loader != LOADER:
            raise InvalidInputError(
                f"Unknown loader '{loader}': ampdelta provides '{LOADER}' (without an underscore)")
        self._connections[name] = _checked_config(config)
        _saved_connections.save(name, LOADER, self._connections[name])

    def sql(self, query: str) -> "QueryBuilder":
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError("sql() needs a query")
        _json(query, "the query")
        return QueryBuilder(self, query)

    def get_sql(self, query: str, read_all: bool = False):
        """The SDK's get_sql: a table (read_all) or an iterator of batches (pyarrow
        RecordBatches; without pyarrow, ampdelta.ArrowTables of one batch each)."""
        builder = self.sql(query)
        return builder.to_arrow() if read_all else iter(builder.to_reader())

    def table(self, connection: str):
        """The ampdelta.Table of a configured connection."""
        config = self._connection(connection)
        return Table(config["table_path"], storage_options=config.get("storage_options"))

    def _connection(self, name: str) -> Dict[str, Any]:
        if name not in self._connections:
            saved = _saved_connections.load(name)
            if saved is None:
                raise InvalidInputError(
                    f"unknown connection '{name}' (name it with configure_connection "
                    f"first; none is saved in {_saved_connections.path()})")
            self._connections[name] = saved
        return self._connections[name]


class _SavedConnections:
    """Connections persist between scripts, as the SDK's ConnectionManager keeps them: a
    JSON object {name: {loader, config}} at $FLIGHT_SQL_CONNECTIONS, else
    ~/.flight_sql_connections.json. The file can hold credentials (storage_options): it
    is written owner-only, and replaced atomically, so a crash never leaves half a file."""

    def __init__(self):
        self._lock = threading.Lock()

    def path(self) -> str:
        return os.environ.get("FLIGHT_SQL_CONNECTIONS") or os.path.join(
            os.path.expanduser("~"), ".flight_sql_connections.json")

    def _read(self) -> Optional[Dict[str, Any]]:
        """The file's entries; {} when there is none; None when it is not a JSON object."""
        try:
            with open(self.path(), encoding="utf-8") as file:
                entries = json.load(file)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            return None
        return entries if isinstance(entries, dict) else None

    def save(self, name: str, loader: str, config: Dict[str, Any]) -> None:
        # Read-modify-write under a lock: threads of this process, and (flock on a lock
        # file beside it) other processes, never lose each other's connections.
        with self._lock, self._file_lock():
            self._save(name, loader, config)

    @contextlib.contextmanager
    def _file_lock(self):
        try:
            fd = os.open(self.path() + ".lock", os.O_WRONLY | os.O_CREAT, 0o600)
        except OSError:
            yield  # an unwritable folder: saving warns below
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _save(self, name: str, loader: str, config: Dict[str, Any]) -> None:
        path = self.path()
        entries = self._read()
        if entries is None:
            warnings.warn(f"ampdelta: {path} is not a JSON object of connections; "
                          f"connection '{name}' is kept for this process only")
            return
        entries[name] = {"loader": loader, "config": config}
        tmp = None
        try:
            # A temporary file of its own (mkstemp: owner-only) in the same folder, so the
            # rename is atomic and writers never share one.
            fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".",
                                       suffix=".tmp", dir=os.path.dirname(path) or ".")
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                json.dump(entries, file, indent=2, ensure_ascii=False)
            os.replace(tmp, path)
        except OSError as error:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            warnings.warn(f"ampdelta: cannot save connection '{name}' to {path} ({error}); "
                          f"it is kept for this process only")

    def load(self, name: str) -> Optional[Dict[str, Any]]:
        entries = self._read()
        if entries is None:
            raise InvalidInputError(
                f"{self.path()} is not a JSON object of connections; fix or delete it")
        entry = entries.get(name)
        if entry is None:
            return None
        if not isinstance(entry, dict) or entry.get("loader") != LOADER:
            raise InvalidInputError(
                f"connection '{name}' in {self.path()} is not a '{LOADER}' connection")
        return _checked_config(entry.get("config"))


_saved_connections = _SavedConnections()


def _checked_config(config: Any) -> Dict[str, Any]:
    if not isinstance(config, dict):
        raise InvalidInputError(
            f"Invalid DeltaLakeLoader configuration: expected a dict, got {type(config).__name__}")
    config = copy.deepcopy(config)  # the caller's dict is never changed
    if isinstance(config.get("table_path"), os.PathLike):
        config["table_path"] = os.fspath(config["table_path"])
    raise_if_error(_native.validate_config(
        _json(config, "Invalid DeltaLakeLoader configuration: the configuration")))
    return config


_CODEC_LEVELS = {"uncompressed": None, "snappy": None, "lz4": None, "lz4_raw": None,
                 "gzip": (1, 9), "brotli": (0, 11), "zstd": (-131072, 22)}


def _writer_properties(value: Any) -> Dict[str, Any]:
    """deltalake.WriterProperties or a dict → compression, level and row-group size."""
    if isinstance(value, dict):
        fields = dict(value)
    elif type(value).__name__ == "WriterProperties":
        fields = {key: getattr(value, key) for key in dir(value)
                  if not key.startswith("_") and not callable(getattr(value, key, None))}
    else:
        raise InvalidInputError(
            "writer_properties must be a deltalake.WriterProperties or a dict, got "
            f"{type(value).__name__}")
    out = {}
    for key, field_value in fields.items():
        if field_value is None:
            continue
        if key not in _WRITER_PROPERTIES:
            raise InvalidInputError(
                f"writer_properties: '{key}' is not supported by ampdelta (it takes "
                f"{', '.join(_WRITER_PROPERTIES)})")
        out[key] = field_value
    if "compression" in out:
        text = str(out["compression"]).strip()
        # deltalake spells a level into the codec: "ZSTD(3)".
        if text.endswith(")") and "(" in text:
            text, level = text[:-1].split("(", 1)
            try:
                out.setdefault("compression_level", int(level))
            except ValueError:
                raise InvalidInputError(
                    f"writer_properties: compression {out['compression']!r} has a level "
                    "that is not an integer") from None
        out["compression"] = text.lower()
        if out["compression"] not in _CODEC_LEVELS:
            raise InvalidInputError(
                f"writer_properties: unknown compression {text!r} (use "
                f"{', '.join(c.upper() for c in _CODEC_LEVELS)})")
    if "compression_level" in out:
        level = out["compression_level"]
        codec = out.get("compression", "zstd")
        bounds = _CODEC_LEVELS[codec]
        if isinstance(level, bool) or not isinstance(level, int):
            raise InvalidInputError("writer_properties: compression_level must be an integer")
        if bounds is None:
            raise InvalidInputError(
                f"writer_properties: {codec.upper()} takes no compression level")
        if not bounds[0] <= level <= bounds[1]:
            raise InvalidInputError(
                f"writer_properties: {codec.upper()} levels are {bounds[0]} to {bounds[1]}, "
                f"got {level}")
    return out


def _with_retry(table_config: Dict[str, Any], kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """The SDK's `max_retries` / `retry_delay` (seconds) as the connection's
    resilience.retry for one load; the engine checks the numbers as it checks the
    connection's own (a count that does not fit is refused, never wrapped)."""
    retry: Dict[str, Any] = {}
    if "max_retries" in kwargs:
        retry["max_retries"] = kwargs["max_retries"]
    if "retry_delay" in kwargs:
        delay = kwargs["retry_delay"]
        if (isinstance(delay, bool) or not isinstance(delay, (int, float))
                or not math.isfinite(delay) or delay < 0 or delay > 86_400):
            raise InvalidInputError(
                f"retry_delay must be a number of seconds from 0 to 86400, got {delay!r}")
        retry["initial_backoff_ms"] = max(1, round(delay * 1000))
    if not retry:
        return table_config
    resilience = dict(table_config.get("resilience") or {})
    resilience["retry"] = dict(resilience.get("retry") or {}, **retry)
    return dict(table_config, resilience=resilience)


def load_options(table_config: Dict[str, Any], destination: Optional[str], mode: Any,
                 writer_properties: Any, kwargs: Dict[str, Any], caller: str):
    """The connection and the engine's load options of one load: its mode, the engine's
    keywords, the SDK's retry keywords and writer_properties (the SDK's other LoadConfig
    fields are accepted and need nothing). An unknown keyword is a TypeError, as Python
    gives for a function."""
    options: Dict[str, Any] = {"destination": destination or ""}
    options["mode"] = (mode.value if isinstance(mode, LoadMode) else str(mode)).lower()
    for key, value in kwargs.items():
        if key in _ENGINE_KEYWORDS:
            options[key] = value
        elif key not in _ACCEPTED_SDK_KEYWORDS and key not in _RETRY_KEYWORDS:
            raise TypeError(f"{caller} got an unexpected keyword argument '{key}'")
    table_config = _with_retry(table_config, kwargs)
    if writer_properties is not None:
        properties = _writer_properties(writer_properties)
        if "max_row_group_size" in properties:
            table_config = dict(table_config,
                                max_rows_per_group=properties.pop("max_row_group_size"))
        options.update(properties)
    return table_config, options


class QueryBuilder:
    """A query ready to load (`client.sql(q)`)."""

    def __init__(self, client: Client, query: str):
        self._client = client
        self.query = query

    def __repr__(self) -> str:
        return f"QueryBuilder({self.query!r})"

    def to_reader(self):
        """The result (a batch query) batch by batch: a pyarrow.RecordBatchReader when
        pyarrow is installed, else an ampdelta.ArrowStream (`__arrow_c_stream__`)."""
        return reader_from_capsule(self._capsule())

    def to_arrow(self):
        """The whole result, handed over through the Arrow C stream interface without a
        copy: a pyarrow.Table when pyarrow is installed, else an ampdelta.ArrowTable that
        Polars (`polars.DataFrame(t)`), DuckDB or arro3 read."""
        pa = pyarrow_module()
        if pa is None:
            return ArrowStream(self._capsule()).read_all()
        reader = self.to_reader()
        try:
            return reader.read_all()
        except pa.ArrowException as error:
            raise error_from({"code": "server_error", "class": "server",
                              "message": str(error)}) from None

    def _capsule(self):
        capsule, error = _native.open_query_stream(self._client.url, self._client.auth_token,
                                                   self.query)
        raise_if_error(error)
        return capsule

    def load(self, connection: Optional[str] = None, destination: Optional[str] = None,
             config: Optional[Dict[str, Any]] = None, label_config: Any = None, *,
             read_all: bool = False, mode: Any = "append", stream: bool = False,
             writer_properties: Any = None, parallel_config: Optional[ParallelConfig] = None,
             shard: Optional[tuple] = None, takeover: Any = None,
             progress: Optional[Callable[[LoadResult], Any]] = None, **kwargs):
        """Load the query through a connection; see docs/python.md for the keywords."""
        if label_config is not None:
            raise InvalidInputError("label_config (label joins) is not supported by ampdelta")
        if config is not None:
            if not isinstance(config, dict):
                raise InvalidInputError(
                    "Invalid DeltaLakeLoader configuration: expected a dict, got "
                    f"{type(config).__name__}")
            loader = config.get("loader_type", LOADER)
            if loader != LOADER:
                raise InvalidInputError(
                    f"Unknown loader '{loader}': ampdelta provides '{LOADER}'")
            table_config = _checked_config({k: v for k, v in config.items()
                                            if k != "loader_type"})
        else:
            table_config = self._client._connection(connection)
        parallel = {key: kwargs.pop(key) for key in list(kwargs) if key in _PARALLEL_KEYWORDS}
        table_config, options = load_options(table_config, destination, mode,
                                             writer_properties, kwargs, "load()")
        options["read_all"] = bool(read_all)
        if takeover is not None:
            options["takeover"] = _takeover(takeover)
        if parallel_config is not None:
            if not stream:
                raise InvalidInputError("parallel_config requires stream=True")
            parallel.update(num_workers=parallel_config.num_workers,
                            min_block=parallel_config.min_block,
                            max_block=parallel_config.max_block,
                            partition_size=parallel_config.partition_size,
                            reorg_buffer=parallel_config.reorg_buffer,
                            stop_on_error=parallel_config.stop_on_error,
                            then_stream=parallel_config.max_block is None)
            options["block_column"] = parallel_config.block_column
            stream = False
        if shard is not None:
            if (not isinstance(shard, tuple) or len(shard) != 2 or
                    not all(isinstance(x, int) for x in shard)):
                raise InvalidInputError("shard must be (index, count), like (0, 4)")
            parallel.update(shard_index=shard[0], shard_count=shard[1])
        if parallel:
            if stream:
                raise InvalidInputError(
                    "stream=True with a parallel backfill is spelled then_stream=True")
            options["parallel"] = {k: v for k, v in parallel.items() if v is not None}
        options["stream"] = bool(stream)
        options["batch_events"] = (not read_all and not parallel) or progress is not None
        job = _native.LoadJob(self._client.url, self._client.auth_token, self.query,
                              _json(table_config, "the configuration"),
                              _json(options, "the load options"))
        raise_if_error(job.error)
        events = _Events(job, progress)
        if parallel and read_all:
            return events.final()
        if stream or parallel:
            return events.results(kinds=("partition", "commit", "reorg"), hold_last=False)
        if not read_all:
            return events.results(kinds=("batch",), hold_last=True)
        return events.final()


def _takeover(value: Any) -> Any:
    if value == "after-table-max":
        return value
    if (isinstance(value, tuple) and len(value) == 2 and value[0] == "from-block" and
            isinstance(value[1], int) and value[1] >= 0):
        return {"from_block": value[1]}
    raise InvalidInputError("takeover must be 'after-table-max' or ('from-block', N)")


class _Events:
    """A load's events, pulled from the native job in the calling thread. The loader waits
    for each event to be handled (ack) before it goes on, so an exception here — a
    progress callback's, the loop body's, Ctrl-C — stops it before its next step."""

    POLL_SECONDS = 0.1

    def __init__(self, job, progress):
        self._job = job
        self._progress = progress
        _LIVE_JOBS.add(job)

    def _pull(self) -> Iterator[dict]:
        job = self._job
        job.start()
        try:
            while True:
                event = job.next(self.POLL_SECONDS)  # GIL released while it waits
                if event is None:
                    continue
                if event == "":
                    return
                event = json.loads(event)
                result = result_from(event["result"])
                if event["kind"] == "final":
                    if not result.success:
                        raise error_from(event["result"]["failure"], result)
                elif self._progress is not None:
                    self._progress(result)
                yield event["kind"], result
                job.ack()
        finally:
            job.stop()
            # In slices, so that a second Ctrl-C gets through while a stalled server holds
            # a query the stop could not cancel yet (one being planned); a batch load left
            # running that way still commits nothing.
            while not job.join_for(0.25):
                pass

    def final(self) -> LoadResult:
        for kind, result in self._pull():
            if kind == "final":
                return result
        raise AssertionError("the load ended without a final result")  # pragma: no cover

    def results(self, kinds, hold_last: bool) -> Iterator[LoadResult]:
        """The results of `kinds`; with hold_last the last one waits for the commit and
        carries its metadata (table_version, …)."""
        held: Optional[LoadResult] = None
        reported = 0  # rows of the batches yielded so far
        for kind, result in self._pull():
            if kind == "batch":
                # A retried load reads the result again from its first row: the batches of
                # rows already reported are not reported twice.
                total = result.metadata.get("total_rows", 0)
                if total <= reported:
                    continue
                result.rows_loaded = total - reported
                reported = total
            if kind == "final":
                if hold_last:
                    if held is None:
                        yield result
                    else:
                        held.metadata.update({k: v for k, v in result.metadata.items()
                                              if k not in held.metadata})
                        held.duration = result.duration
                        yield held
                return
            if kind not in kinds:
                continue
            if hold_last:
                if held is not None:
                    yield held
                held = result
            else:
                yield result
