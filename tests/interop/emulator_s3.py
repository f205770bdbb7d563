"""An S3 emulator for the interop tests: versity/versitygw (posix backend, plain HTTP)
on an ephemeral 127.0.0.1 port, its data in a temporary directory.

    from emulator_s3 import start_s3_emulator

    with start_s3_emulator() as s3:
        s3.create_bucket("tables")
        write_deltalake(s3.uri("tables", "t1"), data,
                        storage_options=s3.storage_options("tables"))
        status, headers, body = s3.request("GET", "/tables?list-type=2&prefix=t1/")

The binary comes from $VERSITYGW or .deps/bin/versitygw, which
scripts/setup_s3_emulator.sh installs (pinned version, built with Go). The server is
stopped (SIGTERM, then SIGKILL) and its data directory removed on exit; it also gets
SIGKILL if the thread that started it dies (prctl PR_SET_PDEATHSIG).

versitygw checks every request's SigV4 signature against one root account
(access_key_id "testing", secret_access_key "testingsecret"), so request() signs with
the small stdlib signer below (sigv4_sign). What versitygw v1.8.0 does, as measured by
the self-check (`.deps/venv/bin/python tests/interop/emulator_s3.py`):
  * PutObject `If-None-Match: *` on an existing key -> 412 <Code>PreconditionFailed</Code>
    (<Condition>If-None-Match</Condition>), atomically: 16 concurrent creators of one key
    -> exactly one 200 and 15 x 412, every round (the posix backend publishes
    conditional writes under a lock file). CompleteMultipartUpload honours
    `If-None-Match: *` the same way. CopyObject IGNORES `If-None-Match: *` (overwrites an
    existing key, 200). PutObject with a wrong If-Match ETag -> 412.
  * The payload hash is checked: a wrong x-amz-content-sha256 -> 400
    XAmzContentSHA256Mismatch (PutObject and UploadPart), nothing stored.
    `UNSIGNED-PAYLOAD` is accepted on both. A bad signature or secret -> 403
    SignatureDoesNotMatch; an unknown access key id -> 404 XAdminUserNotFound (AWS: 403
    InvalidAccessKeyId); no Authorization -> 403 AccessDenied; a stale x-amz-date -> 403.
  * Multipart parts other than the last must be >= 5 MiB (else CompleteMultipartUpload
    -> 400 EntityTooSmall), like AWS. Abort -> 204, then ListParts -> 404 NoSuchUpload.
  * DeleteObjects (POST ?delete) requires Content-MD5 or an x-amz-checksum-* header
    (else 400 InvalidRequest), like AWS; a missing key in it is reported <Deleted>.
  * DeleteObject of a missing key -> 204; HEAD of a missing key -> 404 with an empty body;
    GET of a missing key -> 404 NoSuchKey. Range GET -> 206 + Content-Range (bytes=a-b,
    a-, -n); a range past the end -> 416 InvalidRange. ListObjectsV2 honours prefix,
    delimiter, start-after, max-keys and continuation-token. Bucket names must be 3-63
    characters (else 400 InvalidBucketName); re-creating one -> 409
    BucketAlreadyOwnedByYou (create_bucket() accepts that).
  * The posix backend maps keys to files, so a key can't also be a "directory" prefix of
    another key: PUT "a/b" after "a" -> 409 ObjectParentIsFile, PUT "c" after "c/d" ->
    409 ExistingObjectIsDirectory. Delta tables never need that.

Module API:
  start_s3_emulator(*, buckets=(), startup_timeout=20.0, keep_alive=True, quiet=True,
                    binary=None, extra_args=()) -> context manager yielding an S3Emulator.
  S3Emulator: endpoint, host, port, region, access_key_id, secret_access_key, log_path,
      data_dir, proc, pid, create_bucket(name), storage_options(bucket=None), env(),
      uri(bucket, path=""), request(method, path, body=b"", headers=None)
      -> (status, lower-cased headers, body), list_objects(bucket, prefix=""),
      get_object(bucket, key) -> bytes | None.
  sigv4_sign(...): SigV4 headers for one request (stdlib only).
  emulator_binary(), EmulatorNotInstalled.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as _dt
import hashlib
import hmac
import http.client
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping

from emulator_process import die_with_parent, free_port, stop

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BINARY = REPO_ROOT / ".deps" / "bin" / "versitygw"
SETUP_SCRIPT = REPO_ROOT / "scripts" / "setup_s3_emulator.sh"
REGION = "us-east-1"
ACCESS_KEY_ID = "testing"
SECRET_ACCESS_KEY = "testingsecret"
STARTUP_TIMEOUT_S = 20.0
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"

# Environment variables versitygw reads as defaults for its flags (VGW_*, ROOT_*): dropped
# from the child's environment so that the caller's shell can't change the setup.
_VGW_ENV_RE = re.compile(r"^(VGW_|ROOT_ACCESS_KEY|ROOT_SECRET)")
_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
               "all_proxy")


class EmulatorNotInstalled(RuntimeError):
    """versitygw is not installed; run scripts/setup_s3_emulator.sh."""


def emulator_binary() -> Path:
    """Path of versitygw ($VERSITYGW or .deps/bin); raises EmulatorNotInstalled."""
    configured = os.environ.get("VERSITYGW")
    path = Path(configured) if configured else DEFAULT_BINARY
    if not path.is_file() or not os.access(path, os.X_OK):
        raise EmulatorNotInstalled(
            f"versitygw not found at {path} "
            f"({'from $VERSITYGW' if configured else 'default'}); "
            f"run {SETUP_SCRIPT.relative_to(REPO_ROOT)}")
    return path


# --- SigV4 (stdlib only) ------------------------------------------------------------------
def _uri_encode(text: str, safe: str = "") -> str:
    """AWS URI encoding: everything but A-Z a-z 0-9 - _ . ~ (and `safe`) as %XX (UTF-8)."""
    return urllib.parse.quote(text, safe="-_.~" + safe)


def canonical_path(path: str) -> str:
    """The S3 canonical URI of a path-style request path: decoded once, then each byte
    except unreserved characters and '/' percent-encoded (S3 does not double-encode)."""
    return _uri_encode(urllib.parse.unquote(path), safe="/") or "/"


def canonical_query(query: str) -> str:
    """Canonical query string: every name and value URI-encoded, sorted; a bare name
    ("?uploads") becomes "uploads=". '+' is a literal plus, not a space."""
    pairs = []
    for item in query.split("&"):
        if not item:
            continue
        name, _, value = item.partition("=")
        pairs.append((_uri_encode(urllib.parse.unquote(name)),
                      _uri_encode(urllib.parse.unquote(value))))
    return "&".join(f"{k}={v}" for k, v in sorted(pairs))


def _hmac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def sigv4_sign(method: str, host: str, path: str, query: str, headers: Mapping[str, str],
               payload_hash: str, access_key_id: str, secret_access_key: str,
               region: str = REGION, service: str = "s3",
               now: _dt.datetime | None = None) -> dict[str, str]:
    """Sign one request with AWS Signature Version 4 (header auth).

    path and query must be what goes on the wire (see canonical_path/canonical_query).
    `headers` are the other headers to send; all of them are signed (names compared
    case-insensitively). Returns `headers` plus Host, X-Amz-Date (unless given),
    X-Amz-Content-Sha256 = payload_hash (a hex SHA-256 or UNSIGNED-PAYLOAD) and
    Authorization."""
    out = {k: v for k, v in headers.items() if k.lower() not in ("host", "authorization")}
    lower = {k.lower(): k for k in out}
    if "x-amz-date" in lower:
        amz_date = out[lower["x-amz-date"]]
    else:
        amz_date = (now or _dt.datetime.now(_dt.timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
        out["X-Amz-Date"] = amz_date
    if "x-amz-content-sha256" in lower:
        del out[lower["x-amz-content-sha256"]]
    out["X-Amz-Content-Sha256"] = payload_hash
    out["Host"] = host
    canon = sorted((k.lower(), " ".join(str(v).split())) for k, v in out.items())
    signed_headers = ";".join(k for k, _ in canon)
    canonical_request = "\n".join([
        method.upper(), path, query,
        "".join(f"{k}:{v}\n" for k, v in canon), signed_headers, payload_hash])
    scope = f"{amz_date[:8]}/{region}/{service}/aws4_request"
    string_to_sign = "\n".join([
        "AWS4-HMAC-SHA256", amz_date, scope,
        hashlib.sha256(canonical_request.encode()).hexdigest()])
    key = _hmac(("AWS4" + secret_access_key).encode(), amz_date[:8])
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    signature = hmac.new(key, string_to_sign.encode(), hashlib.sha256).hexdigest()
    out["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={access_key_id}/{scope}, "
                            f"SignedHeaders={signed_headers}, Signature={signature}")
    return out


# --- the emulator ----------------------------------------------------------------------------
@dataclass
class S3Emulator:
    """A running versitygw. endpoint is http://127.0.0.1:PORT (path-style addressing)."""

    host: str
    port: int
    region: str = REGION
    access_key_id: str = ACCESS_KEY_ID
    secret_access_key: str = SECRET_ACCESS_KEY
    log_path: str = ""            # versitygw's stdout+stderr (kept if the context body raised)
    data_dir: str = ""            # the posix backend's root: one directory per bucket
    proc: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid if self.proc is not None else 0

    def uri(self, bucket: str, path: str = "") -> str:
        path = path.strip("/")
        return f"s3://{bucket}/{path}" if path else f"s3://{bucket}"

    def storage_options(self, bucket: str | None = None) -> dict[str, str]:
        """Storage options for deltalake (delta-rs/object_store keys), polars and ampdelta.

        deltalake 1.x commits with PutObject `If-None-Match: *` on S3 by default (no
        AWS_S3_ALLOW_UNSAFE_RENAME, lock provider or AWS_CONDITIONAL_PUT needed) and
        treats the 412 as "version exists". Path-style addressing is object_store's
        default with an endpoint. `bucket` is accepted for callers' convenience; the
        options don't depend on it."""
        del bucket
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_REGION": self.region,
            "AWS_ALLOW_HTTP": "true",
            "AWS_ACCESS_KEY_ID": self.access_key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret_access_key,
        }

    def env(self) -> dict[str, str]:
        """AWS_* environment variables for a subprocess (e.g. the ampdelta CLI). Merge
        them into a copy of os.environ; AWS_SESSION_TOKEN/AWS_PROFILE from the caller's
        environment should be dropped by the caller if set."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_ALLOW_HTTP": "true",
            "AWS_ACCESS_KEY_ID": self.access_key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret_access_key,
        }

    def request(self, method: str, path: str, body: bytes = b"",
                headers: Mapping[str, str | None] | None = None,
                timeout: float = 30.0) -> tuple[int, dict[str, str], bytes]:
        """One SigV4-signed path-style request, e.g. ("POST", "/bucket/key?uploads").

        `path` is "/bucket/key?query"; it is normalised to AWS's encoding (decoded once,
        re-encoded), so pass keys either plain (without '%') or percent-encoded. A body
        gets Content-Type application/octet-stream unless given. All headers sent are
        signed. Special header values:
          * "x-amz-content-sha256": sent and signed as given (UNSIGNED-PAYLOAD or a
            deliberately wrong hash); default: the SHA-256 of body.
          * "Authorization": a string is sent as is, with no signing (e.g. a forged
            signature); None sends the request unsigned (anonymous).
          * any other None value drops that default header (e.g. Content-Type).
        Returns (status, response headers with lower-case names, body); never raises for
        an HTTP error status."""
        raw_path, _, raw_query = path.partition("?")
        wire_path, wire_query = canonical_path(raw_path), canonical_query(raw_query)
        hdrs: dict[str, str | None] = {}
        if body:
            hdrs["Content-Type"] = "application/octet-stream"
        for k, v in (headers or {}).items():
            for existing in [h for h in hdrs if h.lower() == k.lower()]:
                del hdrs[existing]
            hdrs[k] = v
        auth_keys = [k for k in hdrs if k.lower() == "authorization"]
        auth = hdrs.pop(auth_keys[0]) if auth_keys else ""
        sha_keys = [k for k in hdrs if k.lower() == "x-amz-content-sha256"]
        payload_hash = hdrs.pop(sha_keys[0]) if sha_keys else None
        send = {k: v for k, v in hdrs.items() if v is not None}
        host = f"{self.host}:{self.port}"
        if auth == "":
            send = sigv4_sign(method, host, wire_path, wire_query, send,
                              payload_hash or hashlib.sha256(body).hexdigest(),
                              self.access_key_id, self.secret_access_key, self.region)
        else:
            if payload_hash is not None:
                send["X-Amz-Content-Sha256"] = payload_hash
            if auth is not None:
                send["Authorization"] = auth
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request(method, wire_path + ("?" + wire_query if wire_query else ""),
                         body=body, headers=send)
            resp = conn.getresponse()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
        finally:
            conn.close()

    def create_bucket(self, name: str) -> None:
        """CreateBucket; a bucket this account already owns is fine. Raises otherwise."""
        status, _, body = self.request("PUT", f"/{name}")
        if status == 200 or (status == 409 and b"BucketAlreadyOwnedByYou" in body):
            return
        raise RuntimeError(f"CreateBucket {name!r} -> {status}: {body[:500]!r}")

    def list_objects(self, bucket: str, prefix: str = "") -> list[str]:
        """All keys under prefix (ListObjectsV2, follows continuation tokens)."""
        keys: list[str] = []
        token = ""
        while True:
            query = {"list-type": "2", "prefix": prefix}
            if token:
                query["continuation-token"] = token
            status, _, body = self.request(
                "GET", f"/{bucket}?" + urllib.parse.urlencode(query, quote_via=urllib.parse.quote))
            if status != 200:
                raise RuntimeError(f"ListObjectsV2 {bucket!r} -> {status}: {body[:500]!r}")
            root = ET.fromstring(body)
            ns = root.tag[:root.tag.index("}") + 1] if root.tag.startswith("{") else ""
            keys += [e.text or "" for e in root.iter(f"{ns}Key")]
            token = root.findtext(f"{ns}NextContinuationToken") or ""
            if root.findtext(f"{ns}IsTruncated") != "true" or not token:
                return keys

    def get_object(self, bucket: str, key: str) -> bytes | None:
        """An object's content, or None when it does not exist."""
        status, _, body = self.request("GET", f"/{bucket}/{urllib.parse.quote(key)}")
        if status == 404:
            return None
        if status != 200:
            raise RuntimeError(f"GetObject {bucket}/{key} -> {status}: {body[:500]!r}")
        return body


