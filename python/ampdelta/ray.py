"""Parallel backfills on a Ray cluster: the shards of one backfill as Ray tasks.

    import ray, ampdelta.ray
    ray.init()
    result = ampdelta.ray.backfill(
        'grpc://amp:1602', 'SELECT * FROM "edgeandnode/ethereum_mainnet".transactions',
        's3://lake/eth/transactions', num_shards=8, num_workers_per_shard=4,
        storage_options={...})
    print(result)          # ✅ Backfilled 1234567 rows … in 8 shards …

Each task runs one shard of the parallel load (`load(..., shard=(i, n))`, docs/scale-out.md)
through the native loader in its own process: it commits each of its partitions once, with a
record of the blocks it holds, so a task that failed (an error, a killed worker, a lost node)
is simply run again by Ray and loads only the partitions that are still missing. When every
shard is done the driver compacts the table once and, with `then_stream=True`, hands over to
the query's live stream.

Ray is optional: `import ampdelta.ray` works without it, `backfill()` raises ImportError.
"""
from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from typing import Any, Callable, Mapping, Optional

from . import Error as _Error
from . import _native
from ._errors import raise_if_error

__all__ = ["backfill", "BackfillResult", "BackfillError", "ShardError", "StreamHandOff",
           "DEFAULT_REORG_BUFFER"]

# The loader's reorg window when reorg_buffer is unset. The driver always passes its
# reorg_buffer on, so it and the shards agree.
DEFAULT_REORG_BUFFER = _native.DEFAULT_REORG_WINDOW_BLOCKS

# Errors no retry can fix: the task returns them instead of raising, so Ray does not run it
# again (every other ampdelta.Error is raised and retried, as a killed worker is).
_PERMANENT_ERRORS = ("InvalidInputError", "NotFoundError", "UnsupportedFeatureError",
                     "CorruptLogError", "PreconditionFailedError")


class BackfillError(_Error):
    """Shards failed after every retry. `.failures` maps each failed shard's index to
    `{"error", "code", "error_class", "message"}` (the exception's class name, then the
    engine's code, class and message, as ampdelta.Error has them); `.shards` holds every
    shard's result. The partitions the shards committed stay in the table: run the same
    backfill again to load only what is missing. `.code` and `.error_class` are the
    shards' when they agree, else 'server_error' / 'server'."""

    def __init__(self, message: str, failures: Mapping[int, dict] | None = None,
                 shards: list | None = None):
        failures = dict(failures or {})
        codes = {f.get("code") for f in failures.values()} - {None}
        classes = {f.get("error_class") for f in failures.values()} - {None}
        super().__init__(message,
                         code=codes.pop() if len(codes) == 1 else "server_error",
                         error_class=classes.pop() if len(classes) == 1 else "server")
        self.failures = failures
        self.shards = list(shards or [])


class ShardError(Exception):
    """Raised by a shard's task for a failure worth retrying (Ray runs the task again,
    up to `max_task_retries` times). Plain arguments, so it pickles across processes."""

    def __init__(self, shard: int, error: str, code: Optional[str],
                 error_class: Optional[str], message: str):
        super().__init__(shard, error, code, error_class, message)
        self.shard, self.error, self.code = shard, error, code
        self.error_class, self.message = error_class, message

    def __str__(self) -> str:
        return f"shard {self.shard}: {self.error}: {self.message}"


@dataclasses.dataclass
class BackfillResult:
    """What a backfill did. `rows` counts every row it loaded: the shards' and the
    driver's own run after them (blocks that became final meanwhile and, without
    max_block, the blocks of the reorg window up to the head)."""
    rows: int
    shards: list                  # one dict per shard, by index
    partitions: dict              # {"planned", "loaded", "skipped", "failed"}
    duration: float               # seconds, driver wall time
    table_version: Optional[int]
    network: Optional[str] = None
    min_block: Optional[int] = None
    max_block: Optional[int] = None   # last block the shards loaded (None: none was final)
    head: Optional[int] = None        # the head the driver saw when it fixed the range
    tail_rows: int = 0                # rows of the driver's run after the shards
    optimize: Optional[dict] = None   # Table.optimize()'s result with compact=True

    @property
    def rows_loaded(self) -> int:
        return self.rows

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def __str__(self) -> str:
        blocks = (f" blocks {self.min_block}..{self.max_block}" if self.max_block is not None
                  else "")
        p = self.partitions
        return (f"✅ Backfilled {self.rows} rows{blocks} in {len(self.shards)} shards "
                f"({p['loaded']} partitions loaded, {p['skipped']} skipped) in "
                f"{self.duration:.2f}s; table version {self.table_version}")


