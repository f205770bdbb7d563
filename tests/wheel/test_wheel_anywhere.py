"""The built wheel in fresh venvs of different interpreters, with and without pyarrow.

    python3.X -m venv V && V/bin/pip install -r tests/wheel/requirements-<matrix>.txt
    V/bin/pip install --no-deps dist/wheelhouse/ampdelta-<the wheel for 3.X>.whl
    AMPDELTA_CLI=path/to/ampdelta V/bin/python -m pytest -q -p no:cacheprovider tests/wheel

The wheel carries its own Arrow C++ (ampdelta.libs/) and exchanges data only through the
Arrow PyCapsule interface, so nothing here assumes pyarrow: each test reads results with
whichever consumers the venv has (pyarrow, Polars, arro3 — deltalake's own dependency) and
skips only the parts whose module is missing.

| test | what it checks |
|---|---|
| test_import_maps_only_the_wheels_arrow | `import ampdelta` imports no pyarrow, and every libarrow* mapped (/proc/self/maps) is the wheel's ampdelta.libs/ copy |
| test_pyarrow_beside_ampdelta | either import order: pyarrow's own libarrow is mapped beside the wheel's, a pyarrow table goes into ampdelta's Arrow and back equal, pyarrow.compute works, and pyarrow's default memory pool is the one it picks without ampdelta |
| test_query_result_read_by_installed_consumers | to_arrow() is a pyarrow.Table (pyarrow) or an ampdelta.ArrowTable read twice by Polars and arro3, its schema through __arrow_c_schema__; rows equal `ampdelta query --format csv` |
| test_to_reader_is_read_once | to_reader() is a pyarrow RecordBatchReader, or a one-shot ampdelta.ArrowStream whose second export raises; read_all() holds the rows |
| test_loader_modes | DeltaLakeLoader.load_table of Polars, pyarrow and __arrow_c_array__-only (arro3) data: append (default), append, overwrite, merge on block_num; after each, polars.read_delta gives exactly the expected rows and deltalake's history has the load's commit (WRITE or MERGE) at the version the LoadResult reports |
| test_loader_takes_query_results | a query's to_arrow()/to_reader() result loaded with load_table holds the CLI's rows |
| test_exit_cleanly_50_times | exit_script.py (imports pyarrow when installed, polars, deltalake, ampdelta; a Client.load, a to_arrow, a to_reader left unread, a load_table) exits 0, without a crash message, 50 times |
"""

from __future__ import annotations

import concurrent.futures
import csv
import importlib.util
import io
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import (  # tests/wheel/conftest.py
    BLOCKS_SQL, EXIT_SCRIPT, QUICKSTART_BLOCK_NUMBERS, cli_env, cli_path, describe,
    installed, python_env, run_python)

# ---------------------------------------------------------------------------------------
# 1. Imports and the Arrow libraries they map
# ---------------------------------------------------------------------------------------

# Prints, as JSON, what each import in argv[1:] (in that order) left mapped.
_MAPS_HELPER = r'''
import importlib, json, os, sys

def arrow_libs():
    libs = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(None, 5)
            if len(fields) == 6:
                path = fields[5].strip()
                if os.path.basename(path).startswith("libarrow"):
                    libs.add(path)
    return sorted(libs)

steps = []
for name in sys.argv[1:]:
    module = importlib.import_module(name)
    steps.append({"imported": name, "file": module.__file__, "libs": arrow_libs(),
                  "pyarrow_in_sys_modules": "pyarrow" in sys.modules})
'''


def _libs_dir() -> Path:
    """ampdelta.libs/ of the installed wheel (beside the ampdelta package), found without
    importing ampdelta in this process."""
    spec = importlib.util.find_spec("ampdelta")
    assert spec is not None and spec.origin, "ampdelta is not installed in this venv"
    package = Path(spec.origin).resolve().parent
    libs = package.parent / "ampdelta.libs"
    assert libs.is_dir(), (
        f"{libs} missing: the ampdelta imported from {package} is not an installed "
        "auditwheel-repaired wheel")
    return libs


