"""A fault-injecting HTTP/1.1 reverse proxy for the object-store emulators (S3, Azure
Blob, GCS JSON API), used to break Delta commits in controlled ways.

    from fault_proxy import Rule, start_fault_proxy

    rules = [Rule("lost", "PUT", r"_delta_log/\\d{20}\\.json", "lost_reply", times=1)]
    with start_fault_proxy(s3.endpoint, rules) as proxy:
        ...point the writer at proxy.endpoint...
        assert proxy.counts == {"lost": 1}

Forwarding is faithful: method, request target (path + query) and every request header
are sent unchanged -- including Host. S3 SigV4 signs the Host header, so a client
talking to the proxy signed Host=127.0.0.1:<proxy port>; rewriting it to the upstream's
would break the signature (GCS emulators also build upload Location URLs from Host,
which then point back at the proxy). Request bodies are read by Content-Length or
chunked framing and forwarded in the same framing. Responses are relayed with the
hop-by-hop headers dropped and the body re-framed with Content-Length (HEAD, 204 and
304 answers keep the upstream's headers and carry no body). Toward the client the proxy
speaks HTTP/1.1 keep-alive; toward the upstream each client connection owns one
persistent upstream connection.

Rules are checked in order for every request; the first rule that matches (method and
re.search of path_regex on the path + query) and is eligible fires:
  * a rule's first `after` matches are skipped (they fall through to later rules);
  * it fires at most `times` times (None = unlimited);
  * it then fires with `probability`, drawn from random.Random(seed).
Actions:
  status_before   answer `status` with `body` (default: an S3-style SlowDown XML error)
                  without forwarding: the request was NOT applied.
  lost_reply      forward, read the whole upstream answer, then close the client
                  connection without sending a byte: applied, outcome unknown.
  truncated_reply forward, then send the upstream's status line and headers but close
                  before the declared Content-Length is complete (an empty body is
                  declared as 1 byte): applied, and the client sees a transfer error.
  status_after    forward, discard the upstream answer, answer `status` with `body`:
                  applied but reported failed.
  delay           sleep `delay_s`, then forward normally.

libcurl caveat for lost_reply: when a *reused* connection dies before any response byte
arrives, libcurl silently re-sends the request on a fresh connection (Curl_retry_request,
up to 5 times) -- the application only sees the retry's answer (e.g. 412 for a repeated
If-None-Match:* PUT, or the next rule's fault, since the retry passes through the rules
again). Only on a fresh connection does the client see "Empty reply from server".
truncated_reply always surfaces as an error (CURLE_PARTIAL_FILE), because response bytes
were received.

Module API:
  start_fault_proxy(upstream, rules=None, *, seed=0, upstream_timeout=60.0)
      -> context manager yielding a started FaultProxy; stopped (listener closed, open
         client connections shut down, handler threads joined) on exit.
  FaultProxy: endpoint ("http://127.0.0.1:PORT"), host, port, upstream,
      set_rules(rules) (resets firing state and counts), counts (rule name -> times
      fired, a snapshot), requests (list of (method, path-with-query, status) in the
      order answered; status None when the client got no complete response),
      clear_requests(), connections_accepted.
  Rule(name, method, path_regex, action, status=503, times=1, probability=1.0, after=0,
       delay_s=0.0, body=<S3 XML error>, content_type="application/xml")

`python tests/interop/fault_proxy.py` runs a self-test against an in-process upstream.
"""

from __future__ import annotations

import contextlib
import http.client
import random
import re
import select
import socket
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import BinaryIO, Iterator

ACTIONS = ("status_before", "lost_reply", "truncated_reply", "status_after", "delay")

DEFAULT_ERROR_BODY = b"<Error><Code>SlowDown</Code><Message>injected</Message></Error>"

# Hop-by-hop headers (RFC 9110 7.6.1) are not relayed in responses; the proxy frames its
# own responses with Content-Length. Request headers are forwarded untouched (see above).
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "transfer-encoding",
                        "te", "trailer", "upgrade"})


