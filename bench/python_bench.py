#!/usr/bin/env python3
"""The Python package's overhead and its Ray backfill, in one run, against one release dev
server serving SELECT * FROM "acme/eth_mainnet".transactions (100 transactions per block).

(a) The module vs the CLI vs the SDK's own path, each its own process, each writing the
    same rows to a new Delta table with Snappy and no compaction:
      module     the seed's load script body on the native engine: Client(url),
                 configure_connection('deltalake', {table_path, optimize_after_write:
                 False}), sql(q).load(read_all=True, writer_properties=SNAPPY); timed in
                 the process after `from ampdelta import Client` (import time shown apart)
      cli        `ampdelta load --compression snappy --config '{"optimize_after_write":
                 false}'` (--cli, a release build): wall time, and wall time less the
                 median start-up of `ampdelta --version` (the no-op)
      sdk        the SDK's path at its best (bench/load_bench.py's peer b): pyarrow Flight
                 DoGet (bench/amp_flight.py), read_all(), one write_deltalake; timed in
                 its process after its imports; on Arrow's jemalloc pool like the others
      module-jemalloc  the module with ARROW_DEFAULT_MEMORY_POOL=jemalloc set by the
                 caller; `import ampdelta` picks that pool itself (as the CLI does), so
                 this is the module's own configuration again and the gap between the two
                 is the machine's noise
    Goal: module / cli (net of start-up) ≤ 1.05.
(b) Ray (a local cluster of --ray-cpus CPUs in this process, started and warmed up
    outside the timings) vs one process, on the same rows:
      ray-backfill  ampdelta.ray.backfill(num_shards=--shards, compact=False): the shards
                    as Ray tasks, then the driver's run loads the reorg window (256
                    blocks) through the stream
      module        the module's plain load of (a)
      module-workers-N  the module's load(num_workers=N): partitions, then the stream
      ray-data      Ray Data's own Delta writer: the DoGet's batches (Timestamp(ns) cast
                    to µs, which its write_delta needs) into ray.data.from_arrow (the
                    read, timed apart), then ds.write_delta (the write, timed)

Peak RSS is each peer process's (wait4 in a small launcher process). Every table's rows
are counted from its Parquet footers after each run and must equal the
server's rows; each peer's first table is also read back by deltalake and its rows compared,
every column, with the server's (bench/load_bench.py's content check). Medians over
--rounds rounds; the Markdown tables go to stderr and the JSON report comes last on stdout.
The dev server, Ray and the loaders share the machine's cores.

Usage: bench/python_bench.py [--rows 1000000] [--rounds 3] [--cli PATH] [--shards 2]
                             [--workers 2] [--ray-cpus 2] [--no-ray]
Run it with the Python that has ampdelta (and ray[data]) installed.
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))
import load_bench  # noqa: E402  (its SDK peer and row counting)
from amp_flight import do_get  # noqa: E402

CLI = ROOT / "build" / "release" / "tools" / "ampdelta" / "ampdelta"
SQL = 'SELECT * FROM "acme/eth_mainnet".transactions'
CONFIG = {"optimize_after_write": False}

# The seed's load script body, on the Python module; argv: url sql table load-kwargs-json.
MODULE_LOAD = r"""
import json, sys, time
started = time.perf_counter()
from ampdelta import Client
imported = time.perf_counter() - started
url, sql, dst, extra = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
start = time.perf_counter()
client = Client(url)
client.configure_connection('bench', 'deltalake',
                            {'table_path': dst, 'optimize_after_write': False})
result = client.sql(sql).load(connection='bench', destination='bench', read_all=True,
                              writer_properties={'compression': 'SNAPPY'}, **extra)
seconds = time.perf_counter() - start
print(json.dumps({"rows": result.rows_loaded, "load_seconds": seconds,
                  "import_seconds": imported}))
