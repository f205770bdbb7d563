"""Writers that create a table or write nothing (`--mode error`, `--mode ignore`) racing to
create one new table: exactly one creates it; the others find it made and fail (error) or
skip (ignore), never appending their rows to the winner's."""
from __future__ import annotations

import subprocess

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import readers
from conftest import cli_env, cli_path


@pytest.mark.parametrize("mode,loser_exit", [("error", 2), ("ignore", 0)])
def test_racing_creators_of_one_new_table_write_it_once(tmp_path, mode, loser_exit):
    source = tmp_path / "rows.arrow"
    data = pa.table({"block_num": pa.array([1, 2, 3, 4], pa.int64())})
    with ipc.new_file(source, data.schema) as out:
        out.write_table(data)
    table = tmp_path / "new" / "t"
    writers = [subprocess.Popen([str(cli_path()), "table", "write", str(table), "--input",
                                 str(source), "--mode", mode], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=cli_env())
               for _ in range(6)]
    outcomes = [(w.wait(timeout=120), w.stdout.read(), w.stderr.read()) for w in writers]
    created = [o for o in outcomes if o[0] == 0 and "version=0" in o[1]]
    assert len(created) == 1, outcomes
    assert all(o[0] == loser_exit for o in outcomes if o not in created), outcomes
    assert sorted(readers.read_deltalake(table).column("block_num").to_pylist()) == [1, 2, 3, 4]
    assert sorted(p.name for p in (table / "_delta_log").glob("*.json")) == [
        "00000000000000000000.json"]
