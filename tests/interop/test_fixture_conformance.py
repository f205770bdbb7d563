"""Log-replay conformance of the ampdelta CLI against deltalake (delta-rs) on the shared fixture tables.

Every directory holding a `_delta_log` under ../shared/fixtures/{delta-rs,delta-golden,delta-rs-broken-logs}
is one table and one test id (its path relative to ../shared/fixtures). For each table:

* `test_latest_snapshot`: when deltalake opens the table, `ampdelta table info|files --json` must succeed
  and agree with it on version, protocol (min versions and feature sets), metadata (id, partition columns,
  configuration), schema (names, nullability, Delta type names), app transactions, the live files
  (paths, sizes, per-file record counts, deletion-vector cardinalities, the set of partition values) and the
  live row count (where ampdelta reports one). When deltalake refuses the table, ampdelta must fail cleanly
  (exit code 6, table unsupported or damaged, or 2, bad input such as a version past the latest; one
  `ampdelta: error:` line), unless the table is in DELTALAKE_LIMITATIONS. Tables in
  MUST_REFUSE must be refused whatever deltalake does, with an error that says what is wrong.
  Tables in AMPDELTA_UNSUPPORTED use reader features ampdelta does not implement: the protocol obliges a
  reader to refuse them, so a clean refusal naming the feature is the expected outcome.
* `test_time_travel`: the same comparison at every earlier version (`DeltaTable(path, version=v)` against
  `--version v`); for tables with more than MAX_TIME_TRAVEL_VERSIONS versions, and for tables refused at
  their latest version, at a sample of versions. A version past the latest must be a clean error.
* `test_history`: `ampdelta table history --json --limit N` lists the same versions, newest first, as
  deltalake's `DeltaTable.history(N)`.
* `test_schemaless_golden_table_with_schema_added`: golden tables refused only because their metaData has
  no schemaString, copied with one added, must give the answers Delta's own tests expect.

Row counts: deltalake's per-file `numRecords` minus the rows its deletion vectors actually delete
(`DeltaTable.deletion_vectors()`); where deltalake has no stats, its DataFusion scan (or, for tables it will
not scan and which cannot have DVs, the Parquet footers of its live files).

Runtime: the CLI is an ASan build (~0.1 s of CPU per run), so runs are started in the background while
deltalake does its part; the module takes about 1-2 minutes on two cores.

Never a crash: every CLI run must exit 0 or with an error class (2-6, never 1: internal) and no
sanitizer report.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import FIXTURES_DIR, cli_env, cli_path, fixtures_dir

deltalake = pytest.importorskip("deltalake")
pa = pytest.importorskip("pyarrow")

FIXTURE_GROUPS = ("delta-rs", "delta-golden", "delta-rs-broken-logs")
MAX_TIME_TRAVEL_VERSIONS = 20  # every version below the latest when the table has at most this many
TIME_TRAVEL_SAMPLE = 6         # otherwise this many versions spread over the range
REFUSED_TIME_TRAVEL_SAMPLE = 4  # versions checked below the latest of a table deltalake refuses
HISTORY_LIMIT = 5
CLI_TIMEOUT_S = 60

# Tables deltalake refuses although they are readable: ampdelta may open them (if it does, its answer is
# only checked for internal consistency; if it refuses, the refusal must still be clean).
# (None at present: every table deltalake 1.6.6 refuses is also malformed or uses a feature ampdelta
# refuses too. Add entries as `"group/table": "reason"`.)
DELTALAKE_LIMITATIONS: dict[str, str] = {}

# Tables deltalake reads but ampdelta refuses by design: reader features ampdelta does not implement.
# PROTOCOL.md "Table Features": a reader must not read a table whose readerFeatures it does not support,
# so a clean refusal naming the feature is correct. value: (reason, regex the error must match)
AMPDELTA_UNSUPPORTED: dict[str, tuple[str, str]] = {
    "delta-golden/spark-variant-checkpoint": (
        "reader feature variantType-preview (variant type) is not implemented by ampdelta",
        r"reader features.*variantType-preview"),
    "delta-rs/spark-variant-checkpoint": (
        "reader feature variantType-preview (variant type) is not implemented by ampdelta",
        r"reader features.*variantType-preview"),
    "delta-rs/spark-variant-stable-feature-checkpoint": (
        "reader feature variantType (variant type) is not implemented by ampdelta",
        r"reader features.*variantType"),
    "delta-rs/spark-shredded-variant-preview-delta": (
        "reader features variantType + variantShredding-preview are not implemented by ampdelta",
        r"reader features.*variant"),
}

# Tables that must be refused whatever deltalake does, and a regex (case-insensitive) the one-line error
# must match, naming what is wrong.
_NO_SCHEMA_STRING = r"schemaString"  # Spark test generators wrote metaData without the required schemaString
MUST_REFUSE: dict[str, str] = {
    # synthetic protocol: readerVersion 5 with readerFeatures incl. the unknown "blahabl"
    "delta-rs/simple_table_features": r"reader",
    "delta-golden/versions-not-contiguous": r"not contiguous",
    "delta-golden/deltalog-state-reconstruction-without-protocol": r"no protocol",
    "delta-golden/deltalog-state-reconstruction-without-metadata": r"no metaData",
    "delta-golden/deltalog-state-reconstruction-from-checkpoint-missing-metadata": r"no metaData",
    # The checkpoint lacks protocol, and every metaData in it and in the commits lacks schemaString:
    # either defect is a correct reason to refuse.
    "delta-golden/deltalog-state-reconstruction-from-checkpoint-missing-protocol":
        r"no protocol|" + _NO_SCHEMA_STRING,
    # protocol (99, 7) with reader features: unsupported reader version
    "delta-golden/deltalog-invalid-protocol-version": r"reader version 99",
    # the only metaData-less log: protocol + adds with absolute paths, never a metaData action
    "delta-golden/data-reader-absolute-paths-escaped-chars": r"no metaData",
    # delta-rs data_err_logs (crates/core/tests/exotic_tables.rs expects an error for c, d, e, f, h, i)
    "delta-rs-broken-logs/table_c": r"not contiguous",  # commit 12 missing, no checkpoint after it
    "delta-rs-broken-logs/table_d": r"catalogOwned",    # (3,7) catalogOwned: a catalog-managed table
    "delta-rs-broken-logs/table_e": r"catalogOwned",
    "delta-rs-broken-logs/table_f": r"catalogOwned",
    "delta-rs-broken-logs/table_h": r"catalogOwned",
    "delta-rs-broken-logs/table_i": r"catalogOwned",
    # metaData without schemaString (PROTOCOL.md: schemaString is required) in the latest metadata
    "delta-golden/canonicalized-paths-normal-a": _NO_SCHEMA_STRING,
    "delta-golden/canonicalized-paths-normal-b": _NO_SCHEMA_STRING,
    "delta-golden/canonicalized-paths-special-a": _NO_SCHEMA_STRING,
    "delta-golden/canonicalized-paths-special-b": _NO_SCHEMA_STRING,
    "delta-golden/corrupted-last-checkpoint": _NO_SCHEMA_STRING,
    "delta-golden/deltalog-commit-info": _NO_SCHEMA_STRING,
    "delta-golden/update-deleted-directory": _NO_SCHEMA_STRING,
}

SANITIZER_MARKERS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
                     "runtime error:", "Segmentation fault", "terminate called")


# ---------------------------------------------------------------------------------------------------------
# Table discovery


def discover_tables(root: Path) -> list[str]:
    """Relative paths (to `root`) of every directory under the fixture groups that holds a `_delta_log`."""
    tables = []
    for group in FIXTURE_GROUPS:
        base = root / group
        if not base.is_dir():
            continue
        for dirpath, dirnames, _ in os.walk(base):
            dirnames.sort()
            if "_delta_log" in dirnames:
                tables.append(Path(dirpath).relative_to(root).as_posix())
                dirnames.remove("_delta_log")
    return sorted(tables)


TABLES = discover_tables(FIXTURES_DIR) if FIXTURES_DIR.is_dir() else []
# Without the fixtures, one placeholder test reports the skip (or the failure under CI=true).
TABLE_PARAMS = TABLES or ["<fixtures missing>"]


def table_path(rel: str) -> Path:
    root = fixtures_dir()  # skips, or fails under CI=true, when the fixtures are missing
    path = root / rel
    if not (path / "_delta_log").is_dir():
        pytest.fail(f"fixture table vanished: {path}", pytrace=False)
    return path


def test_discovery_covers_every_fixture_group():
    root = fixtures_dir()
    found = discover_tables(root)
    for group in FIXTURE_GROUPS:
        in_group = [t for t in found if t.startswith(group + "/")]
        assert in_group, f"no tables found under {root / group}"
    # nested layouts: golden tables one level deeper, delta-rs/golden holding one table
    assert "delta-rs/golden/data-reader-array-primitives" in found
    assert any(t.startswith("delta-golden/hive/") for t in found)
    assert any(t.startswith("delta-golden/data-reader-date-types-") and t.count("/") == 2 for t in found)
    for listed in (*MUST_REFUSE, *AMPDELTA_UNSUPPORTED, *DELTALAKE_LIMITATIONS):
        assert listed in found, f"allow-/refuse-list entry {listed!r} is not a fixture table"


# ---------------------------------------------------------------------------------------------------------
# Running the CLI


@dataclass
class CliRun:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    def describe(self) -> str:
        return (f"$ ampdelta {' '.join(self.args)}\nexit code {self.returncode}\n"
                f"stderr:\n{self.stderr.strip()[:3000]}")

    def error_line(self) -> str:
        lines = [line for line in self.stderr.splitlines() if line.startswith("ampdelta: error:")]
        return lines[0] if lines else ""


class PendingRun:
    """A CLI run started in the background (so runs overlap each other and the deltalake work)."""

    def __init__(self, *args: str):
        self.argv = [str(a) for a in args]
        self.proc = subprocess.Popen([str(cli_path()), *self.argv], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, errors="replace", env=cli_env())

    def result(self) -> CliRun:
        try:
            stdout, stderr = self.proc.communicate(timeout=CLI_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            stdout, stderr = self.proc.communicate()
            pytest.fail(f"ampdelta {' '.join(self.argv)} timed out after {CLI_TIMEOUT_S} s", pytrace=False)
        run = CliRun(self.argv, self.proc.returncode, stdout, stderr)
        assert_no_crash(run)
        return run


def run_cli(*args: str) -> CliRun:
    return PendingRun(*args).result()


def assert_no_crash(run: CliRun) -> None:
    assert run.returncode in (0, 2, 3, 4, 5, 6), (
        f"CLI crashed or failed without an error class (exit code {run.returncode}):\n"
        f"{run.describe()}")
    for marker in SANITIZER_MARKERS:
        assert marker not in run.stderr, f"sanitizer/crash report ({marker!r}):\n{run.describe()}"


def assert_clean_failure(run: CliRun, must_match: str | None = None) -> None:
    assert run.returncode in (2, 6), (
        f"expected a clean failure (exit code 6, or 2 for bad input):\n{run.describe()}")
    error_lines = [line for line in run.stderr.splitlines() if line.startswith("ampdelta: error:")]
    assert len(error_lines) == 1, f"expected exactly one 'ampdelta: error:' line:\n{run.describe()}"
    # Anything else on stderr must be ampdelta's own log lines (e.g. a warning about a skipped checkpoint).
    others = [line for line in run.stderr.splitlines()
              if line.strip() and not line.startswith(("ampdelta: error:", "[ampdelta "))]
    assert not others, f"unexpected stderr lines {others!r}:\n{run.describe()}"
    if must_match is not None:
        assert re.search(must_match, error_lines[0], re.IGNORECASE), (
            f"error message does not say what is wrong (expected /{must_match}/):\n{run.describe()}")


def cli_json(run: CliRun):
    assert run.returncode == 0, f"ampdelta failed:\n{run.describe()}"
    try:
        return json.loads(run.stdout)
    except json.JSONDecodeError as exc:
        pytest.fail(f"ampdelta printed invalid JSON ({exc}):\n{run.stdout[:2000]}", pytrace=False)


# ---------------------------------------------------------------------------------------------------------
# Views of one snapshot, from each side, in a common normal form


@dataclass
class View:
    version: int
    protocol: dict
    metadata_id: str
    partition_columns: list[str]
    configuration: dict
    schema: list[tuple[str, str, bool]]      # top-level (name, Delta type name, nullable)
    schema_tree: object                       # recursive normal form of the whole schema
    files: dict[str, dict]                    # decoded table-relative path -> {size, num_records, deleted}
    partitions: set[tuple]                    # distinct partition-value maps, as sorted item tuples
    num_records: int | None                   # live rows (None when unknown)
    app_transactions: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def delta_type_name(t) -> str:
    """The Delta type name of a schema JSON type: "long", "decimal(10,2)", "struct", "array", "map"."""
    if isinstance(t, dict):
        return t["type"]
    return re.sub(r"\s+", "", t)


def schema_tree(t):
    """Recursive normal form of a schema JSON type: names, type names, nullability; no field metadata."""
    if isinstance(t, str):
        return re.sub(r"\s+", "", t)
    kind = t["type"]
    if kind == "struct":
        return ("struct", tuple((f["name"], schema_tree(f["type"]), bool(f.get("nullable", True)))
                                for f in t["fields"]))
    if kind == "array":
        return ("array", schema_tree(t["elementType"]), bool(t.get("containsNull", True)))
    if kind == "map":
        return ("map", schema_tree(t["keyType"]), schema_tree(t["valueType"]),
                bool(t.get("valueContainsNull", True)))
    return kind


def features(value) -> frozenset:
    """A feature list as a set; absent and empty are the same (deltalake drops an empty `readerFeatures`)."""
    return frozenset(value or ())


def normal_partitions(values: dict, physical_to_logical: dict[str, str] | None = None) -> tuple:
    names = physical_to_logical or {}
    return tuple(sorted((names.get(k, k), v) for k, v in values.items()))


def physical_to_logical_names(schema_json: dict) -> dict[str, str]:
    """Column mapping: top-level physical column name -> logical name (empty without column mapping).

    The log keys `add.partitionValues` by physical name; deltalake's `partitions()` uses logical names.
    """
    names = {}
    for f in schema_json.get("fields", []):
        physical = (f.get("metadata") or {}).get("delta.columnMapping.physicalName")
        if physical:
            names[physical] = f["name"]
    return names


def relative_to_table(uri: str, table: Path) -> str:
    """deltalake's file URI (a local path or file:// URL, already percent-decoded) made table-relative."""
    if uri.startswith("file://"):
        uri = urllib.parse.unquote(urllib.parse.urlparse(uri).path)
    root = str(table.resolve())
    if uri.startswith(root + "/"):
        return uri[len(root) + 1:]
    return uri


