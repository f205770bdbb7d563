"""Google Cloud Storage emulator for interop tests: fsouza/fake-gcs-server over plain HTTP,
plus a small XML-API front so that object_store clients (deltalake, polars) work too.

    from emulator_gcs import start_gcs_emulator

    with start_gcs_emulator(buckets=("bkt",)) as gcs:
        # the C++ writer talks to gcs.endpoint: JSON API (/storage/v1, /upload/storage/v1)
        write_deltalake(gcs.gs_url("bkt", "t1"), table, storage_options=gcs.storage_options())
        DeltaTable(gcs.gs_url("bkt", "t1"), storage_options=gcs.storage_options())

The binary comes from $FAKE_GCS_SERVER or .deps/bin/fake-gcs-server, which
scripts/setup_gcs_emulator.sh installs (pinned version, built with Go). It runs on
127.0.0.1:<ephemeral port> with the in-memory backend (or the filesystem backend in a
temporary directory); everything is stopped (SIGTERM, then SIGKILL) on exit, and the
children also get SIGKILL if the process that started them dies.

Two endpoints:
  * `endpoint`: fake-gcs-server itself. JSON API media/multipart/resumable uploads honour
    `ifGenerationMatch` / `ifGenerationNotMatch` atomically (checked under the backend's
    lock); `ifGenerationMatch=0` on an existing object gives 412 with
    {"error":{"code":412,"message":"Precondition failed","errors":[{"domain":"global",
    "reason":"conditionNotMet","message":"Precondition failed"}]}}.
  * `xml_endpoint`: the XML-API front (this file run with --xml-front, a child process).
    object_store (deltalake, polars) speaks only the XML API: PUT /BUCKET/OBJECT with
    `x-goog-if-generation-match`, XML multipart uploads, `x-goog-copy-source` copies and
    `GET /BUCKET?list-type=2`. fake-gcs-server rejects such a PUT ("invalid uploadType")
    and its XML list ignores max-keys/start-after, so the front turns these into JSON-API
    calls (the generation precondition becomes `ifGenerationMatch`, so create-if-absent
    stays atomic) and passes everything else (GET/HEAD/DELETE of objects) through.

fake-gcs-server does not check Authorization headers at all. Quirks worth knowing for a
client: object delete answers 200 (real GCS: 204); a list's `nextPageToken` is the next
object name; with a delimiter, `prefixes` are not paginated (every page repeats them);
a pageToken overrides startOffset.

Run this file directly for a self-check (the deltalake/polars part needs the .deps/venv
python).
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator
from xml.sax.saxutils import escape as xml_escape

from emulator_process import die_with_parent, free_port, stop

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BINARY = REPO_ROOT / ".deps" / "bin" / "fake-gcs-server"
SETUP_SCRIPT = REPO_ROOT / "scripts" / "setup_gcs_emulator.sh"
STARTUP_TIMEOUT_S = 20.0


class EmulatorNotInstalled(RuntimeError):
    """fake-gcs-server is not installed; run scripts/setup_gcs_emulator.sh."""


def emulator_binary() -> Path:
    """Path of fake-gcs-server ($FAKE_GCS_SERVER or .deps/bin); raises EmulatorNotInstalled."""
    configured = os.environ.get("FAKE_GCS_SERVER")
    path = Path(configured) if configured else DEFAULT_BINARY
    if not path.is_file() or not os.access(path, os.X_OK):
        raise EmulatorNotInstalled(
            f"fake-gcs-server not found at {path} "
            f"({'from $FAKE_GCS_SERVER' if configured else 'default'}); "
            f"run {SETUP_SCRIPT.relative_to(REPO_ROOT)}")
    return path


def _http(base: str, method: str, path: str, body: bytes | None = None,
          headers: dict[str, str] | None = None,
          timeout: float = 60.0) -> tuple[int, dict[str, str], bytes]:
    """One request; returns (status, headers with lower-case names, body); never raises
    for an HTTP error status."""
    req = urllib.request.Request(base + path, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read()


@dataclass
class GcsEmulator:
    """A running fake-gcs-server (+ XML front). Endpoints are http://127.0.0.1:PORT."""

    endpoint: str          # fake-gcs-server: JSON API (and its own partial XML API)
    port: int
    xml_endpoint: str      # XML-API front for object_store clients (deltalake, polars)
    proc: subprocess.Popen
    front_proc: subprocess.Popen
    log_path: Path
    service_account_path: Path
    data_dir: Path | None = None
    buckets: list[str] = field(default_factory=list)

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None,
                timeout: float = 60.0) -> tuple[int, dict[str, str], bytes]:
        """Raw request to `endpoint`; path starts with '/'. Returns (status, headers with
        lower-case names, body); HTTP error statuses are returned, not raised."""
        return _http(self.endpoint, method, path, body, headers, timeout)

    def create_bucket(self, name: str) -> None:
        """Create a bucket (POST /storage/v1/b); a bucket that already exists is fine."""
        status, _, body = self.request(
            "POST", "/storage/v1/b?project=test-project",
            json.dumps({"name": name}).encode(), {"Content-Type": "application/json"})
        if status not in (200, 409):
            raise RuntimeError(f"create_bucket({name!r}): HTTP {status}: {body[:500]!r}")
        if name not in self.buckets:
            self.buckets.append(name)

    def list_objects(self, bucket: str, prefix: str = "") -> list[str]:
        """All object names in bucket under prefix (follows nextPageToken)."""
        names: list[str] = []
        token = ""
        while True:
            query = {"prefix": prefix}
            if token:
                query["pageToken"] = token
            status, _, body = self.request(
                "GET", f"/storage/v1/b/{urllib.parse.quote(bucket, safe='')}/o?"
                + urllib.parse.urlencode(query))
            if status != 200:
                raise RuntimeError(f"list_objects({bucket!r}): HTTP {status}: {body[:500]!r}")
            doc = json.loads(body)
            names += [item["name"] for item in doc.get("items", [])]
            token = doc.get("nextPageToken", "")
            if not token:
                return names

    def read_object(self, bucket: str, name: str) -> bytes | None:
        """Object content, or None when it does not exist."""
        status, _, body = self.request(
            "GET", f"/storage/v1/b/{urllib.parse.quote(bucket, safe='')}/o/"
            f"{urllib.parse.quote(name, safe='')}?alt=media")
        if status == 404:
            return None
        if status != 200:
            raise RuntimeError(f"read_object({bucket!r}, {name!r}): HTTP {status}: {body[:500]!r}")
        return body

    def gs_url(self, bucket: str, path: str = "") -> str:
        return f"gs://{bucket}/{path.strip('/')}" if path.strip("/") else f"gs://{bucket}"

    def storage_options(self) -> dict[str, str]:
        """deltalake / polars (object_store) options that point gs:// URLs at the emulator.

        object_store's GCS client reads `gcs_base_url` and `disable_oauth` from the service
        account JSON (a hook made for fake-gcs-server): requests go to the XML front with an
        empty bearer token; no token endpoint, no RSA key. `allow_http`: plain HTTP."""
        return {
            "google_service_account": str(self.service_account_path),
            "allow_http": "true",
        }

    def env(self) -> dict[str, str]:
        """Environment variables for clients that look for the emulator there."""
        return {
            "STORAGE_EMULATOR_HOST": self.endpoint,  # Google's client libraries (JSON API)
            "GOOGLE_SERVICE_ACCOUNT": str(self.service_account_path),  # object_store
            "GOOGLE_ALLOW_HTTP": "true",
        }


