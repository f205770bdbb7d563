"""`DeltaLakeLoader`: the SDK's DataLoader contract (amp-protocol.md §3.3-3.5) on the engine.

Every call hands its Arrow data to the engine through the Arrow C stream interface (any
producer: pyarrow, Polars, DuckDB, arro3) and the engine writes it: one commit per
load_table, every mode including merge/upsert, overwrite of the whole load, and a failed
load commits nothing.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
from typing import Any, Dict, Iterable, Iterator, Optional

from .. import _native
from .._arrow import stream_capsule
from .._client import _LIVE_JOBS, _checked_config, _Events, load_options
from .._errors import Error, InvalidInputError, NotFoundError, raise_if_error
from .._json_text import json_text as _json
from .._results import LoadMode, LoadResult, result_from
from .._table import Table

LOADER_TYPE = "deltalake"

# Keywords the SDK's loaders take that need nothing here: the SDK passes them along (its
# parallel load gives every partition's batches `block_ranges`, a Snowflake channel suffix
# and offset token; the partition's rows are what it loads, as the SDK's deltalake loader
# writes them, and ampdelta's streams record their ranges in the table themselves).
_IGNORED_KEYWORDS = {"connection_name", "worker_id", "block_ranges", "channel_suffix",
                     "offset_token"}


def _mode(mode: Any) -> LoadMode:
    if isinstance(mode, LoadMode):
        return mode
    # The SDK's own LoadMode (amp.loaders.types) is another Enum with the same values.
    mode = getattr(mode, "value", mode)
    try:
        return LoadMode(str(mode).lower())
    except ValueError:
        raise InvalidInputError(
            f"Unsupported mode {mode!r}: DeltaLakeLoader supports "
            f"{', '.join(m.value for m in LoadMode)}") from None


class DeltaLakeLoader:
    """The SDK's Delta Lake loader, `DeltaLakeLoader(config)`, with the seed's config dict
    (table_path, partition_by, storage_options, optimize_after_write, …)."""

    SUPPORTED_MODES = {LoadMode.APPEND, LoadMode.OVERWRITE, LoadMode.UPSERT, LoadMode.MERGE}
    REQUIRES_SCHEMA_MATCH = False
    SUPPORTS_TRANSACTIONS = True

    def __init__(self, config: Dict[str, Any], label_manager: Any = None):
        self.config = _checked_config(config)
        self.table_path = self.config["table_path"]
        self.storage_options = self.config.get("storage_options") or {}
        self.label_manager = label_manager
        self.logger = logging.getLogger(f"ampdelta.loaders.{type(self).__name__}")
        self._connected = False
        # The SDK's DataLoader keeps the tables it created here (its parallel load adds to it).
        self._created_tables: set = set()

    # --- connection: the table is opened by each load; these keep the SDK's contract ---
    @property
    def is_connected(self) -> bool:
        return self._connected

    @property
    def _is_connected(self) -> bool:  # the SDK's loaders (and their tests) read this one
        return self._connected

    def connect(self) -> None:
        self._connected = True

    def disconnect(self) -> None:
        self._connected = False

    def close(self) -> None:
        self.disconnect()

    def __enter__(self) -> "DeltaLakeLoader":
        self.connect()
        return self

    def __exit__(self, *exc_info) -> None:
        self.disconnect()

    def health_check(self) -> Dict[str, Any]:
        return {"healthy": self._connected, "loader_type": type(self).__name__,
                "table_path": self.table_path}

    # --- loads ---
    def load_table(self, table: Any, table_name: str, mode: Any = LoadMode.APPEND,
                   create_table: bool = True, **kwargs) -> LoadResult:
        """Write `table` (any Arrow data, or a reader of any size, streamed without being
        materialised) as one commit; a failure comes back as a failed LoadResult."""
        return self._load(table, table_name, mode, create_table, kwargs, "load_table")

    def load_batch(self, batch: Any, table_name: str, mode: Any = LoadMode.APPEND,
                   create_table: bool = True, **kwargs) -> LoadResult:
        """Write one record batch (or any Arrow data) as one commit."""
        return self._load(batch, table_name, mode, create_table, kwargs, "load_batch")

    def load_stream(self, batch_iterator: Iterable[Any], table_name: str,
                    mode: Any = LoadMode.APPEND, **kwargs) -> Iterator[LoadResult]:
        """A LoadResult per batch, each its own commit; the first failure ends the stream.
        An overwrite replaces the table with the first batch and appends the others; a
        merge or upsert merges each batch.

        The SDK's parallel load names each partition's blocks (`block_ranges`): the
        partition is then one commit that replaces the table's rows of those blocks
        (another run's, or a failed run's), so running the load again loads every block
        once."""
        blocks = _partition_blocks(kwargs.get("block_ranges"))
        if blocks is not None and _mode(mode) == LoadMode.APPEND:
            yield from self._load_partition(batch_iterator, table_name, blocks, kwargs)
            return
        for index, batch in enumerate(batch_iterator):
            # An overwrite replaces the table once; merges and upserts stay what they are.
            later = LoadMode.APPEND if _mode(mode) == LoadMode.OVERWRITE else mode
            result = self.load_batch(batch, table_name, mode=mode if index == 0 else later,
                                     **kwargs)
            result.metadata.setdefault("batch_index", index)
            yield result
            if not result.success:
                return

    def load_stream_continuous(self, stream_iterator: Iterable[Any], table_name: str,
                               connection_name: Optional[str] = None, worker_id: int = 0,
                               query: Optional[str] = None,
                               **kwargs) -> Iterator[LoadResult]:
        """The SDK's streaming contract on the engine's stream loader: each item (a
        ResponseBatch with block ranges) is handed over as the server sent it, and the
        engine groups microbatches into commits, tags rows with their ranges, undoes a
        reorg by those tags (never reading the table into memory), and skips what the
        table already holds: the SDK starts every stream from its first block, and a
        microbatch the table holds with the same hash is skipped (one it cannot check is
        replaced in one commit). Yields a result per commit and per reorg, then stops
        after the last item. The SDK's reorg items carry no rows: the engine finds the
        reorg in the re-sent batches' ranges itself.

        The stream's progress belongs to the table and the query (`query`, the SQL the
        items answer; the SDK's client passes it through ampdelta.sdk), as
        ampdelta.Client's streams' does; the connection and table names only label it.
        Without a query, a table holds one handed-over stream."""
        label = query if query else _HANDED_OVER_STREAM
        options_keywords = {k: v for k, v in kwargs.items() if k not in _SDK_STREAM_KEYWORDS}
        try:
            mode = _mode(options_keywords.pop("mode", LoadMode.APPEND))
            table_config, options = load_options(
                self.config, table_name, mode, options_keywords.pop("writer_properties", None),
                options_keywords, "load_stream_continuous()")
        except (Error, TypeError) as error:
            yield self._failure(table_name, str(error), time.monotonic(), "load_stream")
            return
        if not self._connected:
            self.connect()
        yield from _HandedOverStream(self, label, table_config, options, table_name).run(
            iter(stream_iterator))

    def _create_table_from_schema(self, schema: Any, table_name: str) -> None:
        """The SDK's hook its parallel load calls once before its partitions (which then
        run with create_table=False): the table, with `schema` and no rows, unless one is
        there already."""
        if self._table_exists():
            return
        empty = schema.empty_table() if hasattr(schema, "empty_table") else schema
        result = self.load_table(empty, table_name, mode=LoadMode.APPEND)
        if not result.success:
            raise Error(f"cannot create the Delta table {self.table_path}: {result.error}")
        self._created_tables.add(table_name)

    # --- the table ---
    def get_table_info(self, table_name: Optional[str] = None) -> Dict[str, Any]:
        table = Table(self.table_path, storage_options=self.storage_options)
        return {"table_name": table_name, "table_path": self.table_path,
                "version": table.version(), "exists": True}

    def _table_exists(self) -> bool:
        try:
            Table(self.table_path, storage_options=self.storage_options).version()
        except NotFoundError:
            return False
        return True

    def _load_partition(self, batches: Iterable[Any], table_name: str, blocks: tuple,
                        kwargs: Dict[str, Any]) -> Iterator[LoadResult]:
        batches = iter(batches)
        first = next(batches, None)
        if first is None:
            return
        try:
            import pyarrow as pa

            reader = pa.RecordBatchReader.from_batches(
                first.schema, itertools.chain([first], batches))
        except Exception:  # noqa: BLE001 (not pyarrow batches: one commit each, as before)
            for batch in itertools.chain([first], batches):
                result = self.load_batch(batch, table_name, **kwargs)
                yield result
                if not result.success:
                    return
            return
        create_table = kwargs.pop("create_table", True)
        yield self._load(reader, table_name, LoadMode.APPEND, create_table, kwargs,
                         "load_stream", replace_blocks=blocks)

    def _load(self, data: Any, table_name: str, mode: Any, create_table: bool,
              kwargs: Dict[str, Any], operation: str,
              replace_blocks: Optional[tuple] = None) -> LoadResult:
        started = time.monotonic()
        try:
            result = self._write(data, table_name, _mode(mode), create_table, dict(kwargs),
                                 operation, replace_blocks)
        except Exception as error:  # the SDK reports every failure as a failed result
            self.logger.error("%s to %s failed: %s", operation, table_name, error)
            return self._failure(table_name, str(error), started, operation)
        result.table_name = table_name
        result.loader_type = LOADER_TYPE
        # The SDK's metadata keys beside the engine's (table_version, files_added, …).
        result.metadata["operation"] = operation
        result.metadata.setdefault("batches_processed", result.metadata.get("batches", 0))
        result.metadata["mode"] = _mode(mode).value
        return result

    def _write(self, data: Any, table_name: str, mode: LoadMode, create_table: bool,
               kwargs: Dict[str, Any], operation: str,
               replace_blocks: Optional[tuple] = None) -> LoadResult:
        if kwargs.pop("label_config", None) is not None:
            raise InvalidInputError("label_config (label joins) is not supported by ampdelta")
        for key in _IGNORED_KEYWORDS:
            kwargs.pop(key, None)
        writer_properties = kwargs.pop("writer_properties", None)
        table_config, options = load_options(self.config, table_name, mode,
                                             writer_properties, kwargs, f"{operation}()")
        options["read_all"] = True
        if replace_blocks is not None:
            options["replace_blocks"] = {"from": replace_blocks[0], "to": replace_blocks[1]}
        if not self._connected:
            self.connect()
        if not create_table and not self._table_exists():
            raise NotFoundError(
                f"Delta table {self.table_path} does not exist and create_table=False")
        job = _native.LoadJob.for_stream(stream_capsule(data, f"{operation}()"),
                                         _json(table_config, "the configuration"),
                                         _json(options, "the load options"))
        raise_if_error(job.error)
        return _Events(job, None).final()

    @staticmethod
    def _failure(table_name: str, error: str, started: float, operation: str) -> LoadResult:
        return LoadResult(rows_loaded=0, duration=time.monotonic() - started,
                          ops_per_second=0.0, table_name=table_name,
                          loader_type=LOADER_TYPE, success=False, error=error,
                          metadata={"operation": operation})


# What names a handed-over stream whose query is not known (the engine's app id is made of
# it): one such stream per table.
_HANDED_OVER_STREAM = "sdk-stream"

# The SDK's LoadConfig fields and streaming keywords load_stream_continuous is given and
# needs nothing for (its reorg detection and resume are the engine's).
_SDK_STREAM_KEYWORDS = {"batch_size", "create_table", "schema_evolution", "max_retries",
                        "retry_delay", "resume", "resume_watermark", "with_reorg_detection",
                        "label_config"}


def _partition_blocks(block_ranges: Any) -> Optional[tuple]:
    """The blocks (first, last) the SDK's parallel load gives a partition: its one
    `block_ranges` entry (end exclusive, as its partition's `block_num < end` filter).
    Several ranges (other networks, gaps) name no one span to replace: None."""
    if not block_ranges or len(block_ranges) != 1:
        return None
    try:
        first = int(block_ranges[0].start)
        last = int(block_ranges[0].end) - 1
    except (AttributeError, TypeError, ValueError, IndexError):
        return None
    return (first, last) if first >= 0 and last >= first else None


def _next_item(items) -> Optional[tuple]:
    """The next item the engine loads, as (its Arrow data, app_metadata JSON); None at
    the end. The SDK's reorg items carry no rows: the engine sees the reorg in the re-sent
    batches' ranges."""
    for item in items:
        if getattr(item, "is_reorg", False):
            continue
        data = getattr(item, "data", None)
        if hasattr(data, "data") and hasattr(data, "metadata"):
            item, data = data, data.data  # the SDK's older ResponseBatchWithReorg
        if data is None:
            continue
        return data, _metadata_json(getattr(item, "metadata", None))
    return None


def _leading_items(items, most: int = 1000) -> list:
    """The items up to the end of the first microbatch that has rows (its
    `ranges_complete` marker: its rows may come in any order over several messages), or
    all, if none has; at most `most` (a server that keeps sending keep-alives is not
    waited for)."""
    leading = []
    rows_seen = False
    while len(leading) < most:
        item = _next_item(items)
        if item is None:
            return leading
        leading.append(item)
        rows_seen = rows_seen or (getattr(item[0], "num_rows", 1) or 0) > 0
        if rows_seen and _completes_microbatch(item[1]):
            return leading
    return leading


def _completes_microbatch(metadata: str) -> bool:
    try:
        document = json.loads(metadata) if metadata else {}
    except ValueError:  # the engine refuses such an item itself
        return True
    return isinstance(document, dict) and bool(document.get("ranges_complete"))


def _export(data):
    return stream_capsule(data, "load_stream_continuous()")


def _takeover_from_first_row(options_json: str, leading: list) -> str:
    """A table holding rows this stream did not load (the SDK's parallel load fills the
    table, then streams from its head less a reorg buffer; or a batch load did) is taken
    over from the stream's first row: the table's rows from that block on are replaced by
    the stream's, those below stay. The first row is the lowest block of the first
    microbatch with rows (`leading`, as _leading_items reads it). The SDK passes no
    takeover keyword, and the server cannot be asked where its stream starts (its ranges
    name the blocks scanned, not the rows: a filtered stream's first range may start long
    before its first row). Nothing happens when the table holds no such rows; without
    pyarrow to read the first rows' blocks, none is taken over (a table with another
    writer's rows is refused)."""
    options = json.loads(options_json)
    with_rows = [(data, metadata) for data, metadata in leading
                 if (getattr(data, "num_rows", 0) or 0) > 0]
    if "takeover" in options or not with_rows:
        return options_json
    ranges = json.loads(with_rows[0][1]).get("ranges", []) if with_rows[0][1] else []
    if not ranges:
        return options_json
    try:
        import pyarrow.compute as pc

        column = options.get("block_column") or "block_num"
        first_block = min(pc.min(data.column(column)).as_py() for data, _ in with_rows)
    except Exception:  # noqa: BLE001 (no pyarrow, no such column: no takeover)
        return options_json
    if not isinstance(first_block, int) or first_block < 0:
        return options_json
    options["takeover"] = {"from_block": first_block}
    options["takeover_network"] = ranges[0]["network"]
    return json.dumps(options)


def _items_closed(items) -> bool:
    """Whether the SDK's iterator was closed (its SIGINT handler closes it on Ctrl-C)."""
    for target in (items, getattr(items, "stream_iterator", None)):
        if getattr(target, "_closed", False) is True:
            return True
    return False


def _close_items(items) -> None:
    """Let the items' producer go (the SDK's iterator cancels its Flight stream), so that
    a feeder waiting on it ends."""
    for target in (items, getattr(items, "stream_iterator", None)):
        close = getattr(target, "close", None)
        if close is None:
            continue
        try:
            close()
        except Exception:  # noqa: BLE001 (a generator running in the feeder refuses)
            pass


def _metadata_json(metadata: Any) -> str:
    """The SDK's BatchMetadata as the server's app_metadata JSON ("" for none)."""
    if metadata is None:
        return ""
    ranges = []
    for block_range in getattr(metadata, "ranges", None) or []:
        entry = {"network": block_range.network,
                 "numbers": {"start": int(block_range.start), "end": int(block_range.end)}}
        if getattr(block_range, "hash", None):
            entry["hash"] = block_range.hash
        if getattr(block_range, "prev_hash", None):
            entry["prev_hash"] = block_range.prev_hash
        ranges.append(entry)
    document = {"ranges": ranges,
                "ranges_complete": bool(getattr(metadata, "ranges_complete", False))}
    return json.dumps(document)


class _HandedOverStream:
    """One load_stream_continuous: the items fed into the engine's channel by a thread of
    their own, the engine's commits and reorgs yielded here as they happen. The items'
    iterator (the SDK's, on the network) may block for as long as the server is silent: a
    commit or a reorg the engine made meanwhile is yielded at once, not when the next item
    comes."""

    PUSH_WAIT_SECONDS = 0.05

    def __init__(self, loader: DeltaLakeLoader, label: str, table_config, options,
                 table_name: str):
        self._loader = loader
        self._label = label
        self._config_json = _json(table_config, "the configuration")
        self._options_json = _json(dict(options, stream=True), "the load options")
        self._table_name = table_name
        self._channel = None
        self._job = None
        self._reorgs = 0
        self._stop_feeding = threading.Event()

    def run(self, items) -> Iterator[LoadResult]:
        started = time.monotonic()
        items = iter(items)
        feeder = None
        try:
            try:
                # The items up to the first with rows (keep-alives come before): the first
                # opens the channel, the first rows say where a takeover starts.
                leading = _leading_items(items)
                if not leading:
                    return  # no item: nothing to load
                self._open(leading)
            except (KeyboardInterrupt, GeneratorExit):
                raise
            except Exception as error:  # the SDK ends a stream with a failed result
                yield self._loader._failure(self._table_name, str(error), started,
                                            "load_stream")
                return
            feeder = threading.Thread(target=self._feed, args=(leading[1:], items),
                                      name="ampdelta-stream-feeder", daemon=True)
            feeder.start()
            yield from self._drain()
        except (KeyboardInterrupt, GeneratorExit):
            self._abandon("interrupted")
            raise
        finally:
            self._abandon("ended")
            if feeder is not None:
                _close_items(items)

    def _open(self, leading) -> None:
        options_json = _takeover_from_first_row(self._options_json, leading)
        channel, error = _native.FedChannel.open(_export(leading[0][0]), leading[0][1])
        raise_if_error(error)
        self._channel = channel
        job = _native.LoadJob.for_channel(channel, self._label, self._config_json,
                                          options_json)
        raise_if_error(job.error)
        _LIVE_JOBS.add(job)  # stopped and joined at exit like every load
        self._job = job
        job.start()

    def _feed(self, pending, items) -> None:
        """Hand every item to the engine, then close the channel; an exception of the
        items' iterator (the SDK's on a network failure) fails it, and the engine commits
        what is complete before reporting it."""
        channel = self._channel
        try:
            while not self._stop_feeding.is_set():
                item = pending.pop(0) if pending else _next_item(items)
                if item is None:
                    channel.close()
                    return
                # Each item is exported and imported once; a full channel keeps it.
                queued, error = channel.push(_export(item[0]), item[1],
                                             self.PUSH_WAIT_SECONDS)
                while error is None and not queued and not self._stop_feeding.is_set():
                    queued, error = channel.push_pending(self.PUSH_WAIT_SECONDS)
                if error is not None:
                    # The load ended (until_block reached, or a failure its final result
                    # says), or this item cannot be loaded: the load fails naming it.
                    channel.fail(json.loads(error).get("message", error), True)
                    return
        except BaseException as error:  # noqa: BLE001 (the engine reports it)
            if _items_closed(items):
                # The SDK's Ctrl-C closes its Flight stream, and its iterator then fails:
                # the user stopped the stream (the load stops after its last commit).
                self._job.stop()
                return
            channel.fail(f"{type(error).__name__}: {error}", False)

    def _abandon(self, why: str) -> None:
        """Stop the load if it still runs and wait for it (the GIL released, in slices so
        that a second Ctrl-C gets through)."""
        self._stop_feeding.set()
        if self._channel is not None:
            self._channel.fail(f"the stream was {why}", False)
        job = self._job
        if job is not None and not isinstance(job, _FinishedJob):
            job.stop()
            while not job.join_for(0.25):
                pass
            self._job = _FinishedJob()

    def _drain(self) -> Iterator[LoadResult]:
        """The engine's events as they come, to the final one."""
        while not isinstance(self._job, _FinishedJob):
            event = self._job.next(0.1)
            if event is None:
                continue
            if event == "":
                self._job = _FinishedJob()
                return
            event = json.loads(event)
            result = self._sdk_result(result_from(event["result"]))
            if event["kind"] == "final":
                self._job.join()
                self._job = _FinishedJob()
                if not result.success:
                    yield result
                return
            yield result
            self._job.ack()

    def _sdk_result(self, result: LoadResult) -> LoadResult:
        """The engine's result with the SDK's names and metadata keys beside its own."""
        result.table_name = self._table_name
        result.loader_type = LOADER_TYPE
        metadata = result.metadata
        metadata["is_streaming"] = True
        if result.is_reorg:
            self._reorgs += 1
            metadata["operation"] = "reorg"
            metadata["invalidation_count"] = len(result.invalidation_ranges or [])
            metadata["reorg_number"] = self._reorgs
        elif result.success:
            metadata.setdefault("operation", "load_batch")
            metadata["ranges_complete"] = True  # a commit holds complete microbatches
            metadata["block_ranges"] = _ranges_list(metadata.get("block_ranges"))
        return result


def _ranges_list(text: Any) -> Any:
    """The engine's "network:start-end,…" as the SDK's [{network, start, end}]."""
    if not isinstance(text, str):
        return text
    ranges = []
    for span in filter(None, text.split(",")):
        network, _, blocks = span.rpartition(":")
        first, _, last = blocks.partition("-")
        try:
            ranges.append({"network": network, "start": int(first),
                           "end": int(last or first)})
        except ValueError:
            return text
    return ranges


class _FinishedJob:
    """A job whose final result was taken: nothing more comes."""

    @staticmethod
    def next(_timeout):
        return ""

    def ack(self):
        pass

    def stop(self):
        pass

    def join(self):
        pass


__all__ = ["DeltaLakeLoader"]