def decode_log_path(path: str, table: Path) -> str:
    """ampdelta's log path (URI-encoded, as in the log) percent-decoded once and made table-relative."""
    if "://" in path or path.startswith("file:"):
        decoded = urllib.parse.unquote(urllib.parse.urlparse(path).path)
    else:
        decoded = urllib.parse.unquote(path)
    root = str(table.resolve())
    if decoded.startswith(root + "/"):
        return decoded[len(root) + 1:]
    return decoded


def deltalake_view(table: Path, version: int | None = None) -> View:
    """deltalake's view of the table (raises when deltalake refuses it)."""
    dt = deltalake.DeltaTable(str(table), version=version)
    proto = dt.protocol()
    meta = dt.metadata()
    schema_json = json.loads(dt.schema().to_json())
    notes: list[str] = []

    adds = pa.table(dt.get_add_actions(flatten=False)).to_pylist()
    files: dict[str, dict] = {}
    uris = dt.file_uris()
    by_raw = {a["path"]: a for a in adds}
    for uri, add in zip(uris, adds):
        files[relative_to_table(uri, table)] = {
            "size": add["size_bytes"], "num_records": add["num_records"], "deleted": 0, "raw": add["path"]}
    if len(files) != len(uris) or len(by_raw) != len(adds):
        notes.append("deltalake lists duplicate files")

    # Deletion vectors: deleted rows per file, from the DV contents (not the log's cardinality).
    has_dv = False
    try:
        for row in pa.table(dt.deletion_vectors()).to_pylist():
            has_dv = True
            rel = relative_to_table(row["filepath"], table)
            if rel in files:
                files[rel]["deleted"] = sum(1 for keep in row["selection_vector"] if not keep)
            else:
                notes.append(f"deltalake DV for unlisted file {rel}")
    except Exception as exc:  # deltalake cannot materialise the DVs: row counts unknown
        notes.append(f"deltalake deletion_vectors() failed: {type(exc).__name__}: {str(exc)[:200]}")
        for f in files.values():
            f["deleted"] = None
        has_dv = None

    num_records = None
    if files and all(f["num_records"] is not None for f in files.values()) and has_dv is not None:
        num_records = sum(f["num_records"] - f["deleted"] for f in files.values())
    elif not files:
        num_records = 0

    partitions = {normal_partitions(p) for p in dt.partitions()}
    return View(
        version=dt.version(),
        protocol={"minReaderVersion": proto.min_reader_version, "minWriterVersion": proto.min_writer_version,
                  "readerFeatures": features(proto.reader_features),
                  "writerFeatures": features(proto.writer_features)},
        metadata_id=meta.id,
        partition_columns=list(meta.partition_columns),
        configuration=dict(meta.configuration),
        schema=[(f["name"], delta_type_name(f["type"]), bool(f["nullable"])) for f in schema_json["fields"]],
        schema_tree=schema_tree(schema_json),
        files=files,
        partitions=partitions,
        num_records=num_records,
        notes=notes,
    )