def _wait_ready(emu: GcsEmulator, deadline: float) -> None:
    while True:
        if emu.proc.poll() is not None:
            raise RuntimeError(
                f"fake-gcs-server exited with {emu.proc.returncode} during startup: "
                f"{emu.log_path.read_text(errors='replace')[-2000:]}")
        try:
            status, _, _ = emu.request("GET", "/storage/v1/b", timeout=1.0)
            if status == 200:
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"fake-gcs-server did not answer on {emu.endpoint} within "
                               f"{STARTUP_TIMEOUT_S}s: {emu.log_path.read_text(errors='replace')[-2000:]}")
        time.sleep(0.05)


def _start_front(upstream: str, log_path: Path) -> tuple[subprocess.Popen, int]:
    """Start the XML front (this file, --xml-front) on an ephemeral port; returns (proc, port)."""
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--xml-front", upstream],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
            preexec_fn=die_with_parent())
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    line = b""
    while time.monotonic() < deadline and not line.endswith(b"\n"):
        ready, _, _ = select.select([proc.stdout], [], [], 0.1)
        if ready:
            chunk = os.read(proc.stdout.fileno(), 256)
            if not chunk:
                break
            line += chunk
    if not line.startswith(b"listening ") or not line.endswith(b"\n"):
        stop(proc)
        raise RuntimeError(f"XML front did not start: {line!r}; "
                           f"{log_path.read_text(errors='replace')[-2000:]}")
    return proc, int(line.split()[1])


