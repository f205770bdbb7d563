"""The bad-input catalogue (tests/bad_inputs/*.toml), one test per case.

Each case puts a table in place (built once per module and copied), applies its setup,
runs one `ampdelta` command and checks the outcome the case states: the exit code (the
error class), one `ampdelta: error:` line naming what is wrong, and the table either
byte-for-byte unchanged or written as stated (read back by deltalake and DuckDB in a
subprocess). tests/bad_inputs/README.md describes the format; `pending` cases are strict
xfails: they start failing once the defect they wait for is fixed.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest

import bad_input_data
from conftest import (FIXTURES_DIR, REPO_ROOT, cli_env, cli_path, refusing_port,
                      run_dev_server)
from scripted_flight import RawServer, ScriptedFlightServer, StallProxy

CATALOGUE_DIR = REPO_ROOT / "tests" / "bad_inputs"
INPUTS_FILE = CATALOGUE_DIR / "inputs.toml"
NOBODY = 65534

SQL = {
    "BLOCKS": 'SELECT block_num, timestamp, hash, gas_used FROM "acme/eth_mainnet".blocks',
    "TXS": 'SELECT block_num, tx_index, gas_used FROM "acme/eth_mainnet".transactions',
    "LOGS": 'SELECT block_num, log_index, address FROM "acme/eth_mainnet".logs',
    # A condition nested 5,000 levels deep (the predicate parser stops at 100).
    "DEEP_NOT": "NOT " * 5000,
}

CASE_KEYS = {
    "id", "description", "given", "table_path", "setup", "run", "exit", "message",
    "table", "read", "pending", "stdout", "stderr", "excludes", "checks", "env", "cwd",
    "timeout", "server", "as_user", "fs", "limits", "stdin",
}
OUTCOMES = {"unchanged", "written"}
GIVEN = {"none", "file", "empty_dir", "foreign_dir", "blocks", "blocks_v2", "ab",
         "partitioned", "checkpointed", "streamed", "demo_table", "scripted"}


# ---------------------------------------------------------------------------------------
# The catalogue
# ---------------------------------------------------------------------------------------

def load_catalogue() -> list[dict]:
    cases, seen = [], {}
    for path in sorted(CATALOGUE_DIR.glob("*.toml")):
        if path == INPUTS_FILE:
            continue
        with path.open("rb") as handle:
            doc = tomllib.load(handle)
        unknown_top = set(doc) - {"case"}
        if unknown_top:
            raise ValueError(f"{path.name}: unknown top-level keys {sorted(unknown_top)}")
        for case in doc.get("case", []):
            case = dict(case)
            case["area"] = path.stem
            where = f"{path.name}: case {case.get('id')!r}"
            unknown = set(case) - CASE_KEYS - {"area"}
            if unknown:
                raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
            for key in ("id", "description", "run", "exit"):
                if key not in case:
                    raise ValueError(f"{where}: missing {key!r}")
            if case["id"] in seen:
                raise ValueError(f"{where}: duplicate id (also in {seen[case['id']]})")
            seen[case["id"]] = path.name
            case.setdefault("table", "unchanged")
            if case["table"] not in OUTCOMES:
                raise ValueError(f"{where}: table must be one of {sorted(OUTCOMES)}")
            if case["table"] == "written" and "read" not in case:
                raise ValueError(f"{where}: a written table needs `read`")
            if case["exit"] != 0 and not case.get("message"):
                raise ValueError(f"{where}: a failing case must name what is wrong (message)")
            given = case.setdefault("given", "none")
            if given not in GIVEN and not given.startswith("fixture:"):
                raise ValueError(f"{where}: unknown given {given!r}")
            cases.append(case)
    return cases


CASES = load_catalogue()


def _load_inputs() -> dict:
    with INPUTS_FILE.open("rb") as handle:
        return tomllib.load(handle)


INPUTS = _load_inputs()


def test_catalogue_size_and_ids():
    """The catalogue is large and every id names its area."""
    assert len(CASES) >= 150, len(CASES)
    for case in CASES:
        assert re.fullmatch(r"[a-z0-9][a-z0-9-]*", case["id"]), case["id"]
    for case in CASES:
        for name in re.findall(r"\{input:([^}]+)\}", json.dumps(case)):
            assert name in INPUTS, f"{case['id']}: unknown input {name!r}"


# ---------------------------------------------------------------------------------------
# Tables, inputs and servers shared by the module
# ---------------------------------------------------------------------------------------

def run_cli(args: list, *, cwd=None, timeout: float = 120, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([str(cli_path()), *map(str, args)], capture_output=True,
                          env=env or cli_env(), timeout=timeout, stdin=subprocess.DEVNULL,
                          cwd=cwd)


def must(done: subprocess.CompletedProcess, what: str) -> subprocess.CompletedProcess:
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {done.returncode}):\n"
                           f"{done.stdout.decode(errors='replace')}\n"
                           f"{done.stderr.decode(errors='replace')}")
    return done


class World:
    """Lazily built, module-wide: dev servers, fixture tables, input files."""

    NO_OPTIMIZE = '{"optimize_after_write": false}'

    def __init__(self, request, base: Path):
        self.request = request
        self.base = base
        self.tables = base / "tables"
        self.inputs = base / "inputs"
        self.tables.mkdir()
        self.inputs.mkdir()
        self.reader = ReaderWorker()

    @property
    def server(self) -> str:
        return self.request.getfixturevalue("quickstart_url")

    @property
    def stream_server(self) -> str:
        return self.request.getfixturevalue("streaming_server").url

    def input(self, name: str) -> Path:
        spec = INPUTS[name]
        path = self.inputs / (name + (".parquet" if spec.get("format") == "parquet" else ".arrow"))
        if not path.exists():
            bad_input_data.write_input(spec, path)
        return path

    def table(self, name: str) -> Path:
        path = self.tables / name
        if path.exists():
            return path
        build = getattr(self, f"_build_{name}")
        build(path)
        return path

    def _load(self, path, sql=SQL["BLOCKS"], *extra):
        must(run_cli(["load", "--server", self.server, "--table", path, "--sql", sql,
                      "--config", self.NO_OPTIMIZE, *extra]), f"building {path.name}")

    def _build_blocks(self, path):
        self._load(path)

    def _build_blocks_v2(self, path):
        self._load(path)
        self._load(path, SQL["BLOCKS"] + " WHERE block_num < 24000010")
        self._load(path, SQL["BLOCKS"] + " WHERE block_num >= 24000090")

    def _build_ab(self, path):
        must(run_cli(["table", "write", path, "--input", self.input("ab")]), "building ab")

    def _build_scripted(self, path):
        # The shape of the scripted servers' data (block_num, gas_used), 6 rows.
        must(run_cli(["table", "write", path, "--input", self.input("scripted_blocks")]),
             "building scripted")

    def _build_partitioned(self, path):
        must(run_cli(["table", "write", path, "--input", self.input("parts"),
                      "--partition-by", "network"]), "building partitioned")

    def _build_checkpointed(self, path):
        for _ in range(3):
            must(run_cli(["table", "write", path, "--input", self.input("ab")]), "checkpointed")
        must(run_cli(["table", "checkpoint", path]), "checkpoint")
        must(run_cli(["table", "write", path, "--input", self.input("ab")]), "checkpointed")

    def _build_streamed(self, path):
        must(run_cli(["load", "--stream", "--server", self.stream_server, "--table", path,
                      "--sql", SQL["BLOCKS"], "--until-block", "24000059",
                      "--config", self.NO_OPTIMIZE]), "building streamed")

    def _build_demo_table(self, path):
        # What `ampdelta demo` leaves in ./data/blocks, built by the demo itself.
        work = self.base / "demo-work"
        work.mkdir()
        must(run_cli(["demo"], cwd=work), "ampdelta demo")
        shutil.move(str(work / "data" / "blocks"), str(path))


@pytest.fixture(scope="module")
def world(request):
    base = Path(tempfile.mkdtemp(prefix="ampdelta-bad-inputs-"))
    base.chmod(0o755)  # cases that run as nobody must reach their table
    world = World(request, base)
    try:
        yield world
    finally:
        world.reader.close()
        shutil.rmtree(base, ignore_errors=True)


# ---------------------------------------------------------------------------------------
# One case
# ---------------------------------------------------------------------------------------

def tree_digest(root: Path) -> dict[str, str]:
    """Relative path -> sha256 (or symlink target) of every file under root, _delta_log
    included, and "folder" for every folder (root included): a refused write leaves no
    stray folder either, not even the path of a table it did not create."""
    out = {}
    if root.is_symlink() or root.is_file():
        return {".": _entry_digest(root)}
    if not root.exists():
        return out
    out["."] = "folder"
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(filenames + [d for d in dirnames if (Path(dirpath) / d).is_symlink()]):
            path = Path(dirpath) / name
            out[str(path.relative_to(root))] = _entry_digest(path)
        for name in dirnames:
            if not (Path(dirpath) / name).is_symlink():
                out[str((Path(dirpath) / name).relative_to(root))] = "folder"
    return out


def _entry_digest(path: Path) -> str:
    if path.is_symlink():
        return "symlink:" + os.readlink(path)
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as error:
        return f"unreadable:{error.errno}"


def describe_diff(before: dict, after: dict) -> str:
    lines = []
    for key in sorted(set(before) | set(after)):
        if before.get(key) != after.get(key):
            state = ("added" if key not in before else "removed" if key not in after
                     else "changed")
            lines.append(f"  {state}: {key}")
    return "\n".join(lines[:40])


class Context:
    def __init__(self, world: World, case: dict, tmp: Path, held: contextlib.ExitStack):
        self.world = world
        self.held = held  # what the case holds until it ends (the closed port)
        self.case = case
        self.tmp = tmp
        self.table = tmp / case.get("table_path", "table")
        self.scripted_url = None
        self.closed_port = None

    def expand(self, text: str) -> str:
        def replace(match):
            key = match.group(1)
            if key in SQL:
                return SQL[key]
            if key == "server":
                return self.world.server
            if key == "stream_server":
                return self.world.stream_server
            if key == "scripted":
                assert self.scripted_url, "{scripted} needs a `server` in the case"
                return self.scripted_url
            if key == "table":
                return str(self.table)
            if key == "tmp":
                return str(self.tmp)
            if key == "fixtures":
                return str(FIXTURES_DIR)
            if key == "closed_port":
                if self.closed_port is None:
                    self.closed_port = self.held.enter_context(refusing_port())
                return str(self.closed_port)
            if key.startswith("input:"):
                return str(self.world.input(key[6:]))
            if key.startswith("built:"):
                return str(self.world.table(key[6:]))
            if key.startswith("hex:"):
                return "\0HEX" + key[4:] + "\0"
            if key.startswith("repeat:"):
                count, _, piece = key[7:].partition(":")
                return piece * int(count)
            raise KeyError(f"unknown placeholder {{{key}}}")
        return re.sub(r"\{([A-Za-z_][^{}]*)\}", replace, text)

    def arg_bytes(self, text: str) -> bytes:
        expanded = self.expand(text)
        parts = expanded.split("\0")
        out = b""
        for i, part in enumerate(parts):
            if i % 2 == 1 and part.startswith("HEX"):
                out += bytes.fromhex(part[3:])
            else:
                out += part.encode()
        return out

    def path(self, rel: str) -> Path:
        expanded = self.expand(rel)
        return Path(expanded) if os.path.isabs(expanded) else self.table / expanded


def place_table(ctx: Context) -> None:
    given = ctx.case["given"]
    target = ctx.table
    target.parent.mkdir(parents=True, exist_ok=True)
    if given == "none":
        return
    if given == "file":
        target.write_text("not a table\n")
    elif given == "empty_dir":
        target.mkdir()
    elif given == "foreign_dir":
        target.mkdir()
        (target / "notes.txt").write_text("my own files, not a Delta table\n")
        (target / "sub").mkdir()
        (target / "sub" / "data.csv").write_text("a,b\n1,2\n")
    elif given.startswith("fixture:"):
        source = FIXTURES_DIR / given[len("fixture:"):]
        if not source.is_dir():
            pytest.fail(f"fixture missing: {source}", pytrace=False)
        shutil.copytree(source, target, symlinks=True)
    else:
        shutil.copytree(ctx.world.table(given), target, symlinks=True)


def apply_steps(ctx: Context, steps: list[dict]) -> None:
    for step in steps:
        verb = next(iter(step))
        if verb == "write":
            path = ctx.path(step["write"])
            path.parent.mkdir(parents=True, exist_ok=True)
            if "hex" in step:
                path.write_bytes(bytes.fromhex(step["hex"]))
            else:
                path.write_bytes(ctx.expand(step.get("text", "")).encode())
        elif verb == "write_glob":
            matches = sorted(ctx.table.glob(step["write_glob"]))
            if not matches:
                raise AssertionError(f"setup: nothing matches {step['write_glob']!r}")
            for path in matches:
                path.write_bytes(ctx.expand(step.get("text", "")).encode())
        elif verb == "append":
            with ctx.path(step["append"]).open("ab") as handle:
                handle.write(ctx.expand(step["text"]).encode())
        elif verb == "truncate":
            path = ctx.path(step["truncate"])
            data = path.read_bytes()
            path.write_bytes(data[:step["keep"]] if step["keep"] >= 0 else data[:step["keep"]])
        elif verb == "replace":
            path = ctx.path(step["replace"])
            data = path.read_text()
            old = ctx.expand(step["old"])
            if old not in data:
                raise AssertionError(f"setup: {old!r} not in {path}")
            path.write_text(data.replace(old, ctx.expand(step["new"]), step.get("count", -1)))
        elif verb == "delete":
            path = ctx.path(step["delete"])
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        elif verb == "mkdir":
            ctx.path(step["mkdir"]).mkdir(parents=True, exist_ok=True)
        elif verb == "copy":
            source, target = ctx.path(step["copy"]), ctx.path(step["to"])
            if source.is_dir():
                shutil.copytree(source, target, symlinks=True)
            else:
                shutil.copy2(source, target)
        elif verb == "symlink":
            ctx.path(step["symlink"]).symlink_to(ctx.expand(step["to"]))
        elif verb == "chmod":
            mode = int(step["mode"], 8)
            path = ctx.path(step["chmod"])
            if step.get("recursive"):
                for dirpath, dirnames, filenames in os.walk(path):
                    for name in filenames:
                        os.chmod(Path(dirpath) / name, mode & 0o666)
                    os.chmod(dirpath, mode)
            else:
                os.chmod(path, mode)
        elif verb == "chown_nobody":
            path = ctx.path(step["chown_nobody"])
            for dirpath, dirnames, filenames in os.walk(path):
                os.chown(dirpath, NOBODY, NOBODY)
                for name in filenames:
                    os.chown(Path(dirpath) / name, NOBODY, NOBODY)
        elif verb == "run":
            args = [ctx.arg_bytes(a) for a in step["run"]]
            done = subprocess.run([bytes(str(cli_path()), "utf-8"), *args], capture_output=True,
                                  env=cli_env(), timeout=120, stdin=subprocess.DEVNULL,
                                  cwd=ctx.tmp)
            if done.returncode != step.get("exit", 0):
                raise AssertionError(f"setup step {step} exited {done.returncode}:\n"
                                     f"{done.stdout.decode(errors='replace')}\n"
                                     f"{done.stderr.decode(errors='replace')}")
        else:
            raise ValueError(f"unknown setup step {verb!r}")


@contextlib.contextmanager
def case_server(ctx: Context, on_pause):
    spec = ctx.case.get("server")
    if spec is None:
        yield None
        return
    kind = spec.get("kind", "scripted")
    if kind == "scripted":
        table = bad_input_data.build_table(INPUTS[spec["data"]])
        with ScriptedFlightServer(table, spec, on_pause=on_pause) as server:
            ctx.scripted_url = server.url
            yield server
    elif kind in ("stall_proxy", "cut_proxy"):
        upstream = int(ctx.world.server.rsplit(":", 1)[1])
        with StallProxy(upstream, int(spec["after_bytes"]), cut=kind == "cut_proxy") as proxy:
            ctx.scripted_url = proxy.url
            yield proxy
    elif kind == "raw":
        with RawServer(spec["behaviour"]) as raw:
            ctx.scripted_url = raw.url
            yield raw
    else:
        raise ValueError(f"unknown server kind {kind!r}")


def command_line(ctx: Context) -> tuple[list[bytes], dict, Path | None]:
    """The argv to run, wrapped for as_user/fs, extra environment, and where the table is
    read back from when the run happens on a file system that does not outlive it."""
    fs = ctx.case.get("fs") or {}
    outer_table = ctx.table
    readback = None
    extra_env = {}
    if fs.get("mode") == "full":
        # The table is copied onto a tmpfs that is then filled up; afterwards it is copied
        # back out (the tmpfs vanishes with the mount namespace).
        mount = ctx.tmp / "fullfs"
        mount.mkdir()
        readback = ctx.tmp / "after-fullfs"
        ctx.table = mount / outer_table.name
    args = [bytes(str(cli_path()), "utf-8")] + [ctx.arg_bytes(a) for a in ctx.case["run"]]
    if ctx.case.get("as_user") == "nobody":
        args = [b"setpriv", f"--reuid={NOBODY}".encode(), f"--regid={NOBODY}".encode(),
                b"--clear-groups", b"--"] + args
    mode = fs.get("mode")
    if mode == "readonly":
        target = str(ctx.path(fs.get("path", str(ctx.table))))
        script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'
        args = [b"unshare", b"-m", b"sh", b"-c", script.encode(), b"sh", target.encode()] + args
    elif mode == "full":
        script = (
            'set -e; mount -t tmpfs -o size="$1" tmpfs "$2"; '
            'if [ -e "$3" ]; then cp -a "$3" "$4"; fi; '
            'dd if=/dev/zero of="$2/filler" bs=1k >/dev/null 2>&1 || true; '
            'set +e; shift 5; "$@"; rc=$?; '
            'if [ -e "$RB_FROM" ]; then cp -a "$RB_FROM" "$RB_TO"; fi; exit $rc')
        args = [b"unshare", b"-m", b"sh", b"-c", script.encode(), b"sh",
                fs.get("size", "1m").encode(), str(ctx.table.parent).encode(),
                str(outer_table).encode(), str(ctx.table).encode(), b"-"] + args
        extra_env = {"RB_FROM": str(ctx.table), "RB_TO": str(readback)}
        ctx.table = outer_table
    elif mode is not None:
        raise ValueError(f"unknown fs mode {mode!r}")
    return args, extra_env, readback


READER_SCRIPT = r"""
import datetime, decimal, json, os, sys
sys.path.insert(0, sys.argv[1])
import readers