def deltalake_row_count_by_scan(table: Path, version: int | None) -> tuple[int, str]:
    """Live rows counted from the data: deltalake's DataFusion scan (applies DVs) or, when deltalake will
    not scan the table (it refuses e.g. vacuumProtocolCheck and typeWidening-preview tables for
    everything but metadata) and the protocol rules out deletion vectors, the Parquet footers of
    deltalake's live files."""
    dt = deltalake.DeltaTable(str(table), version=version)
    try:
        result = deltalake.QueryBuilder().register("t", dt).execute("SELECT count(*) AS n FROM t").read_all()
        return pa.table(result).column("n")[0].as_py(), "deltalake scan"
    except Exception:
        if "deletionVectors" in (dt.protocol().reader_features or ()):
            raise
    import pyarrow.parquet as pq
    return sum(pq.ParquetFile(uri).metadata.num_rows for uri in dt.file_uris()), \
        "Parquet footers of deltalake's files"


class PendingAmpdeltaView:
    """`ampdelta table info` and `table files` for one snapshot, running in the background."""

    def __init__(self, table: Path, version: int | None = None):
        self.extra = [] if version is None else ["--version", str(version)]
        self.table = table
        self.info = PendingRun("table", "info", str(table), "--json", *self.extra)

    def result(self) -> View | CliRun:
        """ampdelta's view of the table, or the failed CliRun when it refuses."""
        info_run = self.info.result()
        if info_run.returncode != 0:
            return info_run  # (`table files` is not run: the CLI is an ASan build, runs are not free)
        files_run = run_cli("table", "files", str(self.table), "--json", *self.extra)
        if files_run.returncode != 0:
            return files_run
        return parse_ampdelta_view(self.table, cli_json(info_run), cli_json(files_run))


