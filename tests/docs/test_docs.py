"""Every command and snippet a reader is shown in README.md and docs/*.md runs, against the
dev server, as the text says it does (docs/testing.md, "The docs run").

How a block runs (its directive, doc_blocks.py, can say otherwise):

- A shell block runs its commands in order, in one working folder per document (so
  `./data/blocks` is the table the document's earlier commands made), against a dev server of
  the document's (`server=ARGS` on a block: a server of its own, started with ARGS). In an
  `ampdelta` command, `localhost:1602` is that server, `--port 1602` is `--port 0`,
  `--metrics-addr HOST:PORT` is `127.0.0.1:0`, `../shared/…` is the shared folder beside the
  repository, and `…` stands for the arguments of the first full command of the same
  subcommand in the block (else in the document, else the README's first `ampdelta load`). `NAME=value` before a
  command sets its environment. A command must exit 0 (`exit=N` on the block: N), except one
  that runs until stopped (`dev-server`, a `--stream` without `--max-microbatches` or
  `--until-block`, `--then-stream`): it is sent Ctrl-C (SIGINT) once it printed its first line
  (or after a few seconds of silence) and must then exit with the code the README documents
  (130; the dev server 0).
- A Python block runs as a script in that folder with the wheel's interpreter (`python=sdk`:
  the Amp SDK's venv) (`continues`: after the document's Python block before it);
  `until-interrupted`: it is sent Ctrl-C once it printed a line and must end as Python does
  on Ctrl-C.
- A C++ block is the text of a program in the repository (`source=PATH`), built by the test
  build, and runs against the server.
- A skipped block (`skip; needs …; covered by …`) names a test file that exists; each of its
  `ampdelta` commands is checked against `ampdelta … --help`, each benchmark script's flags
  against its `--help`, each `make` target against the Makefile.
- Every `ampdelta …` code span in running text is checked against `--help` the same way.

A failure names the file and line of the command.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import select
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pytest

import doc_blocks
import readers  # tests/interop/readers.py
from doc_blocks import REPO_ROOT, Block, InlineCommand
from conftest import QUICKSTART_DATASET, cli_env, cli_path, run_dev_server

SHARED_DIR = (REPO_ROOT / ".." / "shared").resolve()
COMMAND_TIMEOUT_S = 120.0
# A command that runs until stopped gets this long after its first line before Ctrl-C, or
# FIRST_LINE_S when it prints none (a stream with nothing new to load is silent).
INTERRUPT_AFTER_S = 1.5
FIRST_LINE_S = 4.0
EXIT_INTERRUPTED = 130
SHELL_LANGS = ("", "sh", "bash", "console", "shell")
# Words an `ampdelta` command's subcommands are made of (the rest are arguments).
SUBCOMMAND_RE = re.compile(r"^[a-z][a-z-]*$")
FLAG_RE = re.compile(r"^--[a-z0-9][a-z0-9-]*")
ENV_ASSIGNMENT_RE = re.compile(r"^[A-Z_][A-Z0-9_]*=")


# --- Collection --------------------------------------------------------------------------

def _all_blocks() -> list[Block]:
    return [block for path in doc_blocks.documents() for block in doc_blocks.blocks(path)]


def _all_inline() -> list[InlineCommand]:
    return [cmd for path in doc_blocks.documents() for cmd in doc_blocks.inline_commands(path)]


ALL_BLOCKS = _all_blocks()
RUN_BLOCKS = [b for b in ALL_BLOCKS if b.directive.verb == "run"]
SKIP_BLOCKS = [b for b in ALL_BLOCKS if b.directive.verb == "skip"]


# --- Commands ----------------------------------------------------------------------------

@dataclasses.dataclass
class Command:
    """One command line of a block: its environment assignments and words."""
    where: str
    env: dict[str, str]
    words: list[str]

    @staticmethod
    def parse(block: Block, offset: int, line: str) -> "Command":
        where = f"{block.path}:{block.line + offset}"
        try:
            words = doc_blocks.split_command(line)
        except ValueError as error:
            pytest.fail(f"{where}: cannot split the command {line!r}: {error}", pytrace=False)
        env = {}
        while words and ENV_ASSIGNMENT_RE.match(words[0]):
            key, value = words.pop(0).split("=", 1)
            env[key] = value
        return Command(where, env, words)

    def subcommands(self) -> list[str]:
        """`ampdelta [global options] SUB [SUB]`: the subcommand path, global options left out."""
        out = []
        words = self.words[1:]
        i = 0
        while i < len(words):
            word = words[i]
            if word.startswith("--"):
                if out:
                    break
                i += 2 if "=" not in word and word in GLOBAL_OPTIONS_WITH_VALUE else 1
                continue
            if not SUBCOMMAND_RE.match(word) or len(out) == 2:
                break
            out.append(word)
            i += 1
        return out

    def flags(self) -> list[str]:
        """The `--flag`s among the words (`[--json]` of a synopsis included)."""
        words = [word.lstrip("[") for word in self.words]
        return [FLAG_RE.match(word).group(0) for word in words if FLAG_RE.match(word)]


# `ampdelta --log-format json load …`: global options that take a value.
GLOBAL_OPTIONS_WITH_VALUE = {"--log-format", "--log-level"}

_HELP_CACHE: dict[tuple[str, ...], str] = {}


def ampdelta_help(path: tuple[str, ...]) -> str:
    if path not in _HELP_CACHE:
        proc = subprocess.run([str(cli_path()), *path, "--help"], capture_output=True, text=True,
                              env=cli_env(), timeout=60)
        _HELP_CACHE[path] = proc.stdout + proc.stderr if proc.returncode == 0 else ""
    return _HELP_CACHE[path]


def check_ampdelta_flags(where: str, words: list[str], command: Command | None = None) -> None:
    """Each `--flag` of an `ampdelta` command exists in its subcommand's help (or the
    top-level help, for global options)."""
    command = command or Command(where, {}, words)
    path = tuple(command.subcommands())
    # A path that is not a real subcommand (`ampdelta table …`) is checked as far as it is.
    while path and not ampdelta_help(path):
        path = path[:-1]
    if not path and len(command.subcommands()) > 0:
        pytest.fail(f"{where}: `ampdelta {command.subcommands()[0]}` is not a command "
                    "of the CLI", pytrace=False)
    helps = ampdelta_help(path) + ampdelta_help(())
    for flag in command.flags():
        if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", helps):
            pytest.fail(f"{where}: `ampdelta {' '.join(path)}` has no option {flag}",
                        pytrace=False)


def check_script_flags(where: str, words: list[str]) -> None:
    """A benchmark or helper script (`.deps/venv/bin/python bench/x.py --flag …`): it exists
    and each flag is in its --help."""
    script = next((w for w in words[1:] if w.endswith(".py")), None)
    if script is None:
        return
    if not (REPO_ROOT / script).is_file():
        pytest.fail(f"{where}: {script} does not exist", pytrace=False)
    interpreter = REPO_ROOT / words[0] if "/" in words[0] else Path(words[0])
    if not interpreter.exists():
        interpreter = Path(sys.executable)
    proc = subprocess.run([str(interpreter), script, "--help"], capture_output=True, text=True,
                          cwd=REPO_ROOT, timeout=120)
    if proc.returncode != 0:
        pytest.fail(f"{where}: `{script} --help` failed:\n{proc.stderr[-2000:]}", pytrace=False)
    for word in words:
        flag = FLAG_RE.match(word)
        if flag and not re.search(rf"(?<![\w-]){re.escape(flag.group(0))}(?![\w-])", proc.stdout):
            pytest.fail(f"{where}: {script} has no option {flag.group(0)}", pytrace=False)


def check_benchmark_program_flags(where: str, words: list[str]) -> None:
    """`build/release/bench/X --flag …`: the test build compiles the same program
    (bench/CMakeLists.txt); each flag is in its --help."""
    program = cli_path().parents[2] / "bench" / Path(words[0]).name
    if not program.is_file():
        pytest.fail(f"{where}: no benchmark program {Path(words[0]).name} in the test build",
                    pytrace=False)
    proc = subprocess.run([str(program), "--help"], capture_output=True, text=True,
                          env=cli_env(), timeout=60)
    for flag in Command(where, {}, words).flags():
        if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", proc.stdout):
            pytest.fail(f"{where}: {program.name} has no option {flag}", pytrace=False)


def check_make_targets(where: str, words: list[str]) -> None:
    makefile = (REPO_ROOT / "Makefile").read_text()
    for word in words[1:]:
        if "=" in word or word.startswith("-"):
            continue
        if not re.search(rf"^{re.escape(word)}:", makefile, re.M):
            pytest.fail(f"{where}: the Makefile has no target {word}", pytrace=False)


def check_command(command: Command) -> None:
    """What can be checked of a command without running it (each of `a && b`)."""
    words: list[str] = []
    for word in [*command.words, "&&"]:
        if word not in ("&&", ";", "||"):
            words.append(word)
            continue
        if not words:
            continue
        program = words[0]
        if program == "ampdelta":
            check_ampdelta_flags(command.where, words)
        elif program.endswith("python") or program.endswith("python3"):
            check_script_flags(command.where, words)
        elif program == "make":
            check_make_targets(command.where, words)
        elif program.startswith("build/release/bench/"):
            check_benchmark_program_flags(command.where, words)
        words = []


# --- A document's working folder and server ----------------------------------------------

class DocumentRun:
    """The state a document's blocks share as they run in order: a working folder, a dev
    server, the first full command of each subcommand (what `…` stands for), Python code."""

    def __init__(self, path: str, stack: contextlib.ExitStack):
        self.path = path
        self._stack = stack
        self.workdir = Path(tempfile.mkdtemp(prefix="ampdelta-doc-"))
        self._server = None
        # The document's first full command of each subcommand path.
        self.full_commands: dict[tuple[str, ...], list[str]] = {}
        self.python_code: str | None = None  # the last Python block, with what it continues
        self.env = dict(cli_env(), FLIGHT_SQL_CONNECTIONS=str(self.workdir / "connections.json"))

    def python_env(self) -> dict:
        """The Python blocks' environment: a home of the document's own, with DuckDB's delta
        extension installed in it as `INSTALL delta` would (from the duckdb-extension-delta
        wheel: no network here), so `delta_scan` autoloads as on a user's machine."""
        home = self.workdir / "home"
        if not home.exists():
            home.mkdir()
            path = readers.duckdb_delta_extension_path()
            subprocess.run([sys.executable, "-c",
                            f"import duckdb; duckdb.sql(\"INSTALL '{path}'\")"],
                           check=True, env=dict(self.env, HOME=str(home)), timeout=120)
        return dict(self.env, HOME=str(home), PYTHONUNBUFFERED="1")

    def server_for(self, block: Block, stack: contextlib.ExitStack) -> str:
        """The URL of the block's server: one of its own (`server=ARGS`), held by `stack`,
        else the document's."""
        server_args = block.directive.get("server")
        if server_args is not None:
            return stack.enter_context(run_dev_server(*shlex.split(server_args))).url
        return self.server_url()

    def server_url(self) -> str:
        if self._server is None:
            self._server = self._stack.enter_context(run_dev_server())
        return self._server.url


