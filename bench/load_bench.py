#!/usr/bin/env python3
"""End-to-end load throughput, in one run: `ampdelta load` vs the Python SDK's Delta Lake paths,
against the limits of the load (the source and the encoder).

Every peer runs the same query, SELECT * FROM "acme/eth_mainnet".transactions (or, with
--dataset logs, .logs), against one ampdelta
dev server (the calibrated synthetic chain, bench/chain_stats.py) started once per run, and writes
Snappy Parquet to local disk:

  ampdelta  `ampdelta load ... --mode append --compression snappy --config '{"optimize_after_write": false}'`
  a         the SDK's Delta Lake loader as it runs by default (read_all=False: load_stream): Flight
            DoGet, and for every chunk the server sends what DeltaLakeLoader._load_batch_impl does: write_deltalake(dir, batch, mode="append", schema_mode="merge"),
            DeltaTable(dir) refresh, then DeltaTable.optimize.compact() (optimize_after_write=True,
            the default). Slow, so it stops after --sdk-default-max-rows rows and its time is
            extrapolated to the full row count (see the report's "a_measured").
  s         the SDK with read_all=True and optimize_after_write=False: read_all(), then one
            write_deltalake(append, schema_mode="merge") per Flight batch, and a refresh after each.
  b         the Python path at its best: DoGet, reader.read_all(), then ONE write_deltalake of the
            whole table with WriterProperties(compression="SNAPPY").
  c         pyarrow's ParquetWriter fed the stream chunk by chunk (one file, one thread).
  drain     the source's limit: a bare DoGet of the same query, every chunk read and dropped.
  drain_single  the same drain from a second dev server making rows on one thread
            (`--scan-threads 1`, no cache: the server before read_ahead.h), the old source.
            The first server makes rows on every core and keeps them (`--cache-mib`,
            --server-cache-mib: enough for the rows by default), so every peer after the
            capture is served from memory.
  drain_memory  the same drain from a plain pyarrow Flight server that serves the captured batches
            (and their app_metadata) from memory: what a Flight stream carries on this machine.
            drain over drain_memory is how far the dev server is from it.
  encoder   the encoder's limit: bench/parquet_limit writes the same Arrow stream (captured once into
            an IPC file before the rounds) to Parquet with Arrow's writer, one file per core, the
            dictionary choice that suits the data (--dictionary auto), every file fsync'ed.
  encoder_same  the same, encoding as ampdelta's writer does (--dictionary ampdelta: its
            column plan), so writing the same Parquet: what ampdelta adds beyond it is the
            load's own cost (statistics, the log, type conversion, the stream).

The limit of a load is the slower of drain and encoder; the report names it ("limited_by").
`--server-cpus` and `--loader-cpus` (taskset lists, e.g. 0-3 and 4-15) pin the servers and the
peers to their own cores on a machine of any size. Times: Python peers report perf_counter and
CPU (getrusage) from after their imports (the headline); every peer's process wall time, CPU
seconds (user+sys of the process, from wait4) and peak RSS (ru_maxrss) are beside it, and the dev
server's CPU seconds during each peer. ampdelta's and the encoder's process start-up is a few ms.
Outputs are checked: every round the row count (Delta tables through deltalake's log replay, files
through their footers); in the first round the content, by an independent reader (deltalake for
tables, pyarrow for files, in a subprocess): the rows in key order and a SHA-256 of every column
must equal the source's (CONTENT below). Every peer runs on Arrow's jemalloc pool (peer_env).

Usage: bench/load_bench.py [--rows 2000000] [--rounds 5] [--peers ampdelta,a,s,b,c,drain,encoder]
                           [--server-cpus LIST] [--loader-cpus LIST]
                           [--sdk-default-max-rows 200000] [--workdir DIR] [--json-out FILE]
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
CLI = ROOT / "build/release/tools/ampdelta/ampdelta"
PARQUET_LIMIT = ROOT / "build/release/bench/parquet_limit"
PYTHON = sys.executable
SQL = 'SELECT * FROM "acme/eth_mainnet".transactions'
PEERS = ("ampdelta", "a", "s", "b", "c", "drain", "drain_single", "drain_memory", "encoder",
         "encoder_same")
ENCODERS = {"encoder": "auto", "encoder_same": "ampdelta"}
DRAINS = ("drain", "drain_single", "drain_memory")
DELTA_PEERS = ("ampdelta", "a", "s", "b")
SDK_BATCH_SIZE = 10_000  # amp.loaders.types.LoadConfig.batch_size default

# Shared by the Python peers: the SDK's Client.get_sql, GetFlightInfo with an Any-packed
# arrow.flight.protocol.sql.CommandStatementQuery, then DoGet of the first endpoint. The clock
# starts after the imports (each peer's `begin()`).
PRELUDE = f"BENCH_DIR = {str(pathlib.Path(__file__).resolve().parent)!r}\n" + r"""
import json, resource, sys, time
import pyarrow as pa
import pyarrow.flight as flight
sys.path.insert(0, BENCH_DIR)
from amp_flight import do_get