"""


def cli_env(cli: pathlib.Path) -> dict:
    """A sanitizer build (for a trial run) needs the test suite's settings; a release build
    runs as it is."""
    env = dict(os.environ)
    try:
        linked = subprocess.run(["ldd", str(cli)], capture_output=True, text=True).stdout
    except OSError:
        linked = ""
    if "libasan" in linked:
        env["ARROW_DEFAULT_MEMORY_POOL"] = "system"
        env["ASAN_OPTIONS"] = "detect_leaks=0:detect_container_overflow=0"
    return env


# Runs argv[2:] and writes its wall seconds and peak RSS to the fd argv[1]. Peers start from
# this small process, not from the benchmark's: a forked child's peak RSS starts at its
# parent's RSS, and this process holds Ray and Ray Data's rows.
LAUNCHER = r"""
import json, os, sys, time
report = int(sys.argv[1])
os.set_inheritable(report, False)
start = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
elapsed = time.perf_counter() - start
os.write(report, json.dumps({"seconds": elapsed, "rss_kib": usage.ru_maxrss,
                             "status": os.waitstatus_to_exitcode(status)}).encode())
sys.exit(0)
"""


def timed(cmd: list, env: dict | None = None) -> tuple:
    """(wall seconds, peak RSS MiB, stdout) of cmd, which must exit 0."""
    os.sync()
    read_end, write_end = os.pipe()
    proc = subprocess.Popen([sys.executable, "-S", "-c", LAUNCHER, str(write_end), *cmd],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, stdin=subprocess.DEVNULL, pass_fds=(write_end,))
    os.close(write_end)
    chunks = {"out": [], "err": []}
    threads = [threading.Thread(target=lambda s, k: chunks[k].append(s.read()), args=(p, k))
               for p, k in ((proc.stdout, "out"), (proc.stderr, "err"))]
    for thread in threads:
        thread.start()
    with os.fdopen(read_end, "rb") as report_pipe:
        report = report_pipe.read()
    proc.wait()
    for thread in threads:
        thread.join()
    info = json.loads(report) if report else {"status": proc.returncode}
    if proc.returncode != 0 or info["status"] != 0:
        raise RuntimeError(f"{cmd[:3]} failed ({info['status']}): "
                           f"{''.join(chunks['err'])[-2000:]}")
    return info["seconds"], info["rss_kib"] / 1024.0, "".join(chunks["out"])


def delta_types(table):
    """Ray Data's write_delta takes the table's schema as deltalake.Schema.from_arrow does,
    which refuses Timestamp(ns) and zones other than "UTC" (the server sends "+00:00"; the
    module, the CLI and write_deltalake convert them): cast those columns, as part of the
    peer's read."""
    import pyarrow as pa
    for index, field in enumerate(table.schema):
        if pa.types.is_timestamp(field.type) and field.type.unit == "ns":
            target = pa.timestamp("us", tz="UTC" if field.type.tz else None)
            table = table.set_column(index, pa.field(field.name, target, field.nullable),
                                     table.column(index).cast(target))
    return table