_RUNS: dict[str, DocumentRun] = {}


@pytest.fixture(scope="session")
def document_runs():
    with contextlib.ExitStack() as stack:
        def get(path: str) -> DocumentRun:
            if path not in _RUNS:
                _RUNS[path] = DocumentRun(path, stack)
            return _RUNS[path]
        yield get
    _RUNS.clear()


def readme_quickstart_load() -> list[str]:
    """The README's first full `ampdelta load` (what `…` means where a document has none)."""
    for block in doc_blocks.blocks(REPO_ROOT / "README.md"):
        for offset, line in doc_blocks.command_lines(block.text):
            words = doc_blocks.split_command(line)
            if words[:2] == ["ampdelta", "load"] and "…" not in words:
                return words
    raise AssertionError("README.md shows no full ampdelta load")


def expanded(command: Command, run: DocumentRun, block_full: dict, server_url: str) -> list[str]:
    """The command as it runs here: `…` expanded, the server, ports and paths swapped.
    `block_full` holds the block's first full command of each subcommand path."""
    path = tuple(command.subcommands())
    words = list(command.words)
    if "…" in words:
        base = block_full.get(path) or run.full_commands.get(path)
        if base is None and path == ("load",):
            base = readme_quickstart_load()
        if base is None:
            pytest.fail(f"{command.where}: `…` with no full `ampdelta {' '.join(path)}` above it",
                        pytrace=False)
        at = words.index("…")
        # The base's arguments after its subcommand path.
        base_args = base[1 + len(path):]
        words = words[:at] + base_args + words[at + 1:]
    else:
        block_full.setdefault(path, list(words))
        run.full_commands.setdefault(path, list(words))
    host_port = server_url.split("://", 1)[1]
    out = []
    previous = ""
    for word in words:
        if previous == "--port" and word == "1602":
            word = "0"
        elif previous == "--metrics-addr":
            word = "127.0.0.1:0"
        word = word.replace("localhost:1602", host_port)
        if word.startswith("../shared/"):
            word = str(SHARED_DIR / word[len("../shared/"):])
        elif "=../shared/" in word:
            key, value = word.split("=", 1)
            word = f"{key}={SHARED_DIR / value[len('../shared/'):]}"
        out.append(word)
        previous = word
    out[0] = str(cli_path())
    return out