def _xattrs_supported(directory: Path) -> bool:
    try:
        os.setxattr(directory, "user.ampdelta.probe", b"1")
        os.removexattr(directory, "user.ampdelta.probe")
        return True
    except (OSError, AttributeError):
        return False


def _tail(path: str, n: int = 3000) -> str:
    with contextlib.suppress(OSError), open(path, errors="replace") as f:
        return f.read()[-n:]
    return ""


def _wait_ready(emu: S3Emulator, deadline: float) -> None:
    """Until ListBuckets answers 200; raises if the process exits or time runs out."""
    assert emu.proc is not None
    while True:
        if emu.proc.poll() is not None:
            raise RuntimeError(f"versitygw exited with {emu.proc.returncode} during startup: "
                               f"{_tail(emu.log_path)}")
        try:
            status, _, body = emu.request("GET", "/", timeout=1.0)
            if status == 200:
                return
            raise RuntimeError(f"versitygw ListBuckets -> {status}: {body[:500]!r}")
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"versitygw did not answer on {emu.endpoint}: {_tail(emu.log_path)}")
        time.sleep(0.05)


@contextlib.contextmanager
def start_s3_emulator(*, buckets: tuple[str, ...] = (), startup_timeout: float = STARTUP_TIMEOUT_S,
                      keep_alive: bool = True, quiet: bool = True,
                      binary: str | os.PathLike | None = None,
                      extra_args: tuple[str, ...] = ()) -> Iterator[S3Emulator]:
    """Start versitygw (posix backend in a temporary directory) on 127.0.0.1:<free port>,
    wait until ListBuckets answers, create `buckets`, yield an S3Emulator; stop the
    server and delete its data on exit.

    keep_alive=True passes --keep-alive, so connections are reused as with AWS; without it
    versitygw answers every request with `Connection: close`. quiet=False keeps
    versitygw's per-request log lines (in log_path). extra_args go
    before the "posix" subcommand (global flags, e.g. ("--log-level", "debug")). The
    log file is deleted after a clean exit and kept when the body raised."""
    exe = Path(binary) if binary is not None else emulator_binary()
    tmp = Path(tempfile.mkdtemp(prefix="ampdelta-s3-"))
    data_dir = tmp / "data"
    data_dir.mkdir()
    posix_args = ["posix"]
    if not _xattrs_supported(data_dir):  # e.g. an old tmpfs: keep metadata in a sidecar dir
        (tmp / "meta").mkdir()
        posix_args += ["--sidecar", str(tmp / "meta")]
    posix_args.append(str(data_dir))
    env = {k: v for k, v in os.environ.items()
           if not _VGW_ENV_RE.match(k) and k not in _PROXY_VARS}
    fd, log_path = tempfile.mkstemp(prefix="versitygw-", suffix=".log")
    os.close(fd)
    proc: subprocess.Popen | None = None
    ok = False
    try:
        last_error: Exception | None = None
        for _attempt in range(3):  # the free port can be taken between probe and bind
            port = free_port()
            args = [str(exe), "--access", ACCESS_KEY_ID, "--secret", SECRET_ACCESS_KEY,
                    "--region", REGION, "--port", f"127.0.0.1:{port}",
                    *(["--keep-alive"] if keep_alive else []),
                    *(["--quiet"] if quiet else []), *extra_args, *posix_args]
            with open(log_path, "ab") as log:
                proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log,
                                        stderr=subprocess.STDOUT, cwd=tmp, env=env,
                                        preexec_fn=die_with_parent())
            emu = S3Emulator(host="127.0.0.1", port=port, log_path=log_path,
                             data_dir=str(data_dir), proc=proc)
            try:
                _wait_ready(emu, time.monotonic() + startup_timeout)
                break
            except (RuntimeError, TimeoutError) as err:
                stop(proc)
                proc, last_error = None, err
        if proc is None:
            raise RuntimeError(f"could not start versitygw ({exe}): {last_error}")
        for name in buckets:
            emu.create_bucket(name)
        yield emu
        ok = True
    finally:
        stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)
        if ok:
            with contextlib.suppress(OSError):
                os.unlink(log_path)


