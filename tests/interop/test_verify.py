"""`ampdelta verify`: a table a stream loaded through reorgs verifies clean against its
records and the server's chain; an injected gap, duplicate block, missing file and stale
hash are each found, named, and make it exit 7 (docs/downstream.md)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import QUICKSTART_DATASET, cli_env, cli_path, run_dev_server
from test_stream_crash import last_quiet_head, live_chain_args

STREAM_SQL = f'SELECT block_num, hash, gas_used FROM "{QUICKSTART_DATASET}".blocks'
EXIT_FINDINGS = 7


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(cli_path()), *args], capture_output=True, text=True,
                          env=cli_env(), timeout=300, stdin=subprocess.DEVNULL)


def describe(proc: subprocess.CompletedProcess) -> str:
    return f"{proc.args}\nexit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"


@pytest.fixture(scope="module")
def streamed(tmp_path_factory):
    """A table streamed from a chain that reorged, and the server (still serving its final
    chain) as (table, url)."""
    max_head = last_quiet_head(80)
    table = tmp_path_factory.mktemp("verify") / "blocks"
    with run_dev_server(*live_chain_args(max_head)) as server:
        proc = run_cli("load", "--server", server.url, "--table", str(table), "--sql",
                       STREAM_SQL, "--stream", "--commit-interval-ms", "50", "--until-block",
                       str(max_head), "--quiet", "--config", '{"optimize_after_write": false}')
        assert proc.returncode == 0, describe(proc)
        yield table, server.url


def verify(table: Path, url: str, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    proc = run_cli("verify", str(table), "--server", url, "--dataset", QUICKSTART_DATASET,
                   "--json", *extra)
    assert proc.returncode in (0, EXIT_FINDINGS), describe(proc)
    return proc, json.loads(proc.stdout)


def copy(table: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(table, target)
    return target


def rows_of_block(table: Path, block: int) -> pa.Table:
    from deltalake import DeltaTable

    got = DeltaTable(str(table)).to_pyarrow_table(filters=[("block_num", "=", block)])
    assert got.num_rows == 1, got
    return got


def test_a_streamed_table_verifies_clean(streamed):
    table, url = streamed
    proc, report = verify(table, url)
    assert proc.returncode == 0, describe(proc)
    assert report["ok"] and report["findings"] == [] and report["checked_hashes"], report
    assert report["one_row_per_block"] and report["hash_column"] == "hash", report
    ((app, networks),) = report["recorded"].items()
    assert list(networks) == ["mainnet"] and len(networks["mainnet"]) == 1, report
    assert networks["mainnet"][0] == [report["first_block"], report["last_block"]], report
    text = run_cli("verify", str(table))
    assert text.returncode == 0 and "OK: no findings" in text.stdout, describe(text)


def test_verify_finds_an_injected_gap(streamed, tmp_path):
    table, url = streamed
    target = copy(table, tmp_path)
    proc, before = verify(target, url)
    gap = before["first_block"] + 17
    deleted = run_cli("table", "delete", str(target), "--where", f"block_num = {gap}")
    assert deleted.returncode == 0, describe(deleted)
    proc, report = verify(target, url)
    assert proc.returncode == EXIT_FINDINGS, describe(proc)
    assert report["counts"] == {"gap": 1}, report
    (finding,) = report["findings"]
    assert (finding["first_block"], finding["last_block"]) == (gap, gap), finding
    text = run_cli("verify", str(target))
    assert text.returncode == EXIT_FINDINGS, describe(text)
    assert f"gap: block {gap} has no row" in text.stdout, describe(text)


def test_verify_finds_a_duplicate_block(streamed, tmp_path):
    table, url = streamed
    target = copy(table, tmp_path)
    block = verify(target, url)[1]["first_block"] + 5
    again = rows_of_block(target, block).select(["block_num", "hash", "gas_used"])
    pq.write_table(again, tmp_path / "again.parquet")
    wrote = run_cli("table", "write", str(target), "--input", str(tmp_path / "again.parquet"))
    assert wrote.returncode == 0, describe(wrote)
    proc, report = verify(target, url)
    assert proc.returncode == EXIT_FINDINGS, describe(proc)
    assert report["counts"] == {"duplicate_block": 1}, report
    assert report["findings"][0]["first_block"] == block, report


def test_verify_finds_a_missing_file(streamed, tmp_path):
    table, url = streamed
    target = copy(table, tmp_path)
    from deltalake import DeltaTable

    # A live file (reorg undos leave removed files behind, which no version needs now).
    victim = Path(sorted(DeltaTable(str(target)).file_uris())[0].removeprefix("file://"))
    victim.unlink()
    proc, report = verify(target, url)
    assert proc.returncode == EXIT_FINDINGS, describe(proc)
    assert report["counts"].get("missing_file") == 1, report
    assert report["findings"][0]["file"] == victim.name, report
    # Its blocks are then absent: a gap, unless the file held the first or last blocks.
    assert set(report["counts"]) <= {"missing_file", "gap"}, report


def test_verify_finds_a_stale_hash(streamed, tmp_path):
    table, url = streamed
    target = copy(table, tmp_path)
    block = verify(target, url)[1]["last_block"] - 3
    row = rows_of_block(target, block).select(["block_num", "hash", "gas_used"])
    stale = row.set_column(1, "hash", pa.array([b"\x01" * 32], row.schema.field("hash").type))
    pq.write_table(stale, tmp_path / "stale.parquet")
    for args in (("table", "delete", str(target), "--where", f"block_num = {block}"),
                 ("table", "write", str(target), "--input", str(tmp_path / "stale.parquet"))):
        proc = run_cli(*args)
        assert proc.returncode == 0, describe(proc)
    proc, report = verify(target, url)
    assert proc.returncode == EXIT_FINDINGS, describe(proc)
    assert report["counts"] == {"stale_hash": 1}, report
    assert "0x" + "01" * 32 in report["findings"][0]["message"], report
    # Without the server the table's own records cannot tell.
    assert run_cli("verify", str(target)).returncode == 0


def test_verify_refuses_bad_input(streamed, tmp_path):
    table, url = streamed
    for args, words in ((("verify", str(tmp_path / "nothing")), "no Delta table"),
                        (("verify", str(table), "--server", url), "--dataset"),
                        (("verify", str(table), "--block-column", "nope"), "'nope'"),
                        (("verify", str(table), "--hash-column", "nope"), "'nope'")):
        proc = run_cli(*args)
        assert proc.returncode == 2, describe(proc)
        assert words in proc.stderr, describe(proc)


def test_verify_finds_a_file_recorded_twice_and_a_truncated_file(streamed, tmp_path):
    table, url = streamed
    target = copy(table, tmp_path)
    log = target / "_delta_log"
    latest = max(int(p.stem) for p in log.glob("*.json"))
    adds = {}  # the live files' add actions, from the log (no checkpoint yet)
    for version in range(latest + 1):
        for line in (log / f"{version:020d}.json").read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                adds[action["add"]["path"]] = action["add"]
            elif "remove" in action:
                adds.pop(action["remove"]["path"], None)
    # Another engine's copy of a tagged file committed as a new file: its blocks twice.
    source = sorted(adds)[len(adds) // 2]
    assert adds[source].get("tags"), adds[source]
    shutil.copy(target / source, target / ("copy-" + source))
    add = dict(adds[source], path="copy-" + source)
    (log / f"{latest + 1:020d}.json").write_text(
        json.dumps({"commitInfo": {"operation": "WRITE"}}) + "\n" + json.dumps({"add": add}) + "\n")
    proc, report = verify(target, url)
    assert proc.returncode == EXIT_FINDINGS, describe(proc)
    assert report["counts"].get("duplicate_block", 0) >= 2, report  # records and rows
    assert any("recorded by two files" in f["message"] for f in report["findings"]), report
    # A file cut short: its size no longer matches the log.
    victim = target / sorted(adds)[0]
    victim.write_bytes(victim.read_bytes()[:-10])
    proc, report = verify(target, url)
    assert report["counts"].get("size_mismatch") == 1, report