def runs_until_stopped(words: list[str], block: Block) -> bool:
    if block.directive.has("until-interrupted"):
        return True
    if "dev-server" in words[:3]:
        return True
    if "--then-stream" in words:
        return True
    return "--stream" in words and "--max-microbatches" not in words \
        and "--until-block" not in words


def run_until_first_line_then_interrupt(args: list[str], cwd: Path, env: dict,
                                        where: str, after: str | None = None
                                        ) -> tuple[int, str, str]:
    """Run until the first line of stdout (after the line `after`, when given) or for
    FIRST_LINE_S, then Ctrl-C."""
    proc = subprocess.Popen(args, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = ""
    waiting_for_marker = after is not None
    started = window = time.monotonic()
    while proc.poll() is None and time.monotonic() < started + COMMAND_TIMEOUT_S and (
            waiting_for_marker or time.monotonic() < window + FIRST_LINE_S):
        ready, _, _ = select.select([proc.stdout], [], [], 0.1)
        if not ready:
            continue
        line = proc.stdout.readline()
        seen += line
        if not waiting_for_marker:
            break
        if line.rstrip("\n") == after:
            waiting_for_marker = False
            window = time.monotonic()
    if proc.poll() is None:
        time.sleep(INTERRUPT_AFTER_S)
        proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=COMMAND_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"{where}: did not stop within {COMMAND_TIMEOUT_S:.0f} s of Ctrl-C:\n"
                    f"{' '.join(args)}\n{err[-2000:]}", pytrace=False)
    return proc.returncode, seen + out, err