def test_import_maps_only_the_wheels_arrow():
    code = _MAPS_HELPER + 'print(json.dumps(steps))\n'
    proc = run_python(code, "ampdelta")
    assert proc.returncode == 0, describe(proc)
    (step,) = json.loads(proc.stdout)
    assert not step["pyarrow_in_sys_modules"], "import ampdelta imported pyarrow"
    libs_dir = _libs_dir()
    assert Path(step["file"]).resolve().parent.parent == libs_dir.parent
    libs = [Path(p) for p in step["libs"]]
    assert any(p.name.startswith("libarrow-") for p in libs), \
        f"no vendored libarrow mapped after import ampdelta: {step['libs']}"
    foreign = [str(p) for p in libs if p.resolve().parent != libs_dir]
    assert not foreign, f"libarrow from outside {libs_dir} mapped by import ampdelta: {foreign}"


_PYARROW_BESIDE = _MAPS_HELPER + r'''
import ampdelta, pyarrow as pa, pyarrow.compute as pc

table = pa.table({"block_num": pa.array([24000000, 24000001, 24000002], pa.uint64()),
                  "hash": pa.array([b"\x01" * 32, b"\x02" * 32, None], pa.binary(32)),
                  "label": ["a", None, "c"]})
held = ampdelta.ArrowStream(table.__arrow_c_stream__()).read_all()  # into ampdelta's Arrow
back = pa.table(held)                                   # and out, through new C streams
again = pa.RecordBatchReader.from_stream(held).read_all()
steps.append({
    "libs": arrow_libs(),
    "held": [held.num_rows, held.column_names],
    "equal": [back.equals(table), again.equals(table), back.schema.equals(table.schema)],
    "sum": pc.sum(back["block_num"]).as_py(),
    "backend": pa.default_memory_pool().backend_name,
    "pyarrow_version": pa.__version__,
})
print(json.dumps(steps))
'''


@pytest.mark.parametrize("order", [("ampdelta", "pyarrow"), ("pyarrow", "ampdelta")],
                         ids=["ampdelta-first", "pyarrow-first"])
def test_pyarrow_beside_ampdelta(order):
    if not installed("pyarrow"):
        pytest.skip("pyarrow is not installed in this venv")
    baseline = run_python("import pyarrow as pa; print(pa.default_memory_pool().backend_name)")
    assert baseline.returncode == 0, describe(baseline)
    proc = run_python(_PYARROW_BESIDE, *order)
    assert proc.returncode == 0, describe(proc)
    first, second, used = json.loads(proc.stdout)
    steps = {first["imported"]: first, second["imported"]: second}
    libs_dir = _libs_dir()
    pyarrow_dir = Path(steps["pyarrow"]["file"]).resolve().parent

    def where(paths):
        out = {"ampdelta": [], "pyarrow": [], "other": []}
        for path in map(Path, paths):
            parent = path.resolve().parent
            out["ampdelta" if parent == libs_dir else
                "pyarrow" if parent == pyarrow_dir else "other"].append(path.name)
        return out

    # After the first import, only that package's Arrow is mapped.
    after_first = where(first["libs"])
    other_kind = "pyarrow" if order[0] == "ampdelta" else "ampdelta"
    assert after_first[order[0]] and not after_first[other_kind] and not after_first["other"], \
        after_first
    # With both imported (and used), each has its own libarrow mapped.
    for step in (second, used):
        mapped = where(step["libs"])
        assert not mapped["other"], mapped
        assert any(n.startswith("libarrow-") for n in mapped["ampdelta"]), mapped
        assert any(n.startswith("libarrow.so") for n in mapped["pyarrow"]), mapped
    assert used["held"] == [3, ["block_num", "hash", "label"]]
    assert used["equal"] == [True, True, True]
    assert used["sum"] == 3 * 24000000 + 3
    assert used["backend"] == baseline.stdout.strip(), (
        f"pyarrow {used['pyarrow_version']}'s default memory pool is {used['backend']!r} "
        f"beside ampdelta, {baseline.stdout.strip()!r} without it")


