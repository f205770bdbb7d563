"""Red-team tests: careless input to the public API (docs/python.md "Errors": a bad argument
is an ampdelta.Error subclass, InvalidInputError for bad values, or a plain TypeError, with a
clear message; never a nanobind signature dump, never InternalError for a bad value) and
concurrent use of a Client. Failing tests are real defects (see the red team's report)."""

from __future__ import annotations

import json
import os
import threading
import warnings

import pytest

import ampdelta
from conftest import BLOCKS_SQL, delta_config

NANOBIND_SIGNATURE = "incompatible function arguments"


def _assert_clean_bad_argument(error: BaseException) -> None:
    assert isinstance(error, (ampdelta.InvalidInputError, TypeError)), repr(error)
    assert NANOBIND_SIGNATURE not in str(error), f"nanobind's signature leaked:\n{error}"


# --- auth_token -------------------------------------------------------------------------

@pytest.mark.parametrize("token", [123, b"secret", "\udcff-not-unicode"],
                         ids=["int", "bytes", "surrogate"])
@pytest.mark.parametrize("call", ["to_arrow", "load"])
def test_a_bad_auth_token_is_refused_without_a_nanobind_signature(quickstart_url, tmp_path,
                                                                   token, call):
    # FAILS today: Client() checks the url but not auth_token; the extension's nanobind
    # binding then raises "TypeError: __init__(): incompatible function arguments. The
    # following argument types are supported: 1. __init__(self, url: str, auth_token: str |
    # None, ...)" (for the surrogate: "Invoked with types: str, str, str").
    with pytest.raises(BaseException) as raised:
        # Refused by Client() itself, or at the latest by the call.
        client = ampdelta.Client(quickstart_url, auth_token=token)
        if call == "to_arrow":
            client.sql(BLOCKS_SQL).to_arrow()
        else:
            client.sql(BLOCKS_SQL).load(config=delta_config(tmp_path / "t"), read_all=True)
    _assert_clean_bad_argument(raised.value)
    assert not (tmp_path / "t").exists()


# --- writer_properties ------------------------------------------------------------------

@pytest.mark.parametrize("properties", [
    {"compression": "snappy", "compression_level": 3},
    {"compression": "uncompressed", "compression_level": 3},
    {"compression": "gzip", "compression_level": 99},
], ids=["snappy-level", "uncompressed-level", "gzip-level-99"])
def test_a_compression_level_the_codec_refuses_is_invalid_input(client, tmp_path, properties):
    # FAILS today: ampdelta.InternalError ("Codec 'snappy' doesn't support setting a
    # compression level." / "zlib deflateInit failed: (unknown error)") from the writer,
    # after the table folder (with _ampdelta_leases/) was created.
    with pytest.raises(ampdelta.Error) as raised:
        client.sql(BLOCKS_SQL).load(config=delta_config(tmp_path / "t"), read_all=True,
                                    writer_properties=properties)
    assert isinstance(raised.value, ampdelta.InvalidInputError), repr(raised.value)


@pytest.mark.parametrize("compression", ["ZSTD(abc)", "ZSTD()"])
def test_a_malformed_codec_level_is_invalid_input(client, tmp_path, compression):
    # FAILS today: a bare ValueError "invalid literal for int() with base 10: 'abc'" from
    # _writer_properties(), which neither names writer_properties nor is an ampdelta.Error.
    with pytest.raises(ValueError) as raised:
        client.sql(BLOCKS_SQL).load(config=delta_config(tmp_path / "t"), read_all=True,
                                    writer_properties={"compression": compression})
    assert isinstance(raised.value, ampdelta.InvalidInputError), repr(raised.value)
    assert "compression" in str(raised.value)


@pytest.mark.parametrize("properties", ["zstd", [("compression", "zstd")], 5],
                         ids=["str", "list", "int"])
def test_writer_properties_that_are_not_a_dict_or_writer_properties_are_refused(
        client, tmp_path, properties):
    # FAILS today: a str or list is silently ignored (dir() finds no public non-callable
    # attributes, so nothing is set) and the load runs with the defaults; an int is refused
    # with "writer_properties: 'denominator' is not supported".
    with pytest.raises((ampdelta.InvalidInputError, TypeError)) as raised:
        client.sql(BLOCKS_SQL).load(config=delta_config(tmp_path / "t"), read_all=True,
                                    writer_properties=properties)
    assert "denominator" not in str(raised.value)
    assert not (tmp_path / "t" / "_delta_log").exists()


# --- load(config=...) -------------------------------------------------------------------

@pytest.mark.parametrize("config", [[], "table_path=/tmp/x", 5])
def test_a_config_that_is_not_a_dict_is_the_seeds_value_error(client, config):
    # FAILS today: AttributeError "'list' object has no attribute 'items'" (load() filters
    # loader_type out with config.items() before _checked_config() checks the type).
    with pytest.raises(ampdelta.InvalidInputError, match="Invalid DeltaLakeLoader configuration"):
        client.sql(BLOCKS_SQL).load(config=config, read_all=True)


# --- Saved connections from several threads ---------------------------------------------

