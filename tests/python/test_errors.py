"""Failures (docs/python.md "Errors"): configuration errors raise the seed's ValueError, a
failed load raises an ampdelta.Error of its class, an exception from a progress callback
or the loop body (KeyboardInterrupt included) propagates unchanged, and in every case the
table is left as it was: a batch load commits nothing."""

from __future__ import annotations

import copy
import gc
import subprocess
import sys
import time

import pytest

import ampdelta
from conftest import (BLOCKS_SQL, HELPER_SCRIPTS, QUICKSTART_DATASET, QUICKSTART_FIRST,
                      RESULT_RE, assert_keyboard_interrupt_exit, closed_port_url, column,
                      delta_config, delta_version, describe, is_delta_table, readers)

TXS = f'SELECT block_num, tx_index, tx_hash, gas_used FROM "{QUICKSTART_DATASET}".transactions'
CONFIG_ERROR = "Invalid DeltaLakeLoader configuration"


class Boom(Exception):
    """Raised by the tests' callbacks."""


def table_state(path) -> tuple[int, list]:
    """(version, sorted block_num) of the table."""
    return delta_version(path), sorted(column(readers.read_deltalake(path), "block_num"))


# --- Configuration -----------------------------------------------------------------------

@pytest.mark.parametrize("extra,named", [
    ({"batch_size": 5}, "batch_size"),  # the seed's Troubleshooting example
    ({"table_name": "blocks"}, "table_name"),
    ({"enable_statistics": True}, "enable_statistics"),
], ids=["batch_size", "table_name", "enable_statistics"])
def test_an_unknown_config_key_is_the_seeds_value_error(client, tmp_path, extra, named):
    config = delta_config(tmp_path / "t", **extra)
    before = copy.deepcopy(config)
    with pytest.raises(ValueError) as info:
        client.configure_connection("bad", "deltalake", config)
    assert isinstance(info.value, ampdelta.InvalidInputError)
    assert str(info.value).startswith(CONFIG_ERROR), str(info.value)
    assert named in str(info.value)
    assert config == before, "the caller's dict was changed"
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize("config", [
    {"table_path": 42},
    {"table_path": "T", "optimize_after_write": "yes"},
    {"table_path": "T", "partition_by": "tx_index"},
    {"table_path": "T", "storage_options": ["AWS_REGION"]},
    {"table_path": "T", "state": "enabled"},
    {"optimize_after_write": False},  # table_path is required
], ids=["table_path-int", "bool-as-str", "partition_by-str", "storage_options-list",
        "state-str", "no-table_path"])
def test_a_wrong_type_or_missing_key_is_the_seeds_value_error(client, tmp_path, config):
    config = {k: (str(tmp_path / "t") if v == "T" else v) for k, v in config.items()}
    before = copy.deepcopy(config)
    with pytest.raises(ValueError) as info:
        client.configure_connection("bad", "deltalake", config)
    assert isinstance(info.value, ampdelta.InvalidInputError)
    assert str(info.value).startswith(CONFIG_ERROR), str(info.value)
    assert config == before
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize("loader", ["postgresql", "delta_lake"])
def test_an_unknown_loader_is_refused_by_name(client, tmp_path, loader):
    # The SDK: ValueError("Loader 'NAME' not found. Available loaders: [...]"), at the load.
    with pytest.raises(ValueError) as info:
        client.configure_connection("other", loader, delta_config(tmp_path / "t"))
        client.sql(BLOCKS_SQL).load(connection="other", destination="t", read_all=True)
    assert loader in str(info.value), str(info.value)
    assert not (tmp_path / "t").exists()


def test_an_unknown_connection_is_refused_by_name(client, tmp_path):
    with pytest.raises((ValueError, ampdelta.Error)) as info:
        client.sql(BLOCKS_SQL).load(connection="never_configured", destination="t",
                                    read_all=True)
    assert "never_configured" in str(info.value), str(info.value)


# --- A failed load -----------------------------------------------------------------------

@pytest.mark.timeout(60)
def test_a_server_that_is_down_raises_server_error_and_creates_nothing(tmp_path):
    url = closed_port_url()
    client = ampdelta.Client(url)
    path = tmp_path / "t"
    # One quick retry: by default a connection failure is retried as the SDK does (about
    # 40 s of back-off), which says nothing more here.
    client.configure_connection("down", "deltalake", delta_config(
        path, resilience={"retry": {"max_retries": 1, "initial_backoff_ms": 100}}))
    started = time.monotonic()
    with pytest.raises(ampdelta.ServerError) as info:
        client.sql(BLOCKS_SQL).load(connection="down", destination="t", read_all=True)
    error = info.value
    assert isinstance(error, ampdelta.Error)
    assert error.code == "server_error", error.code
    message = str(error)
    port = url.rsplit(":", 1)[1]
    assert port in message or "UNAVAILABLE" in message or "connect" in message.lower(), message
    assert error.result is not None and error.result.success is False
    assert error.result.error, error.result
    assert str(error.result) == f"❌ Failed to load to t: {error.result.error}"
    assert not is_delta_table(path)
    assert time.monotonic() - started < 30