def plain(v):
    if isinstance(v, (bytes, bytearray)): return "0x" + bytes(v).hex()
    if isinstance(v, (decimal.Decimal, datetime.datetime, datetime.date)): return str(v)
    if isinstance(v, float) and v != v: return "NaN"
    if isinstance(v, list): return [plain(x) for x in v]
    if isinstance(v, dict): return {k: plain(x) for k, x in v.items()}
    return v

def read(path, columns):
    out = {}
    for name in ("deltalake", "duckdb"):
        try:
            table = readers.READERS[name](path)
            got = {"rows": table.num_rows, "columns": table.column_names, "values": {}}
            for column in columns:
                values = [plain(v) for v in table.column(column).to_pylist()]
                got["values"][column] = sorted(values, key=lambda v: (v is None, json.dumps(v)))
            out[name] = got
        except Exception as error:
            out[name] = {"error": f"{type(error).__name__}: {error}"}
    return out

# Answers go to the original stdout; anything a library prints goes to stderr instead.
answers = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
for line in sys.stdin:
    request = json.loads(line)
    answers.write(json.dumps(read(request["path"], request["columns"])) + "\n")
    answers.flush()
os._exit(0)
"""


class ReaderWorker:
    """deltalake and DuckDB in one long-lived subprocess, one JSON line per read. A child
    process, because deltalake 1.6.6 may abort the interpreter at exit (after
    to_pyarrow_table()); the child never reaches that teardown: it leaves by os._exit."""

    TIMEOUT_S = 120

    def __init__(self):
        self.proc = None
        self.stderr = None

    def read(self, table: Path, columns: list[str]) -> dict:
        if self.proc is None:
            self.stderr = tempfile.TemporaryFile()
            self.proc = subprocess.Popen(
                [sys.executable, "-c", READER_SCRIPT, str(Path(__file__).parent)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        self.proc.stdin.write(json.dumps({"path": str(table), "columns": columns}) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], self.TIMEOUT_S)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            # This read fails; the next case starts a fresh reader (nothing is retried).
            self.proc.kill()
            code = self.proc.wait()
            self.stderr.seek(0)
            errors = self.stderr.read().decode(errors="replace")[-4000:]
            self.proc = None
            raise AssertionError(f"reader subprocess gave no answer (exit {code}):\n{errors}")
        return json.loads(line)

    def close(self):
        if self.proc is not None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None


def read_with_ampdelta(table: Path) -> dict:
    done = run_cli(["table", "scan", table, "--format", "count"])
    text = done.stdout.decode(errors="replace")
    match = re.search(r"rows=(\d+)", text)
    if done.returncode != 0 or not match:
        return {"error": f"exit {done.returncode}: {done.stderr.decode(errors='replace')}"}
    return {"rows": int(match.group(1))}


def check_read(world: World, table: Path, expect: dict) -> None:
    readers = expect.get("readers", ["deltalake", "duckdb"])
    columns = sorted(expect.get("values", {}))
    got = world.reader.read(table, columns) if set(readers) - {"ampdelta"} else {}
    got = {name: result for name, result in got.items() if name in readers}
    if "ampdelta" in readers:
        got["ampdelta"] = read_with_ampdelta(table)
    for reader, result in got.items():
        assert "error" not in result, f"{reader} cannot read the table: {result['error']}"
        if "rows" in expect:
            assert result["rows"] == expect["rows"], f"{reader}: rows {result['rows']}"
        if "columns" in expect and "columns" in result:
            assert result["columns"] == expect["columns"], f"{reader}: columns"
        for column, values in expect.get("values", {}).items():
            if "values" not in result:
                continue
            values = [None if v == "@null" else v for v in values]  # TOML has no null
            want = sorted(values, key=lambda v: (v is None, json.dumps(v)))
            assert result["values"][column] == want, f"{reader}: values of {column}"


def check_csv(stdout: str, case: dict) -> None:
    """stdout must be RFC 4180 CSV: a header row, then one record per row, all with the
    same number of fields; one line ending used throughout; no summary line."""
    assert stdout, "no CSV on stdout"
    crlf = stdout.count("\r\n")
    lf = stdout.count("\n")
    body_newlines = sum(1 for _ in re.finditer(r'"[^"]*"', stdout))  # quoted fields may hold \n
    assert crlf == 0 or crlf == lf or body_newlines, "mixed CRLF and LF line endings"
    rows = list(csv.reader(io.StringIO(stdout, newline=""), strict=True))
    assert rows, "no CSV records"
    width = len(rows[0])
    for i, row in enumerate(rows):
        assert len(row) == width, f"record {i} has {len(row)} fields, the header {width}: {row}"
    assert not any(r and r[0].startswith("rows=") for r in rows), "summary line in the CSV"
    want = case.get("read", {})
    if "csv_header" in want:
        assert rows[0] == want["csv_header"], rows[0]
    if "csv_records" in want:
        assert rows[1:] == want["csv_records"], rows[1:]
    if "csv_rows" in want:
        assert len(rows) - 1 == want["csv_rows"], len(rows) - 1


SANITIZER = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:")


def run_case(case: dict, world: World) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="case-", dir=world.base))
    tmp.chmod(0o755)
    with contextlib.ExitStack() as held:
        run_case_in(Context(world, case, tmp, held))
    shutil.rmtree(tmp, ignore_errors=True)


def run_case_in(ctx: Context) -> None:
    case, world, tmp = ctx.case, ctx.world, ctx.tmp
    place_table(ctx)
    apply_steps(ctx, case.get("setup", []))
    before = {"digest": tree_digest(ctx.table)}

    def on_pause():
        # The baseline becomes the table as the actor left it: the table before the run plus
        # the actor's own changes (not the paused loader's files in flight).
        steps = case["server"].get("actor", [])
        if not steps:
            return
        during = tree_digest(ctx.table)
        apply_steps(ctx, steps)
        after_actor = tree_digest(ctx.table)
        baseline = dict(before["digest"])
        for key in set(during) | set(after_actor):
            if during.get(key) != after_actor.get(key):
                if key in after_actor:
                    baseline[key] = after_actor[key]
                else:
                    baseline.pop(key, None)
        # The table's folder is the actor's once its steps made a table there (the paused
        # loader may have made the folder first).
        if "." in after_actor and (Path(ctx.table) / "_delta_log").is_dir():
            baseline["."] = after_actor["."]
        before["digest"] = baseline

    env = cli_env()
    env.pop("AMP_AUTH_TOKEN", None)
    for key, value in case.get("env", {}).items():
        env[key] = ctx.expand(value)
    timeout = case.get("timeout", 60)
    with case_server(ctx, on_pause) as server:
        args, extra_env, readback = command_line(ctx)
        env.update(extra_env)
        limits = case.get("limits", {})

        def preexec():
            os.setsid()
            if "fsize" in limits:
                import resource
                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
                resource.setrlimit(resource.RLIMIT_FSIZE, (limits["fsize"], limits["fsize"]))
            if "nofile" in limits:
                import resource
                resource.setrlimit(resource.RLIMIT_NOFILE, (limits["nofile"], limits["nofile"]))

        cwd = Path(ctx.expand(case["cwd"])) if "cwd" in case else tmp
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.PIPE if "stdin" in case else subprocess.DEVNULL,
                                env=env, cwd=cwd, preexec_fn=preexec)
        try:
            out, err = proc.communicate(
                input=ctx.expand(case["stdin"]).encode() if "stdin" in case else None,
                timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            pytest.fail(f"ampdelta did not finish within {timeout}s (a hang):\n"
                        f"stdout:\n{out.decode(errors='replace')}\n"
                        f"stderr:\n{err.decode(errors='replace')}", pytrace=False)
        if server is not None and getattr(server, "pause_error", None) is not None:
            raise server.pause_error
        if server is not None and case["server"].get("actor") and not server.paused.is_set():
            pytest.fail("the server never reached its pause: the actor did not run",
                        pytrace=False)
    stdout = out.decode("utf-8", "replace")
    stderr = err.decode("utf-8", "replace")
    shown = (f"command: {shlex.join(a.decode(errors='replace') for a in args)}\n"
             f"exit {proc.returncode}\nstdout:\n{stdout[-4000:]}\nstderr:\n{stderr[-4000:]}")

    assert not SANITIZER.search(stderr), "sanitizer report\n" + shown
    assert proc.returncode == case["exit"], f"exit code {proc.returncode}, want {case['exit']}\n" + shown
    errors = [line for line in stderr.splitlines() if line.startswith("ampdelta: error: ")]
    if case["exit"] != 0:
        assert len(errors) == 1, "want exactly one `ampdelta: error:` line\n" + shown
        for needle in case["message"]:
            assert ctx.expand(needle) in errors[0], f"error line lacks {needle!r}\n" + shown
        assert "internal error" not in errors[0], shown
    else:
        assert not errors, "a successful run printed an error line\n" + shown
    for needle in case.get("stdout", []):
        assert ctx.expand(needle) in stdout, f"stdout lacks {needle!r}\n" + shown
    for needle in case.get("stderr", []):
        assert ctx.expand(needle) in stderr, f"stderr lacks {needle!r}\n" + shown
    for needle in case.get("excludes", []):
        assert ctx.expand(needle) not in stdout + stderr, f"output shows {needle!r}\n" + shown
    if "csv" in case.get("checks", []):
        check_csv(stdout, case)

    after_path = readback if readback is not None else ctx.table
    if case["table"] == "unchanged":
        after = tree_digest(after_path)
        assert after == before["digest"], (
            "the table changed:\n" + describe_diff(before["digest"], after) + "\n" + shown)
    else:
        check_read(world, after_path, case["read"])


def _param(case: dict):
    marks = [pytest.mark.timeout(case.get("timeout", 60) + 90)]
    if case.get("pending"):
        marks.append(pytest.mark.xfail(reason="pending: " + case["pending"], strict=True))
    needs_root = case.get("fs") or case.get("as_user")
    if needs_root and os.geteuid() != 0:
        marks.append(pytest.mark.skip(reason="needs root (mount namespaces / setpriv)"))
    return pytest.param(case, id=case["id"], marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_bad_input(case, world):
    run_case(case, world)