@dataclass
class Rule:
    name: str
    method: str | None          # None matches any method
    path_regex: str             # re.search()ed against the path + query
    action: str                 # one of ACTIONS
    status: int = 503
    times: int | None = 1       # None = fire every time
    probability: float = 1.0
    after: int = 0              # skip the first `after` matches
    delay_s: float = 0.0
    body: bytes = DEFAULT_ERROR_BODY
    content_type: str = "application/xml"
    _regex: re.Pattern = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"rule {self.name!r}: unknown action {self.action!r}")
        if self.method is not None:
            self.method = self.method.upper()
        if isinstance(self.body, str):
            self.body = self.body.encode()
        self._regex = re.compile(self.path_regex)

    def matches(self, method: str, target: str) -> bool:
        return (self.method is None or self.method == method) and bool(self._regex.search(target))


@dataclass
class _RuleState:
    matched: int = 0
    fired: int = 0


def read_chunked(rfile: BinaryIO) -> tuple[bytes, bytes]:
    """Reads a chunked body; returns (payload, raw trailer section without the final CRLF)."""
    payload = bytearray()
    while True:
        size_line = rfile.readline(65537)
        if not size_line:
            raise ValueError("connection closed inside a chunked body")
        size = int(size_line.split(b";", 1)[0].strip(), 16)
        if size == 0:
            break
        payload += rfile.read(size)
        if rfile.readline(3) not in (b"\r\n", b"\n"):
            raise ValueError("malformed chunk terminator")
    trailers = bytearray()
    while True:
        line = rfile.readline(65537)
        if line in (b"\r\n", b"\n", b""):
            return bytes(payload), bytes(trailers)
        trailers += line


def encode_chunked(payload: bytes, trailers: bytes = b"") -> bytes:
    head = b"%x\r\n%s\r\n" % (len(payload), payload) if payload else b""
    return head + b"0\r\n" + trailers + b"\r\n"


class FaultProxy:
    def __init__(self, upstream: str, rules: list[Rule] | None = None, *, seed: int = 0,
                 upstream_timeout: float = 60.0) -> None:
        parts = urllib.parse.urlsplit(upstream)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"upstream must be http://host[:port], got {upstream!r}")
        self.upstream = upstream
        self.upstream_host = parts.hostname
        self.upstream_port = parts.port or 80
        self.upstream_netloc = parts.netloc
        self.upstream_timeout = upstream_timeout
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self._rules: list[Rule] = []
        self._states: list[_RuleState] = []
        self._counts: dict[str, int] = {}
        self._requests: list[tuple[str, str, int | None]] = []
        self.connections_accepted = 0
        self.set_rules(rules or [])
        self._server = _ProxyServer(("127.0.0.1", 0), self)
        self.host, self.port = self._server.server_address[:2]
        self.endpoint = f"http://{self.host}:{self.port}"
        self._thread: threading.Thread | None = None

    # -- rules and observations --------------------------------------------------------

    def set_rules(self, rules: list[Rule]) -> None:
        """Replaces the rules; firing state (times, after) and counts start afresh."""
        with self._lock:
            self._rules = list(rules)
            self._states = [_RuleState() for _ in self._rules]
            self._counts = {rule.name: 0 for rule in self._rules}

    @property
    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    @property
    def requests(self) -> list[tuple[str, str, int | None]]:
        with self._lock:
            return list(self._requests)

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    def _select_rule(self, method: str, target: str) -> Rule | None:
        with self._lock:
            for rule, state in zip(self._rules, self._states):
                if not rule.matches(method, target):
                    continue
                state.matched += 1
                if state.matched <= rule.after:
                    continue
                if rule.times is not None and state.fired >= rule.times:
                    continue
                # Draw only for probabilistic rules so that adding a certain rule does not
                # shift the seeded sequence of the others.
                if rule.probability < 1.0 and self._rng.random() >= rule.probability:
                    continue
                state.fired += 1
                self._counts[rule.name] = self._counts.get(rule.name, 0) + 1
                return rule
        return None

    def _record(self, method: str, target: str, status: int | None) -> None:
        with self._lock:
            self._requests.append((method, target, status))

    def _connection_accepted(self) -> None:
        with self._lock:
            self.connections_accepted += 1

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05},
                                        name=f"fault-proxy-{self.port}", daemon=True)
        self._thread.start()

    def stop(self, join_timeout: float = 5.0) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(join_timeout)
            self._thread = None
        self._server.close_connections(join_timeout)
        self._server.server_close()