def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime

def begin():
    global T0, CPU0
    T0, CPU0 = time.perf_counter(), cpu()

def finish(report):
    report["load_seconds"] = time.perf_counter() - T0
    report["load_cpu_seconds"] = cpu() - CPU0
    print(json.dumps(report))

def chunks(reader):
    while True:
        try:
            chunk = reader.read_chunk()
        except StopIteration:
            return
        if chunk.data is not None and chunk.data.num_rows:
            yield chunk.data
"""

# (a) The SDK's default: one write_deltalake + refresh + compact per 10,000-row batch.
SDK_DEFAULT = PRELUDE + r"""
from deltalake import DeltaTable, write_deltalake
url, sql, dst, cap, batch_size, batching = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
stats = {"rows": 0, "batches": 0, "write_seconds": 0.0, "compact_seconds": 0.0, "batch_seconds": []}

def load_batch(batch):  # DeltaLakeLoader._load_batch_impl with the default config
    t0 = time.perf_counter()
    table = pa.Table.from_batches([batch])
    write_deltalake(dst, table, mode="append", partition_by=None, schema_mode="merge", storage_options={})
    t1 = time.perf_counter()
    dt = DeltaTable(dst, storage_options={})  # _refresh_table_reference
    dt.version()
    dt.optimize.compact()  # _perform_post_write_optimizations: optimize_after_write=True
    t2 = time.perf_counter()
    stats["rows"] += batch.num_rows
    stats["batches"] += 1
    stats["write_seconds"] += t1 - t0
    stats["compact_seconds"] += t2 - t1
    stats["batch_seconds"].append(t2 - t0)

begin()
reader = do_get(url, sql)
taken = 0
buffered = None  # rows received but not yet loaded (rechunk mode)
stopped_early = False
for chunk in chunks(reader):
    if taken + chunk.num_rows >= cap:
        chunk = chunk.slice(0, cap - taken)
        stopped_early = True
    taken += chunk.num_rows
    if batching == "server":
        # The SDK's default load_stream: one load per chunk the server sends (never merged;
        # split here only if one exceeded batch_size).
        for offset in range(0, chunk.num_rows, batch_size):
            load_batch(chunk.slice(offset, batch_size))
    else:
        piece = pa.Table.from_batches([chunk])
        buffered = piece if buffered is None else pa.concat_tables([buffered, piece])
        while buffered.num_rows >= batch_size:
            load_batch(buffered.slice(0, batch_size).combine_chunks().to_batches()[0])
            buffered = buffered.slice(batch_size)
    if stopped_early:
        break
if buffered is not None and buffered.num_rows:
    load_batch(buffered.combine_chunks().to_batches()[0])
if stopped_early:
    reader.cancel()
stats["stopped_early"] = stopped_early
bs = stats.pop("batch_seconds")
stats["first_batch_seconds"] = bs[0] if bs else 0.0
stats["last_batch_seconds"] = bs[-1] if bs else 0.0
finish(stats)
"""

# (s) read_all=True, optimize_after_write=False: one write_deltalake per Flight batch.
SDK_PER_BATCH = PRELUDE + r"""
from deltalake import DeltaTable, WriterProperties, write_deltalake
url, sql, dst = sys.argv[1:4]
begin()
table = do_get(url, sql).read_all()
versions = 0
for batch in table.to_batches():
    write_deltalake(dst, pa.Table.from_batches([batch]), mode="append", schema_mode="merge",
                    writer_properties=WriterProperties(compression="SNAPPY"))
    DeltaTable(dst).version()  # _refresh_table_reference
    versions += 1
