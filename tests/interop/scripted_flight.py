"""Misbehaving Amp servers for tests, on 127.0.0.1 and an ephemeral port.

    ScriptedFlightServer(table, script)   a pyarrow.flight server that answers every query
                                          with `table`, misbehaving as `script` says
    StallProxy(upstream_port, ...)        a TCP proxy in front of a real server that stops
                                          forwarding (or cuts the connection) after N bytes
    RawServer(behaviour)                  a TCP listener that is not a gRPC server at all

Every one is a context manager: it listens when entered and is stopped (sockets closed,
threads joined) on exit; `url` is the grpc:// address to hand the CLI.

The script of a ScriptedFlightServer (a dict; every key optional):

    plan            "ok" (default) | "stall" (GetFlightInfo never answers) |
                    "no_endpoints" | "<GRPC_CODE>" (GetFlightInfo fails with that code,
                    e.g. "UNAVAILABLE", "UNAUTHENTICATED", "INTERNAL", "INVALID_ARGUMENT")
    plan_message    the message of that failure (default "scripted failure")
    batch_rows      rows per record batch (default: all rows in one batch)
    metadata        "amp" (default: Amp's batch app_metadata, a final 0-row
                    ranges_complete marker) | "stream" (one microbatch per batch, each
                    followed by its marker, hashes chained) | "none" (no app_metadata) |
                    any other string: sent verbatim as every batch's app_metadata
    metadata_hex    raw bytes (hex) sent as every batch's app_metadata
    network         network name in the ranges (default "mainnet")
    first_block     first block number of the ranges (default 24000000)
    corrupt         with metadata "stream": "gap" (a block is skipped) or "hash" (a
                    prev_hash that does not chain) at microbatch `corrupt_at` (default 1)
    delay_s         seconds to wait (silent) before the first batch, after the schema
    pause_after     after sending this many batches, wait `pause_s` seconds (default 1:
                    the client opens its table meanwhile), call `on_pause()` (the test's
                    actor), then send the rest
    then            what happens after the last batch: "end" (default) | "stall" (the
                    stream stays open, silent, until the server stops) | "<GRPC_CODE>"
                    (the stream fails with that code and `then_message`)
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from typing import Callable

import pyarrow as pa
import pyarrow.flight as flight

_ERRORS = {
    "UNAVAILABLE": flight.FlightUnavailableError,
    "UNAUTHENTICATED": flight.FlightUnauthenticatedError,
    "PERMISSION_DENIED": flight.FlightUnauthorizedError,
    "INTERNAL": flight.FlightInternalError,
    "CANCELLED": flight.FlightCancelledError,
    "DEADLINE_EXCEEDED": flight.FlightTimedOutError,
    "INVALID_ARGUMENT": pa.ArrowInvalid,
    "UNIMPLEMENTED": pa.ArrowNotImplementedError,
    "UNKNOWN": flight.FlightServerError,
}


def _error(code: str, message: str) -> Exception:
    if code not in _ERRORS:
        raise ValueError(f"unknown gRPC code in script: {code!r} (known: {sorted(_ERRORS)})")
    return _ERRORS[code](message)


def _hash(n: int) -> str:
    return "0x" + f"{n:064x}"


class ScriptedFlightServer(flight.FlightServerBase):
    """Answers every GetFlightInfo/DoGet with one scripted table (see the module doc)."""

    def __init__(self, table: pa.Table, script: dict | None = None,
                 on_pause: Callable[[], None] | None = None):
        super().__init__("grpc://127.0.0.1:0")
        self.table = table
        self.script = dict(script or {})
        self.on_pause = on_pause
        self.stopping = threading.Event()
        self.queries: list[str] = []
        self.paused = threading.Event()
        self.pause_error: BaseException | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"grpc://127.0.0.1:{self.port}"

    # --- FlightServerBase -------------------------------------------------------------

    def get_flight_info(self, context, descriptor):
        self.queries.append(descriptor.command.decode("utf-8", "replace"))
        plan = self.script.get("plan", "ok")
        if plan == "stall":
            self.stopping.wait()
            raise _error("UNAVAILABLE", "server stopping")
        if plan == "no_endpoints":
            return flight.FlightInfo(self.table.schema, descriptor, [], -1, -1)
        if plan != "ok":
            raise _error(plan, self.script.get("plan_message", "scripted failure"))
        endpoint = flight.FlightEndpoint(b"scripted", [])
        return flight.FlightInfo(self.table.schema, descriptor, [endpoint], -1, -1)

    def do_get(self, context, ticket):
        return flight.GeneratorStream(self.table.schema, self._batches())

    # --- the scripted stream ----------------------------------------------------------

    def _ranges(self, start: int, end: int, prev: int) -> list[dict]:
        return [{"network": self.script.get("network", "mainnet"),
                 "numbers": {"start": start, "end": end},
                 "hash": _hash(end + 1), "prev_hash": _hash(prev + 1 if prev >= 0 else 0)}]

    def _batches(self):
        rows = self.table.num_rows
        size = int(self.script.get("batch_rows", rows or 1))
        batches = self.table.combine_chunks().to_batches(max_chunksize=size) or []
        if not batches:
            batches = [pa.RecordBatch.from_pylist([], schema=self.table.schema)]
        mode = self.script.get("metadata", "amp")
        if "metadata_hex" in self.script:
            mode = bytes.fromhex(self.script["metadata_hex"]).decode("latin-1")
        first = int(self.script.get("first_block", 24_000_000))
        pause_after = self.script.get("pause_after")
        if self.script.get("delay_s"):
            self.stopping.wait(float(self.script["delay_s"]))
        block = first
        prev = first - 1
        for index, batch in enumerate(batches):
            if mode == "amp":
                meta = {"ranges": self._ranges(first, first + max(len(batches), 1) - 1, first - 1),
                        "ranges_complete": False}
                yield batch, json.dumps(meta).encode()
            elif mode == "stream":
                corrupt = self.script.get("corrupt")
                if corrupt and index == int(self.script.get("corrupt_at", 1)):
                    if corrupt == "gap":
                        prev, block = block, block + 1  # block `block` never arrives
                    elif corrupt == "hash":
                        prev = prev + 1000  # prev_hash names no block we sent
                ranges = self._ranges(block, block, prev)
                yield batch, json.dumps({"ranges": ranges, "ranges_complete": False}).encode()
                yield (batch.slice(0, 0),
                       json.dumps({"ranges": ranges, "ranges_complete": True}).encode())
                prev, block = block, block + 1
            elif mode == "none":
                yield batch
            elif "metadata_hex" in self.script:
                yield batch, bytes.fromhex(self.script["metadata_hex"])
            else:
                yield batch, mode.encode()
            if pause_after is not None and index + 1 == int(pause_after):
                self._pause()
        if mode == "amp":
            meta = {"ranges": self._ranges(first, first + max(len(batches), 1) - 1, first - 1),
                    "ranges_complete": True}
            yield batches[0].slice(0, 0), json.dumps(meta).encode()
        then = self.script.get("then", "end")
        if then == "end":
            return
        if then == "stall":
            self.stopping.wait()
            return
        raise _error(then, self.script.get("then_message", "scripted failure mid-stream"))

    def _pause(self):
        # Let the client take what was sent (and open its table) before the actor runs.
        time.sleep(float(self.script.get("pause_s", 1.0)))
        try:
            if self.on_pause is not None:
                self.on_pause()
        except BaseException as error:  # reported by the test, not swallowed
            self.pause_error = error
        finally:
            self.paused.set()

    # --- lifecycle --------------------------------------------------------------------

    def __enter__(self):
        self._thread = threading.Thread(target=self.serve, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.shutdown()
        if self._thread is not None:
            self._thread.join(timeout=10)
        return False


class StallProxy:
    """TCP proxy to 127.0.0.1:upstream_port. After `after_bytes` bytes from the server to
    the client it either stops forwarding and keeps both connections open (`cut=False`:
    a server that stalls mid-stream) or closes the client's connection (`cut=True`: a
    disconnect). Bytes from the client always flow."""

    def __init__(self, upstream_port: int, after_bytes: int, cut: bool = False):
        self.upstream_port = upstream_port
        self.after_bytes = after_bytes
        self.cut = cut
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"grpc://127.0.0.1:{self.port}"

    def _spawn(self, target, *args):
        thread = threading.Thread(target=target, args=args, daemon=True)
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _accept(self):
        self._listener.settimeout(0.2)
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except (socket.timeout, OSError):
                continue
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            with self._lock:
                self._sockets += [client, upstream]
            self._spawn(self._pump, client, upstream, None)
            self._spawn(self._pump, upstream, client, self.after_bytes)

    def _pump(self, source: socket.socket, target: socket.socket, limit: int | None):
        sent = 0
        source.settimeout(0.2)
        while not self._stop.is_set():
            try:
                data = source.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                break
            if not data:
                break
            if limit is not None and sent + len(data) > limit:
                with contextlib.suppress(OSError):
                    target.sendall(data[:max(limit - sent, 0)])
                if self.cut:
                    with contextlib.suppress(OSError):
                        target.shutdown(socket.SHUT_RDWR)
                    target.close()
                    return
                self._stop.wait()  # stall: hold the connection open, silent
                return
            sent += len(data)
            try:
                target.sendall(data)
            except OSError:
                break
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)

    def __enter__(self):
        self._spawn(self._accept)
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._listener.close()
        with self._lock:
            sockets, threads = list(self._sockets), list(self._threads)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.close()
        for thread in threads:
            thread.join(timeout=5)
        return False


class RawServer:
    """A TCP listener that is no gRPC server: `behaviour` is "garbage" (answers every
    connection with non-HTTP/2 bytes), "silent" (accepts and never answers) or "close"
    (accepts and closes at once)."""

    GARBAGE = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello" + bytes(range(256)) * 4

    def __init__(self, behaviour: str):
        if behaviour not in ("garbage", "silent", "close"):
            raise ValueError(f"unknown raw server behaviour {behaviour!r}")
        self.behaviour = behaviour
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._open: list[socket.socket] = []

    @property
    def url(self) -> str:
        return f"grpc://127.0.0.1:{self.port}"

    def _serve(self):
        self._listener.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except (socket.timeout, OSError):
                continue
            if self.behaviour == "close":
                conn.close()
                continue
            if self.behaviour == "garbage":
                with contextlib.suppress(OSError):
                    conn.sendall(self.GARBAGE)
            self._open.append(conn)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._listener.close()
        self._thread.join(timeout=5)
        for conn in self._open:
            with contextlib.suppress(OSError):
                conn.close()
        return False