def last_json(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--txs-per-block", type=int, default=100)
    parser.add_argument("--cli", default=str(CLI), help="a release ampdelta CLI")
    parser.add_argument("--shards", type=int, default=2, help="Ray backfill shards")
    parser.add_argument("--workers", type=int, default=2, help="module-workers-N's N")
    parser.add_argument("--ray-cpus", type=int, default=2)
    parser.add_argument("--no-ray", action="store_true", help="only part (a)")
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    cli = pathlib.Path(args.cli)
    if not cli.is_file():
        sys.exit(f"{cli} not built: make build-release, or pass --cli")
    env = cli_env(cli)
    blocks = max(1, -(-args.rows // args.txs_per_block))
    rows = blocks * args.txs_per_block
    work = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="ampdelta-python-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    server = subprocess.Popen([str(cli), "dev-server", "--port", "0", "--blocks", str(blocks),
                               "--txs-per-block", str(args.txs_per_block)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              env=env)
    results: dict[str, dict[str, list]] = {}

    def record(name: str, seconds: float, **extra) -> None:
        entry = results.setdefault(name, {"seconds": [], "rows_per_s": []})
        entry["seconds"].append(seconds)
        entry["rows_per_s"].append(rows / seconds)
        for key, value in extra.items():
            entry.setdefault(key, []).append(value)
        detail = ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                           for k, v in extra.items())
        print(f"  {name}: {seconds:.3f}s, {rows / seconds:,.0f} rows/s"
              + (f" ({detail})" if detail else ""), file=sys.stderr)

    source: dict = {}  # the rows the server sends, digested once (load_bench.content)

    def check(name: str, table: pathlib.Path, loaded: int | None = None) -> None:
        """The table's row count every round; in the first round also its rows, read back by
        deltalake and compared column by column with the server's."""
        written = load_bench.rows_in(table, delta=True)
        if written != rows or (loaded is not None and loaded != rows):
            raise RuntimeError(f"{name}: loaded {loaded}, table holds {written}, "
                               f"expected {rows}")
        if name not in checked:
            load_bench.check_content(name, load_bench.content(table, "delta"), source,
                                     own_columns=(load_bench.BATCH_TAG,))
            checked.add(name)
        shutil.rmtree(table, ignore_errors=True)

    checked: set[str] = set()

    def fresh(name: str, round_index: int) -> pathlib.Path:
        path = work / f"{name}-{round_index}"
        shutil.rmtree(path, ignore_errors=True)
        return path

    try:
        url = re.search(r"(grpc://127\.0\.0\.1:\d+)", server.stdout.readline()).group(1)
        threading.Thread(target=server.stdout.read, daemon=True).start()
        print(f"dev server {url}: {blocks} blocks, {rows} rows; CLI {cli}", file=sys.stderr)
        source.update(load_bench.source_content(url, SQL, work, rows, env))

        startup = statistics.median(timed([str(cli), "--version"], env)[0] for _ in range(7))
        print(f"  cli no-op start-up (`ampdelta --version`, median of 7): {startup:.3f}s",
              file=sys.stderr)

        ray = None
        if not args.no_ray:
            # Loopback only, no usage statistics; read when ray is imported.
            os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
            import ray  # noqa: PLC0415
            import ray.data  # noqa: PLC0415
            import ampdelta.ray  # noqa: PLC0415
            started = time.perf_counter()
            ray.init(num_cpus=args.ray_cpus, include_dashboard=False,
                     configure_logging=False, log_to_driver=False)
            ray.data.DataContext.get_current().enable_progress_bars = False

            @ray.remote
            def warm_up() -> int:
                import ampdelta  # noqa: F401, PLC0415
                return os.getpid()

            pids = set(ray.get([warm_up.remote() for _ in range(args.ray_cpus * 2)]))
            print(f"  ray: {args.ray_cpus} CPUs up in {time.perf_counter() - started:.1f}s "
                  f"(not timed), {len(pids)} warm workers", file=sys.stderr)

        for round_index in range(args.rounds):
            print(f"round {round_index + 1}/{args.rounds}", file=sys.stderr)
            # (a)
            table = fresh("cli", round_index)
            wall, rss, out = timed([str(cli), "load", "--server", url, "--table", str(table),
                                    "--sql", SQL, "--compression", "snappy", "--config",
                                    json.dumps(CONFIG)], env)
            loaded = int(re.search(r"Loaded (\d+) rows", out).group(1))
            check("cli", table, loaded)
            record("cli", wall - startup, wall=wall, rss_mib=rss)

            table = fresh("module", round_index)
            wall, rss, out = timed([sys.executable, "-c", MODULE_LOAD, url, SQL, str(table),
                                    "{}"])
            info = last_json(out)
            check("module", table, info["rows"])
            record("module", info["load_seconds"], wall=wall, rss_mib=rss,
                   import_seconds=info["import_seconds"])

            # The same with the pool set by the caller: a check that the package's own choice
            # of jemalloc holds (the two differ by noise only).
            table = fresh("module-jemalloc", round_index)
            wall, rss, out = timed([sys.executable, "-c", MODULE_LOAD, url, SQL, str(table),
                                    "{}"], dict(os.environ, ARROW_DEFAULT_MEMORY_POOL="jemalloc"))
            info = last_json(out)
            check("module-jemalloc", table, info["rows"])
            record("module-jemalloc", info["load_seconds"], wall=wall, rss_mib=rss)

            table = fresh("sdk", round_index)
            # On Arrow's jemalloc pool, as the module and the CLI (load_bench.peer_env).
            wall, rss, out = timed([sys.executable, "-c", load_bench.SDK_BEST, url, SQL,
                                    str(table)], load_bench.peer_env())
            info = last_json(out)
            check("sdk", table, info["rows"])
            record("sdk", info["load_seconds"], wall=wall, rss_mib=rss)

            if ray is None:
                continue
            # (b)
            name = f"module-workers-{args.workers}"
            table = fresh(name, round_index)
            wall, rss, out = timed([sys.executable, "-c", MODULE_LOAD, url, SQL, str(table),
                                    json.dumps({"num_workers": args.workers})])
            info = last_json(out)
            check(name, table, info["rows"])
            record(name, info["load_seconds"], wall=wall, rss_mib=rss)

            table = fresh("ray-backfill", round_index)
            start = time.perf_counter()
            done = ampdelta.ray.backfill(
                url, SQL, str(table), num_shards=args.shards, config=CONFIG, compact=False,
                progress=False, load_options={"writer_properties": {"compression": "SNAPPY"}})
            seconds = time.perf_counter() - start
            check("ray-backfill", table, done.rows)
            record("ray-backfill", seconds, tail_rows=done.tail_rows,
                   partitions=done.partitions["loaded"])

            table = fresh("ray-data", round_index)
            start = time.perf_counter()
            fetched = delta_types(do_get(url, SQL).read_all())
            pieces = max(1, args.ray_cpus * 2)
            step = -(-fetched.num_rows // pieces)
            dataset = ray.data.from_arrow([fetched.slice(i, step)
                                           for i in range(0, fetched.num_rows, step)])
            read_seconds = time.perf_counter() - start
            del fetched
            start = time.perf_counter()
            dataset.write_delta(str(table))
            write_seconds = time.perf_counter() - start
            del dataset
            check("ray-data", table)
            record("ray-data", write_seconds, read_seconds=read_seconds,
                   read_and_write_seconds=read_seconds + write_seconds)
    finally:
        server.kill()
        server.wait()
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
        if "ray" in sys.modules and sys.modules["ray"].is_initialized():
            sys.modules["ray"].shutdown()

    med = {name: {key: statistics.median(values) for key, values in entry.items()}
           for name, entry in results.items()}
    report = {"rows": rows, "rounds": args.rounds, "query": SQL,
              "cli_startup_seconds": round(startup, 4),
              "median": {name: {k: round(v, 4) for k, v in entry.items()}
                         for name, entry in med.items()}}
    ratios = []  # (what, value, goal)

    def ratio(what: str, value: float, goal: str = "") -> None:
        ratios.append((what, value, goal))

    if "module" in med and "cli" in med:
        ratio("module in-process / cli net of start-up (seconds)",
              med["module"]["seconds"] / med["cli"]["seconds"], "≤ 1.05")
        ratio("module process wall / cli wall (seconds)",
              med["module"]["wall"] / med["cli"]["wall"])
        ratio("module-jemalloc in-process / cli net of start-up (seconds)",
              med["module-jemalloc"]["seconds"] / med["cli"]["seconds"], "≤ 1.05")
        ratio("sdk in-process / module in-process (seconds)",
              med["sdk"]["seconds"] / med["module"]["seconds"])
    if "ray-backfill" in med:
        ray_rps = med["ray-backfill"]["rows_per_s"]
        ratio("ray-backfill / module plain load (rows/s)", ray_rps / med["module"]["rows_per_s"])
        workers = f"module-workers-{args.workers}"
        ratio(f"ray-backfill / {workers} (rows/s)", ray_rps / med[workers]["rows_per_s"])
        ratio("ray-backfill / ray-data write_delta, write only (rows/s)",
              ray_rps / med["ray-data"]["rows_per_s"])
        ratio("ray-backfill / ray-data, read + write (rows/s)",
              ray_rps * med["ray-data"]["read_and_write_seconds"] / rows)
    report["ratios"] = {what: round(value, 3) for what, value, _ in ratios}
    # The tables for people on stderr, the JSON report last on stdout (bench/run_all.py
    # reads the last JSON document).
    table = [f"{rows:,} rows, median of {args.rounds} rounds:", "",
             "| peer | seconds | rows/s |", "|---|---|---|"]
    table += [f"| {name} | {entry['seconds']:.3f} | {entry['rows_per_s']:,.0f} |"
              for name, entry in med.items()]
    table += ["", "| ratio | value | goal |", "|---|---|---|"]
    table += [f"| {what} | {value:.3f} | {goal} |" for what, value, goal in ratios]
    print("\n".join(table), file=sys.stderr)
    load_bench.emit_report(report, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