def ampdelta_view(table: Path, version: int | None = None) -> View | CliRun:
    """ampdelta's view of the table, or the failed CliRun when it refuses."""
    return PendingAmpdeltaView(table, version).result()


def parse_ampdelta_view(table: Path, info: dict, file_list: list) -> View:
    proto = info["protocol"]
    schema_json = json.loads(info["schema_string"])
    mapped_names = physical_to_logical_names(schema_json)
    files = {}
    for f in file_list:
        files[decode_log_path(f["path"], table)] = {
            "size": f["size"], "num_records": f["num_records"], "deleted": f.get("deleted_rows") or 0,
            "raw": f["path"]}
    # `table info` totals must agree with `table files`
    notes = []
    if info["num_files"] != len(file_list):
        notes.append(f"info.num_files={info['num_files']} but `table files` lists {len(file_list)}")
    if info["size_bytes"] != sum(f["size"] for f in file_list):
        notes.append(f"info.size_bytes={info['size_bytes']} but the files sum to "
                     f"{sum(f['size'] for f in file_list)}")
    if info["num_records"] is not None and all(f["num_records"] is not None for f in file_list):
        live = sum(f["num_records"] - (f.get("deleted_rows") or 0) for f in file_list)
        if info["num_records"] != live:
            notes.append(f"info.num_records={info['num_records']} but files give {live} live rows")
    return View(
        version=info["version"],
        protocol={"minReaderVersion": proto["minReaderVersion"], "minWriterVersion": proto["minWriterVersion"],
                  "readerFeatures": features(proto.get("readerFeatures")),
                  "writerFeatures": features(proto.get("writerFeatures"))},
        metadata_id=info["id"],
        partition_columns=list(info["partition_columns"]),
        configuration=dict(info["configuration"]),
        schema=[(f["name"], delta_type_name(f["type"]), bool(f["nullable"])) for f in info["schema"]],
        schema_tree=schema_tree(schema_json),
        files=files,
        partitions={normal_partitions(f["partition_values"], mapped_names)
                    for f in file_list if f["partition_values"]},
        num_records=info["num_records"],
        app_transactions=dict(info.get("app_transactions") or {}),
        notes=notes,
    )