@contextlib.contextmanager
def start_gcs_emulator(backend: str = "memory", log_level: str = "warn",
                       buckets: tuple[str, ...] = ()) -> Iterator[GcsEmulator]:
    """Start fake-gcs-server on 127.0.0.1:<free port> over HTTP, plus the XML front;
    yield a GcsEmulator.

    backend: "memory" (default) or "filesystem" (in a temporary directory, removed on
    exit). buckets: created before yielding. Everything is stopped and removed on exit."""
    if backend not in ("memory", "filesystem"):
        raise ValueError(f"backend must be 'memory' or 'filesystem', not {backend!r}")
    binary = emulator_binary()
    with tempfile.TemporaryDirectory(prefix="ampdelta-gcs-") as tmp:
        tmpdir = Path(tmp)
        log_path = tmpdir / "fake-gcs-server.log"
        data_dir = tmpdir / "data" if backend == "filesystem" else None
        proc = front = None
        try:
            last_error: Exception | None = None
            for _attempt in range(3):  # the free port can be taken between probe and bind
                port = free_port()
                endpoint = f"http://127.0.0.1:{port}"
                args = [str(binary), "-scheme", "http", "-host", "127.0.0.1", "-port", str(port),
                        "-public-host", f"127.0.0.1:{port}", "-external-url", endpoint,
                        "-backend", backend, "-log-level", log_level]
                if data_dir is not None:
                    args += ["-filesystem-root", str(data_dir)]
                with open(log_path, "ab") as log:
                    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, cwd=tmpdir,
                                            preexec_fn=die_with_parent())
                probe = GcsEmulator(endpoint, port, "", proc, proc, log_path, Path())
                try:
                    _wait_ready(probe, time.monotonic() + STARTUP_TIMEOUT_S)
                    break
                except (RuntimeError, TimeoutError) as err:
                    stop(proc)
                    proc, last_error = None, err
            if proc is None:
                raise RuntimeError(f"could not start fake-gcs-server: {last_error}")
            front, front_port = _start_front(endpoint, log_path)
            xml_endpoint = f"http://127.0.0.1:{front_port}"
            sa_path = tmpdir / "service-account.json"
            sa_path.write_text(json.dumps({
                "gcs_base_url": xml_endpoint, "disable_oauth": True,
                "client_email": "", "private_key": "", "private_key_id": ""}))
            emu = GcsEmulator(endpoint=endpoint, port=port, xml_endpoint=xml_endpoint,
                              proc=proc, front_proc=front, log_path=log_path,
                              service_account_path=sa_path, data_dir=data_dir)
            for name in buckets:
                emu.create_bucket(name)
            yield emu
        finally:
            stop(front)
            stop(proc)


# --- XML-API front -------------------------------------------------------------------------
_HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
               "trailers", "transfer-encoding", "upgrade", "host", "content-length"}