def test_configure_connection_from_several_threads_keeps_every_connection(tmp_path,
                                                                           monkeypatch):
    # FAILS today: _SavedConnections.save() writes f"{path}.{os.getpid()}.tmp", the same
    # temporary file for every thread, without a lock: threads truncate and write it at
    # once, so os.replace() installs interleaved text. The connection file ends up not
    # JSON ("Extra data: line 26 column 2") and every later use of a saved connection
    # raises "… is not a JSON object of connections; fix or delete it"; meanwhile other
    # threads warn "cannot save connection … No such file or directory: '….tmp'".
    path = tmp_path / "connections.json"
    monkeypatch.setenv("FLIGHT_SQL_CONNECTIONS", str(path))
    client = ampdelta.Client("grpc://127.0.0.1:1")
    threads, per_thread = 8, 25
    barrier = threading.Barrier(threads)
    caught: list[str] = []

    def configure(index: int) -> None:
        barrier.wait()
        for j in range(per_thread):
            client.configure_connection(
                f"c{index}_{j}", "deltalake",
                {"table_path": str(tmp_path / f"t{index}_{j}") + "x" * (index * 200)})

    with warnings.catch_warnings(record=True) as recorded:
        warnings.simplefilter("always")
        workers = [threading.Thread(target=configure, args=(i,)) for i in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        caught = [str(w.message) for w in recorded]
    text = path.read_text()
    try:
        saved = json.loads(text)
    except ValueError as error:
        pytest.fail(f"the connection file is no longer JSON ({error}); {len(caught)} "
                    f"warnings, e.g. {caught[:1]}")
    missing = [f"c{i}_{j}" for i in range(threads) for j in range(per_thread)
               if f"c{i}_{j}" not in saved]
    assert not missing and not caught, (f"{len(missing)} of {threads * per_thread} "
                                        f"connections not saved; warnings: {caught[:2]}")
    # Another script (a fresh Client) finds each one.
    assert ampdelta.Client("grpc://127.0.0.1:1").table("c7_24").path.startswith(str(tmp_path))


# --- ampdelta.ray.backfill --------------------------------------------------------------

def test_backfill_with_a_garbage_url_raises_an_ampdelta_error(tmp_path):
    # FAILS today: pyarrow.lib.ArrowInvalid "URI has empty scheme: 'garbage'" from
    # pyarrow.flight.connect() in _probe_coverage(), before the native client could say
    # "Amp server URL must start with grpc:// or grpc+tls://" (ampdelta.InvalidInputError,
    # what Client('garbage') raises).
    pytest.importorskip("ray")
    import ampdelta.ray

    with pytest.raises(ampdelta.Error):
        ampdelta.ray.backfill("garbage", BLOCKS_SQL, str(tmp_path / "t"), progress=False)
    assert not (tmp_path / "t").exists()


def test_backfill_does_not_save_its_storage_credentials_to_the_connection_file(
        quickstart_url, tmp_path, monkeypatch):
    # FAILS today: backfill() (the driver's own run, and _run_shard in every Ray task) calls
    # configure_connection("ampdelta_ray_backfill", …), which persists the connection,
    # storage_options included, to $FLIGHT_SQL_CONNECTIONS / ~/.flight_sql_connections.json
    # of the driver and of every worker node (and replaces a user's connection of that
    # name). On the Quickstart chain nothing is final, so no Ray task runs: this is the
    # driver's write alone.
    pytest.importorskip("ray")
    import ampdelta.ray

    connections = tmp_path / "connections.json"
    monkeypatch.setenv("FLIGHT_SQL_CONNECTIONS", str(connections))
    result = ampdelta.ray.backfill(quickstart_url, BLOCKS_SQL, str(tmp_path / "t"),
                                   num_shards=2, progress=False,
                                   storage_options={"AWS_SECRET_ACCESS_KEY": "TOPSECRET"})
    assert result.rows == 100
    assert not connections.exists() or "TOPSECRET" not in connections.read_text(), \
        connections.read_text()


# --- Table ------------------------------------------------------------------------------

def test_optimize_with_compression_none_does_not_rewrite_the_table_uncompressed(client,
                                                                                 tmp_path):
    # FAILS today: Table.optimize() sends str(compression), so None becomes "None", which
    # the engine reads as the codec 'none': the compacted file is UNCOMPRESSED. None should
    # mean the default (zstd), or be refused.
    import pyarrow.parquet as pq

    path = tmp_path / "t"
    client.configure_connection("opt_none", "deltalake",
                                delta_config(path, optimize_after_write=False))
    for _ in range(3):
        client.sql(BLOCKS_SQL).load(connection="opt_none", destination="t", read_all=True)
    before = set(path.glob("*.parquet"))
    try:
        result = ampdelta.Table(str(path)).optimize(compression=None)
    except (ampdelta.InvalidInputError, TypeError):
        return  # refusing None is fine too
    assert result["files_added"] == 1
    (added,) = set(path.glob("*.parquet")) - before
    codec = pq.ParquetFile(added).metadata.row_group(0).column(0).compression
    assert codec != "UNCOMPRESSED", f"optimize(compression=None) wrote {added.name}"
