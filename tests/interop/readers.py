"""Reference Delta Lake readers for interop tests.

Each ``read_*`` function takes a Delta table path and returns a
``pyarrow.Table`` as read by one independent implementation:

    read_deltalake(path, version=None)   delta-rs (deltalake)
    read_duckdb(path)                    DuckDB + delta extension (delta_scan)
    read_duckdb_s3(uri, endpoint, …)     the same on an S3-compatible endpoint (+ httpfs)
    read_polars(path, version=None)      polars (pl.read_delta, via delta-rs)
    read_spark(path, version=None)       Apache Spark + delta-spark

DeltaLakeChild answers many reads from one deltalake child process.

The environment comes from scripts/setup_python.sh: the venv at .deps/venv
and the delta-spark jars pre-fetched into the Ivy cache at .deps/ivy2.
Nothing here touches the network: DuckDB loads its delta extension from the
duckdb-extension-delta wheel, and Spark resolves its jars from .deps/ivy2.

Arrow types differ slightly between readers for the same Delta type: polars
gives large_string/large_binary/large_list, DuckDB names list items "l" and
timestamp zones "Etc/UTC" (others: "UTC"). Cast to one schema before
comparing values.
"""

from __future__ import annotations

import atexit
import fcntl
import os
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa

REPO_ROOT = Path(__file__).resolve().parents[2]
IVY_DIR = Path(os.environ.get("AMPDELTA_IVY_DIR", REPO_ROOT / ".deps" / "ivy2"))


def read_deltalake(path, version: int | None = None) -> pa.Table:
    from deltalake import DeltaTable

    return DeltaTable(str(path), version=version).to_pyarrow_table()


# deltalake in one child process for a whole test: a JSON request per line in, a JSON answer
# per line out. A test that reads a table after each of many steps would otherwise start
# Python and import deltalake each time. The child leaves through os._exit (deltalake 1.6.6
# may abort the interpreter at exit after to_pyarrow_table()).
_DELTALAKE_CHILD = r"""
import json, os, sys
from urllib.parse import unquote
from deltalake import DeltaTable
for line in sys.stdin:
    request = json.loads(line)
    root = os.path.realpath(request["path"])
    try:
        table = DeltaTable(root)
        block_nums = table.to_pyarrow_table(columns=["block_num"]).column("block_num")
        answer = {"version": table.version(), "rows": len(block_nums),
                  "files": [os.path.relpath(unquote(uri.removeprefix("file://")), root)
                            for uri in table.file_uris()]}
        if request.get("block_nums"):
            answer["block_nums"] = block_nums.to_pylist()
    except Exception as error:
        answer = {"error": repr(error)}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
os._exit(0)
"""