class StreamHandOff:
    """The live stream after a backfill (`then_stream=True`): iterate it for its
    `LoadResult`s, as `load(..., stream=True)` returns them; `.backfill` is the
    backfill's BackfillResult. close() (or leaving a `with` block, or dropping it) stops
    the stream after its current commit."""

    def __init__(self, results, backfill_result: BackfillResult):
        self._results = results
        self._iter = iter(results)
        self.backfill = backfill_result

    def __iter__(self) -> "StreamHandOff":
        return self

    def __next__(self):
        return next(self._iter)

    def close(self) -> None:
        for target in (self._iter, self._results):
            closer = getattr(target, "close", None)
            if closer is not None:
                closer()
                return

    def __enter__(self) -> "StreamHandOff":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _import_ray():
    try:
        import ray  # noqa: PLC0415 -- optional dependency
    except ImportError as error:
        raise ImportError(
            "ampdelta.ray needs Ray: pip install 'ray[data]' (the driver and every node "
            "of the cluster need it, and ampdelta)") from error
    return ray


# --- the head: where the driver fixes the range ------------------------------------------

def _probe_coverage(url: str, sql: str, block_column: str,
                    auth_token: Optional[str]) -> tuple:
    """(network, first, head) of the blocks the server has synced for `sql`, as the
    loader's own planning reads them (ProbeCoverage, loader/backfill/coverage.h): the
    query runs over no blocks, so no rows are sent."""
    out, error = _native.probe_coverage(url, auth_token, sql, block_column)
    raise_if_error(error)
    coverage = json.loads(out)
    return coverage["network"], coverage["first"], coverage["head"]


# --- one shard, in a Ray worker ----------------------------------------------------------

def _run_shard(spec: dict, index: int, hook: Optional[Callable] = None) -> dict:
    """Load shard `index` of `spec["shards"]`; returns a small picklable dict. Runs in a Ray
    worker: ampdelta is imported there."""
    import ampdelta

    start = time.perf_counter()
    client = ampdelta.Client(spec["url"], auth_token=spec["auth_token"])
    kwargs = dict(spec["load"])
    kwargs["shard"] = (index, spec["shards"])
    on_result = hook(index) if hook is not None else None
    if on_result is not None:
        kwargs["progress"] = on_result
    outcome = {"shard": index, "ok": True, "rows": 0, "partitions": 0,
               "partitions_loaded": 0, "partitions_skipped": 0, "partitions_failed": 0,
               "node": None, "pid": os.getpid()}
    try:
        import ray
        outcome["node"] = ray.get_runtime_context().get_node_id()
    except Exception:  # noqa: BLE001 -- only for the report
        pass
    try:
        # An inline config, never a named connection: configure_connection would save
        # the storage credentials to the connection file of every worker node.
        result = client.sql(spec["sql"]).load(config=spec["config"],
                                              destination=spec["destination"],
                                              read_all=True, **kwargs)
    except ampdelta.Error as error:
        name = type(error).__name__
        code = getattr(error, "code", None)
        engine_class = getattr(error, "error_class", None)
        message = getattr(error, "message", None) or str(error)
        if name in _PERMANENT_ERRORS:
            outcome.update(ok=False, error=name, code=code, error_class=engine_class,
                           message=message, duration=time.perf_counter() - start)
            return outcome
        raise ShardError(index, name, code, engine_class, message) from None
    finally:
        closer = getattr(client, "close", None)
        if closer is not None:
            closer()
    metadata = dict(result.metadata or {})

    def count(key: str) -> int:
        try:
            return int(metadata.get(key, 0))
        except (TypeError, ValueError):
            return 0

    outcome.update(rows=int(result.rows_loaded), partitions=count("partitions"),
                   partitions_loaded=count("partitions_loaded"),
                   partitions_skipped=count("partitions_skipped"),
                   partitions_failed=count("partitions_failed"),
                   partition_size=count("partition_size") or None,
                   table_version=(count("table_version") if "table_version" in metadata
                                  else None),
                   duration=time.perf_counter() - start)
    return outcome


