"""A stream watched the way an operator watches it (docs/operations.md): `ampdelta load
--stream` into S3 (the versitygw emulator behind a proxy that injects storage faults) from a
live chain with scripted reorgs, /metrics scraped every AMPDELTA_SOAK_SCRAPE_S seconds and
parsed with prometheus_client. Half-way the network to the Amp server is cut for a while and
restored (the server itself keeps its chain).

Checked: every scrape's rows only grow; the reorg counter follows the server's script (a
reorg every REORG_EVERY blocks, before the outage exactly, at most one in flight) and equals
the loader's reorg lines; the lag stays bounded except around the outage; /readyz is ready
before it, turns unready during it and ready again after; the injected faults were retried
(`ampdelta_retries_total{class="storage"}`); the table, read back by deltalake, is the
canonical chain exactly once up to the last committed block.

`make test` runs it for AMPDELTA_SOAK_S = 45 s; `make soak-ops` for 30 minutes (the issue's
acceptance run; docs/operations.md has its figures). A short run (under 10 minutes) compresses
the same script: a block every 125 ms, the outage at 30% of the run, --ready-max-age 5 s.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import threading
import time

import pytest

import emulator_s3
from conftest import QUICKSTART_LAST, run_dev_server
from fault_proxy import Rule, start_fault_proxy
from test_operations import REORG_RE, Loader, STREAM_SQL
from test_stream_crash import canonical_hashes, hex_hash

SOAK_S = float(os.environ.get("AMPDELTA_SOAK_S") or 45)
SHORT = SOAK_S < 600
SCRAPE_S = float(os.environ.get("AMPDELTA_SOAK_SCRAPE_S") or (1 if SHORT else 5))
BLOCK_INTERVAL_MS = 125 if SHORT else 250
REORG_EVERY = 20
REORG_DEPTH = 3
OUTAGE_S = min(30.0, max(8.0, SOAK_S / 10))
OUTAGE_AT_S = SOAK_S * (0.3 if SHORT else 0.5)
LAG_BLOCKS_BOUND = 10_000 // BLOCK_INTERVAL_MS  # 10 s of chain
READY_MAX_AGE_S = 5 if SHORT else 30
# The chain stops growing this long before the soak ends: room for the loader to commit the
# final head (the short run's after-outage phase must still see the chain grow).
QUIET_END_S = 8 * SCRAPE_S if SHORT else SOAK_S * 0.1


class CuttableForwarder:
    """A TCP forwarder on 127.0.0.1 that can cut every connection and refuse new ones, then
    listen again on the same port: the loader sees the server go away and come back."""

    def __init__(self, upstream_port: int):
        self.upstream = ("127.0.0.1", upstream_port)
        self.listener = None
        self.port = 0
        self.sockets: list[socket.socket] = []
        self.lock = threading.Lock()
        self.restore()

    def restore(self):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self.port = listener.getsockname()[1]
        self.listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self):
        with self.lock:
            listener, self.listener = self.listener, None
            sockets, self.sockets = self.sockets, []
        for sock in [listener, *sockets]:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self, listener):
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                client.close()
                continue
            with self.lock:
                if self.listener is not listener:
                    client.close()
                    server.close()
                    return
                self.sockets += [client, server]
            threading.Thread(target=self._pump, args=(client, server), daemon=True).start()

    @staticmethod
    def _pump(a: socket.socket, b: socket.socket):
        try:
            while True:
                ready, _, _ = select.select([a, b], [], [], 1.0)
                for source in ready:
                    data = source.recv(65536)
                    if not data:
                        return
                    (b if source is a else a).sendall(data)
        except OSError:
            return
        finally:
            for sock in (a, b):
                with contextlib.suppress(OSError):
                    sock.close()


@pytest.mark.timeout(int(SOAK_S) + 600)
def test_a_watched_stream_survives_reorgs_storage_faults_and_an_outage(tmp_path):
    with contextlib.ExitStack() as stack:
        s3 = stack.enter_context(emulator_s3.start_s3_emulator(buckets=("lake",)))
        rules = [Rule("slowdown", None, r".", "status_before", status=503, times=None,
                      probability=0.02),
                 Rule("lost-commit", "PUT", r"_delta_log/\d{20}\.json", "lost_reply",
                      times=None, probability=0.05)]
        proxy = stack.enter_context(start_fault_proxy(s3.endpoint, rules, seed=7))
        # The chain stops growing shortly before the soak ends, at a head without a reorg,
        # so that the table can be compared with a final chain.
        max_head = QUICKSTART_LAST + int((SOAK_S - QUIET_END_S) * 1000 / BLOCK_INTERVAL_MS)
        while (max_head - QUICKSTART_LAST) % REORG_EVERY in range(0, REORG_DEPTH + 1):
            max_head += 1
        server = stack.enter_context(run_dev_server(
            "--block-interval-ms", BLOCK_INTERVAL_MS, "--reorg-every", REORG_EVERY,
            "--reorg-depth", REORG_DEPTH, "--max-head", max_head))
        forwarder = CuttableForwarder(server.port)
        options = dict(s3.storage_options("lake"), AWS_ENDPOINT_URL=proxy.endpoint)
        loader = Loader(tmp_path, [
            "--server", f"grpc://127.0.0.1:{forwarder.port}", "--table", "s3://lake/blocks",
            "--sql", STREAM_SQL, "--stream", "--ready-max-age", str(READY_MAX_AGE_S),
            *[arg for key, value in options.items()
              for arg in ("--storage-option", f"{key}={value}")],
            "--config", '{"resilience": {"retry": {"max_retries": 1000, '
                        '"initial_backoff_ms": 200, "max_backoff_ms": 2000}}}'])
        stack.callback(loader.stop)
        start = time.monotonic()
        outage = (start + OUTAGE_AT_S, start + OUTAGE_AT_S + OUTAGE_S)
        scrapes = []  # (seconds since start, phase, metrics, /readyz status)
        cut = restored = False
        while time.monotonic() - start < SOAK_S:
            now = time.monotonic()
            if not cut and now >= outage[0]:
                forwarder.cut()
                cut = True
            if cut and not restored and now >= outage[1]:
                forwarder.restore()
                restored = True
            phase = "before" if not cut else ("outage" if not restored else "after")
            assert loader.proc.poll() is None, f"the loader exited\n{loader.describe()}"
            scrapes.append((now - start, phase, loader.scrape(), loader.get("/readyz")[0]))
            time.sleep(max(0.0, SCRAPE_S - (time.monotonic() - now)))
        # The final chain, committed: then the loader stops (SIGTERM, after its commit).
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and loader.scrape().get(
                "ampdelta_committed_block{network=mainnet}", 0) < max_head:
            time.sleep(0.5)
        final = loader.scrape()
        # Nothing more comes from the still chain: READY_MAX_AGE_S after the last commit or
        # message (the later), /readyz says unready (the loader cannot tell a halted chain
        # from a silent connection).
        quiet_since = max(final["ampdelta_last_commit_timestamp_seconds"],
                          final.get("ampdelta_last_message_timestamp_seconds", 0))
        time.sleep(max(0.0, quiet_since + READY_MAX_AGE_S + 1 - time.time()))
        idle = []
        for _ in range(2):
            idle.append(loader.get("/readyz")[0])
            time.sleep(SCRAPE_S)
        chain = canonical_hashes(server.url)
        code = loader.stop()
        faults = proxy.counts
        reorg_lines = [line for line in loader.stdout().splitlines() if REORG_RE.match(line)]
        from deltalake import DeltaTable
        table = DeltaTable("s3://lake/blocks", storage_options=dict(
            s3.storage_options("lake"))).to_pyarrow_table(columns=["block_num", "hash"])

    assert code == 143, loader.describe()
    # Rows only grow, and do grow.
    rows = [m.get("ampdelta_rows_loaded_total", 0) for _, _, m, _ in scrapes]
    assert rows == sorted(rows) and rows[-1] > 0, rows
    # Reorgs follow the server's script: one each REORG_EVERY blocks past the start.
    for at, phase, metrics, _ in scrapes:
        if phase != "before" or "ampdelta_head_block{network=mainnet}" not in metrics:
            continue
        head = metrics["ampdelta_head_block{network=mainnet}"]
        expected = (head - QUICKSTART_LAST) // REORG_EVERY
        assert expected - 1 <= metrics.get("ampdelta_reorgs_total", 0) <= expected, \
            (at, head, metrics.get("ampdelta_reorgs_total"))
    assert final["ampdelta_reorgs_total"] == len(reorg_lines) >= 1
    # The lag stays bounded away from the outage.
    for at, phase, metrics, _ in scrapes:
        late = phase == "after" and at > outage[1] - start + 20
        if phase == "before" or late:
            assert metrics.get("ampdelta_lag_blocks{network=mainnet}", 0) <= LAG_BLOCKS_BOUND, \
                (at, phase, metrics.get("ampdelta_lag_blocks{network=mainnet}"))
    # Readiness: ready before, unready during the outage, ready again after it while the
    # chain grows; once the chain stops (max_head), nothing is heard and after
    # --ready-max-age the loader is unready again (docs/operations.md).
    chain_stops = (max_head - QUICKSTART_LAST) * BLOCK_INTERVAL_MS / 1000
    ready = {phase: [status for at, p, _, status in scrapes
                     if p == phase and at < chain_stops - 2 * SCRAPE_S]
             for phase in ("before", "outage", "after")}
    assert ready["before"][-1] == 200, ready
    assert 503 in ready["outage"], ready
    assert ready["after"][-1] == 200, ready
    assert idle == [503, 503], idle
    # The injected storage faults happened and were retried.
    assert sum(faults.values()) > 0, faults
    assert final.get("ampdelta_retries_total{class=storage}", 0) > 0, final
    assert final.get("ampdelta_retries_total{class=server}", 0) >= 1, final  # the outage
    # The table: the final chain, each block once.
    assert final["ampdelta_committed_block{network=mainnet}"] == max_head, final
    blocks = table.column("block_num").to_pylist()
    assert len(blocks) == len(set(blocks)), "a block is in the table twice"
    assert sorted(blocks) == sorted(chain), (min(blocks), max(blocks), max(chain))
    stale = [n for n, h in zip(blocks, table.column("hash").to_pylist()) if hex_hash(h) != chain[n]]
    assert not stale, f"rows with stale hashes: {stale[:10]}"
    lags = [m.get("ampdelta_lag_blocks{network=mainnet}", 0) for at, p, m, _ in scrapes
            if p == "before" or (p == "after" and at > outage[1] - start + 20)]
    print(f"soak {SOAK_S:.0f} s: {len(scrapes)} scrapes, {int(final['ampdelta_rows_loaded_total'])} "
          f"rows, {int(final['ampdelta_reorgs_total'])} reorgs, faults {faults}, "
          f"storage retries {int(final['ampdelta_retries_total{class=storage}'])}, "
          f"server retries {int(final['ampdelta_retries_total{class=server}'])}, "
          f"lag max {max(lags):.0f} blocks away from the outage, "
          f"unready scrapes during the outage {ready['outage'].count(503)}/{len(ready['outage'])}, "
          f"RSS at the end {final.get('process_resident_memory_bytes', 0) / 2**20:.0f} MiB")