# ---------------------------------------------------------------------------------------
# 2. Query results read by whichever consumers are installed
# ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cli_rows(dev_url):
    """The blocks as `ampdelta query --format csv` prints them: (block_num, hash bytes)."""
    proc = subprocess.run([str(cli_path()), "query", "--server", dev_url, "--format", "csv",
                           "--sql", BLOCKS_SQL], capture_output=True, text=True,
                          env=cli_env(), timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, describe(proc)
    header, *rows = csv.reader(io.StringIO(proc.stdout, newline=""))
    assert header == ["block_num", "hash"]
    out = sorted((int(number), bytes.fromhex(text.removeprefix("0x"))) for number, text in rows)
    assert [number for number, _ in out] == QUICKSTART_BLOCK_NUMBERS
    assert all(len(digest) == 32 for _, digest in out)
    return out


def polars_rows(frame) -> list:
    return sorted(zip(frame["block_num"].to_list(), frame["hash"].to_list()))


def read_with_polars(data):
    """`polars.DataFrame(data)` and `polars.from_arrow(data)` (Polars 2 gives a struct
    Series for a bare C stream: unnested), both as rows."""
    import polars as pl
    frame = pl.DataFrame(data)
    assert frame.columns == ["block_num", "hash"]
    converted = pl.from_arrow(data)
    if isinstance(converted, pl.Series):
        converted = converted.struct.unnest()
    return polars_rows(frame), polars_rows(converted)


def test_query_result_read_by_installed_consumers(dev_url, cli_rows):
    import ampdelta
    result = ampdelta.Client(dev_url).sql(BLOCKS_SQL).to_arrow()
    readers = []
    if installed("pyarrow"):
        import pyarrow as pa
        assert isinstance(result, pa.Table), type(result)
        assert result.schema.field("block_num").type == pa.uint64()
        assert result.schema.field("hash").type == pa.binary(32)
        assert sorted(zip(result["block_num"].to_pylist(),
                          result["hash"].to_pylist())) == cli_rows
        readers.append("pyarrow")
        rounds = 1
    else:
        assert isinstance(result, ampdelta.ArrowTable), type(result)
        assert (result.num_rows, len(result)) == (100, 100)
        assert result.column_names == ["block_num", "hash"]
        assert "100 rows" in repr(result)
        rounds = 2  # exported anew for each consumer: read it twice
    for _ in range(rounds):
        if installed("polars"):
            by_frame, by_from_arrow = read_with_polars(result)
            assert by_frame == cli_rows
            assert by_from_arrow == cli_rows
            readers.append("polars")
        if installed("arro3.core"):
            import arro3.core as ac
            # __arrow_c_schema__: ArrowTable's own; a pyarrow.Table's is its schema's.
            schema = ac.Schema.from_arrow(
                result if isinstance(result, ampdelta.ArrowTable) else result.schema)
            assert schema.names == ["block_num", "hash"]
            assert schema.field(0).type == ac.DataType.uint64()
            assert schema.field(1).type == ac.DataType.binary(32)
            table = ac.Table.from_arrow(result)
            assert sorted(zip(table.column("block_num").to_pylist(),
                              table.column("hash").to_pylist())) == cli_rows
            readers.append("arro3")
    assert readers, "no Arrow consumer (pyarrow, polars, arro3) is installed in this venv"


def test_to_reader_is_read_once(dev_url, cli_rows):
    import ampdelta
    client = ampdelta.Client(dev_url)
    reader = client.sql(BLOCKS_SQL).to_reader()
    if installed("pyarrow"):
        import pyarrow as pa
        assert isinstance(reader, pa.RecordBatchReader), type(reader)
        table = reader.read_all()
        assert sorted(zip(table["block_num"].to_pylist(), table["hash"].to_pylist())) == cli_rows
        return
    assert isinstance(reader, ampdelta.ArrowStream), type(reader)
    if installed("polars"):
        import polars as pl
        assert polars_rows(pl.DataFrame(reader)) == cli_rows
        with pytest.raises(ampdelta.InvalidInputError, match="already read"):
            pl.DataFrame(reader)
    held = client.sql(BLOCKS_SQL).to_reader().read_all()
    assert isinstance(held, ampdelta.ArrowTable)
    assert held.num_rows == 100 and held.column_names == ["block_num", "hash"]
    if installed("polars"):
        import polars as pl
        assert polars_rows(pl.DataFrame(held)) == cli_rows


# ---------------------------------------------------------------------------------------
# 3. DeltaLakeLoader with each producer, read back independently
# ---------------------------------------------------------------------------------------

class ArrayOnly:
    """A producer that speaks only `__arrow_c_array__` (one record batch)."""

    def __init__(self, batch):
        self._batch = batch

    def __arrow_c_array__(self, requested_schema=None):
        return self._batch.__arrow_c_array__(requested_schema)


def producer(kind: str, rows: list):
    """rows [(block_num, label)] as the `kind` producer's Arrow data."""
    columns = {"block_num": [b for b, _ in rows], "label": [s for _, s in rows]}
    if kind == "polars":
        pl = pytest.importorskip("polars")
        return pl.DataFrame(columns, schema={"block_num": pl.Int64, "label": pl.Utf8})
    if kind == "pyarrow":
        pa = pytest.importorskip("pyarrow")
        return pa.table({"block_num": pa.array(columns["block_num"], pa.int64()),
                         "label": pa.array(columns["label"], pa.string())})
    if kind == "arro3-batch":
        pl = pytest.importorskip("polars")
        ac = pytest.importorskip("arro3.core")
        frame = pl.DataFrame(columns, schema={"block_num": pl.Int64, "label": pl.Utf8})
        batch = ac.Table.from_arrow(frame).combine_chunks().to_batches()[0]
        assert not hasattr(batch, "__arrow_c_stream__")
        return ArrayOnly(batch)
    raise AssertionError(kind)


def delta_rows(path: Path, columns=("block_num", "label")) -> list:
    """The table's rows, read by polars.read_delta (deltalake underneath, no ampdelta)."""
    import polars as pl
    frame = pl.read_delta(str(path))
    assert frame.columns == list(columns), frame.columns
    return sorted(zip(*(frame[c].to_list() for c in columns)))


def delta_operations(path: Path) -> dict:
    """{version: operation} of the table's commits, read by deltalake."""
    import deltalake
    return {entry["version"]: entry["operation"]
            for entry in deltalake.DeltaTable(str(path)).history()}


@pytest.mark.parametrize("kind", ["polars", "pyarrow", "arro3-batch"])
def test_loader_modes(tmp_path, kind):
    pytest.importorskip("polars")  # the reader (polars.read_delta, with deltalake)
    pytest.importorskip("deltalake")
    from ampdelta.loaders import DeltaLakeLoader, LoadMode
    path = tmp_path / "t"
    steps = [  # (rows, mode, keywords, the table's rows after)
        ([(1, "a"), (2, "b"), (3, "c")], None, {}, [(1, "a"), (2, "b"), (3, "c")]),
        ([(4, "d")], LoadMode.APPEND, {}, [(1, "a"), (2, "b"), (3, "c"), (4, "d")]),
        ([(10, "x"), (11, "y")], LoadMode.OVERWRITE, {}, [(10, "x"), (11, "y")]),
        ([(11, "Y"), (12, "z")], "merge", {"merge_keys": ["block_num"]},
         [(10, "x"), (11, "Y"), (12, "z")]),
    ]
    # The operation of each load's commit, as Delta's history spells it; the loader's
    # default optimize_after_write may add an OPTIMIZE commit after one.
    operations = ["WRITE", "WRITE", "WRITE", "MERGE"]
    versions = []
    with DeltaLakeLoader({"table_path": str(path)}) as loader:
        for (rows, mode, keywords, after), operation in zip(steps, operations):
            data = producer(kind, rows)
            if mode is None:
                result = loader.load_table(data, "t", **keywords)  # the default: append
            else:
                result = loader.load_table(data, "t", mode=mode, **keywords)
            assert result.success and result.rows_loaded == len(rows), result.error
            assert delta_rows(path) == after, (mode, rows)
            version = result.metadata["table_version"]
            assert not versions or version > versions[-1], (versions, version)
            versions.append(version)
            assert delta_operations(path)[version] == operation, delta_operations(path)
        assert (result.metadata["rows_updated"], result.metadata["rows_inserted"]) == (1, 1)


@pytest.mark.parametrize("method", ["to_arrow", "to_reader"])
def test_loader_takes_query_results(dev_url, cli_rows, tmp_path, method):
    pytest.importorskip("polars")
    import ampdelta
    from ampdelta.loaders import DeltaLakeLoader
    data = getattr(ampdelta.Client(dev_url).sql(BLOCKS_SQL), method)()
    path = tmp_path / "blocks"
    with DeltaLakeLoader({"table_path": str(path)}) as loader:
        result = loader.load_table(data, "blocks")
    assert result.success and result.rows_loaded == 100, result.error
    assert delta_rows(path, ("block_num", "hash")) == cli_rows


# ---------------------------------------------------------------------------------------
# 4. Interpreter exit, many times over
# ---------------------------------------------------------------------------------------

EXIT_RUNS = 50
EXIT_PARALLEL = 2
CRASH_TEXTS = ("Segmentation fault", "Fatal Python error", "terminate called",
               "AddressSanitizer", "Aborted")


@pytest.mark.timeout(300)
def test_exit_cleanly_50_times(dev_url, tmp_path):
    pytest.importorskip("polars")
    pytest.importorskip("deltalake")

    def run(index: int) -> subprocess.CompletedProcess:
        workdir = tmp_path / f"run{index}"
        workdir.mkdir()
        env = python_env()
        env["FLIGHT_SQL_CONNECTIONS"] = str(workdir / "connections.json")
        return subprocess.run([sys.executable, str(EXIT_SCRIPT), dev_url, str(workdir)],
                              capture_output=True, text=True, timeout=120, env=env,
                              stdin=subprocess.DEVNULL, cwd=str(workdir))

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(EXIT_PARALLEL) as pool:
        procs = list(pool.map(run, range(EXIT_RUNS)))
    elapsed = time.monotonic() - started
    bad = [(i, p) for i, p in enumerate(procs)
           if p.returncode != 0 or "exit_script: done" not in p.stdout
           or any(text in p.stderr for text in CRASH_TEXTS)]
    assert not bad, (f"{len(bad)} of {EXIT_RUNS} runs did not exit cleanly; the first:\n"
                     + describe(bad[0][1]))
    print(f"{EXIT_RUNS} exits in {elapsed:.1f}s")


_RAY_SCRIPT = r'''
import sys
import ray
import ampdelta

url, path = sys.argv[1:3]
ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)


@ray.remote
def load(table, path):
    # In a Ray worker process: ampdelta's loader on a table from Ray's object store.
    from ampdelta.loaders import DeltaLakeLoader
    with DeltaLakeLoader({"table_path": path}) as loader:
        result = loader.load_table(table, "blocks")
    return result.success, result.rows_loaded, result.error


table = ampdelta.Client(url).sql(
    'SELECT block_num, hash FROM "acme/eth_mainnet".blocks').to_arrow()
success, rows, error = ray.get(load.remote(ray.put(table), path))
assert success and rows == 100, error
ray.shutdown()
print("ok")
'''


@pytest.mark.timeout(300)
def test_ray_beside_ampdelta(dev_url, tmp_path):
    """Ray beside ampdelta: a result goes through Ray's object store into a Ray task that
    loads it with ampdelta, and the driver exits cleanly."""
    pytest.importorskip("ray")
    proc = run_python(_RAY_SCRIPT, dev_url, str(tmp_path / "t"), timeout=240)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), describe(proc)
    import polars as pl
    assert pl.read_delta(str(tmp_path / "t")).height == 100


def test_get_sql_iterates_batches_with_or_without_pyarrow(dev_url):
    """The SDK's default get_sql (read_all=False): an iterator of batches, pyarrow
    RecordBatches or, without pyarrow, ArrowTables any consumer reads."""
    import ampdelta
    pl = pytest.importorskip("polars")
    batches = list(ampdelta.Client(dev_url).get_sql(BLOCKS_SQL))
    assert batches
    if installed("pyarrow"):
        import pyarrow as pa
        assert all(isinstance(b, pa.RecordBatch) for b in batches)
        frames = [pl.from_arrow(b) for b in batches]
    else:
        assert all(isinstance(b, ampdelta.ArrowTable) for b in batches)
        frames = [pl.DataFrame(b) for b in batches]
    numbers = sorted(n for frame in frames for n in frame["block_num"].to_list())
    assert numbers == QUICKSTART_BLOCK_NUMBERS