class DeltaLakeChild:
    """deltalake in a child process, asked about one table at a time: its latest version,
    row count, data files (relative paths) and, if asked, its block_num column."""

    def __init__(self):
        import subprocess
        import sys

        self.proc = subprocess.Popen([sys.executable, "-c", _DELTALAKE_CHILD], text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def read(self, path, block_nums: bool = False, timeout_s: float = 120) -> dict:
        import json
        import select

        try:
            self.proc.stdin.write(json.dumps({"path": str(path), "block_nums": block_nums})
                                  + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise AssertionError(f"the deltalake child had died (exit {self.proc.poll()})")
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
        if not ready:
            self.proc.kill()
            raise AssertionError(f"deltalake took over {timeout_s} s to read {path}")
        line = self.proc.stdout.readline()
        assert line, f"the deltalake child died reading {path} (exit {self.proc.wait()})"
        answer = json.loads(line)
        assert "error" not in answer, f"deltalake cannot read {path}: {answer['error']}"
        return answer

    def close(self) -> None:
        import subprocess

        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except (BrokenPipeError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def duckdb_delta_extension_path() -> Path:
    """The delta.duckdb_extension file shipped in the duckdb-extension-delta wheel."""
    import duckdb
    import duckdb_extension_delta

    ext = (Path(duckdb_extension_delta.__file__).parent / "extensions"
           / f"v{duckdb.__version__}" / "delta.duckdb_extension")
    if not ext.is_file():
        raise FileNotFoundError(
            f"{ext} missing: duckdb-extension-delta must match duckdb {duckdb.__version__}")
    return ext


def duckdb_connect(*extensions: Path):
    """A DuckDB connection with the given extension files loaded. It never downloads an
    extension, and it never draws a progress bar: a slow scan would otherwise print one
    to stdout, where a reader subprocess's answers go."""
    import duckdb

    con = duckdb.connect(config={"autoinstall_known_extensions": False})
    con.execute("SET enable_progress_bar = false")
    for ext in extensions:
        con.execute(f"LOAD '{str(ext).replace(chr(39), chr(39) * 2)}'")
    return con


def read_duckdb(path) -> pa.Table:
    con = duckdb_connect(duckdb_delta_extension_path())
    try:
        return con.execute("SELECT * FROM delta_scan(?)",
                           [os.path.abspath(path)]).to_arrow_table()
    finally:
        con.close()


def read_duckdb_s3(uri: str, endpoint: str, key_id: str, secret: str,
                   region: str = "us-east-1") -> pa.Table:
    """DuckDB's delta_scan of an s3:// table on an S3-compatible endpoint (plain HTTP,
    path-style), with httpfs loaded from the duckdb-extension-httpfs wheel."""
    import duckdb
    import duckdb_extension_httpfs

    httpfs = (Path(duckdb_extension_httpfs.__file__).parent / "extensions"
              / f"v{duckdb.__version__}" / "httpfs.duckdb_extension")
    con = duckdb_connect(httpfs, duckdb_delta_extension_path())
    try:
        host = endpoint.split("://", 1)[1].rstrip("/")
        con.execute("CREATE SECRET (TYPE s3, KEY_ID ?, SECRET ?, REGION ?, ENDPOINT ?, "
                    "URL_STYLE 'path', USE_SSL false)", [key_id, secret, region, host])
        return con.execute("SELECT * FROM delta_scan(?)", [uri]).to_arrow_table()
    finally:
        con.close()


def read_polars(path, version: int | None = None) -> pa.Table:
    import polars as pl

    return pl.read_delta(str(path), version=version).to_arrow()


_spark = None

SPARK_CONF = {
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.memory": "1g",
    "spark.jars.ivy": str(IVY_DIR),
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    "spark.sql.shuffle.partitions": "1",
    "spark.default.parallelism": "1",
    "spark.databricks.delta.snapshotPartitions": "1",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}


def spark_session():
    """A module-wide local[1] SparkSession with Delta, started on first use."""
    global _spark
    if _spark is None:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        from delta import configure_spark_with_delta_pip
        from pyspark.sql import SparkSession

        builder = SparkSession.builder.master("local[1]").appName("ampdelta-interop")
        for key, value in SPARK_CONF.items():
            builder = builder.config(key, value)
        warehouse = tempfile.mkdtemp(prefix="ampdelta-spark-wh-")
        atexit.register(shutil.rmtree, warehouse, ignore_errors=True)
        builder = builder.config("spark.sql.warehouse.dir", warehouse)
        # The session resolves delta-spark through the Ivy cache in .deps/ivy2, which the
        # test workers share (make test runs two): one resolves at a time.
        IVY_DIR.mkdir(parents=True, exist_ok=True)
        with open(IVY_DIR / ".resolve.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            _spark = configure_spark_with_delta_pip(builder).getOrCreate()
        _spark.sparkContext.setLogLevel("ERROR")
    return _spark


def read_spark(path, version: int | None = None) -> pa.Table:
    reader = spark_session().read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return reader.load(os.path.abspath(path)).toArrow()


READERS = {
    "deltalake": read_deltalake,
    "duckdb": read_duckdb,
    "polars": read_polars,
    "spark": read_spark,
}
