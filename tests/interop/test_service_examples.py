"""The service examples in docs/operations.md are real: the systemd unit passes
`systemd-analyze verify` (where systemd is installed), the Kubernetes manifests parse as the
objects they claim to be with consistent probes and ports, and the command line of each runs
against a dev server (its server, table and dataset swapped for the test's): the stream stops
at SIGTERM with the exit code the unit accepts, and the Indexed Job's shards, run one per
completion index, load every block exactly once.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

import readers
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs"))
import doc_blocks  # noqa: E402  (tests/docs: the docs' code blocks, with markdown-it-py)
from conftest import QUICKSTART_DATASET, QUICKSTART_FIRST, cli_env, cli_path, run_dev_server

DOC = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
DOC_DATASET = "edgeandnode/ethereum_mainnet"


def example(name: str) -> str:
    """The fenced block of docs/operations.md whose first line is `# …name` (found by the
    doc tests' CommonMark reader, tests/docs/doc_blocks.py)."""
    for block in doc_blocks.blocks(DOC):
        body = block.text
        first = body.splitlines()[0]
        if first.startswith("#") and first.rstrip().endswith(name):
            return body
    pytest.fail(f"docs/operations.md has no example {name}")


def swapped(args: list[str], server_url: str, table: Path) -> list[str]:
    """The example's ampdelta arguments, pointed at the test's server, table and dataset."""
    out = []
    it = iter(args)
    for arg in it:
        if arg in ("--server", "--table", "--metrics-addr"):
            value = next(it)
            out += [arg, {"--server": server_url, "--table": str(table),
                          "--metrics-addr": "127.0.0.1:0"}[arg]]
        else:
            out.append(arg.replace(DOC_DATASET, QUICKSTART_DATASET))
    return out


def run_until_first_commit_then_sigterm(args: list[str], env: dict | None = None) -> tuple:
    proc = subprocess.Popen([str(cli_path()), *args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env or cli_env())
    deadline = time.monotonic() + 60
    line = ""
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith("✅") or proc.poll() is not None:
            break
    assert line.startswith("✅"), f"no commit: {line!r}\n{proc.communicate(timeout=30)}"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


def test_the_systemd_unit_verifies_and_its_command_stops_cleanly_on_sigterm(tmp_path):
    unit = example("ampdelta-blocks.service")
    import configparser
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    parser.read_string(unit)
    service = parser["Service"]
    assert service["KillSignal"] == "SIGTERM"
    assert service["Restart"] == "on-failure"
    assert "143" in service["SuccessExitStatus"].split()
    # Bad input (2) and a damaged table (6) are not restarted: the documented exit codes.
    assert set(service["RestartPreventExitStatus"].split()) == {"2", "6"}
    argv = shlex.split(service["ExecStart"])
    assert argv[0] == "/usr/local/bin/ampdelta"
    if shutil.which("systemd-analyze"):
        path = tmp_path / "ampdelta-blocks.service"
        # The binary must exist for verify: point the unit at the one under test; the user
        # it names is the host's business.
        path.write_text(unit.replace("/usr/local/bin/ampdelta", str(cli_path()))
                        .replace("User=ampdelta\n", ""))
        verified = subprocess.run(["systemd-analyze", "verify", "--man=no", str(path)],
                                  capture_output=True, text=True, timeout=60)
        problems = [line for line in verified.stderr.splitlines()
                    if "ampdelta-blocks.service" in line]
        assert verified.returncode == 0 and not problems, verified.stderr
    with run_dev_server("--block-interval-ms", "100") as server:
        code, out, err = run_until_first_commit_then_sigterm(
            swapped(argv[1:], server.url, tmp_path / "blocks"))
    assert code == 143, err  # SuccessExitStatus: a stop is not a failure
    assert "ampdelta: error" not in err, err


def kubernetes(name: str) -> dict:
    [manifest] = list(yaml.safe_load_all(example(name)))
    return manifest


def container_args(manifest: dict) -> tuple[list[str], dict]:
    [container] = manifest["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["ampdelta"]
    return container["args"], container


def test_the_stream_deployment_probes_its_own_endpoint_and_runs(tmp_path):
    deployment = kubernetes("ampdelta-stream.yaml")
    assert (deployment["apiVersion"], deployment["kind"]) == ("apps/v1", "Deployment")
    spec = deployment["spec"]
    # One loader per stream (a second would exit 5), replaced rather than rolled.
    assert spec["replicas"] == 1 and spec["strategy"]["type"] == "Recreate"
    assert spec["selector"]["matchLabels"] == spec["template"]["metadata"]["labels"]
    args, container = container_args(deployment)
    port = int(args[args.index("--metrics-addr") + 1].rsplit(":", 1)[1])
    [declared] = container["ports"]
    assert declared["containerPort"] == port
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        assert container[probe]["httpGet"] == {"path": path, "port": declared["name"]}
    assert "--stream" in args
    assert spec["template"]["spec"]["terminationGracePeriodSeconds"] >= 60
    with run_dev_server("--block-interval-ms", "100") as server:
        code, out, err = run_until_first_commit_then_sigterm(
            swapped(args, server.url, tmp_path / "blocks"))
    assert code == 143, err


def test_the_indexed_job_loads_every_block_once_across_its_completion_indexes(tmp_path):
    job = kubernetes("ampdelta-backfill.yaml")
    assert (job["apiVersion"], job["kind"]) == ("batch/v1", "Job")
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed"
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    args, _ = container_args(job)
    shards = int(args[args.index("--shards") + 1])
    assert shards == spec["completions"]
    # The test's chain: 600 blocks, of which the first 300 are final enough to backfill.
    last = QUICKSTART_FIRST + 299
    args = swapped(args, "", tmp_path / "t")
    for flag, value in (("--min-block", QUICKSTART_FIRST), ("--max-block", last)):
        args[args.index(flag) + 1] = str(value)
    table = tmp_path / "transactions"
    with run_dev_server("--blocks", "600", "--txs-per-block", "2") as server:
        args[args.index("--server") + 1] = server.url
        args[args.index("--table") + 1] = str(table)
        for index in range(shards):
            env = dict(cli_env(), JOB_COMPLETION_INDEX=str(index))
            proc = subprocess.run([str(cli_path()), *args], capture_output=True, text=True,
                                  env=env, timeout=180, stdin=subprocess.DEVNULL)
            assert proc.returncode == 0, f"index {index}:\n{proc.stderr}"
    rows = readers.READERS["deltalake"](table)
    blocks = sorted(rows.column("block_num").to_pylist())
    expected = sorted(b for b in range(QUICKSTART_FIRST, last + 1) for _ in range(2))
    assert blocks == expected