finish({"rows": table.num_rows, "versions": versions})
"""

# (b) read_all, then one write of the whole table.
SDK_BEST = PRELUDE + r"""
from deltalake import WriterProperties, write_deltalake
url, sql, dst = sys.argv[1:4]
begin()
table = do_get(url, sql).read_all()
write_deltalake(dst, table, mode="append", schema_mode="merge",
                writer_properties=WriterProperties(compression="SNAPPY"))
finish({"rows": table.num_rows})
"""

# (c) the stream straight into one Parquet file by pyarrow.
PARQUET = PRELUDE + r"""
import pyarrow.parquet as pq
url, sql, dst = sys.argv[1:4]
begin()
reader = do_get(url, sql)
rows = 0
with pq.ParquetWriter(dst, reader.schema, compression="snappy") as writer:
    for batch in chunks(reader):
        writer.write_batch(batch)
        rows += batch.num_rows
finish({"rows": rows})
"""

# (drain) the source: every chunk read and dropped. With a destination, the chunks are also
# written to an Arrow IPC file (once, before the rounds: the encoder's input).
DRAIN = PRELUDE + r"""
url, sql, capture = sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None
begin()
reader = do_get(url, sql)
rows = 0
if capture:
    # The batches, and beside them the app_metadata of the first (the memory server's).
    metadata = None
    with pa.OSFile(capture, "wb") as sink, pa.ipc.new_file(sink, reader.schema) as writer:
        while True:
            try:
                chunk = reader.read_chunk()
            except StopIteration:
                break
            if metadata is None and chunk.app_metadata is not None:
                metadata = chunk.app_metadata.to_pybytes().decode()
            if chunk.data is not None and chunk.data.num_rows:
                writer.write_batch(chunk.data)
                rows += chunk.data.num_rows
    with open(capture + ".metadata", "w") as out:
        out.write(metadata or "")
else:
    for batch in chunks(reader):
        rows += batch.num_rows
finish({"rows": rows})
"""

# (drain_memory) A Flight server holding the captured batches in memory, each sent with the
# captured app_metadata, for any query: prints its URL, serves until killed.
MEMORY_SERVER = r"""
import sys
import pyarrow as pa
import pyarrow.flight as flight
capture = sys.argv[1]
table = pa.ipc.open_file(pa.memory_map(capture)).read_all()
batches = table.to_batches()
metadata = pa.py_buffer(open(capture + ".metadata", "rb").read())

class Server(flight.FlightServerBase):
    def get_flight_info(self, context, descriptor):
        endpoint = flight.FlightEndpoint(b"all", [])
        return flight.FlightInfo(table.schema, descriptor, [endpoint], table.num_rows, -1)

    def do_get(self, context, ticket):
        return flight.GeneratorStream(table.schema, ((b, metadata) for b in batches))

server = Server("grpc://127.0.0.1:0")
print(f"serving grpc://127.0.0.1:{server.port}", flush=True)
server.serve()
"""

# The content check, run in a subprocess (deltalake can abort the interpreter at exit): the
# rows in key order (block_num, tx_index, log_index), then a SHA-256 of every column's
# values and nulls. A peer that drops, repeats, nulls, moves or alters any value differs; one
# that only chunks rows differently, or respells a type the way Delta writers do (unsigned
# to signed, fixed-size to variable binary, ns to us timestamps, string to large_string),
# does not.
CONTENT = r"""
import hashlib, json, sys
import numpy as np
import pyarrow as pa, pyarrow.compute as pc, pyarrow.dataset as ds, pyarrow.ipc as ipc
path, kind = sys.argv[1:3]
if kind == "delta":
    from deltalake import DeltaTable
    options = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    table = DeltaTable(path, storage_options=options).to_pyarrow_dataset().to_table()
elif kind == "ipc":
    table = ipc.open_file(pa.memory_map(path)).read_all()
else:
    table = ds.dataset(path, format="parquet").to_table()
keys = [k for k in ("block_num", "tx_index", "log_index") if k in table.column_names]
if not keys:
    raise SystemExit(f"content check: {path} has none of block_num, tx_index, log_index")