class _ProxyServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], proxy: FaultProxy) -> None:
        self.proxy = proxy
        self.stopping = False
        self._open: dict[socket.socket, threading.Thread] = {}
        self._open_lock = threading.Lock()
        super().__init__(address, _ProxyHandler)

    def track(self, sock: socket.socket) -> None:
        with self._open_lock:
            self._open[sock] = threading.current_thread()

    def untrack(self, sock: socket.socket) -> None:
        with self._open_lock:
            self._open.pop(sock, None)

    def close_connections(self, join_timeout: float) -> None:
        # Idle keep-alive connections would otherwise keep their handler threads blocked
        # in readline() forever; shutting the sockets down makes them return.
        self.stopping = True
        with self._open_lock:
            open_now = list(self._open.items())
        for sock, _ in open_now:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + join_timeout
        for _, thread in open_now:
            thread.join(max(0.0, deadline - time.monotonic()))

    def handle_error(self, request, client_address) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError) or (self.stopping and isinstance(exc, OSError)):
            return  # the client went away (or we are shutting its socket down)
        super().handle_error(request, client_address)


class _ProxyHandler(BaseHTTPRequestHandler):
    # HTTP/1.1 keeps client connections open between requests (libcurl reuses them);
    # every response therefore carries Content-Length or is bodiless by definition.
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; with Nagle on, the second write waits
    # for the client's delayed ACK (~40 ms per request on Linux).
    disable_nagle_algorithm = True
    server: _ProxyServer

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection)
        self.server.proxy._connection_accepted()
        proxy = self.server.proxy
        self.upstream = http.client.HTTPConnection(proxy.upstream_host, proxy.upstream_port,
                                                   timeout=proxy.upstream_timeout)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.upstream.close()
            self.server.untrack(self.connection)

    def log_message(self, format: str, *args) -> None:
        pass  # the proxy's request log is FaultProxy.requests

    def __getattr__(self, name: str):
        # BaseHTTPRequestHandler dispatches to do_<METHOD>: proxy every method the same way.
        if name.startswith("do_"):
            return self._proxy_request
        raise AttributeError(name)

    # -- one request -------------------------------------------------------------------

    def _proxy_request(self) -> None:
        proxy = self.server.proxy
        try:
            wire_body = self._read_request_body()
        except ValueError as exc:
            self.close_connection = True
            self._reply(400, None, [("Content-Type", "text/plain")], str(exc).encode())
            return
        rule = proxy._select_rule(self.command, self.path)
        action = rule.action if rule else None
        if action == "status_before":
            self._reply_injected(rule)
            return
        if action == "delay":
            time.sleep(rule.delay_s)
        try:
            status, reason, headers, body = self._forward(wire_body)
        except (OSError, http.client.HTTPException) as exc:
            if action in ("lost_reply", "truncated_reply"):
                self._drop_client()
            else:
                self.close_connection = True
                message = f"fault proxy: upstream {proxy.upstream} failed: {exc!r}".encode()
                self._reply(502, None, [("Content-Type", "text/plain")], message)
            return
        if action == "lost_reply":
            self._drop_client()
        elif action == "truncated_reply":
            self._reply_truncated(status, reason, headers, body)
        elif action == "status_after":
            self._reply_injected(rule)
        else:
            self._relay(status, reason, headers, body)

    def _read_request_body(self) -> bytes:
        """The request body exactly as it is to be sent upstream (same framing)."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            # Forwarded chunked again so that the headers stay byte-for-byte the client's.
            return encode_chunked(*read_chunked(self.rfile))
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _forward(self, wire_body: bytes) -> tuple[int, str, list[tuple[str, str]], bytes]:
        conn = self.upstream
        if conn.sock is not None and select.select([conn.sock], [], [], 0)[0]:
            # An idle upstream connection is readable only at EOF (or junk): the upstream
            # closed it. Reconnect now rather than have the request fail on it.
            conn.close()
        for attempt in (1, 2):
            reused = conn.sock is not None
            try:
                # skip_host / skip_accept_encoding: http.client must not add its own Host
                # or Accept-Encoding; the client's headers are sent exactly as received.
                conn.putrequest(self.command, self.path, skip_host=True,
                                skip_accept_encoding=True)
                for name, value in self.headers.items():
                    conn.putheader(name, value)
                if "Host" not in self.headers:
                    conn.putheader("Host", self.server.proxy.upstream_netloc)
                conn.endheaders(wire_body or None)
            except OSError:
                conn.close()
                # A send error on a reused connection means the upstream had closed it, so
                # it never saw the request: resending once cannot duplicate it.
                if reused and attempt == 1:
                    continue
                raise
            break
        try:
            response = conn.getresponse()
            body = response.read()
        except BaseException:
            conn.close()
            raise
        if response.will_close:
            conn.close()
        return response.status, response.reason, response.getheaders(), body

    # -- answers to the client ---------------------------------------------------------

    def _bodiless(self, status: int) -> bool:
        return self.command == "HEAD" or status in (204, 304) or 100 <= status < 200

    def _relayed_headers(self, headers: list[tuple[str, str]], keep_length: bool
                         ) -> list[tuple[str, str]]:
        drop = set(HOP_BY_HOP)
        for name, value in headers:  # headers named in Connection are hop-by-hop too
            if name.lower() == "connection":
                drop.update(token.strip().lower() for token in value.split(","))
        if not keep_length:
            drop.add("content-length")
        return [(name, value) for name, value in headers if name.lower() not in drop]

    def _relay(self, status: int, reason: str, headers: list[tuple[str, str]],
               body: bytes) -> None:
        if self._bodiless(status):
            # HEAD's Content-Length describes the object; keep the upstream's as is.
            self._reply(status, reason, self._relayed_headers(headers, keep_length=True), b"")
            return
        relayed = self._relayed_headers(headers, keep_length=False)
        self._reply(status, reason, relayed + [("Content-Length", str(len(body)))], body)

    def _reply_injected(self, rule: Rule) -> None:
        headers = [("Content-Type", rule.content_type), ("Content-Length", str(len(rule.body)))]
        self._reply(rule.status, None, headers, b"" if self._bodiless(rule.status) else rule.body)

    def _reply(self, status: int, reason: str | None, headers: list[tuple[str, str]],
               body: bytes) -> None:
        # Recorded before writing, so a client that has its answer also sees it in
        # FaultProxy.requests.
        self.server.proxy._record(self.command, self.path, status)
        self.send_response_only(status, reason)  # not send_response: no extra Server/Date
        for name, value in headers:
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if body:
            self.wfile.write(body)

    def _drop_client(self) -> None:
        self.server.proxy._record(self.command, self.path, None)
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _reply_truncated(self, status: int, reason: str, headers: list[tuple[str, str]],
                         body: bytes) -> None:
        if self._bodiless(status):
            self._drop_client()  # nothing to truncate: no body is expected
            return
        self.server.proxy._record(self.command, self.path, None)
        self.close_connection = True
        declared = len(body) or 1
        self.send_response_only(status, reason)
        for name, value in self._relayed_headers(headers, keep_length=False):
            self.send_header(name, value)
        self.send_header("Content-Length", str(declared))
        self.end_headers()
        self.wfile.write(body[:len(body) // 2])
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


@contextlib.contextmanager
def start_fault_proxy(upstream: str, rules: list[Rule] | None = None, *, seed: int = 0,
                      upstream_timeout: float = 60.0) -> Iterator[FaultProxy]:
    proxy = FaultProxy(upstream, rules, seed=seed, upstream_timeout=upstream_timeout)
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.stop()


# -- self-test ---------------------------------------------------------------------------

class _StoreHandler(BaseHTTPRequestHandler):
    """A dict-backed PUT/GET/HEAD/DELETE object store; notes the Host headers it saw."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    objects: dict[str, bytes] = {}
    hosts: list[str] = []
    headers_seen: list[list[tuple[str, str]]] = []
    connections = 0
    lock = threading.Lock()

    def setup(self) -> None:
        super().setup()
        with self.lock:
            type(self).connections += 1

    def log_message(self, format: str, *args) -> None:
        pass

    def _note(self) -> str:
        with self.lock:
            self.hosts.append(self.headers.get("Host", ""))
            self.headers_seen.append(list(self.headers.items()))
        return urllib.parse.urlsplit(self.path).path

    def _answer(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None,
                chunked: bool = False) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n"
                             % (3, body[:3], len(body) - 3, body[3:]))
        else:
            if status not in (204, 304):
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

    def do_PUT(self) -> None:
        key = self._note()
        if "chunked" in self.headers.get("Transfer-Encoding", ""):
            body, _ = read_chunked(self.rfile)
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.lock:
            self.objects[key] = body
        self._answer(200, headers={"ETag": f'"{len(body)}"'})

    def do_GET(self) -> None:
        key = self._note()
        with self.lock:
            body = self.objects.get(key)
        if body is None:
            self._answer(404, b"<Error><Code>NoSuchKey</Code></Error>")
        else:
            self._answer(200, body, {"Content-Type": "application/octet-stream"},
                         chunked="chunked" in self.path)

    def do_HEAD(self) -> None:
        key = self._note()
        with self.lock:
            body = self.objects.get(key)
        self._answer(200 if body is not None else 404, body or b"")

    def do_DELETE(self) -> None:
        key = self._note()
        with self.lock:
            self.objects.pop(key, None)
        self._answer(204)