class _XmlFront(BaseHTTPRequestHandler):
    """Translates the GCS XML-API calls object_store makes into fake-gcs-server JSON-API
    calls; passes the rest through. One instance per request (http.server)."""

    protocol_version = "HTTP/1.1"
    upstream = ""                     # http://127.0.0.1:PORT of fake-gcs-server
    uploads: dict[str, dict] = {}     # XML multipart uploads: id -> {bucket, name, ctype, parts}
    uploads_lock = threading.Lock()

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - http.server's name
        if os.environ.get("GCS_FRONT_VERBOSE"):
            sys.stderr.write("xml-front: " + (format % args) + "\n")

    # --- plumbing
    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def _error(self, status: int, code: str, message: str) -> None:
        body = (f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>{xml_escape(code)}</Code>"
                f"<Message>{xml_escape(message)}</Message></Error>").encode()
        self._send(status, body, {"Content-Type": "application/xml; charset=UTF-8"})

    def _upstream_error(self, status: int, body: bytes) -> None:
        code = {404: "NoSuchKey", 412: "PreconditionFailed", 409: "Conflict"}.get(status, "Error")
        self._error(status, code, body.decode(errors="replace")[:1000])

    def _target(self) -> tuple[str, str | None, dict[str, list[str]]]:
        parts = urllib.parse.urlsplit(self.path)
        bucket, _, obj = parts.path.lstrip("/").partition("/")
        query = urllib.parse.parse_qs(parts.query, keep_blank_values=True)
        return urllib.parse.unquote(bucket), (urllib.parse.unquote(obj) if obj else None), query

    def _passthrough(self) -> None:
        body = self._read_body() if self.command in ("PUT", "POST", "PATCH", "DELETE") else None
        up = urllib.parse.urlsplit(self.upstream)
        conn = http.client.HTTPConnection(up.hostname, up.port, timeout=60)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
            conn.request(self.command, self.path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            self.send_response(resp.status)
            for k, v in resp.getheaders():
                if k.lower() not in _HOP_BY_HOP:
                    self.send_header(k, v)
            if self.command == "HEAD":
                self.send_header("Content-Length", resp.getheader("Content-Length", "0"))
            else:
                self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
        finally:
            conn.close()

    def _json_upload(self, bucket: str, name: str, data: bytes, ctype: str,
                     if_generation_match: str | None) -> tuple[int, dict | bytes]:
        query = {"uploadType": "media", "name": name}
        if if_generation_match is not None:
            query["ifGenerationMatch"] = if_generation_match
        status, _, body = _http(
            self.upstream, "POST",
            f"/upload/storage/v1/b/{urllib.parse.quote(bucket, safe='')}/o?"
            + urllib.parse.urlencode(query), data, {"Content-Type": ctype})
        return (status, json.loads(body)) if status == 200 else (status, body)

    def _put_result(self, status: int, result: dict | bytes, xml_body: bytes = b"") -> None:
        if status != 200:
            self._upstream_error(status, result)  # type: ignore[arg-type]
            return
        headers = {"ETag": f'"{result["etag"]}"', "x-goog-generation": result["generation"]}
        if xml_body:
            headers["Content-Type"] = "application/xml; charset=UTF-8"
        self._send(200, xml_body, headers)

    # --- verbs
    def do_HEAD(self) -> None:
        self._passthrough()

    def do_GET(self) -> None:
        bucket, obj, query = self._target()
        if obj is None and query.get("list-type") == ["2"]:
            self._list(bucket, query)
        else:
            self._passthrough()

    def do_DELETE(self) -> None:
        bucket, obj, query = self._target()
        if obj is not None and "uploadId" in query:
            self._read_body()
            with self.uploads_lock:
                self.uploads.pop(query["uploadId"][0], None)
            self._send(204)
        else:
            self._passthrough()

    def do_POST(self) -> None:
        bucket, obj, query = self._target()
        if obj is not None and "uploads" in query:
            self._read_body()
            upload_id = uuid.uuid4().hex
            with self.uploads_lock:
                self.uploads[upload_id] = {
                    "bucket": bucket, "name": obj, "parts": {},
                    "ctype": self.headers.get("Content-Type") or "application/octet-stream"}
            body = ("<?xml version='1.0' encoding='UTF-8'?><InitiateMultipartUploadResult>"
                    f"<Bucket>{xml_escape(bucket)}</Bucket><Key>{xml_escape(obj)}</Key>"
                    f"<UploadId>{upload_id}</UploadId></InitiateMultipartUploadResult>").encode()
            self._send(200, body, {"Content-Type": "application/xml; charset=UTF-8"})
        elif obj is not None and "uploadId" in query:
            self._complete(bucket, obj, query["uploadId"][0], self._read_body())
        else:
            self._passthrough()

    def do_PUT(self) -> None:
        bucket, obj, query = self._target()
        if obj is None:
            self._passthrough()
            return
        data = self._read_body()
        if "uploadId" in query and "partNumber" in query:
            etag = '"' + hashlib.md5(data).hexdigest() + '"'
            with self.uploads_lock:
                upload = self.uploads.get(query["uploadId"][0])
                if upload is not None:
                    upload["parts"][int(query["partNumber"][0])] = (etag, data)
            if upload is None:
                self._error(404, "NoSuchUpload", "unknown uploadId")
            else:
                self._send(200, b"", {"ETag": etag})
            return
        condition = self.headers.get("x-goog-if-generation-match")
        source = self.headers.get("x-goog-copy-source")
        ctype = self.headers.get("Content-Type") or "application/octet-stream"
        if source:  # copy = read source + conditional upload (atomic create-if-absent)
            src_bucket, _, src_obj = urllib.parse.unquote(source).lstrip("/").partition("/")
            status, hdrs, content = _http(
                self.upstream, "GET",
                f"/storage/v1/b/{urllib.parse.quote(src_bucket, safe='')}/o/"
                f"{urllib.parse.quote(src_obj, safe='')}?alt=media")
            if status != 200:
                self._upstream_error(status, content)
                return
            ctype = hdrs.get("content-type", "application/octet-stream")
            status, result = self._json_upload(bucket, obj, content, ctype, condition)
            xml_body = b""
            if status == 200:
                xml_body = ("<?xml version='1.0' encoding='UTF-8'?><CopyObjectResult>"
                            f"<LastModified>{result['updated']}</LastModified>"  # type: ignore[index]
                            f"<ETag>\"{result['etag']}\"</ETag></CopyObjectResult>").encode()  # type: ignore[index]
            self._put_result(status, result, xml_body)
            return
        self._put_result(*self._json_upload(bucket, obj, data, ctype, condition))

    # --- multipart completion and list
    def _complete(self, bucket: str, obj: str, upload_id: str, body: bytes) -> None:
        with self.uploads_lock:
            upload = self.uploads.get(upload_id)
        if upload is None:
            self._error(404, "NoSuchUpload", "unknown uploadId")
            return
        try:
            root = ET.fromstring(body)
        except ET.ParseError as err:
            self._error(400, "MalformedXML", str(err))
            return
        chunks = []
        for part in root.iter():
            if part.tag.rsplit("}", 1)[-1] != "Part":
                continue
            fields = {child.tag.rsplit("}", 1)[-1]: (child.text or "") for child in part}
            stored = upload["parts"].get(int(fields.get("PartNumber", "0")))
            if stored is None or stored[0].strip('"') != fields.get("ETag", "").strip('"'):
                self._error(400, "InvalidPart", f"part {fields} not uploaded")
                return
            chunks.append(stored[1])
        status, result = self._json_upload(bucket, obj, b"".join(chunks), upload["ctype"], None)
        if status == 200:
            with self.uploads_lock:
                self.uploads.pop(upload_id, None)
        xml_body = b""
        if status == 200:
            xml_body = ("<?xml version='1.0' encoding='UTF-8'?><CompleteMultipartUploadResult>"
                        f"<Bucket>{xml_escape(bucket)}</Bucket><Key>{xml_escape(obj)}</Key>"
                        f"<ETag>\"{result['etag']}\"</ETag>"  # type: ignore[index]
                        "</CompleteMultipartUploadResult>").encode()
        self._put_result(status, result, xml_body)

    def _list(self, bucket: str, query: dict[str, list[str]]) -> None:
        def arg(name: str) -> str:
            return query.get(name, [""])[0]

        start_after = arg("start-after")
        json_query = {k: v for k, v in {
            "prefix": arg("prefix"), "delimiter": arg("delimiter"),
            # start-after is exclusive, startOffset inclusive: s + NUL is the next name
            "pageToken": arg("continuation-token"),
            "startOffset": start_after + "\0" if start_after else "",
            "maxResults": arg("max-keys")}.items() if v}
        status, _, body = _http(
            self.upstream, "GET", f"/storage/v1/b/{urllib.parse.quote(bucket, safe='')}/o?"
            + urllib.parse.urlencode(json_query))
        if status != 200:
            self._upstream_error(status, body)
            return
        doc = json.loads(body)
        out = ["<?xml version='1.0' encoding='UTF-8'?><ListBucketResult>",
               f"<Name>{xml_escape(bucket)}</Name><Prefix>{xml_escape(arg('prefix'))}</Prefix>"]
        for item in doc.get("items", []):
            if start_after and item["name"] <= start_after:
                continue
            out.append(f"<Contents><Key>{xml_escape(item['name'])}</Key>"
                       f"<Size>{item['size']}</Size><LastModified>{item['updated']}</LastModified>"
                       f"<ETag>\"{xml_escape(item.get('etag', ''))}\"</ETag></Contents>")
        for prefix in doc.get("prefixes", []):
            if start_after and prefix <= start_after:
                continue
            out.append(f"<CommonPrefixes><Prefix>{xml_escape(prefix)}</Prefix></CommonPrefixes>")
        if doc.get("nextPageToken"):
            out.append(f"<NextContinuationToken>{xml_escape(doc['nextPageToken'])}"
                       "</NextContinuationToken><IsTruncated>true</IsTruncated>")
        out.append("</ListBucketResult>")
        self._send(200, "".join(out).encode(), {"Content-Type": "application/xml; charset=UTF-8"})


def _serve_xml_front(upstream: str) -> None:
    """Child-process entry: serve the XML front on 127.0.0.1:<ephemeral>, print
    'listening PORT', exit on SIGTERM or when stdin closes (the parent went away)."""
    _XmlFront.upstream = upstream.rstrip("/")
    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 128  # the default listen backlog (5) resets bursts of clients

    server = Server(("127.0.0.1", 0), _XmlFront)

    def shut_down(*_args) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    def watch_stdin() -> None:
        with contextlib.suppress(OSError):
            while sys.stdin.buffer.read(4096):
                pass
        shut_down()

    signal.signal(signal.SIGTERM, shut_down)
    threading.Thread(target=watch_stdin, daemon=True).start()
    sys.stdout.write(f"listening {server.server_address[1]}\n")
    sys.stdout.flush()
    server.serve_forever(poll_interval=0.2)
    server.server_close()


# --- self-check ---------------------------------------------------------------------------
def _self_check() -> None:
    import concurrent.futures

    with start_gcs_emulator(buckets=("selfcheck",)) as gcs:
        print(f"fake-gcs-server up at {gcs.endpoint} (pid {gcs.proc.pid})")
        b = "selfcheck"

        def upload(name: str, data: bytes, if_generation_match: int | None = 0,
                   headers: dict[str, str] | None = None):
            q = {"uploadType": "media", "name": name}
            if if_generation_match is not None:
                q["ifGenerationMatch"] = str(if_generation_match)
            return gcs.request("POST", f"/upload/storage/v1/b/{b}/o?" + urllib.parse.urlencode(q),
                               data, {"Content-Type": "application/octet-stream", **(headers or {})})

        # (b) create-if-absent
        st, _, body = upload("p/x.bin", b"first")
        assert st == 200, (st, body)
        gen = json.loads(body)["generation"]
        st, hdrs, body = upload("p/x.bin", b"second")
        assert st == 412, (st, body)
        print(f"precondition failure: HTTP {st} content-type={hdrs.get('content-type')} body={body.decode().strip()}")
        st, _, body = upload("p/x.bin", b"third", if_generation_match=int(gen))
        assert st == 200, (st, body)  # matching generation overwrites
        st, _, body = upload("p/x.bin", b"fourth", if_generation_match=int(gen))
        assert st == 412, (st, body)  # stale generation rejected

        # Authorization: not checked
        st, _, _ = upload("p/auth.bin", b"x", headers={"Authorization": "Bearer garbage"})
        assert st == 200
        print("Authorization header: not checked (garbage bearer token accepted)")

        # (c) atomicity: 16 concurrent create-if-absent uploads, 50 rounds
        rounds, writers = 50, 16
        pool = concurrent.futures.ThreadPoolExecutor(writers)
        for r in range(rounds):
            barrier = threading.Barrier(writers)

            def one(i: int, r: int = r, barrier: threading.Barrier = barrier) -> int:
                barrier.wait()
                return upload(f"race/{r:03d}.json", f"writer {i}".encode())[0]

            statuses = list(pool.map(one, range(writers)))
            assert statuses.count(200) == 1 and statuses.count(412) == writers - 1, (r, statuses)
            st, _, body = gcs.request("GET", f"/storage/v1/b/{b}/o/race%2F{r:03d}.json?alt=media")
            assert st == 200 and body.startswith(b"writer ")
        pool.shutdown()
        print(f"atomicity: {rounds} rounds x {writers} concurrent ifGenerationMatch=0 uploads: "
              "exactly one 200, the rest 412, each round")

        # (d) list with prefix + maxResults/pageToken + startOffset
        for i in range(7):
            assert upload(f"list/k{i}", b"v")[0] == 200
        assert upload("listx/other", b"v")[0] == 200
        seen, token, pages = [], "", 0
        while True:
            q = {"prefix": "list/", "maxResults": "3"}
            if token:
                q["pageToken"] = token
            st, _, body = gcs.request("GET", f"/storage/v1/b/{b}/o?" + urllib.parse.urlencode(q))
            assert st == 200, (st, body)
            doc = json.loads(body)
            pages += 1
            assert len(doc.get("items", [])) <= 3
            seen += [it["name"] for it in doc.get("items", [])]
            token = doc.get("nextPageToken", "")
            if not token:
                break
        assert seen == [f"list/k{i}" for i in range(7)] and pages == 3, (seen, pages)
        st, _, body = gcs.request("GET", f"/storage/v1/b/{b}/o?prefix=list/&startOffset=list/k4")
        assert [it["name"] for it in json.loads(body)["items"]] == ["list/k4", "list/k5", "list/k6"]
        st, _, body = gcs.request("GET", f"/storage/v1/b/{b}/o?prefix=list/&delimiter=/&maxResults=100")
        assert st == 200
        print("list: prefix + maxResults=3/pageToken (3 pages) + startOffset OK")

        # (d) get alt=media with Range, metadata get, delete, missing -> 404
        assert upload("r/data", bytes(range(100)))[0] == 200
        st, hdrs, body = gcs.request("GET", f"/storage/v1/b/{b}/o/r%2Fdata?alt=media",
                                     headers={"Range": "bytes=10-19"})
        assert st == 206 and body == bytes(range(10, 20)), (st, body)
        assert hdrs.get("content-range") == "bytes 10-19/100", hdrs
        st, _, body = gcs.request("GET", f"/storage/v1/b/{b}/o/r%2Fdata?alt=media",
                                  headers={"Range": "bytes=90-"})
        assert st == 206 and body == bytes(range(90, 100)), (st, body)
        st, _, body = gcs.request("GET", f"/storage/v1/b/{b}/o/r%2Fdata")
        meta = json.loads(body)
        assert st == 200 and meta["size"] == "100" and meta["generation"], meta
        st, _, body = gcs.request("DELETE", f"/storage/v1/b/{b}/o/r%2Fdata")
        assert st in (200, 204), st  # real GCS: 204; fake-gcs-server: 200 with an empty body
        st, _, body = gcs.request("DELETE", f"/storage/v1/b/{b}/o/r%2Fdata")
        assert st == 404, (st, body)
        st, _, body = gcs.request("GET", f"/storage/v1/b/{b}/o/r%2Fdata")
        assert st == 404, (st, body)
        print(f"get Range 206 + Content-Range, metadata, delete 200, delete missing 404 OK")

        # (d) multipart upload (metadata + media) with ifGenerationMatch=0
        boundary = "ampdelta-boundary"
        mp = (f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n"
              + json.dumps({"name": "mp/obj"}) + f"\r\n--{boundary}\r\n"
              "Content-Type: application/octet-stream\r\n\r\n").encode() + b"MULTIPART" + \
             f"\r\n--{boundary}--\r\n".encode()
        for expected in (200, 412):
            st, _, body = gcs.request(
                "POST", f"/upload/storage/v1/b/{b}/o?uploadType=multipart&ifGenerationMatch=0", mp,
                {"Content-Type": f"multipart/related; boundary={boundary}"})
            assert st == expected, (st, body)
        # resumable: initiate with ifGenerationMatch=0, upload in two chunks
        def resumable(name: str, data: bytes) -> int:
            st, hdrs, body = gcs.request(
                "POST", f"/upload/storage/v1/b/{b}/o?uploadType=resumable&ifGenerationMatch=0&name={name}",
                b"{}", {"Content-Type": "application/json", "X-Upload-Content-Type": "application/octet-stream"})
            assert st == 200 and hdrs.get("location", "").startswith(gcs.endpoint), (st, hdrs, body)
            loc = hdrs["location"][len(gcs.endpoint):]
            half = 256 * 1024  # chunks must be multiples of 256 KiB except the last
            st, h2, _ = gcs.request("PUT", loc, data[:half],
                                    {"Content-Range": f"bytes 0-{half - 1}/*"})
            assert st == 308, st
            st, _, body = gcs.request("PUT", loc, data[half:],
                                      {"Content-Range": f"bytes {half}-{len(data) - 1}/{len(data)}"})
            return st
        payload = os.urandom(300 * 1024)
        assert resumable("res/obj", payload) == 200
        assert resumable("res/obj", payload) == 412
        st, _, body = gcs.request("GET", f"/storage/v1/b/{b}/o/res%2Fobj?alt=media")
        assert body == payload
        print("multipart + resumable uploads (with ifGenerationMatch=0 -> 412 on repeat) OK")

        # XML front: object_store-style conditional PUT, same atomicity, 412 on repeat
        def xml_put(name: str, data: bytes) -> int:
            return _http(gcs.xml_endpoint, "PUT", f"/{b}/{urllib.parse.quote(name, safe='')}",
                         data, {"x-goog-if-generation-match": "0",
                                "Content-Type": "application/octet-stream"})[0]

        pool = concurrent.futures.ThreadPoolExecutor(writers)
        for r in range(rounds):
            barrier = threading.Barrier(writers)

            def one_xml(i: int, r: int = r, barrier: threading.Barrier = barrier) -> int:
                barrier.wait()
                return xml_put(f"xrace/{r:03d}", f"writer {i}".encode())

            statuses = list(pool.map(one_xml, range(writers)))
            assert statuses.count(200) == 1 and statuses.count(412) == writers - 1, (r, statuses)
        pool.shutdown()
        st, hdrs, body = _http(gcs.xml_endpoint, "GET", f"/{b}/xrace%2F000",
                               headers={"Range": "bytes=0-5"})
        assert st == 206 and body == b"writer" and hdrs.get("etag") and hdrs.get("last-modified")
        st, _, body = _http(gcs.xml_endpoint, "GET",
                            f"/{b}?list-type=2&prefix=list/&start-after=list/k4&max-keys=1")
        assert st == 200 and b"<Key>list/k5</Key>" in body and b"list/k4" not in body \
            and b"<NextContinuationToken>list/k6<" in body, body
        print(f"XML front: {rounds} rounds x {writers} concurrent x-goog-if-generation-match:0 "
              "PUTs: exactly one 200 each; Range GET, list start-after/max-keys OK")

        _deltalake_check(gcs)
    assert gcs.proc.poll() is not None and gcs.front_proc.poll() is not None
    print("emulator stopped; self-check passed")


def _deltalake_check(gcs: GcsEmulator) -> None:
    try:
        import deltalake
        import polars as pl
        import pyarrow as pa
    except ImportError as err:
        print(f"deltalake/polars check skipped ({err}); use .deps/venv/bin/python")
        return
    gcs.create_bucket("lake")
    url = gcs.gs_url("lake", "tables/t1")
    opts = gcs.storage_options()
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "s": ["a", "b", "c"]})
    deltalake.write_deltalake(url, data, storage_options=opts)
    deltalake.write_deltalake(url, data, mode="append", storage_options=opts)
    dt = deltalake.DeltaTable(url, storage_options=opts)
    assert dt.version() == 1, dt.version()
    got = dt.to_pyarrow_table().sort_by("id")
    assert got.num_rows == 6 and got.column("id").to_pylist() == [1, 1, 2, 2, 3, 3]
    df = pl.read_delta(url, storage_options=opts)
    assert df.height == 6 and sorted(df["s"].to_list()) == ["a", "a", "b", "b", "c", "c"]
    names = gcs.list_objects("lake", "tables/t1/")
    assert "tables/t1/_delta_log/00000000000000000000.json" in names, names
    print(f"deltalake {deltalake.__version__} write+append+read, polars {pl.__version__} "
          f"read_delta on {url} OK ({len(names)} objects)")

    # 3 concurrent appenders x 3 commits: every commit lands once (create-if-absent works)
    errors: list[str] = []

    def appender(i: int) -> None:
        for k in range(3):
            try:
                deltalake.write_deltalake(url, pa.table({"id": [100 * i + k], "s": ["w"]}),
                                          mode="append", storage_options=opts)
            except Exception as err:  # noqa: BLE001 - reported below
                errors.append(repr(err)[:300])

    threads = [threading.Thread(target=appender, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    dt = deltalake.DeltaTable(url, storage_options=opts)
    ids = dt.to_pyarrow_table().column("id").to_pylist()
    expected = sorted([1, 2, 3] * 2 + [100 * i + k for i in range(3) for k in range(3)])
    assert dt.version() == 10 and sorted(ids) == expected, (dt.version(), ids)
    print("deltalake: 3 concurrent appenders x 3 commits -> version 10, no commit lost")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--xml-front":
        _serve_xml_front(sys.argv[2])
    else:
        _self_check()
