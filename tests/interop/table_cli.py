"""The ampdelta CLI on tables, as the feature tests run it (Spark-made tables written by
ampdelta): one place for the helpers they share."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc

from conftest import cli_env, cli_path


def run_cli(*args, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([str(cli_path()), *map(str, args)], capture_output=True, text=True,
                          env=cli_env(), timeout=timeout, stdin=subprocess.DEVNULL)


def ok(*args, timeout: float = 180) -> subprocess.CompletedProcess:
    done = run_cli(*args, timeout=timeout)
    assert done.returncode == 0, f"{args}\nexit {done.returncode}\n{done.stderr}"
    return done


def arrow_file(tmp_path: Path, data: pa.Table) -> Path:
    """`data` in a new Arrow IPC file under `tmp_path`."""
    path = tmp_path / f"input-{len(list(tmp_path.glob('input-*')))}.arrow"
    with ipc.new_file(path, data.schema) as out:
        out.write_table(data)
    return path


def write_table(tmp_path: Path, table: Path, data: pa.Table, *extra) -> subprocess.CompletedProcess:
    """`ampdelta table write` of `data` into `table`, not checked."""
    return run_cli("table", "write", table, "--input", arrow_file(tmp_path, data), *extra)


def latest_schema(table: Path) -> dict:
    """The schema of the table's latest metaData action."""
    schemas = [json.loads(line)["metaData"]["schemaString"]
               for path in sorted((table / "_delta_log").glob("*.json"))
               for line in path.read_text().splitlines() if '"metaData"' in line]
    return json.loads(schemas[-1])


def log_names(table: Path) -> list[str]:
    return sorted(p.name for p in (table / "_delta_log").iterdir())