def run_shell_block(block: Block, run: DocumentRun) -> None:
    with contextlib.ExitStack() as stack:
        url = run.server_for(block, stack)
        for fixture in filter(None, (block.directive.get("fixture") or "").split(",")):
            write_fixture(run.workdir / fixture.strip())
        expected_exit = int(block.directive.get("exit", "0"))
        block_full: dict[tuple[str, ...], list[str]] = {}
        for offset, line in doc_blocks.command_lines(block.text):
            command = Command.parse(block, offset, line)
            if not command.words:
                continue
            if command.words[0] != "ampdelta":
                pytest.fail(f"{command.where}: the doc test does not run `{command.words[0]}`; "
                            "mark the block (`<!-- doctest: skip; needs …; covered by … -->`)",
                            pytrace=False)
            check_command(command)
            args = expanded(command, run, block_full, url)
            env = dict(run.env, **command.env)
            if runs_until_stopped(args, block):
                code, out, err = run_until_first_line_then_interrupt(args, run.workdir, env,
                                                                     command.where)
                expected = 0 if "dev-server" in args[:3] else EXIT_INTERRUPTED
            else:
                try:
                    proc = subprocess.run(args, cwd=run.workdir, env=env, capture_output=True,
                                          text=True, timeout=COMMAND_TIMEOUT_S,
                                          stdin=subprocess.DEVNULL)
                except subprocess.TimeoutExpired:
                    pytest.fail(f"{command.where}: still running after {COMMAND_TIMEOUT_S:.0f} s "
                                f"(the text says it ends by itself): {line}", pytrace=False)
                code, out, err = proc.returncode, proc.stdout, proc.stderr
                expected = expected_exit
            if code != expected:
                pytest.fail(f"{command.where}: exit {code}, expected {expected}: {line}\n"
                            f"ran: {shlex.join(args)}\nstdout:\n{out[-1500:]}\n"
                            f"stderr:\n{err[-2500:]}", pytrace=False)