def compare_views(table: Path, amp: View, ref: View, version: int | None) -> list[str]:
    """Differences between ampdelta's and deltalake's view, as human-readable lines."""
    diffs: list[str] = []

    def check(what: str, ours, theirs):
        if ours != theirs:
            diffs.append(f"{what}: ampdelta={ours!r} deltalake={theirs!r}")

    check("version", amp.version, ref.version)
    check("protocol", amp.protocol, ref.protocol)
    check("metadata id", amp.metadata_id, ref.metadata_id)
    check("partition columns", amp.partition_columns, ref.partition_columns)
    check("configuration", amp.configuration, ref.configuration)
    check("schema (top-level name, type, nullable)", amp.schema, ref.schema)
    if amp.schema_tree != ref.schema_tree:
        diffs.append("schema (nested): schema_string differs structurally from deltalake's schema")
    missing = sorted(set(ref.files) - set(amp.files))
    extra = sorted(set(amp.files) - set(ref.files))
    if missing or extra:
        diffs.append(f"live files: {len(amp.files)} (ampdelta) vs {len(ref.files)} (deltalake); "
                     f"missing in ampdelta {missing[:5]}{'…' if len(missing) > 5 else ''}, "
                     f"extra in ampdelta {extra[:5]}{'…' if len(extra) > 5 else ''}")
    for path in sorted(set(amp.files) & set(ref.files)):
        a, r = amp.files[path], ref.files[path]
        check(f"file {path}: size", a["size"], r["size"])
        # deltalake ignores `stats_parsed` in checkpoints (delta-1.2.1-only-struct-stats: None there);
        # a count only ampdelta has is checked through the table's row count (a scan) below.
        if r["num_records"] is not None:
            check(f"file {path}: stats numRecords", a["num_records"], r["num_records"])
        if r["deleted"] is not None:
            check(f"file {path}: deleted rows (DV cardinality vs DV contents)", a["deleted"], r["deleted"])
    check("partition values (distinct)", amp.partitions, ref.partitions)
    for app_id, txn_version in amp.app_transactions.items():
        dt = deltalake.DeltaTable(str(table), version=version)
        check(f"app transaction {app_id!r}", txn_version, dt.transaction_version(app_id))
    if amp.num_records is None and ref.num_records is not None and ref.files:
        diffs.append(f"num_records: ampdelta=None although every file has stats in deltalake "
                     f"(live rows {ref.num_records})")
    if amp.num_records is not None:
        expected = ref.num_records
        how = "deltalake stats - DV cardinality"
        if expected is None:
            try:
                expected, how = deltalake_row_count_by_scan(table, version)
            except Exception as exc:
                ref.notes.append(f"no deltalake row count: {type(exc).__name__}: {str(exc)[:200]}")
        if expected is not None and amp.num_records != expected:
            diffs.append(f"num_records: ampdelta={amp.num_records} {how}={expected}")
    diffs.extend(f"ampdelta inconsistency: {n}" for n in amp.notes)
    return diffs