def test_bad_sql_raises_with_the_servers_message_and_leaves_the_table(client, tmp_path):
    path = tmp_path / "t"
    client.configure_connection("sql", "deltalake", delta_config(path))
    client.sql(f"{BLOCKS_SQL} WHERE block_num < {QUICKSTART_FIRST + 10}").load(
        connection="sql", destination="t", read_all=True)
    before = table_state(path)
    with pytest.raises(ampdelta.Error) as info:
        client.sql("SELECT * FROM nowhere.blocks").load(connection="sql", destination="t",
                                                        read_all=True)
    assert "INVALID_ARGUMENT" in str(info.value) or "nowhere" in str(info.value), info.value
    assert info.value.result is not None and info.value.result.success is False
    assert table_state(path) == before


def test_a_stream_into_a_batch_loaded_table_names_pythons_takeover_keyword(client, tmp_path):
    """The refusal tells a Python user what to type in Python (issue 50), not the CLI flag."""
    path = tmp_path / "t"
    client.configure_connection("taken", "deltalake", delta_config(path))
    client.sql(BLOCKS_SQL).load(connection="taken", destination="t", read_all=True)
    before = table_state(path)
    with pytest.raises(ampdelta.InvalidInputError) as info:
        for _ in client.sql(BLOCKS_SQL).load(connection="taken", destination="t", stream=True):
            pass
    message = str(info.value)
    assert "takeover='after-table-max'" in message, message
    assert "takeover=('from-block', N)" in message, message
    assert "--takeover" not in message, message
    assert table_state(path) == before


# --- Exceptions from Python code during a load --------------------------------------------

@pytest.mark.timeout(60)
def test_an_exception_in_progress_propagates_unchanged_and_creates_no_table(client, tmp_path):
    path = tmp_path / "t"
    client.configure_connection("p", "deltalake", delta_config(path))
    boom = Boom("raised by progress")
    calls = []

    def progress(result):
        calls.append(result)
        raise boom

    with pytest.raises(Boom) as info:
        client.sql(TXS).load(connection="p", destination="t", read_all=True, batch_size=100,
                             progress=progress)
    assert info.value is boom
    assert len(calls) == 1, "the load went on after its progress callback raised"
    assert not is_delta_table(path)


@pytest.mark.timeout(60)
def test_an_exception_in_progress_leaves_an_existing_table_at_its_version(client, tmp_path):
    path = tmp_path / "t"
    client.configure_connection("p", "deltalake", delta_config(path, optimize_after_write=False))
    client.sql(f"{TXS} WHERE block_num < {QUICKSTART_FIRST + 5}").load(
        connection="p", destination="t", read_all=True)
    before = table_state(path)
    calls = []

    def progress(result):
        calls.append(result)
        if len(calls) == 3:
            raise Boom("third batch")

    with pytest.raises(Boom, match="third batch"):
        client.sql(TXS).load(connection="p", destination="t", read_all=True, batch_size=50,
                             progress=progress)
    assert len(calls) == 3
    assert table_state(path) == before


@pytest.mark.timeout(60)
def test_an_exception_in_the_loop_body_stops_the_load_without_a_commit(client, tmp_path):
    path = tmp_path / "t"
    client.configure_connection("l", "deltalake", delta_config(path, optimize_after_write=False))
    client.sql(f"{TXS} WHERE block_num < {QUICKSTART_FIRST + 5}").load(
        connection="l", destination="t", read_all=True)
    before = table_state(path)
    results = client.sql(TXS).load(connection="l", destination="t", batch_size=50)
    seen = 0
    with pytest.raises(Boom):
        for result in results:
            seen += 1
            if seen == 2:
                raise Boom("loop body")
    del results
    gc.collect()
    time.sleep(1.0)  # a load that went on in the background would have committed by now
    assert table_state(path) == before


@pytest.mark.timeout(60)
def test_breaking_out_of_a_batch_load_commits_nothing(client, tmp_path):
    path = tmp_path / "t"
    client.configure_connection("b", "deltalake", delta_config(path))
    results = client.sql(TXS).load(connection="b", destination="t", batch_size=50)
    for result in results:
        assert result.success
        break
    results = None
    gc.collect()
    time.sleep(1.0)
    assert not is_delta_table(path)