order = pc.sort_indices(table, [(k, "ascending") for k in keys])
if not np.array_equal(order.to_numpy(), np.arange(len(order))):  # take costs seconds
    table = table.take(order)

def numbers(h, arr, dtype):
    h.update(np.ascontiguousarray(arr.to_numpy(zero_copy_only=False), dtype=dtype).tobytes())

def update(h, arr):
    t = arr.type
    if pa.types.is_dictionary(t):
        return update(h, arr.dictionary_decode())
    h.update(str(len(arr)).encode())
    numbers(h, pc.is_null(arr), np.bool_)
    if pa.types.is_boolean(t):
        numbers(h, arr.fill_null(False), np.bool_)
    elif pa.types.is_integer(t):
        numbers(h, arr.cast(pa.int64(), safe=False).fill_null(0), np.int64)
    elif pa.types.is_floating(t):
        numbers(h, arr.cast(pa.float64()).fill_null(0), np.float64)
    elif pa.types.is_timestamp(t):
        us = arr.cast(pa.timestamp("us", t.tz), safe=False)
        numbers(h, us.cast(pa.int64()).fill_null(0), np.int64)
    elif pa.types.is_date(t):
        numbers(h, arr.cast(pa.date32()).cast(pa.int32()).fill_null(0), np.int32)
    elif pa.types.is_decimal(t) and t.scale == 0 and t.precision <= 20:
        # decimal(20,0) is how ampdelta stores a nested uint64 (docs/wide-integers.md): the
        # same digest as the source's uint64 column.
        numbers(h, arr.cast(pa.uint64(), safe=False).cast(pa.int64(), safe=False).fill_null(0),
                np.int64)
    elif pa.types.is_decimal(t):
        update_bytes(h, arr.cast(pa.string()))
    elif (pa.types.is_binary(t) or pa.types.is_string(t) or pa.types.is_large_binary(t)
          or pa.types.is_large_string(t) or pa.types.is_fixed_size_binary(t)
          or pa.types.is_binary_view(t) or pa.types.is_string_view(t)):
        update_bytes(h, arr)
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        numbers(h, pc.list_value_length(arr).fill_null(0), np.int64)
        update(h, pc.list_flatten(arr))
    elif pa.types.is_struct(t):
        for field, child in sorted(zip((f.name for f in t), arr.flatten())):
            h.update(field.encode())
            update(h, child)
    else:
        raise SystemExit(f"content check: no digest for column type {t}")

def update_bytes(h, arr):
    data = arr.cast(pa.large_binary())
    if data.null_count:
        data = data.fill_null(b"")
    numbers(h, pc.binary_length(data), np.int64)
    offsets = np.frombuffer(data.buffers()[1], np.int64)[data.offset:data.offset + len(data) + 1]
    h.update(memoryview(data.buffers()[2])[offsets[0]:offsets[-1]] if len(data) else b"")

columns = {}
for name in sorted(table.column_names):
    h = hashlib.sha256()
    column = table[name]
    update(h, column.combine_chunks() if column.num_chunks != 1 else column.chunk(0))
    columns[name] = {"nulls": column.null_count, "sha256": h.hexdigest()[:32]}
