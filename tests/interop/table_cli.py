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


def stream_through_reorgs(table: Path) -> dict:
    """Stream the blocks of a dev server whose chain reorganises into `table` (made by the
    caller) until its head; return the canonical chain at the end, {block_num: hex hash}.
    Fails when no reorg was undone: the caller's test would prove nothing."""
    from conftest import run_dev_server
    from test_deletion_vectors import BLOCKS_SQL, check
    from test_deletion_vectors import run_cli as run_cli_long
    from test_stream_crash import canonical_hashes, last_quiet_head, live_chain_args
    max_head = last_quiet_head(60)
    with run_dev_server(*live_chain_args(max_head), "--await-streams") as server:
        check(run_cli_long("load", "--server", server.url, "--table", str(table), "--sql",
                           BLOCKS_SQL, "--stream", "--commit-interval-ms", "50",
                           "--until-block", str(max_head), "--config",
                           '{"optimize_after_write": false}', timeout=300))
        chain = canonical_hashes(server.url)
    assert [p for p in (table / "_delta_log").glob("*.json")
            if '"operation":"DELETE"' in p.read_text()], "no reorg undo: the test proves nothing"
    return chain


def blocks_of(data: pa.Table):
    """The (block_num, hex hash) pairs of `data`, counted."""
    import collections
    from test_stream_crash import hex_hash
    return collections.Counter(zip(data.column("block_num").to_pylist(),
                                   (hex_hash(h) for h in data.column("hash").to_pylist())))