# --- self-check: `.deps/venv/bin/python tests/interop/emulator_s3.py` ----------------------
def _xml_code(body: bytes) -> str:
    m = re.search(rb"<Code>([^<]*)</Code>", body)
    return m.group(1).decode() if m else body[:200].decode(errors="replace")


def _self_check() -> int:
    import threading

    failures: list[str] = []

    def check(what: str, ok: bool, detail: object) -> None:
        print(f"{'ok  ' if ok else 'FAIL'} {what}: {detail}")
        if not ok:
            failures.append(what)

    t0 = time.monotonic()
    with start_s3_emulator(buckets=("selfcheck",)) as s3:
        print(f"versitygw up on {s3.endpoint} (pid {s3.pid}) in {time.monotonic() - t0:.2f}s, "
              f"data in {s3.data_dir}")
        proc, data_dir, b = s3.proc, s3.data_dir, "selfcheck"
        st, _, body = s3.request("PUT", f"/{b}")
        check("CreateBucket again (idempotent create_bucket accepts it)",
              st == 409 and _xml_code(body) == "BucketAlreadyOwnedByYou", f"{st} {_xml_code(body)}")

        # --- conditional create
        st, hdrs, _ = s3.request("PUT", f"/{b}/k", b"one", {"If-None-Match": "*"})
        check("PUT If-None-Match:* new key", st == 200, f"{st} etag={hdrs.get('etag')}")
        st, hdrs, body = s3.request("PUT", f"/{b}/k", b"two", {"If-None-Match": "*"})
        check("PUT If-None-Match:* existing key",
              (st, _xml_code(body)) == (412, "PreconditionFailed"),
              f"{st} content-type={hdrs.get('content-type')} body={body.decode(errors='replace')}")
        st, _, body = s3.request("GET", f"/{b}/k")
        check("GET keeps first body", (st, body) == (200, b"one"), f"{st} {body!r}")
        st, _, body = s3.request("PUT", f"/{b}/k", b"three", {"If-Match": '"0123"'})
        check("PUT If-Match: wrong ETag", st == 412, f"{st} {_xml_code(body)}")

        # --- 16 concurrent creators of one new key, 20 rounds: exactly one 200 each
        n, rounds, wrong = 16, 20, []
        for r in range(rounds):
            barrier, results = threading.Barrier(n), [0] * n
            key = f"/{b}/race/{r:020d}.json"

            def put(i: int, key: str = key, barrier=barrier, results=results) -> None:
                barrier.wait()
                results[i] = s3.request("PUT", key, b"w%d" % i, {"If-None-Match": "*"})[0]

            threads = [threading.Thread(target=put, args=(i,)) for i in range(n)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if sorted(results) != [200] + [412] * (n - 1):
                wrong.append(sorted(results))
            st, _, body = s3.request("GET", key)
            if st != 200 or not re.fullmatch(rb"w\d+", body):
                wrong.append((st, body[:50]))
        check(f"{n} concurrent If-None-Match:* PUTs x {rounds} rounds", not wrong,
              wrong[:3] or f"every round 1 x 200 + {n - 1} x 412, body intact")

        # --- ranged GET
        data = bytes(range(100))
        s3.request("PUT", f"/{b}/r/data", data)
        st, hdrs, body = s3.request("GET", f"/{b}/r/data", headers={"Range": "bytes=10-19"})
        check("GET Range bytes=10-19", st == 206 and body == data[10:20]
              and hdrs.get("content-range") == "bytes 10-19/100", f"{st} {hdrs.get('content-range')}")
        st, hdrs, body = s3.request("GET", f"/{b}/r/data", headers={"Range": "bytes=90-"})
        check("GET Range bytes=90-", st == 206 and body == data[90:], f"{st} {hdrs.get('content-range')}")
        st, hdrs, body = s3.request("GET", f"/{b}/r/data", headers={"Range": "bytes=-5"})
        check("GET Range bytes=-5", st == 206 and body == data[95:], f"{st} {hdrs.get('content-range')}")
        st, hdrs, body = s3.request("GET", f"/{b}/r/data", headers={"Range": "bytes=200-300"})
        check("GET Range past the end", st == 416, f"{st} {_xml_code(body)}")
        st, hdrs, _ = s3.request("HEAD", f"/{b}/r/data")
        check("HEAD", st == 200 and hdrs.get("content-length") == "100"
              and bool(hdrs.get("last-modified")) and bool(hdrs.get("etag")),
              f"{st} len={hdrs.get('content-length')} etag={hdrs.get('etag')}")

        # --- ListObjectsV2: prefix + start-after + max-keys + continuation
        for i in range(7):
            s3.request("PUT", f"/{b}/list/k{i}", b"v")
        s3.request("PUT", f"/{b}/listx/other", b"v")
        seen, token, pages = [], "", 0
        while True:
            q = f"/{b}?list-type=2&prefix=list/&start-after=list/k1&max-keys=2"
            if token:
                q += "&continuation-token=" + urllib.parse.quote(token, safe="")
            st, _, body = s3.request("GET", q)
            if st != 200:
                check("ListObjectsV2 page", False, f"{st} {body[:300]!r}")
                break
            pages += 1
            page = re.findall(rb"<Key>([^<]*)</Key>", body)
            seen += [k.decode() for k in page]
            m = re.search(rb"<NextContinuationToken>([^<]*)<", body)
            truncated = b"<IsTruncated>true</IsTruncated>" in body
            token = m.group(1).decode() if m and truncated else ""
            if not token or pages > 10:
                break
        check("ListObjectsV2 prefix=list/ start-after=list/k1 max-keys=2 + continuation",
              seen == [f"list/k{i}" for i in range(2, 7)] and pages == 3, f"{pages} pages {seen}")
        st, _, body = s3.request("GET", f"/{b}?list-type=2&prefix=&delimiter=/")
        prefixes = re.findall(rb"<Prefix>([^<]*)</Prefix>", body)
        check("ListObjectsV2 delimiter=/", st == 200 and b"list/" in prefixes, prefixes)
        check("list_objects()", s3.list_objects(b, "list/") == [f"list/k{i}" for i in range(7)],
              "7 keys")

        # --- missing keys
        st, _, body = s3.request("DELETE", f"/{b}/no/such/key")
        check("DELETE missing key", st == 204, f"{st} {body!r}")
        st, hdrs, body = s3.request("HEAD", f"/{b}/no/such/key")
        check("HEAD missing key", st == 404, f"{st} body={body!r}")
        st, _, body = s3.request("GET", f"/{b}/no/such/key")
        check("GET missing key", (st, _xml_code(body)) == (404, "NoSuchKey"), f"{st} {_xml_code(body)}")
        st, _, body = s3.request("DELETE", f"/{b}/r/data")
        check("DELETE existing key", st == 204 and s3.get_object(b, "r/data") is None, st)

        # --- multipart upload
        def create_upload(key: str) -> str:
            st, _, body = s3.request("POST", f"/{b}/{key}?uploads")
            m = re.search(rb"<UploadId>([^<]+)</UploadId>", body)
            assert st == 200 and m, (st, body)
            return m.group(1).decode()

        def upload_part(key: str, uid: str, num: int, data: bytes,
                        headers: dict[str, str] | None = None) -> tuple[int, str, bytes]:
            st, hdrs, body = s3.request(
                "PUT", f"/{b}/{key}?partNumber={num}&uploadId={urllib.parse.quote(uid, safe='')}",
                data, headers)
            return st, hdrs.get("etag", ""), body

        def complete(key: str, uid: str, etags: list[str],
                     headers: dict[str, str] | None = None) -> tuple[int, bytes]:
            xml = ("<CompleteMultipartUpload>" + "".join(
                f"<Part><PartNumber>{i + 1}</PartNumber><ETag>{e}</ETag></Part>"
                for i, e in enumerate(etags)) + "</CompleteMultipartUpload>").encode()
            st, _, body = s3.request(
                "POST", f"/{b}/{key}?uploadId={urllib.parse.quote(uid, safe='')}", xml,
                {"Content-Type": "application/xml", **(headers or {})})
            return st, body

        uid = create_upload("mp/small")
        e1 = upload_part("mp/small", uid, 1, b"a" * 100)
        e2 = upload_part("mp/small", uid, 2, b"b" * 50)
        st, body = complete("mp/small", uid, [e1[1], e2[1]])
        check("CompleteMultipartUpload with a 100-byte first part", True,
              f"{st} {_xml_code(body)} (parts {e1[0]}, {e2[0]})")
        small_ok = st == 200
        big = os.urandom(5 * 1024 * 1024)
        uid = create_upload("mp/big")
        p1 = upload_part("mp/big", uid, 1, big)
        p2 = upload_part("mp/big", uid, 2, b"tail")
        st, body = complete("mp/big", uid, [p1[1], p2[1]], {"If-None-Match": "*"})
        got = s3.get_object(b, "mp/big")
        check("multipart 5 MiB + 4 B, Complete If-None-Match:*", st == 200 and got == big + b"tail",
              f"{st} {_xml_code(body) if st != 200 else ''} size={len(got or b'')}")
        uid = create_upload("mp/big")
        p1 = upload_part("mp/big", uid, 1, big)
        st, body = complete("mp/big", uid, [p1[1]], {"If-None-Match": "*"})
        check("Complete If-None-Match:* on an existing key", st == 412,
              f"{st} {_xml_code(body)}")
        uid = create_upload("mp/aborted")
        upload_part("mp/aborted", uid, 1, b"x" * 10)
        st, _, body = s3.request("DELETE", f"/{b}/mp/aborted?uploadId={urllib.parse.quote(uid, safe='')}")
        check("AbortMultipartUpload", st == 204, f"{st} {body!r}")
        st, _, body = s3.request("GET", f"/{b}/mp/aborted?uploadId={urllib.parse.quote(uid, safe='')}")
        check("ListParts after abort", (st, _xml_code(body)) == (404, "NoSuchUpload"),
              f"{st} {_xml_code(body)}")
        st, _, body = s3.request("GET", f"/{b}?uploads")
        check("ListMultipartUploads", st == 200, f"{st} {body.count(b'<Upload>')} open uploads")

        # --- payload hashes and signatures
        st, _, body = s3.request("PUT", f"/{b}/h/unsigned", b"payload",
                                 {"x-amz-content-sha256": UNSIGNED_PAYLOAD})
        check("PUT x-amz-content-sha256: UNSIGNED-PAYLOAD", st == 200
              and s3.get_object(b, "h/unsigned") == b"payload", f"{st} {_xml_code(body)}")
        st, _, body = s3.request("PUT", f"/{b}/h/wrong", b"payload",
                                 {"x-amz-content-sha256": EMPTY_SHA256})
        check("PUT with a wrong x-amz-content-sha256", st == 400 and s3.get_object(b, "h/wrong") is None,
              f"{st} {_xml_code(body)}")
        uid = create_upload("h/mp")
        st, etag, body = upload_part("h/mp", uid, 1, big, {"x-amz-content-sha256": UNSIGNED_PAYLOAD})
        check("UploadPart UNSIGNED-PAYLOAD", st == 200, f"{st} {_xml_code(body) if st != 200 else etag}")
        st, _, body = upload_part("h/mp", uid, 2, b"tail", {"x-amz-content-sha256": EMPTY_SHA256})
        check("UploadPart with a wrong x-amz-content-sha256", st == 400, f"{st} {_xml_code(body)}")
        st, etag2, body = upload_part("h/mp", uid, 2, b"tail",
                                      {"x-amz-content-sha256": UNSIGNED_PAYLOAD})
        st2, body2 = complete("h/mp", uid, [etag, etag2])
        check("Complete after the rejected part (parts sent UNSIGNED-PAYLOAD)",
              st == 200 and st2 == 200 and s3.get_object(b, "h/mp") == big + b"tail",
              f"{st} {st2} {_xml_code(body2) if st2 != 200 else ''}")
        st, _, body = s3.request("PUT", f"/{b}/h/badsig", b"x", {
            "Authorization": f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY_ID}/"
                             f"{time.strftime('%Y%m%d', time.gmtime())}/{REGION}/s3/aws4_request, "
                             "SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=" + "0" * 64,
            "x-amz-date": time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()),
            "x-amz-content-sha256": hashlib.sha256(b"x").hexdigest()})
        check("bad signature", st == 403, f"{st} {_xml_code(body)}")
        saved = s3.access_key_id, s3.secret_access_key
        s3.access_key_id = "nobody"
        st, _, body = s3.request("GET", f"/{b}/k")
        check("unknown access key id (AWS: 403 InvalidAccessKeyId)",
              (st, _xml_code(body)) == (404, "XAdminUserNotFound"), f"{st} {_xml_code(body)}")
        s3.access_key_id, s3.secret_access_key = saved[0], "wrong"
        st, _, body = s3.request("GET", f"/{b}/k")
        s3.access_key_id, s3.secret_access_key = saved
        check("wrong secret", (st, _xml_code(body)) == (403, "SignatureDoesNotMatch"),
              f"{st} {_xml_code(body)}")
        st, _, body = s3.request("GET", f"/{b}/k", headers={"x-amz-date": "20200101T000000Z"})
        check("x-amz-date 6 years old", st == 403, f"{st} {_xml_code(body)}")
        st, _, body = s3.request("GET", f"/{b}/k", headers={"Authorization": None})
        check("anonymous GET", st == 403, f"{st} {_xml_code(body)}")
        st, _, body = s3.request("PUT", f"/{b}/enc/a b+c%25d=e&f", b"odd")
        check("key with ' +%=&' round-trips", st == 200
              and s3.list_objects(b, "enc/") == ["enc/a b+c%d=e&f"]
              and s3.get_object(b, "enc/a b+c%d=e&f") == b"odd", f"{st} {s3.list_objects(b, 'enc/')}")

        # --- DeleteObjects needs Content-MD5 (or x-amz-checksum-*); CopyObject If-None-Match
        for k in ("d/1", "d/2"):
            s3.request("PUT", f"/{b}/{k}", b"x")
        xml = (b"<Delete><Object><Key>d/1</Key></Object><Object><Key>d/missing</Key></Object>"
               b"</Delete>")
        st, _, body = s3.request("POST", f"/{b}?delete", xml, {"Content-Type": "application/xml"})
        check("DeleteObjects without Content-MD5", (st, _xml_code(body)) == (400, "InvalidRequest"),
              f"{st} {_xml_code(body)}")
        md5 = base64.b64encode(hashlib.md5(xml).digest()).decode()
        st, _, body = s3.request("POST", f"/{b}?delete", xml,
                                 {"Content-Type": "application/xml", "Content-MD5": md5})
        check("DeleteObjects with Content-MD5 (a missing key counts as deleted)",
              st == 200 and body.count(b"<Deleted>") == 2 and s3.get_object(b, "d/1") is None,
              f"{st} {body.count(b'<Deleted>')} <Deleted>")
        st, _, body = s3.request("PUT", f"/{b}/d/2", b"", {"x-amz-copy-source": f"/{b}/k",
                                                            "If-None-Match": "*"})
        check("CopyObject If-None-Match:* onto an existing key: ignored, overwrites",
              st == 200 and s3.get_object(b, "d/2") == b"one", st)

        _deltalake_check(s3, check)
        print(f"(multipart with a small first part: {'accepted' if small_ok else 'rejected'})")
    check("server stopped after exit", proc is not None and proc.poll() is not None,
          proc.returncode if proc else None)
    check("data dir removed after exit", not os.path.exists(data_dir), data_dir)
    print("self-check:", "FAILED " + ", ".join(failures) if failures else "OK")
    return 1 if failures else 0