def prepared_table(url, path) -> tuple[int, list]:
    client = ampdelta.Client(url)
    client.configure_connection("pre", "deltalake", delta_config(path, optimize_after_write=False))
    client.sql(f"{TXS} WHERE block_num < {QUICKSTART_FIRST + 5}").load(
        connection="pre", destination="pre", read_all=True)
    return table_state(path)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("how", ["progress", "native"])
def test_ctrl_c_during_a_batch_load_raises_keyboard_interrupt_and_leaves_the_table(
        big_server, script_runner, tmp_path, how):
    # 'progress': SIGINT once the first batch was reported; 'native': SIGINT while only the
    # engine runs (no callback). Either way the script dies of KeyboardInterrupt, nothing
    # is committed, and it exits promptly rather than after the load.
    path = tmp_path / "t"
    before = prepared_table(big_server.url, path)
    sql = f'SELECT * FROM "{QUICKSTART_DATASET}".transactions'
    running = script_runner(HELPER_SCRIPTS / "interrupt_batch_load.py", tmp_path, None,
                            big_server.url, path, sql, how)
    running.wait_for(lambda lines: "loading" in lines, 60)
    time.sleep(0.3)
    assert running.proc.poll() is None, f"the load ended before SIGINT\n{running.describe()}"
    waited = running.interrupt()
    assert_keyboard_interrupt_exit(running)
    assert not any(RESULT_RE.match(line) for line in running.lines), running.describe()
    assert waited < 5, f"{waited:.1f} s from SIGINT to the exit\n{running.describe()}"
    assert table_state(path) == before


# --- The package's import ---------------------------------------------------------------

@pytest.mark.parametrize("version, used", [("25.0.0", True), ("13.0.0", False)])
def test_any_pyarrow_from_14_is_used_and_an_older_one_is_left_alone(version, used):
    # The wheel carries its own Arrow C++: another pyarrow major version imports fine; one
    # without the PyCapsule interface (before 14) is not used for results.
    code = ('import sys, types; fake=types.ModuleType("pyarrow"); '
            f'fake.__version__="{version}"; sys.modules["pyarrow"]=fake; import ampdelta; '
            'print(ampdelta._arrow.pyarrow_module() is fake)')
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, describe(proc)
    assert proc.stdout.split() == [str(used)], proc.stdout


def test_import_with_pyarrow_26_works():
    proc = subprocess.run([sys.executable, "-c", "import pyarrow, ampdelta; "
                           "print(pyarrow.__version__.split('.')[0], ampdelta.Client.__name__)"],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, describe(proc)
    assert proc.stdout.split() == ["26", "Client"], proc.stdout


def test_error_classes_are_documented_ones():
    for name in ("InvalidInputError", "NotFoundError", "ServerError", "ProtocolError",
                 "StorageError", "CommitConflictError", "UnsupportedFeatureError",
                 "CorruptLogError", "PreconditionFailedError", "ReorgError", "InternalError"):
        cls = getattr(ampdelta, name)
        assert issubclass(cls, ampdelta.Error), name
    assert issubclass(ampdelta.InvalidInputError, ValueError)
    assert issubclass(ampdelta.Error, Exception)


# --- The SDK's retry keywords ---------------------------------------------------------

def test_the_sdks_max_retries_is_checked_not_wrapped_or_ignored(client, tmp_path):
    """load(max_retries=2**32) used to be accepted and ignored; a count the engine cannot
    hold is refused by name, with nothing written."""
    for bad in (2 ** 32, -1, 2.5, True):
        with pytest.raises(ampdelta.InvalidInputError) as info:
            client.sql(BLOCKS_SQL).load(config=delta_config(tmp_path / "t"), destination="t",
                                        read_all=True, max_retries=bad)
        assert "max_retries" in str(info.value), str(info.value)
    for bad in (-1, float("nan"), "1"):
        with pytest.raises(ampdelta.InvalidInputError) as info:
            client.sql(BLOCKS_SQL).load(config=delta_config(tmp_path / "t"), destination="t",
                                        read_all=True, retry_delay=bad)
        assert "retry_delay" in str(info.value), str(info.value)
    assert not is_delta_table(tmp_path / "t")


@pytest.mark.timeout(60)
def test_the_sdks_retry_keywords_set_the_loads_retries(tmp_path):
    client = ampdelta.Client(closed_port_url())
    started = time.monotonic()
    with pytest.raises(ampdelta.ServerError) as info:
        client.sql(BLOCKS_SQL).load(config=delta_config(tmp_path / "t"), destination="t",
                                    read_all=True, max_retries=2, retry_delay=0.05)
    # Two retries a twentieth of a second apart, not the default ~40 s of back-off.
    assert time.monotonic() - started < 20
    assert info.value.result.metadata.get("retries") == 2, info.value.result.metadata