print(json.dumps({"rows": table.num_rows, "columns": columns}))
sys.stdout.flush()
import os
os._exit(0)
"""


def positive_int(text: str) -> int:
    """argparse type for counts that must be at least 1 (rounds: a median needs a value)."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def process_cpu_seconds(pid: int) -> float:
    """User+sys CPU seconds of a running process (the dev server)."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peer_env() -> dict:
    """The environment every peer runs in: Arrow's jemalloc pool, which the ampdelta tool and
    bench/parquet_limit select for themselves, for the Python peers too. pyarrow's default,
    mimalloc, hands freed pages back to the kernel, which zeroes them again: on the 2-core
    machine that cost the same encoder up to 7 s of system time per 2M rows, against 1.5 s."""
    env = dict(os.environ)
    if not env.get("ARROW_DEFAULT_MEMORY_POOL"):
        env["ARROW_DEFAULT_MEMORY_POOL"] = "jemalloc"
    return env


def timed(cmd: list, log_dir: pathlib.Path, server_pid: int | None = None) -> dict:
    """Runs cmd; returns its wall seconds, CPU seconds, peak RSS MiB, stdout, and the server's CPU
    seconds meanwhile."""
    out_path, err_path = log_dir / "stdout", log_dir / "stderr"
    # Start every peer with no dirty pages left by the one before: otherwise the kernel's
    # write-back of the previous peer's output runs (and is paid for) during this one.
    os.sync()
    server_before = process_cpu_seconds(server_pid) if server_pid else 0.0
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=peer_env())
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
    server_cpu = process_cpu_seconds(server_pid) - server_before if server_pid else 0.0
    if status != 0:
        raise RuntimeError(f"{cmd[0]} {cmd[1][:40]!r}... failed ({os.waitstatus_to_exitcode(status)}): "
                           f"{err_path.read_text(errors='replace')[-2000:]}")
    return {"wall": elapsed, "cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss / 1024.0,
            "server_cpu": server_cpu, "stdout": out_path.read_text(errors="replace")}


def du(path: pathlib.Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def rows_in(path: pathlib.Path, delta: bool) -> int:
    """Rows in the written output, from the Parquet footers of the live files."""
    import pyarrow.parquet as pq
    if not delta:
        files = [path] if path.is_file() else sorted(path.glob("*.parquet"))
        return sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    from deltalake import DeltaTable
    return sum(pq.ParquetFile(f).metadata.num_rows for f in DeltaTable(str(path)).file_uris())


def python_json(script: str, *argv) -> dict:
    """Run `python -c script argv...` and return the JSON document it prints last."""
    done = subprocess.run([PYTHON, "-c", script, *map(str, argv)], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{script.strip().splitlines()[0][:60]!r}... failed ({done.returncode}): "
                           f"{done.stderr[-2000:]}")
    return last_json(done.stdout)


def content(path: pathlib.Path | str, kind: str, storage_options: dict | None = None) -> dict:
    """Rows and a digest of every column of an output, read by an independent reader (a Delta
    table on an object store with its storage options)."""
    return python_json(CONTENT, path, kind, *([json.dumps(storage_options)] if storage_options
                                              else []))


# The column a streamed table carries for reorg undo (the seed's batch tag); loads that end
# in a stream (workers, Ray backfills) write it next to the source's columns.
BATCH_TAG = "_amp_batch_id"


def source_content(url: str, sql: str, work: pathlib.Path, rows: int | None = None,
                   env: dict | None = None) -> dict:
    """content() of the rows the server sends for `sql`: a DoGet drain captured to a file in
    `work`, digested, then deleted. With `rows`, the server must have sent that many."""
    capture = work / "source.arrow"
    subprocess.run([PYTHON, "-c", DRAIN, url, sql, str(capture)], check=True,
                   stdout=subprocess.DEVNULL, env=env)
    try:
        digest = content(capture, "ipc")
    finally:
        capture.unlink(missing_ok=True)
    if rows is not None and digest["rows"] != rows:
        raise RuntimeError(f"the server sent {digest['rows']} rows, expected {rows}")
    return digest


def check_content(name: str, got: dict, expected: dict, own_columns: tuple = ()) -> None:
    """Raise, naming the columns, unless `got` holds exactly the rows `expected` describes
    (besides `own_columns`, which the loader adds and the source lacks)."""
    extra = [c for c in own_columns if c in got["columns"] and c not in expected["columns"]]
    if extra:
        got = {**got, "columns": {c: v for c, v in got["columns"].items() if c not in extra}}
    if got == expected:
        return
    if got["rows"] != expected["rows"]:
        raise RuntimeError(f"{name} holds {got['rows']} rows, expected {expected['rows']}")
    columns = sorted(set(got["columns"]) | set(expected["columns"]))
    differ = [c for c in columns if got["columns"].get(c) != expected["columns"].get(c)]
    detail = "; ".join(f"{c}: {got['columns'].get(c)} vs {expected['columns'].get(c)}"
                       for c in differ[:3])
    raise RuntimeError(f"{name} differs from its source in {len(differ)} column(s): {detail}")


def last_json(text: str) -> dict:
    return json.loads(text.strip().splitlines()[-1])


def emit_report(report: dict, json_out: str | None) -> None:
    """Print a benchmark's JSON report last on stdout (bench/run_all.py reads it), and write it
    to `json_out` too when given."""
    text = json.dumps(report, indent=2)
    print(text)
    if json_out:
        pathlib.Path(json_out).write_text(text + "\n")


def median(values: list) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=positive_int, default=5)
    parser.add_argument("--peers", default=",".join(PEERS),
                        help=f"comma-separated subset of {','.join(PEERS)}")
    parser.add_argument("--sdk-default-max-rows", type=int, default=200_000,
                        help="peer a stops after this many rows; its time is extrapolated")
    parser.add_argument("--sdk-default-batching", choices=("rechunk", "server"), default="server",
                        help="peer a: server = one load per chunk the server sends, split at 10,000 rows "
                             "(the SDK's default load_stream; default); rechunk = exact 10,000-row batches "
                             "(fewer, larger writes than the SDK does)")
    parser.add_argument("--txs-per-block", type=int, default=100)
    parser.add_argument("--dataset", choices=("transactions", "logs"), default="transactions",
                        help="the table every peer loads (SELECT * of it)")
    parser.add_argument("--logs-per-tx", type=int, default=2,
                        help="the dev server's logs per transaction (the logs dataset)")
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--json-out", default=None, help="also write the report here")
    parser.add_argument("--keep", action="store_true", help="keep the written tables")
    parser.add_argument("--server-cache-mib", type=int, default=None,
                        help="the dev server's --cache-mib (default: 1 KiB per row; 0: none)")
    parser.add_argument("--server-cpus", default=None,
                        help="taskset CPU list for the servers (e.g. 0-3); default: any")
    parser.add_argument("--loader-cpus", default=None,
                        help="taskset CPU list for the peers (e.g. 4-15); default: any")
    args = parser.parse_args()
    peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    unknown = [p for p in peers if p not in PEERS]
    if unknown or not peers:
        parser.error(f"--peers: unknown {unknown}; choose from {','.join(PEERS)}")

    work = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="ampdelta-load-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    global SQL
    SQL = f'SELECT * FROM "acme/eth_mainnet".{args.dataset}'
    per_block = args.txs_per_block * (args.logs_per_tx if args.dataset == "logs" else 1)
    blocks = -(-args.rows // per_block)
    rows = blocks * per_block
    sdk_cap = min(args.sdk_default_max_rows, rows)

    def pinned(cmd: list, cpus: str | None) -> list:
        return ["taskset", "-c", cpus, *cmd] if cpus else cmd

    def start(cmd: list) -> tuple[subprocess.Popen, str]:
        """A server on the server cores, and its URL (the last word of its first line)."""
        proc = subprocess.Popen(pinned(cmd, args.server_cpus), stdout=subprocess.PIPE, text=True)
        url = proc.stdout.readline().split()[-1]
        # Keep draining the server's stdout so it can never block on a full pipe.
        threading.Thread(target=proc.stdout.read, daemon=True).start()
        extra.append(proc)
        return proc, url

    dev_server = [str(CLI), "dev-server", "--port", "0", "--blocks", str(blocks),
                  "--txs-per-block", str(args.txs_per_block),
                  "--logs-per-tx", str(args.logs_per_tx)]
    cache_mib = args.server_cache_mib if args.server_cache_mib is not None else -(-rows // 1024)
    capture = work / "stream.arrow"
    runs = {p: [] for p in peers}
    sizes = {}
    extra = []
    try:
        server, url = start(dev_server + ["--cache-mib", str(cache_mib)])
        urls = {"drain": url}
        print(f"dev server {url}: {blocks} blocks = {rows} rows of {args.dataset}; "
              f"workdir {work}", file=sys.stderr)
        log_dir = work / "log-capture"
        log_dir.mkdir(exist_ok=True)
        timed([PYTHON, "-c", DRAIN, url, SQL, str(capture)], log_dir)
        expected = content(capture, "ipc")
        if expected["rows"] != rows:
            raise RuntimeError(f"the server sent {expected['rows']} rows, expected {rows}")
        print(f"source: {expected['rows']} rows, {len(expected['columns'])} columns",
              file=sys.stderr)
        servers = {"drain": server}
        if "drain_single" in peers:
            servers["drain_single"], urls["drain_single"] = start(
                dev_server + ["--scan-threads", "1"])
        if "drain_memory" in peers:
            servers["drain_memory"], urls["drain_memory"] = start(
                [PYTHON, "-c", MEMORY_SERVER, str(capture)])

        for round_index in range(args.rounds):
            for name in peers:
                if server.poll() is not None:
                    raise RuntimeError("the dev server exited")
                target = work / f"out-{name}"
                shutil.rmtree(target, ignore_errors=True)
                log_dir = work / f"log-{name}"
                log_dir.mkdir(exist_ok=True)
                if name == "ampdelta":
                    cmd = [str(CLI), "load", "--server", url, "--table", str(target), "--sql", SQL,
                           "--mode", "append", "--compression", "snappy",
                           "--config", '{"optimize_after_write": false}']
                elif name == "a":
                    cmd = [PYTHON, "-c", SDK_DEFAULT, url, SQL, str(target), str(sdk_cap),
                           str(SDK_BATCH_SIZE), args.sdk_default_batching]
                elif name == "s":
                    cmd = [PYTHON, "-c", SDK_PER_BATCH, url, SQL, str(target)]
                elif name == "b":
                    cmd = [PYTHON, "-c", SDK_BEST, url, SQL, str(target)]
                elif name == "c":
                    target.mkdir(parents=True)
                    cmd = [PYTHON, "-c", PARQUET, url, SQL, str(target / "data.parquet")]
                elif name in DRAINS:
                    cmd = [PYTHON, "-c", DRAIN, urls[name], SQL]
                else:
                    target.mkdir(parents=True)
                    cmd = [str(PARQUET_LIMIT), "--input", str(capture), "--output", str(target),
                           "--codec", "snappy", "--dictionary", ENCODERS[name]]
                source = None if name in ENCODERS else servers.get(name, server)
                run = timed(pinned(cmd, args.loader_cpus), log_dir,
                            source.pid if source else None)
                out = run.pop("stdout")
                run["seconds"], run["load_cpu"] = run["wall"], run["cpu"]
                if name == "ampdelta":
                    match = re.search(r"Loaded (\d+) rows", out)
                    if not match or int(match.group(1)) != rows:
                        raise RuntimeError(f"ampdelta load printed {out.strip()!r}, expected {rows} rows")
                elif name in ENCODERS:
                    info = last_json(out)
                    run["seconds"], run["load_cpu"] = info["seconds"], info["cpu_seconds"]
                    run["reported_rows"] = info["rows"]
                else:
                    info = last_json(out)
                    run["seconds"], run["load_cpu"] = info["load_seconds"], info["load_cpu_seconds"]
                    run["reported_rows"] = info["rows"]
                    if name == "a":
                        run["a"] = info
                        # Only the load part scales with the rows.
                        scale = rows / info["rows"]
                        run["seconds"] = info["load_seconds"] * scale
                        run["load_cpu"] = info["load_cpu_seconds"] * scale
                    if name == "s":
                        run["versions"] = info["versions"]
                wanted = sdk_cap if name == "a" else rows
                if name not in DRAINS:
                    written = rows_in(target, name in DELTA_PEERS)
                    if written != wanted:
                        raise RuntimeError(f"{name} wrote {written} rows, expected {wanted}")
                    if round_index == 0 and name != "a":
                        check_content(name, content(target, "delta" if name in DELTA_PEERS
                                                    else "parquet"), expected)
                    sizes[name] = du(target)
                elif run["reported_rows"] != rows:
                    raise RuntimeError(f"{name} read {run['reported_rows']} rows, expected {rows}")
                runs[name].append(run)
                print(f"round {round_index + 1} {name}: {run['seconds']:.2f}s "
                      f"(process wall {run['wall']:.2f}s), {run['load_cpu']:.2f} CPU-s, "
                      f"server {run['server_cpu']:.2f} CPU-s, peak RSS {run['rss']:.0f} MiB",
                      file=sys.stderr)
                if not args.keep:
                    shutil.rmtree(target, ignore_errors=True)
    finally:
        for proc in extra:
            proc.send_signal(signal.SIGTERM)
            proc.wait()
        capture.unlink(missing_ok=True)
        pathlib.Path(str(capture) + ".metadata").unlink(missing_ok=True)

    million = rows / 1e6
    report = {"rows": rows, "rounds": args.rounds, "codec": "snappy", "query": SQL,
              "cores": os.cpu_count(), "server_cpus": args.server_cpus,
              "server_cache_mib": cache_mib,
              "loader_cpus": args.loader_cpus,
              "data": "calibrated synthetic chain (bench/chain_stats.py)", "peers": {}}
    for name, peer_runs in runs.items():
        entry = {
            "seconds_median": round(median([r["seconds"] for r in peer_runs]), 3),
            "process_wall_seconds_median": round(median([r["wall"] for r in peer_runs]), 3),
            "cpu_seconds_per_million_rows": round(median([r["load_cpu"] for r in peer_runs]) / million, 3),
            "process_cpu_seconds_median": round(median([r["cpu"] for r in peer_runs]), 3),
            "server_cpu_seconds_median": round(median([r["server_cpu"] for r in peer_runs]), 3),
            "peak_rss_mib_median": round(median([r["rss"] for r in peer_runs])),
        }
        entry["rows_per_second"] = round(rows / entry["seconds_median"])
        if name in sizes:
            entry["output_mib"] = round(sizes[name] / 2**20, 1)
        if name == "s":
            entry["versions"] = peer_runs[0]["versions"]
        if name == "a":
            info = peer_runs[0]["a"]
            entry["extrapolated_from_rows"] = info["rows"]
            entry["batches_measured"] = info["batches"]
            entry["first_batch_seconds"] = round(info["first_batch_seconds"], 3)
            entry["last_batch_seconds"] = round(info["last_batch_seconds"], 3)
            entry["note"] = ("seconds and CPU are the measured load part scaled linearly to every row "
                             "(optimistic: each compact() rewrites a growing table); RSS and output "
                             "are at the measured rows")
        report["peers"][name] = entry
    p = report["peers"]
    ratios = {}
    if "ampdelta" in p:
        base = p["ampdelta"]["seconds_median"]
        for name in ("a", "s", "b", "c"):
            if name in p:
                ratios[f"{name}_seconds_over_ampdelta"] = round(p[name]["seconds_median"] / base, 3)
        if "encoder" in p:
            # The source and the encoder share the machine in a real load: their CPU together
            # over the cores is a floor no loader on this machine can beat.
            cores = os.cpu_count() or 1
            report["shared_machine_floor_seconds"] = round(
                (p["ampdelta"]["server_cpu_seconds_median"] + p["encoder"]["process_cpu_seconds_median"])
                / cores, 3)
            ratios["ampdelta_seconds_over_shared_machine_floor"] = round(
                base / report["shared_machine_floor_seconds"], 3)
        limits = {n: p[n]["seconds_median"] for n in ("drain", "encoder") if n in p}
        if limits:
            report["limit_seconds"] = max(limits.values())
            report["limited_by"] = {"drain": "source", "encoder": "encoder"}[
                max(limits, key=limits.get)]
            ratios["ampdelta_seconds_over_limit"] = round(base / max(limits.values()), 3)
        for name in ("drain", "encoder"):
            if name in p:
                ratios[f"ampdelta_seconds_over_{name}"] = round(base / p[name]["seconds_median"], 3)
        if "encoder_same" in p:
            # The encoder writing the Parquet ampdelta writes (its column plan).
            ratios["ampdelta_seconds_over_encoder_same"] = round(
                base / p["encoder_same"]["seconds_median"], 3)
            ratios["ampdelta_cpu_over_encoder_same_cpu"] = round(
                p["ampdelta"]["cpu_seconds_per_million_rows"]
                / p["encoder_same"]["cpu_seconds_per_million_rows"], 3)
        if "encoder" in p:
            ratios["ampdelta_cpu_over_encoder_cpu"] = round(
                p["ampdelta"]["cpu_seconds_per_million_rows"] / p["encoder"]["cpu_seconds_per_million_rows"], 3)
    if "drain" in p:
        for name in ("drain_single", "drain_memory"):
            if name in p:
                ratios[f"drain_seconds_over_{name}"] = round(
                    p["drain"]["seconds_median"] / p[name]["seconds_median"], 3)
    report["ratios"] = ratios
    emit_report(report, args.json_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