def _deltalake_check(s3: S3Emulator, check) -> None:
    import threading
    try:
        import deltalake
        import polars as pl
        import pyarrow as pa
    except ImportError as err:
        print(f"deltalake/polars check skipped ({err}); use .deps/venv/bin/python")
        return
    s3.create_bucket("lake")
    url, opts = s3.uri("lake", "tables/t1"), s3.storage_options("lake")
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "s": ["a", "b", "c"]})
    deltalake.write_deltalake(url, data, storage_options=opts)
    deltalake.write_deltalake(url, data, mode="append", storage_options=opts)
    dt = deltalake.DeltaTable(url, storage_options=opts)
    got = dt.to_pyarrow_table().sort_by("id")
    check(f"deltalake {deltalake.__version__} write + append + read",
          dt.version() == 1 and got.column("id").to_pylist() == [1, 1, 2, 2, 3, 3],
          f"version {dt.version()}, {got.num_rows} rows")
    df = pl.read_delta(url, storage_options=opts)
    check(f"polars {pl.__version__} read_delta", df.height == 6
          and sorted(df["s"].to_list()) == ["a", "a", "b", "b", "c", "c"], f"{df.height} rows")
    names = s3.list_objects("lake", "tables/t1/")
    check("_delta_log/00000000000000000000.json listed",
          "tables/t1/_delta_log/00000000000000000000.json" in names, f"{len(names)} objects")

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
    dt = deltalake.DeltaTable(url, storage_options=opts)
    ids = sorted(dt.to_pyarrow_table().column("id").to_pylist())
    expected = sorted([1, 2, 3] * 2 + [100 * i + k for i in range(3) for k in range(3)])
    check("deltalake: 3 concurrent appenders x 3 commits", not errors and dt.version() == 10
          and ids == expected, errors[:2] or f"version {dt.version()}, no commit lost")


if __name__ == "__main__":
    sys.exit(_self_check())