def _self_test() -> None:
    store = ThreadingHTTPServer(("127.0.0.1", 0), _StoreHandler)
    store.daemon_threads = True
    threading.Thread(target=store.serve_forever, daemon=True).start()
    upstream = f"http://127.0.0.1:{store.server_address[1]}"
    objects = _StoreHandler.objects
    checks: list[str] = []

    def check(name: str, condition: bool, detail: object = "") -> None:
        if not condition:
            raise AssertionError(f"{name}: {detail}")
        checks.append(name)
        print(f"ok  {name}")

    def connect(proxy: FaultProxy) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(proxy.host, proxy.port, timeout=10)

    def call(conn, method, path, body=None, headers=None):
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()

    with start_fault_proxy(upstream) as proxy:
        # Plain forwarding; Host and other headers arrive unchanged.
        conn = connect(proxy)
        signed = {"x-amz-date": "20240101T000000Z", "Authorization": "AWS4-HMAC-SHA256 x"}
        status, _, _ = call(conn, "PUT", "/b/plain?x=1", b"hello", signed)
        check("forward PUT", status == 200 and objects["/b/plain"] == b"hello", status)
        check("Host preserved", _StoreHandler.hosts[-1] == f"127.0.0.1:{proxy.port}",
              _StoreHandler.hosts[-1])
        # Exactly what http.client sent, in order: nothing added, dropped or rewritten.
        sent = [("Host", f"127.0.0.1:{proxy.port}"), ("Accept-Encoding", "identity"),
                ("Content-Length", "5"), *signed.items()]
        check("headers preserved", _StoreHandler.headers_seen[-1] == sent,
              _StoreHandler.headers_seen[-1])
        status, _, body = call(conn, "GET", "/b/plain")
        check("forward GET", (status, body) == (200, b"hello"), (status, body))
        status, headers, body = call(conn, "HEAD", "/b/plain")
        check("HEAD keeps Content-Length, no body",
              status == 200 and headers.get("Content-Length") == "5" and body == b"", headers)
        status, headers, body = call(conn, "DELETE", "/b/plain")
        check("204 passes through", status == 204 and body == b"" and "/b/plain" not in objects,
              (status, headers))
        status, _, body = call(conn, "GET", "/b/plain")
        check("404 with body after bodiless answers", status == 404 and b"NoSuchKey" in body,
              status)
        call(conn, "PUT", "/b/big", b"0123456789" * 100)
        status, headers, body = call(conn, "GET", "/b/big?chunked")
        check("chunked response re-framed with Content-Length",
              body == b"0123456789" * 100 and headers.get("Content-Length") == "1000"
              and "Transfer-Encoding" not in headers, headers)
        conn.request("PUT", "/b/chunked", body=iter([b"ab", b"cd", b"e"]), encode_chunked=True)
        response = conn.getresponse()
        response.read()
        check("chunked request body", response.status == 200
              and objects["/b/chunked"] == b"abcde"
              and ("Transfer-Encoding", "chunked") in _StoreHandler.headers_seen[-1],
              objects.get("/b/chunked"))
        conn.close()

        # Keep-alive: 100 sequential requests on one client connection.
        accepted_before = proxy.connections_accepted
        upstream_before = _StoreHandler.connections
        conn = connect(proxy)
        call(conn, "PUT", "/b/ka", b"x")
        sock = conn.sock
        for i in range(100):
            status, _, body = call(conn, "GET", "/b/ka")
            assert (status, body) == (200, b"x"), (i, status, body)
        check("keep-alive: 100 requests on one client connection",
              conn.sock is sock and proxy.connections_accepted == accepted_before + 1,
              proxy.connections_accepted - accepted_before)
        check("keep-alive: one upstream connection",
              _StoreHandler.connections == upstream_before + 1,
              _StoreHandler.connections - upstream_before)
        conn.close()

        # status_before: refused, not applied; fires `times` times, then forwards.
        proxy.set_rules([Rule("503", "PUT", r"/b/sb$", "status_before", status=503, times=2)])
        conn = connect(proxy)
        results = [call(conn, "PUT", "/b/sb", b"v%d" % i) for i in range(3)]
        check("status_before: 503 + S3 XML, upstream unchanged",
              [r[0] for r in results[:2]] == [503, 503]
              and results[0][2] == DEFAULT_ERROR_BODY
              and results[0][1].get("Content-Type") == "application/xml", results[:2])
        check("status_before: times=2 then forwarded",
              results[2][0] == 200 and objects["/b/sb"] == b"v2" and proxy.counts == {"503": 2},
              (results[2][0], proxy.counts))
        check("requests log", proxy.requests[-3:] == [("PUT", "/b/sb", 503),
                                                       ("PUT", "/b/sb", 503),
                                                       ("PUT", "/b/sb", 200)], proxy.requests)
        status, _, _ = call(conn, "HEAD", "/b/sb")
        check("method filter: HEAD not matched", status == 200, status)
        conn.close()

        # lost_reply: applied, but the client gets no answer at all.
        proxy.set_rules([Rule("lost", "PUT", r"/b/lost", "lost_reply")])
        conn = connect(proxy)
        try:
            call(conn, "PUT", "/b/lost", b"applied")
            raised = None
        except (http.client.RemoteDisconnected, ConnectionError) as exc:
            raised = exc
        check("lost_reply: client sees a dropped connection", raised is not None, raised)
        check("lost_reply: request was applied", objects.get("/b/lost") == b"applied",
              objects.get("/b/lost"))
        check("lost_reply: logged with status None",
              proxy.requests[-1] == ("PUT", "/b/lost", None) and proxy.counts == {"lost": 1},
              proxy.requests[-1])
        conn.close()

        # truncated_reply: applied, the answer is cut short.
        proxy.set_rules([Rule("cut", None, r"/b/cut", "truncated_reply", times=None)])
        conn = connect(proxy)
        try:
            call(conn, "PUT", "/b/cut", b"applied")
            raised = None
        except http.client.IncompleteRead as exc:
            raised = exc
        check("truncated_reply (empty body): IncompleteRead, applied",
              raised is not None and objects.get("/b/cut") == b"applied", raised)
        conn.close()
        conn = connect(proxy)
        try:
            call(conn, "GET", "/b/cut")
            raised = None
        except http.client.IncompleteRead as exc:
            raised = exc
        check("truncated_reply (GET): IncompleteRead", raised is not None
              and raised.partial == b"app", raised)
        conn.close()

        # status_after: applied but answered 500.
        proxy.set_rules([Rule("500", "PUT", r"/b/sa", "status_after", status=500,
                              body=b"<Error><Code>InternalError</Code></Error>")])
        conn = connect(proxy)
        status, _, body = call(conn, "PUT", "/b/sa", b"applied")
        check("status_after: 500 returned, request applied",
              status == 500 and b"InternalError" in body and objects.get("/b/sa") == b"applied",
              (status, body))
        status, _, _ = call(conn, "PUT", "/b/sa", b"again")
        check("status_after: connection still usable", status == 200, status)

        # delay
        proxy.set_rules([Rule("slow", "GET", r"/b/sa", "delay", delay_s=0.3)])
        started = time.monotonic()
        status, _, body = call(conn, "GET", "/b/sa")
        elapsed = time.monotonic() - started
        check("delay: forwarded after delay_s", status == 200 and body == b"again"
              and elapsed >= 0.3, elapsed)

        # Rule order, `after`, fall-through of exhausted rules.
        proxy.set_rules([Rule("third", "GET", r"/b/sa", "status_before", status=429, after=2),
                         Rule("any", None, r"/b/sa", "status_before", status=503, times=None)])
        statuses = [call(conn, "GET", "/b/sa")[0] for _ in range(5)]
        check("after/times/order", statuses == [503, 503, 429, 503, 503]
              and proxy.counts == {"third": 1, "any": 4}, (statuses, proxy.counts))

        # probability is reproducible for a given seed.
        def coin_flips(seed: int) -> list[int]:
            with start_fault_proxy(upstream, [Rule("coin", "GET", "", "status_before",
                                                   probability=0.5, times=None)],
                                   seed=seed) as coin:
                c = connect(coin)
                flips = [call(c, "GET", "/b/sa")[0] for _ in range(20)]
                c.close()
                return flips
        first, second = coin_flips(7), coin_flips(7)
        check("probability: seeded and mixed",
              first == second and {200, 503} == set(first), first)
        conn.close()

        # Upstream failures answer 502.
        with start_fault_proxy("http://127.0.0.1:1") as broken:
            c = connect(broken)
            status, _, body = call(c, "GET", "/x")
            check("unreachable upstream: 502", status == 502, (status, body))
            c.close()

        # Concurrency: counters stay exact under parallel clients.
        proxy.set_rules([Rule("par", "GET", r"/b/sa", "status_before", times=10)])
        proxy.clear_requests()
        def worker(results: list[int]) -> None:
            c = connect(proxy)
            results.extend(call(c, "GET", "/b/sa")[0] for _ in range(20))
            c.close()
        outcomes: list[int] = []
        threads = [threading.Thread(target=worker, args=(outcomes,)) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        check("concurrent: exactly `times` firings",
              outcomes.count(503) == 10 and outcomes.count(200) == 150
              and proxy.counts == {"par": 10} and len(proxy.requests) == 160,
              (outcomes.count(503), proxy.counts, len(proxy.requests)))

        idle = connect(proxy)
        call(idle, "GET", "/b/sa")
        stop_proxy = proxy
    # After exit: the listener is closed and idle keep-alive connections were shut down.
    try:
        call(idle, "GET", "/b/sa")
        reused = True
    except (OSError, http.client.HTTPException):
        reused = False
    check("stop closes idle keep-alive connections", not reused)
    idle.close()
    try:
        socket.create_connection((stop_proxy.host, stop_proxy.port), timeout=2).close()
        listening = True
    except OSError:
        listening = False
    check("stop closes the listener", not listening)
    check("stop joins handler threads", not stop_proxy._server._open, stop_proxy._server._open)
    store.shutdown()
    store.server_close()
    print(f"all {len(checks)} checks passed")


if __name__ == "__main__":
    _self_test()