def write_fixture(path: Path) -> None:
    """Input files a block's commands read (`fixture=rows.arrow`): an Arrow IPC file of
    Quickstart-shaped rows."""
    if path.suffix != ".arrow":
        raise AssertionError(f"no fixture of the kind {path.name}")
    table = pa.table({
        "block_num": pa.array(range(100, 110), pa.uint64()),
        "network": pa.array(["mainnet"] * 5 + ["base"] * 5),
        "hash": pa.array([bytes([i]) * 32 for i in range(10)], pa.binary(32)),
        "gas_used": pa.array(range(10), pa.uint64())})
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


# Printed between a `continues` block and the code before it: what the block itself prints
# comes after it.
BLOCK_START = "--- doctest: the block starts here ---"


def python_source(block: Block, run: DocumentRun, url: str) -> str:
    """The script a Python block runs: the code before it (`continues`), the marker line, the
    block. `run.python_code` keeps what the next `continues` block goes on from."""
    own = block.text.replace("grpc://localhost:1602", url)
    before = ""
    if block.directive.has("continues"):
        if run.python_code is None:
            pytest.fail(f"{block.where}: `continues` with no Python block above it", pytrace=False)
        before = run.python_code + "\n"
    if not block.directive.has("until-interrupted"):
        # A block that runs until Ctrl-C ends its line of code: a later `continues` block
        # goes on from the code before it.
        run.python_code = before + own
    return f"{before}print({BLOCK_START!r}, flush=True)\n{own}"


# `python=sdk`: the block uses the Amp SDK, which runs in its own venv (CPython 3.12,
# scripts/sdk_venv.sh, made by `make test`'s sdk phase before this one).
SDK_PYTHON = REPO_ROOT / "build" / "sdk-venv" / "bin" / "python"


def python_for(block: Block) -> Path:
    if block.directive.get("python") == "sdk":
        if not SDK_PYTHON.exists():
            pytest.fail(f"{block.where}: the block needs the SDK's venv, {SDK_PYTHON}: run "
                        "scripts/sdk_venv.sh (make sdk-only)", pytrace=False)
        return SDK_PYTHON
    return Path(sys.executable)


def run_python_block(block: Block, run: DocumentRun) -> None:
    with contextlib.ExitStack() as stack:
        url = run.server_for(block, stack)
        script = run.workdir / f"block_{block.line}.py"
        script.write_text(python_source(block, run, url))
        args = [str(python_for(block)), str(script)]
        env = run.python_env()
        if block.directive.has("until-interrupted"):
            code, out, err = run_until_first_line_then_interrupt(args, run.workdir, env,
                                                                 block.where, after=BLOCK_START)
            # Python ends on an unhandled KeyboardInterrupt as killed by SIGINT.
            if code not in (-signal.SIGINT, EXIT_INTERRUPTED):
                pytest.fail(f"{block.where}: exit {code} after Ctrl-C\n{err[-3000:]}",
                            pytrace=False)
            return
        proc = subprocess.run(args, cwd=run.workdir, env=env, capture_output=True, text=True,
                              timeout=COMMAND_TIMEOUT_S)
        if proc.returncode != 0:
            pytest.fail(f"{block.where}: the Python block failed (exit {proc.returncode}):\n"
                        f"{proc.stderr[-3000:]}", pytrace=False)