# ---------------------------------------------------------------------------------------------------------
# The tests


def check_snapshot(rel: str, table: Path, version: int | None) -> list[str]:
    """Compare one snapshot; return problems (empty when ampdelta behaves as expected)."""
    at = "latest" if version is None else f"version {version}"
    pending = PendingAmpdeltaView(table, version)
    try:
        ref = deltalake_view(table, version)
        ref_error = None
    except Exception as exc:
        ref, ref_error = None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
    amp = pending.result()

    if ref is None:
        if isinstance(amp, CliRun):
            try:
                assert_clean_failure(amp)
            except AssertionError as exc:
                return [f"{at}: {exc}"]
            return []
        if rel in DELTALAKE_LIMITATIONS:
            return [f"{at}: ampdelta inconsistency: {n}" for n in amp.notes]
        return [f"{at}: deltalake refuses ({ref_error}) but ampdelta opens the table "
                f"(version {amp.version}, {len(amp.files)} files); if deltalake is wrong, add it to "
                f"DELTALAKE_LIMITATIONS with the reason"]
    if isinstance(amp, CliRun):
        return [f"{at}: deltalake opens the table (version {ref.version}, {len(ref.files)} files) "
                f"but ampdelta fails:\n{amp.describe()}"]
    return [f"{at}: {d}" for d in compare_views(table, amp, ref, version)]