# --- the driver ----------------------------------------------------------------------------

def _say(progress, message: str) -> None:
    if progress is True:
        print(f"ampdelta.ray: {message}", file=sys.stderr, flush=True)


def _shard_line(done: int, total: int, shard: dict) -> str:
    if not shard.get("ok"):
        return (f"shard {shard['shard']}/{total} failed ({done}/{total} done): "
                f"{shard.get('error')}: {shard.get('message')}")
    return (f"shard {shard['shard']}/{total} done ({done}/{total}): {shard['rows']} rows, "
            f"{shard['partitions_loaded']} partitions loaded, {shard['partitions_skipped']} "
            f"skipped, {shard['partitions_failed']} failed in {shard['duration']:.2f}s")


def _failure_from(error: BaseException) -> dict:
    """A failed task's cause, for the report."""
    cause = getattr(error, "cause", None)
    if isinstance(cause, ShardError):
        return {"error": cause.error, "code": cause.code, "error_class": cause.error_class,
                "message": cause.message}
    text = str(cause if cause is not None else error).strip()
    return {"error": type(cause if cause is not None else error).__name__,
            "code": None, "error_class": None,
            "message": text.splitlines()[-1] if text else repr(error)}


def _raise_failures(failures: dict, shards: list, total: int) -> None:
    import ampdelta

    lines = [f"shard {i}/{total}: {f['error']}: {f['message']}"
             for i, f in sorted(failures.items())]
    message = (f"{len(failures)} of {total} backfill shards failed after their retries "
               f"({'; '.join(lines)}); the partitions the shards committed stay in the "
               "table: run the same backfill again to load only the missing blocks")
    classes = {f["error"] for f in failures.values()}
    cls = BackfillError
    if len(classes) == 1:
        native = getattr(ampdelta, classes.pop(), None)
        if isinstance(native, type) and issubclass(native, _Error) and native is not _Error:
            # Also the subclass the shards raised (e.g. InvalidInputError, a ValueError).
            try:
                cls = type(f"Backfill{native.__name__}", (BackfillError, native), {})
            except TypeError:
                cls = BackfillError
    raise cls(message, failures, shards)


