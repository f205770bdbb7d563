"""configure_connection saves connections between scripts, as the SDK's ConnectionManager
does ($FLIGHT_SQL_CONNECTIONS, else ~/.flight_sql_connections.json)."""
import json
import os
import stat
import subprocess
import sys

import pytest

import ampdelta


@pytest.fixture
def connections_file(tmp_path, monkeypatch):
    path = tmp_path / "connections.json"
    monkeypatch.setenv("FLIGHT_SQL_CONNECTIONS", str(path))
    return path


def test_a_connection_configured_in_one_process_is_found_in_the_next(connections_file, tmp_path):
    client = ampdelta.Client("grpc://127.0.0.1:1")
    client.configure_connection("c", "deltalake", {"table_path": str(tmp_path / "t"),
                                                   "storage_options": {"K": "secret"}})
    entries = json.loads(connections_file.read_text())
    assert entries == {"c": {"loader": "deltalake",
                             "config": {"table_path": str(tmp_path / "t"),
                                        "storage_options": {"K": "secret"}}}}
    # It can hold credentials: owner-only.
    assert stat.S_IMODE(os.stat(connections_file).st_mode) == 0o600
    found = subprocess.run(
        [sys.executable, "-c", "import ampdelta; print(ampdelta.Client('grpc://x:1').table('c').path)"],
        capture_output=True, text=True, env=dict(os.environ), timeout=60)
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == str(tmp_path / "t")


def test_a_second_connection_keeps_the_first(connections_file, tmp_path):
    client = ampdelta.Client("grpc://127.0.0.1:1")
    client.configure_connection("a", "deltalake", {"table_path": "a"})
    client.configure_connection("b", "deltalake", {"table_path": "b"})
    assert sorted(json.loads(connections_file.read_text())) == ["a", "b"]


def test_a_corrupt_file_is_never_overwritten_and_names_itself(connections_file):
    connections_file.write_text("{not json")
    client = ampdelta.Client("grpc://127.0.0.1:1")
    with pytest.warns(UserWarning, match="not a JSON object of connections"):
        client.configure_connection("a", "deltalake", {"table_path": "a"})
    assert connections_file.read_text() == "{not json"
    # Configured in this process: still usable here.
    assert client.table("a").path == "a"
    with pytest.raises(ampdelta.InvalidInputError, match="not a JSON object of connections"):
        ampdelta.Client("grpc://127.0.0.1:1").table("other")


def test_an_unknown_connection_names_the_file_it_looked_in(connections_file):
    with pytest.raises(ampdelta.InvalidInputError) as raised:
        ampdelta.Client("grpc://127.0.0.1:1").table("nope")
    assert "unknown connection 'nope'" in str(raised.value)
    assert str(connections_file) in str(raised.value)


def test_a_saved_connection_with_a_bad_config_is_refused_as_configure_would(connections_file):
    connections_file.write_text(json.dumps({"c": {"loader": "deltalake",
                                                  "config": {"table_path": "t", "batch_size": 3}}}))
    with pytest.raises(ValueError, match="Invalid DeltaLakeLoader configuration"):
        ampdelta.Client("grpc://127.0.0.1:1").table("c")