@pytest.mark.parametrize("rel", TABLE_PARAMS)
def test_latest_snapshot(rel):
    table = table_path(rel)
    if rel in MUST_REFUSE:
        for command in ("info", "files"):
            assert_clean_failure(run_cli("table", command, str(table), "--json"), MUST_REFUSE[rel])
        return
    if rel in AMPDELTA_UNSUPPORTED:
        run = run_cli("table", "info", str(table), "--json")
        if run.returncode != 0:
            assert_clean_failure(run, AMPDELTA_UNSUPPORTED[rel][1])
            assert_clean_failure(run_cli("table", "files", str(table), "--json"), AMPDELTA_UNSUPPORTED[rel][1])
            return
        # ampdelta supports the feature now: fall through to the comparison (and drop the entry)
    problems = check_snapshot(rel, table, None)
    assert not problems, f"{rel}:\n" + "\n".join(problems)


def versions_to_check(latest: int, limit: int = MAX_TIME_TRAVEL_VERSIONS) -> list[int]:
    """The versions before `latest` to time-travel to: all of them up to `limit`, else a spread sample."""
    if latest <= limit:
        return list(range(latest))
    sample = min(TIME_TRAVEL_SAMPLE, limit)
    step = latest / sample
    return sorted({int(i * step) for i in range(sample)} | {latest - 1})


def newest_log_version(table: Path) -> int:
    """The highest version any commit or checkpoint file in `_delta_log` names."""
    versions = [int(f.name[:20]) for f in (table / "_delta_log").iterdir() if re.match(r"\d{20}\.", f.name)]
    return max(versions, default=0)


@pytest.mark.parametrize("rel", TABLE_PARAMS)
def test_time_travel(rel):
    """Every earlier version (a sample of them for long logs) against deltalake at that version.

    Tables refused at their latest version are checked too: their earlier versions may be fine
    (delta-rs-broken-logs/table_c reads at 0-11 and breaks at 12), and where they are not, ampdelta must
    refuse them cleanly like deltalake does.
    """
    table = table_path(rel)
    try:
        latest = deltalake.DeltaTable(str(table)).version()
        deltalake_opens_latest = True
    except Exception:
        latest = newest_log_version(table)
        deltalake_opens_latest = False
    problems = []
    # Tables refused at their latest version: a sample of earlier versions is enough.
    limit = MAX_TIME_TRAVEL_VERSIONS if deltalake_opens_latest else REFUSED_TIME_TRAVEL_SAMPLE
    for version in versions_to_check(latest, limit):
        if rel in AMPDELTA_UNSUPPORTED:
            run = run_cli("table", "info", str(table), "--json", "--version", str(version))
            if run.returncode != 0:
                try:
                    assert_clean_failure(run, AMPDELTA_UNSUPPORTED[rel][1])
                except AssertionError as exc:
                    problems.append(f"version {version}: {exc}")
                continue
        problems += check_snapshot(rel, table, version)
    if deltalake_opens_latest:
        # a version past the end must be a clean error
        beyond = run_cli("table", "info", str(table), "--json", "--version", str(latest + 1))
        try:
            assert_clean_failure(beyond)
        except AssertionError as exc:
            problems.append(f"version {latest + 1} (beyond the latest): {exc}")
    assert not problems, f"{rel}:\n" + "\n".join(problems)


@pytest.mark.parametrize("rel", TABLE_PARAMS)
def test_history(rel):
    table = table_path(rel)
    run = run_cli("table", "history", str(table), "--json", "--limit", str(HISTORY_LIMIT))
    try:
        dt = deltalake.DeltaTable(str(table))
        ref = [entry["version"] for entry in dt.history(HISTORY_LIMIT)]
    except Exception:
        if run.returncode != 0:
            assert_clean_failure(run)
        return  # history needs no snapshot: ampdelta may list a log deltalake cannot open
    if rel in AMPDELTA_UNSUPPORTED and run.returncode != 0:
        assert_clean_failure(run, AMPDELTA_UNSUPPORTED[rel][1])
        return
    versions = [e["version"] for e in cli_json(run)]
    # deltalake's history stops at a gap in the commit files (delta-rs-broken-logs/table_g: commits 0-13
    # and 9999); ampdelta lists every commit file. Compare the contiguous run down from the latest.
    contiguous = versions[:1]
    for v in versions[1:]:
        if v != contiguous[-1] - 1:
            break
        contiguous.append(v)
    assert contiguous == ref, f"history versions: ampdelta={versions} deltalake={ref}"