def _check_arguments(url, sql, table_path, num_shards, num_workers_per_shard,
                     max_task_retries, reorg_buffer, then_stream, until_block) -> None:
    import ampdelta

    for name, value in (("url", url), ("sql", sql)):
        if not isinstance(value, str) or not value.strip():
            raise ampdelta.InvalidInputError(f"backfill(): {name} must be a non-empty string")
    if not isinstance(table_path, (str, os.PathLike)) or not str(table_path):
        raise ampdelta.InvalidInputError("backfill(): table_path must be a path or URL")
    for name, value in (("num_shards", num_shards),
                        ("num_workers_per_shard", num_workers_per_shard),
                        ("max_task_retries", max_task_retries)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ampdelta.InvalidInputError(
                f"backfill(): {name} must be an integer, got {value!r}")
    if max_task_retries < 0:
        raise ampdelta.InvalidInputError("backfill(): max_task_retries must be at least 0")
    if num_shards < 1:
        raise ValueError("num_shards must be at least 1")
    if num_workers_per_shard < 1:
        raise ValueError("num_workers_per_shard must be at least 1")
    if reorg_buffer is not None and reorg_buffer < 1:
        raise ValueError("reorg_buffer must be at least 1 block")
    if until_block is not None and not then_stream:
        raise ValueError("until_block stops the stream: it needs then_stream=True")


# The load() keywords backfill() sets itself (as its own arguments, where it has them).
_RESERVED_LOAD_OPTIONS = frozenset({
    "connection", "destination", "read_all", "shard", "progress", "stream", "then_stream",
    "until_block", "num_workers", "partition_size", "min_block", "max_block",
    "block_column", "reorg_buffer", "mode", "parallel_config"})


@dataclasses.dataclass
class _Plan:
    """What the driver fixed before any shard runs: the range, and each shard's spec."""
    network: str
    first_block: int
    head: int
    low: Optional[int]
    high: Optional[int]
    shardable: bool
    connection: dict
    destination: str
    load_args: dict
    spec: dict


def _plan(url, sql, table_path, num_shards, token, storage_options, config,
          partition_size, min_block, max_block, block_column, buffer,
          num_workers_per_shard, load_options) -> _Plan:
    connection = dict(config or {})
    connection["table_path"] = str(table_path)
    if storage_options:
        connection["storage_options"] = dict(storage_options)
    destination = str(table_path).rstrip("/").rsplit("/", 1)[-1] or "backfill"

    # Fix the range once, here, and hand it to every shard. Shards must cut the same range
    # into the same grid cells (the loader refuses shards without max_block): each shard
    # probing the head itself would see a different head while the chain grows, cut its
    # partitions to a different final block and, with the default partition_size, derive a
    # different grid from its range (and the shards' plan records of one range would then
    # disagree). The cell holding the last final block could be cut short by one shard and
    # loaded by none, leaving a gap the stream refuses to start after. So the driver reads
    # the head the way the loader's planning does (the ranges the server reports for the
    # query, probed over no blocks) and passes max_block = head - reorg_buffer, a block the
    # loader accepts as final in every shard since the head only grows; min_block defaults
    # to the server's first block, fixed here too. The blocks above max_block are left to
    # the driver's own load after the shards, which sees the newer head.
    network, first_block, head = _probe_coverage(url, sql, block_column, token)
    final_block = head - buffer if head >= buffer else None
    low = min_block if min_block is not None else first_block
    high = max_block if max_block is not None else final_block
    shardable = (final_block is not None and high is not None and low <= high
                 and high <= final_block and high >= first_block)

    clash = sorted(_RESERVED_LOAD_OPTIONS & set(load_options or {}))
    if clash:
        raise ValueError(f"load_options cannot set {', '.join(clash)}: backfill() sets "
                         "them (as its own arguments, where it has them)")
    load_args: dict[str, Any] = {**dict(load_options or {}),
                                 "num_workers": num_workers_per_shard,
                                 "block_column": block_column, "reorg_buffer": buffer,
                                 "min_block": low, "max_block": high}
    if partition_size is not None:
        load_args["partition_size"] = partition_size
    spec = {"url": url, "auth_token": token, "sql": sql, "destination": destination,
            # Shards never compact (the loader skips it too): the driver does, once.
            "config": dict(connection, optimize_after_write=False, vacuum_after_write=False),
            "shards": num_shards, "load": load_args}
    return _Plan(network=network, first_block=first_block, head=head, low=low, high=high,
                 shardable=shardable, connection=connection, destination=destination,
                 load_args=load_args, spec=spec)


def _run_shards(ray, plan: _Plan, num_shards: int, max_task_retries: int,
                ray_remote_args, progress, task_hook) -> list:
    """Run every shard as a Ray task; return their dicts in shard order, or raise
    BackfillError naming each shard that failed after its retries."""
    remote_args = {"num_cpus": 1, **dict(ray_remote_args or {})}
    task = ray.remote(_run_shard).options(max_retries=max_task_retries,
                                          retry_exceptions=True, **remote_args)
    pending = {task.remote(plan.spec, index, task_hook): index
               for index in range(num_shards)}
    results: dict = {}
    failures: dict = {}
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                index = pending.pop(ref)
                try:
                    shard = ray.get(ref)
                except ray.exceptions.RayError as error:
                    shard = {"shard": index, "ok": False, **_failure_from(error)}
                results[index] = shard
                if not shard.get("ok"):
                    failures[index] = {k: shard.get(k)
                                       for k in ("error", "code", "error_class", "message")}
                if callable(progress):
                    progress(shard)
                else:
                    _say(progress, _shard_line(len(results), num_shards, shard))
    except BaseException:
        for ref in pending:  # KeyboardInterrupt: stop the shards after their commits
            ray.cancel(ref)
        raise
    shards = [results[i] for i in range(num_shards)]
    if failures:
        _raise_failures(failures, shards, num_shards)
    return shards


def _partition_totals(shards: list) -> dict:
    return {"planned": sum(s.get("partitions", 0) for s in shards),
            "loaded": sum(s.get("partitions_loaded", 0) for s in shards),
            "skipped": sum(s.get("partitions_skipped", 0) for s in shards),
            "failed": sum(s.get("partitions_failed", 0) for s in shards)}


class _Driver:
    """The driver's own run after the shards: the same query as one (unsharded) parallel
    load, with the user's range. Every partition of the shards is recorded, so it loads
    only what is missing: without max_block, the blocks that became final meanwhile (its
    head is newer) and then the reorg window through the stream, up to its head; with
    then_stream, the stream on. Also when nothing could be sharded (no final block yet,
    or a max_block the loader must refuse, which it then does with its own message).
    Then one compaction, and the summary."""

    def __init__(self, url, sql, table_path, token, storage_options, plan: _Plan,
                 min_block, max_block, compact, progress, shards, started):
        self.url, self.sql, self.table_path, self.token = url, sql, table_path, token
        self.storage_options, self.plan, self.compact = storage_options, plan, compact
        self.progress, self.shards, self.started = progress, shards, started
        self.config = dict(plan.connection)
        self.config.setdefault("optimize_after_write", False)  # compaction: below, once
        self.args = {k: v for k, v in dict(plan.load_args, min_block=min_block,
                                            max_block=max_block).items() if v is not None}
        self.rows = sum(s.get("rows", 0) for s in shards)

    def load(self, read_all: bool, **extra):
        import ampdelta

        client = ampdelta.Client(self.url, auth_token=self.token)
        return client.sql(self.sql).load(config=self.config,
                                         destination=self.plan.destination,
                                         read_all=read_all, **self.args, **extra)

    def table(self):
        import ampdelta

        if self.storage_options:
            return ampdelta.Table(str(self.table_path),
                                  storage_options=dict(self.storage_options))
        return ampdelta.Table(str(self.table_path))

    def optimize(self, loaded_rows: int) -> Optional[dict]:
        if not self.compact or loaded_rows == 0:
            return None  # a re-run that loaded nothing commits nothing
        _say(self.progress, f"compacting {self.table_path}")
        return self.table().optimize()

    def summary(self, tail_rows: int, optimized: Optional[dict]) -> BackfillResult:
        import ampdelta

        try:
            version = self.table().version()
        except ampdelta.Error:
            version = None
        plan = self.plan
        return BackfillResult(rows=self.rows + tail_rows, shards=self.shards,
                              partitions=_partition_totals(self.shards),
                              duration=time.perf_counter() - self.started,
                              table_version=version, network=plan.network,
                              min_block=plan.low if plan.shardable else None,
                              max_block=plan.high if plan.shardable else None,
                              head=plan.head, tail_rows=tail_rows, optimize=optimized)

    def hand_off(self, until_block: Optional[int]) -> StreamHandOff:
        optimized = self.optimize(self.rows)
        extra: dict[str, Any] = {"then_stream": True}
        if until_block is not None:
            extra["until_block"] = until_block
        _say(self.progress, f"handing over to the stream of {self.plan.network}")
        return StreamHandOff(self.load(False, **extra), self.summary(0, optimized))

    def finish(self, need_final: bool) -> BackfillResult:
        tail_rows = 0
        if need_final:
            tail_rows = int(self.load(True).rows_loaded)
            if tail_rows:
                _say(self.progress, f"{tail_rows} rows above block {self.plan.high} loaded "
                                    "by the driver's run")
        optimized = self.optimize(self.rows + tail_rows)
        done = self.summary(tail_rows, optimized)
        _say(self.progress, str(done))
        return done


def backfill(url: str, sql: str, table_path: str, num_shards: int = 4, *,
             storage_options: Optional[Mapping[str, str]] = None,
             config: Optional[Mapping[str, Any]] = None,
             partition_size: Optional[int] = None,
             min_block: Optional[int] = None,
             max_block: Optional[int] = None,
             block_column: str = "block_num",
             reorg_buffer: Optional[int] = None,
             num_workers_per_shard: int = 1,
             max_task_retries: int = 3,
             then_stream: bool = False,
             until_block: Optional[int] = None,
             compact: bool = True,
             progress: bool | Callable[[dict], None] = True,
             ray_remote_args: Optional[Mapping[str, Any]] = None,
             auth_token: Optional[str] = None,
             load_options: Optional[Mapping[str, Any]] = None,
             _task_hook: Optional[Callable[[int], Optional[Callable]]] = None):
    """Backfill `sql`'s blocks into the Delta table at `table_path`, `num_shards` Ray
    tasks at once (docs/scale-out.md has the partition and shard rules).

    `config` holds further keys of the `deltalake` connection (`partition_by`,
    `resilience`, …; `table_path` and `storage_options` come from the arguments), and
    `load_options` further keywords of `load()` (`writer_properties`, `batch_size`,
    `partition_attempts`, `stop_on_error`, …) for every shard and the driver's run. Each
    task loads partitions of `partition_size` blocks (default: the range over 16 per
    shard), `num_workers_per_shard` at a time, with `ray_remote_args` (default
    `{"num_cpus": 1}`) and up to `max_task_retries` retries.

    The range is fixed once, by the driver: `min_block` (default: the server's first
    block) to `max_block` (default: the head the driver sees, less `reorg_buffer`, by
    default 256 blocks, which may still reorg). Then, on the driver:
    - without `max_block`, a plain parallel load of the same query loads what became
      final meanwhile and the blocks of the reorg window up to the head through the
      query's stream, as `load(num_workers=…)` does;
    - `compact=True` compacts the table once (Table.optimize);
    - `then_stream=True` returns a StreamHandOff iterating the query's live stream
      (`until_block`: it stops once a commit reaches that block). Otherwise the result
      is a BackfillResult.

    A shard that still fails after its retries makes this raise BackfillError (an
    ampdelta.Error, and also the shards' own error class when they share one) naming
    every failed shard; what the others committed stays, and running the same backfill
    again loads only the missing blocks. `progress=True` prints one line per shard to
    stderr as it finishes (a callable is called with each shard's dict instead).
    """
    ray = _import_ray()
    _check_arguments(url, sql, table_path, num_shards, num_workers_per_shard,
                     max_task_retries, reorg_buffer, then_stream, until_block)
    started = time.perf_counter()
    token = auth_token if auth_token is not None else os.environ.get("AMP_AUTH_TOKEN")
    buffer = reorg_buffer if reorg_buffer is not None else DEFAULT_REORG_BUFFER
    plan = _plan(url, sql, table_path, num_shards, token, storage_options, config,
                 partition_size, min_block, max_block, block_column, buffer,
                 num_workers_per_shard, load_options)
    shards: list = []
    if plan.shardable:
        _say(progress, f"backfill of {plan.network} blocks {plan.low}..{plan.high} (head "
                       f"{plan.head}) into {table_path}: {num_shards} shards of "
                       f"{num_workers_per_shard} workers")
        shards = _run_shards(ray, plan, num_shards, max_task_retries, ray_remote_args,
                             progress, _task_hook)
    driver = _Driver(url, sql, table_path, token, storage_options, plan, min_block,
                     max_block, compact, progress, shards, started)
    if then_stream:
        return driver.hand_off(until_block)
    return driver.finish(max_block is None or not plan.shardable)