def run_cpp_block(block: Block, run: DocumentRun) -> None:
    source = block.directive.get("source")
    if source is None:
        pytest.fail(f"{block.where}: a C++ block names the program it shows (`source=PATH`)",
                    pytrace=False)
    text = (REPO_ROOT / source).read_text()
    if text != block.text:
        pytest.fail(f"{block.where}: the C++ block differs from {source}, the program the "
                    "test build compiles; copy one into the other", pytrace=False)
    # The test build puts the example next to the CLI's build tree (examples/CMakeLists.txt).
    binary = cli_path().parents[2] / "examples" / Path(source).stem
    if not binary.is_file():
        pytest.fail(f"{block.where}: {binary} was not built", pytrace=False)
    proc = subprocess.run([str(binary), run.server_url()], cwd=run.workdir, env=run.env,
                          capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    if proc.returncode != 0 or "✅ Loaded" not in proc.stdout:
        pytest.fail(f"{block.where}: {source} failed (exit {proc.returncode}):\n"
                    f"{proc.stdout[-1500:]}\n{proc.stderr[-2500:]}", pytrace=False)


# --- Tests -------------------------------------------------------------------------------

@pytest.mark.timeout(900)
@pytest.mark.parametrize("block", RUN_BLOCKS, ids=[b.where for b in RUN_BLOCKS])
def test_a_shown_block_runs_as_the_text_says(block: Block, document_runs):
    run = document_runs(block.path)
    if block.lang == "python":
        run_python_block(block, run)
    elif block.lang in ("cpp", "c++"):
        run_cpp_block(block, run)
    elif block.lang in SHELL_LANGS:
        run_shell_block(block, run)
    else:
        pytest.fail(f"{block.where}: a `{block.lang}` block cannot run; mark it `text` or "
                    "`skip; needs …; covered by …`", pytrace=False)


@pytest.mark.parametrize("block", SKIP_BLOCKS, ids=[b.where for b in SKIP_BLOCKS])
def test_a_block_ci_cannot_run_names_its_covering_test_and_real_options(block: Block):
    for covered in block.directive.get("covered-by").split(","):
        covered = covered.strip()
        file, _, test = covered.partition("::")
        path = REPO_ROOT / file
        if not path.exists():
            pytest.fail(f"{block.where}: the covering test {file} does not exist", pytrace=False)
        if test and test not in path.read_text():
            pytest.fail(f"{block.where}: {file} has no test {test}", pytrace=False)
    if block.lang in SHELL_LANGS:
        for offset, line in doc_blocks.command_lines(block.text):
            check_command(Command.parse(block, offset, line))


INLINE = _all_inline()


@pytest.mark.parametrize("inline", INLINE, ids=[f"{c.where} {c.text}" for c in INLINE])
def test_a_command_in_the_text_names_real_options(inline: InlineCommand):
    words = inline.text.replace("\\|", "|").split()
    check_ampdelta_flags(inline.where, words)


def test_every_document_parses_with_its_directives():
    """A directive that is misspelt, dangling or missing its reason fails here, not silently."""
    for path in doc_blocks.documents():
        doc_blocks.blocks(path)
    assert RUN_BLOCKS, "no block runs: the collection is broken"


def test_an_inline_command_is_reported_at_its_own_line(tmp_path, monkeypatch):
    """A command in the third line of a paragraph is named at that line, so a reader finds it."""
    monkeypatch.setattr(doc_blocks, "REPO_ROOT", tmp_path)
    page = tmp_path / "page.md"
    page.write_text("# Title\n\nFirst line of text,\nsecond line,\nthird: `ampdelta demo --overwrote`.\n")
    [command] = doc_blocks.inline_commands(page)
    assert (command.where, command.text) == ("page.md:5", "ampdelta demo --overwrote")