# ---------------------------------------------------------------------------------------------------------
# Golden tables whose metaData has no schemaString (the Spark test generator wrote none). Refusing them is
# right (test_latest_snapshot), but it hides what they were written to test. Copies with a schemaString
# added to every metaData (commits and checkpoints) must give the answers Delta's own tests expect
# (delta-io/delta connectors standalone DeltaLogSuite).

PATCHED_SCHEMA = json.dumps(
    {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]})

# table -> expected (version, sorted live file keys) or an error regex
SCHEMALESS_GOLDEN_EXPECTED: dict[str, tuple[int, list[str]] | str] = {
    # add '/some/unqualified/absolute/path' removed as 'file:/some/…' (a) or the other way round (b):
    # the same file once paths are canonicalised, so the table is empty at version 1
    "canonicalized-paths-normal-a": (1, []),
    "canonicalized-paths-normal-b": (1, []),
    "canonicalized-paths-special-a": (1, []),
    "canonicalized-paths-special-b": (1, []),
    # checkpoint 10 (+ _last_checkpoint) and commits 0-10: the files 0..10
    "corrupted-last-checkpoint": (10, sorted(str(i) for i in range(11))),
    "update-deleted-directory": (0, sorted(str(i) for i in range(1, 11))),
    "deltalog-commit-info": (0, ["abc"]),
    # the checkpoint at 10 lacks protocol / metaData: the state cannot be reconstructed
    "deltalog-state-reconstruction-from-checkpoint-missing-protocol": r"no protocol",
    "deltalog-state-reconstruction-from-checkpoint-missing-metadata": r"no metaData",
}

# deltalake answers differently on these patched copies, and is wrong: delta-kernel-rs does not canonicalise
# paths during log replay (its golden tests skip them: "BUG: path canonicalization").
SCHEMALESS_DELTALAKE_WRONG = {
    "canonicalized-paths-normal-a", "canonicalized-paths-normal-b",
    "canonicalized-paths-special-a", "canonicalized-paths-special-b",
}


def copy_with_schema_string(src: Path, dst: Path) -> Path:
    import shutil

    import pyarrow.parquet as pq

    shutil.copytree(src, dst)
    for f in sorted((dst / "_delta_log").iterdir()):
        f.chmod(0o644)
        if re.fullmatch(r"\d{20}\.json", f.name):
            lines = []
            for line in f.read_text().splitlines():
                action = json.loads(line)
                if "metaData" in action and action["metaData"].get("schemaString") is None:
                    action["metaData"]["schemaString"] = PATCHED_SCHEMA
                lines.append(json.dumps(action))
            f.write_text("\n".join(lines) + "\n")
        elif f.name.endswith(".checkpoint.parquet"):
            checkpoint = pq.read_table(f)
            rows = checkpoint.to_pylist()
            for row in rows:
                if row.get("metaData") and row["metaData"].get("schemaString") is None:
                    row["metaData"]["schemaString"] = PATCHED_SCHEMA
            pq.write_table(pa.Table.from_pylist(rows, schema=checkpoint.schema), f)
    return dst


@pytest.mark.parametrize("name", sorted(SCHEMALESS_GOLDEN_EXPECTED))
def test_schemaless_golden_table_with_schema_added(name, tmp_path):
    src = fixtures_dir() / "delta-golden" / name
    table = copy_with_schema_string(src, tmp_path / name)
    expected = SCHEMALESS_GOLDEN_EXPECTED[name]
    amp = ampdelta_view(table)
    if isinstance(expected, str):
        assert isinstance(amp, CliRun), f"ampdelta opens a table that has to be refused ({expected})"
        assert_clean_failure(amp, expected)
        return
    assert not isinstance(amp, CliRun), f"ampdelta fails:\n{amp.describe()}"
    version, files = expected
    assert (amp.version, sorted(amp.files)) == (version, files)
    if name not in SCHEMALESS_DELTALAKE_WRONG:
        problems = compare_views(table, amp, deltalake_view(table), None)
        assert not problems, "\n".join(problems)
