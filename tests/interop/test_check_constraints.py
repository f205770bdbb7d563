"""CHECK constraints Spark adds (`ALTER TABLE … ADD CONSTRAINT`, writer feature
`checkConstraints`): ampdelta enforces them on every row it adds, refusing a write with a
violating row (naming constraint, row and value, the table as it was), and refuses to
write a table whose constraint it cannot evaluate, while maintenance (delete, optimize)
goes on; Spark reads back what ampdelta wrote.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc

import readers
from conftest import cli_env, cli_path


def run_cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(cli_path()), *map(str, args)], capture_output=True, text=True,
                          env=cli_env(), timeout=180, stdin=subprocess.DEVNULL)


def write(tmp_path: Path, table: Path, ids: list, names: list) -> subprocess.CompletedProcess:
    source = tmp_path / f"input-{len(list(tmp_path.glob('input-*')))}.arrow"
    data = pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array(names, pa.utf8())})
    with ipc.new_file(source, data.schema) as out:
        out.write_table(data)
    return run_cli("table", "write", table, "--input", source)


def log(table: Path) -> list[str]:
    return sorted(p.name for p in (table / "_delta_log").iterdir())


def spark_ids(table: Path) -> list[int]:
    return sorted(readers.read_spark(table).column("id").to_pylist())


def test_spark_constraints_hold_for_every_row_ampdelta_adds(tmp_path):
    table = tmp_path / "constrained"
    assert write(tmp_path, table, [1, 2], ["a", "b"]).returncode == 0
    spark = readers.spark_session()
    spark.sql(f"ALTER TABLE delta.`{table}` ADD CONSTRAINT id_positive CHECK (id > 0)")
    spark.sql(f"ALTER TABLE delta.`{table}` ADD CONSTRAINT named CHECK (name IS NOT NULL)")
    assert write(tmp_path, table, [3, 4], ["c", "d"]).returncode == 0
    before = log(table)
    refused = write(tmp_path, table, [5, -6], ["e", "f"])
    assert refused.returncode == 2, refused.stderr
    assert "CHECK constraint id_positive" in refused.stderr, refused.stderr
    assert "row 1 of the batch: id=-6" in refused.stderr, refused.stderr
    unnamed = write(tmp_path, table, [7], [None])
    assert unnamed.returncode == 2 and "CHECK constraint named" in unnamed.stderr
    assert log(table) == before
    assert spark_ids(table) == [1, 2, 3, 4]
    # Spark keeps writing too, under the same constraints.
    spark.sql(f"INSERT INTO delta.`{table}` VALUES (8, 'h')")
    assert write(tmp_path, table, [9], ["i"]).returncode == 0
    assert spark_ids(table) == [1, 2, 3, 4, 8, 9]


def test_a_constraint_ampdelta_cannot_evaluate_stops_writes_but_not_maintenance(tmp_path):
    table = tmp_path / "even"
    assert write(tmp_path, table, [2, 4], ["a", "b"]).returncode == 0
    assert write(tmp_path, table, [6], ["c"]).returncode == 0
    readers.spark_session().sql(
        f"ALTER TABLE delta.`{table}` ADD CONSTRAINT even CHECK (id % 2 = 0)")
    before = log(table)
    refused = write(tmp_path, table, [8], ["d"])
    assert refused.returncode == 6, refused.stderr  # an unsupported feature
    assert "CHECK constraint even" in refused.stderr and "id % 2 = 0" in refused.stderr
    assert log(table) == before
    # Deletes and compaction add no rows: they go on.
    assert run_cli("table", "delete", table, "--where", "id = 4").returncode == 0
    assert run_cli("table", "optimize", table).returncode == 0
    assert spark_ids(table) == [2, 6]


def test_constraints_as_spark_prints_them_are_enforced_not_refused(tmp_path):
    """Spark records `CHECK (tick >= -887272)` as `tick >= - 887272` and compares a SMALLINT
    with 40000 as INTs (issue 51): ampdelta writes under such constraints, and refuses only
    the rows Spark would refuse."""
    table = tmp_path / "ticks"
    spark = readers.spark_session()
    spark.sql(f"CREATE TABLE delta.`{table}` (id BIGINT, tick INT, n SMALLINT, name STRING) "
              "USING delta")
    for name, check in [("tick_low", "tick >= -887272"), ("n_small", "n < 40000"),
                        ("either", "(id BETWEEN -5 AND 5) OR name IN ('x', 'y')"),
                        ("not_three", "NOT (id = 3)")]:
        spark.sql(f"ALTER TABLE delta.`{table}` ADD CONSTRAINT {name} CHECK ({check})")
    stored = {row[0]: row[1] for row in spark.sql(f"SHOW TBLPROPERTIES delta.`{table}`")
              .collect() if row[0].startswith("delta.constraints.")}
    assert stored["delta.constraints.tick_low"] == "tick >= - 887272", stored

    def rows(ids, ticks, names):
        source = tmp_path / f"input-{len(list(tmp_path.glob('input-*')))}.arrow"
        data = pa.table({"id": pa.array(ids, pa.int64()), "tick": pa.array(ticks, pa.int32()),
                         "n": pa.array([32767] * len(ids), pa.int16()),
                         "name": pa.array(names, pa.utf8())})
        with ipc.new_file(source, data.schema) as out:
            out.write_table(data)
        return run_cli("table", "write", table, "--input", source)

    written = rows([-5, 5, 100], [-887272, 887272, 0], ["a", "b", "x"])
    assert written.returncode == 0, written.stderr
    before = log(table)
    low = rows([1], [-887273], ["a"])
    assert low.returncode == 2 and "CHECK constraint tick_low" in low.stderr, low.stderr
    outside = rows([100], [0], ["z"])
    assert outside.returncode == 2 and "CHECK constraint either" in outside.stderr
    three = rows([3], [0], ["a"])
    assert three.returncode == 2 and "CHECK constraint not_three" in three.stderr
    assert log(table) == before
    assert spark_ids(table) == [-5, 5, 100]
    scanned = run_cli("table", "scan", table, "--where", "id > - 5", "--format", "csv")
    assert scanned.returncode == 0, scanned.stderr
    assert scanned.stdout.splitlines()[1:] == ["5,887272,32767,b", "100,0,32767,x"], scanned.stdout
