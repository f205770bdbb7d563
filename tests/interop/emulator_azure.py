"""Azure Blob Storage emulator (Azurite, blob service only) for interop tests.

    with start_azure_emulator() as az:
        az.create_container("tables")
        deltalake.write_deltalake(az.table_uri("tables", "t1"), data,
                                  storage_options=az.storage_options())

Azurite is installed by scripts/setup_azurite.sh into .deps/azurite. Each
start_azure_emulator() runs its own azurite-blob on a free 127.0.0.1 port with a fresh
temporary workspace, and on exit stops the process (SIGTERM, then SIGKILL) and removes
the workspace.

The REST helpers here use only the standard library. shared_key_authorization() is the
Shared Key signer for the Blob service (the reference for the C++ signer) and
account_sas() builds an account SAS token; both follow
https://learn.microsoft.com/rest/api/storageservices/authorize-with-shared-key and
https://learn.microsoft.com/rest/api/storageservices/create-account-sas.

Run `python tests/interop/emulator_azure.py` for a self-check.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import datetime as _dt
import hashlib
import hmac
import http.client
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Iterator, Mapping

from emulator_process import die_with_parent, free_port, stop

REPO_ROOT = Path(__file__).resolve().parents[2]
AZURITE_BLOB = REPO_ROOT / ".deps" / "azurite" / "node_modules" / ".bin" / "azurite-blob"

# Azurite's built-in account and its well-known (public) key.
ACCOUNT_NAME = "devstoreaccount1"
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
# x-ms-version sent by the helpers here (Azurite 3.35.0 serves up to 2025-11-05).
API_VERSION = "2021-08-06"

STARTUP_TIMEOUT_S = 30.0
REQUEST_TIMEOUT_S = 30.0


# --------------------------------------------------------------------------- signing

# Standard headers whose values go into the Shared Key string-to-sign, in order.
_SIGNED_STANDARD_HEADERS = (
    "content-encoding", "content-language", "content-length", "content-md5",
    "content-type", "date", "if-modified-since", "if-match", "if-none-match",
    "if-unmodified-since", "range",
)
_WHITESPACE = re.compile(r"\s+")


def shared_key_string_to_sign(account: str, method: str, url: str,
                              headers: Mapping[str, str]) -> str:
    """The Blob service Shared Key string-to-sign (x-ms-version 2015-02-21 and later).

    `url` is the request URL exactly as sent (its path percent-encoded); `headers` are
    all headers sent (names case-insensitive), which must include x-ms-date (or Date)
    and x-ms-version. A Content-Length of "0" is signed as an empty string.
    """
    lower = {name.lower(): str(value) for name, value in headers.items()}
    parts = [method.upper()]
    for name in _SIGNED_STANDARD_HEADERS:
        value = lower.get(name, "")
        if name == "content-length" and value == "0":
            value = ""
        parts.append(value)
    # CanonicalizedHeaders: every x-ms-* header, lowercased name, sorted, "name:value\n",
    # runs of whitespace in the value folded to one space and the value trimmed.
    canonical_headers = "".join(
        name + ":" + _WHITESPACE.sub(" ", lower[name]).strip() + "\n"
        for name in sorted(n for n in lower if n.startswith("x-ms-")))
    # CanonicalizedResource: "/" + account + encoded URI path, then one line per query
    # parameter: lowercased name, ":", the decoded values sorted and comma-joined.
    parsed = urllib.parse.urlsplit(url)
    resource = f"/{account}{parsed.path or '/'}"
    params: dict[str, list[str]] = {}
    for name, value in urllib.parse.parse_qsl(parsed.query, keep_blank_values=True):
        params.setdefault(name.lower(), []).append(value)
    for name in sorted(params):
        resource += f"\n{name}:{','.join(sorted(params[name]))}"
    return "\n".join(parts) + "\n" + canonical_headers + resource


def shared_key_authorization(account: str, key: str, method: str, url: str,
                             headers: Mapping[str, str]) -> str:
    """The Authorization header value "SharedKey <account>:<signature>" for a request.

    `key` is the base64 account key; the signature is
    base64(HMAC-SHA256(base64decode(key), UTF-8 string-to-sign)).
    """
    string_to_sign = shared_key_string_to_sign(account, method, url, headers)
    digest = hmac.new(base64.b64decode(key), string_to_sign.encode("utf-8"),
                      hashlib.sha256).digest()
    return f"SharedKey {account}:{base64.b64encode(digest).decode('ascii')}"


def _iso8601(t: _dt.datetime) -> str:
    return t.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def account_sas(account: str, key: str, *, permissions: str = "rwdlac",
                services: str = "b", resource_types: str = "sco",
                expiry: _dt.datetime | None = None, start: _dt.datetime | None = None,
                protocol: str = "https,http", version: str = API_VERSION) -> str:
    """An account SAS query string (no leading "?").

    Uses the string-to-sign layout of signed version 2020-12-06 and later (with the
    signedEncryptionScope line), so `version` must be 2020-12-06 or later.
    """
    now = _dt.datetime.now(_dt.timezone.utc)
    expiry_s = _iso8601(expiry or now + _dt.timedelta(hours=1))
    start_s = _iso8601(start) if start else ""
    string_to_sign = "\n".join([
        account, permissions, services, resource_types, start_s, expiry_s,
        "",        # signedIP
        protocol, version,
        "",        # signedEncryptionScope
        "",        # trailing newline
    ])
    signature = base64.b64encode(hmac.new(base64.b64decode(key), string_to_sign.encode(),
                                          hashlib.sha256).digest()).decode()
    query = {"sv": version, "ss": services, "srt": resource_types, "sp": permissions,
             "se": expiry_s, "spr": protocol, "sig": signature}
    if start_s:
        query["st"] = start_s
    return urllib.parse.urlencode(query, quote_via=urllib.parse.quote, safe="")


def http_date(t: float | None = None) -> str:
    """RFC 1123 date for x-ms-date."""
    from email.utils import formatdate
    return formatdate(t, usegmt=True)


# --------------------------------------------------------------------------- REST client

@dataclasses.dataclass
class Response:
    status: int
    reason: str
    headers: dict[str, str]          # lowercased names
    body: bytes

    @property
    def error_code(self) -> str | None:
        """The x-ms-error-code header (e.g. BlobAlreadyExists), if any."""
        return self.headers.get("x-ms-error-code")

    def __repr__(self) -> str:
        return f"Response({self.status} {self.error_code or self.reason})"


class AzureEmulator:
    """A running azurite-blob; see start_azure_emulator()."""

    account_name = ACCOUNT_NAME
    account_key = ACCOUNT_KEY

    def __init__(self, port: int, workspace: Path, proc: subprocess.Popen, log_path: Path,
                 debug_log: Path | None = None):
        self.host = "127.0.0.1"
        self.port = port
        self.workspace = workspace
        self.proc = proc
        self.log_path = log_path
        self.debug_log = debug_log

    @property
    def endpoint(self) -> str:
        """Blob service endpoint (path-style): http://127.0.0.1:PORT/devstoreaccount1."""
        return f"http://{self.host}:{self.port}/{self.account_name}"

    def log_text(self) -> str:
        """Azurite's stdout/stderr so far."""
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def debug_log_text(self) -> str:
        """Azurite's debug log so far ("" unless started with debug=True)."""
        try:
            return self.debug_log.read_text(errors="replace") if self.debug_log else ""
        except OSError:
            return ""

    # --- deltalake / object_store -------------------------------------------------
    def storage_options(self) -> dict[str, str]:
        """deltalake 1.6.6 (object_store) options for az://CONTAINER/PATH on this emulator.

        Not azure_storage_use_emulator: with it object_store ignores the endpoint and
        goes to $AZURITE_BLOB_STORAGE_URL or http://127.0.0.1:10000. allow_http is a
        client option with no azure_storage_ prefix (azure_storage_allow_http is
        silently ignored). The endpoint must include the /devstoreaccount1 path.
        """
        return {
            "azure_storage_account_name": self.account_name,
            "azure_storage_account_key": self.account_key,
            "azure_storage_endpoint": self.endpoint,
            "allow_http": "true",
        }

    @staticmethod
    def table_uri(container: str, path: str = "") -> str:
        """az://CONTAINER/PATH (abfs[s]:// and azure:// work the same with these options)."""
        return f"az://{container}/{path.strip('/')}".rstrip("/")

    # --- raw REST ------------------------------------------------------------------
    def url(self, container: str = "", blob: str = "",
            query: Mapping[str, str] | None = None) -> str:
        path = f"/{self.account_name}"
        if container:
            path += "/" + urllib.parse.quote(container, safe="")
        if blob:
            path += "/" + urllib.parse.quote(blob, safe="/")
        url = f"http://{self.host}:{self.port}{path}"
        if query:
            url += "?" + urllib.parse.urlencode(query, quote_via=urllib.parse.quote, safe="")
        return url

    def request(self, method: str, container: str = "", blob: str = "", *,
                query: Mapping[str, str] | None = None,
                headers: Mapping[str, str] | None = None, body: bytes = b"",
                auth: str = "sharedkey", sas: str | None = None) -> Response:
        """One signed request. auth: "sharedkey", "sas" (needs `sas`) or "none"."""
        url = self.url(container, blob, query)
        if auth == "sas":
            assert sas, "auth='sas' needs sas=<token>"
            url += ("&" if "?" in url else "?") + sas
        send = {"x-ms-date": http_date(), "x-ms-version": API_VERSION}
        send.update(headers or {})
        if body or method.upper() in ("PUT", "POST"):
            send["Content-Length"] = str(len(body))
        if auth == "sharedkey":
            send["Authorization"] = shared_key_authorization(
                self.account_name, self.account_key, method, url, send)
        parsed = urllib.parse.urlsplit(url)
        target = parsed.path + ("?" + parsed.query if parsed.query else "")
        conn = http.client.HTTPConnection(self.host, self.port, timeout=REQUEST_TIMEOUT_S)
        try:
            conn.request(method.upper(), target, body=body or None, headers=send)
            resp = conn.getresponse()
            data = resp.read()
            return Response(resp.status, resp.reason,
                            {k.lower(): v for k, v in resp.getheaders()}, data)
        finally:
            conn.close()

    def create_container(self, name: str) -> Response:
        """Create container `name`; an existing one (409 ContainerAlreadyExists) is fine."""
        resp = self.request("PUT", name, query={"restype": "container"})
        if resp.status not in (201, 409) or (
                resp.status == 409 and resp.error_code != "ContainerAlreadyExists"):
            raise RuntimeError(f"create container {name!r}: {resp.status} {resp.error_code}: "
                               f"{resp.body[:500]!r}")
        return resp

    def put_blob(self, container: str, blob: str, data: bytes, *,
                 if_none_match: str | None = None, if_match: str | None = None) -> Response:
        """Put Blob (BlockBlob). if_none_match="*" makes it create-only."""
        headers = {"x-ms-blob-type": "BlockBlob", "Content-Type": "application/octet-stream"}
        if if_none_match is not None:
            headers["If-None-Match"] = if_none_match
        if if_match is not None:
            headers["If-Match"] = if_match
        return self.request("PUT", container, blob, headers=headers, body=data)

    def get_blob(self, container: str, blob: str, *, range_: str | None = None) -> Response:
        return self.request("GET", container, blob,
                            headers={"x-ms-range": range_} if range_ else None)

    def delete_blob(self, container: str, blob: str) -> Response:
        return self.request("DELETE", container, blob)

    def list_blob_names(self, container: str, prefix: str = "", *,
                        page_size: int | None = None) -> list[str]:
        """All blob names under `prefix`, following NextMarker across pages."""
        names: list[str] = []
        marker = ""
        while True:
            query = {"restype": "container", "comp": "list", "prefix": prefix}
            if page_size:
                query["maxresults"] = str(page_size)
            if marker:
                query["marker"] = marker
            resp = self.request("GET", container, query=query)
            if resp.status != 200:
                raise RuntimeError(f"list {container!r}: {resp.status} {resp.error_code}")
            root = ET.fromstring(resp.body)
            names += [name.text or "" for name in root.iterfind("./Blobs/Blob/Name")]
            marker = root.findtext("NextMarker") or ""
            if not marker:
                return names


# --------------------------------------------------------------------------- process

def _answers_http(port: int) -> bool:
    """True once anything answers HTTP on the port (an unsigned request gets a 403)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1.0)
    try:
        conn.request("GET", f"/{ACCOUNT_NAME}?comp=list")
        conn.getresponse().read()
        return True
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()


def azurite_command(port: int, workspace: Path, *, in_memory: bool = False,
                    debug_log: Path | None = None) -> list[str]:
    """The azurite-blob command line (blob service only, no other services)."""
    cmd = [
        str(AZURITE_BLOB),
        "--blobHost", "127.0.0.1",
        "--blobPort", str(port),
        "--silent",                    # no access log on stdout
        "--skipApiVersionCheck",       # accept any x-ms-version, even newer than Azurite's
        "--disableProductStyleUrl",    # the account is always the first path segment
        "--disableTelemetry",          # no outbound telemetry
    ]
    # Azurite refuses --inMemoryPersistence together with --location.
    cmd += ["--inMemoryPersistence"] if in_memory else ["--location", str(workspace)]
    if debug_log:
        cmd += ["--debug", str(debug_log)]
    return cmd


@contextlib.contextmanager
def start_azure_emulator(*, in_memory: bool = False, debug: bool = False,
                         attempts: int = 3) -> Iterator[AzureEmulator]:
    """Start azurite-blob on a free 127.0.0.1 port, yield an AzureEmulator, stop it.

    Data lives in a fresh temporary workspace (or only in memory with in_memory=True),
    removed on exit. debug=True makes Azurite write its debug log (every request's
    headers and, for Shared Key, the string-to-sign it computed) to
    AzureEmulator.debug_log; read it with debug_log_text() before the block ends.
    """
    if not (AZURITE_BLOB.is_file() and os.access(AZURITE_BLOB, os.X_OK)):
        raise RuntimeError(
            f"azurite-blob not found at {AZURITE_BLOB}; run scripts/setup_azurite.sh")
    workspace = Path(tempfile.mkdtemp(prefix="ampdelta-azurite-"))
    proc: subprocess.Popen | None = None
    try:
        last_log = ""
        for _ in range(attempts):      # retry if another process takes the port first
            port = free_port()
            log_path = workspace / f"azurite-{port}.log"
            debug_log = workspace / f"azurite-{port}.debug.log" if debug else None
            with open(log_path, "wb") as log:
                proc = subprocess.Popen(
                    azurite_command(port, workspace, in_memory=in_memory, debug_log=debug_log),
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=workspace,
                    start_new_session=True, preexec_fn=die_with_parent(signal.SIGTERM))
            deadline = time.monotonic() + STARTUP_TIMEOUT_S
            while time.monotonic() < deadline and proc.poll() is None:
                if _answers_http(port):
                    break
                time.sleep(0.05)
            if proc.poll() is None and _answers_http(port):
                break
            stop(proc, group=True)
            last_log = log_path.read_text(errors="replace")
            proc = None
        if proc is None:
            raise RuntimeError(f"azurite-blob did not start after {attempts} attempts:\n{last_log}")
        yield AzureEmulator(port, workspace, proc, log_path, debug_log)
    finally:
        if proc is not None:
            stop(proc, group=True)
        shutil.rmtree(workspace, ignore_errors=True)


# --------------------------------------------------------------------------- self-check

# Known-answer vectors for the Shared Key signer (also usable by the C++ signer's tests).
# The first string-to-sign equals the one Azurite 3.35.0 logged (--debug) for that request.
SIGNER_VECTORS = [
    dict(method="PUT",
         url="http://127.0.0.1:10000/devstoreaccount1/delta/t/_delta_log/00000000000000000001.json",
         headers={"x-ms-date": "Sun, 29 Nov 2026 19:14:17 GMT", "x-ms-version": "2021-08-06",
                  "x-ms-blob-type": "BlockBlob", "Content-Type": "application/octet-stream",
                  "Content-Length": "33", "If-None-Match": "*"},
         string_to_sign="PUT\n\n\n33\n\napplication/octet-stream\n\n\n\n*\n\n\n"
                        "x-ms-blob-type:BlockBlob\nx-ms-date:Sun, 29 Nov 2026 19:14:17 GMT\n"
                        "x-ms-version:2021-08-06\n/devstoreaccount1/devstoreaccount1/delta/t/"
                        "_delta_log/00000000000000000001.json",
         authorization="SharedKey devstoreaccount1:BKUUvVOnpmxp8ADa6pWux7baVPyyfHYtzEW1322ipEo="),
    dict(method="GET",
         url="http://127.0.0.1:10000/devstoreaccount1/delta?restype=container&comp=list"
             "&prefix=t%2F_delta_log%2F&marker=t%2Fa%20b&maxresults=3",
         headers={"x-ms-date": "Sun, 29 Nov 2026 19:14:17 GMT", "x-ms-version": "2021-08-06"},
         string_to_sign="GET\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Sun, 29 Nov 2026 19:14:17 GMT\n"
                        "x-ms-version:2021-08-06\n/devstoreaccount1/devstoreaccount1/delta\n"
                        "comp:list\nmarker:t/a b\nmaxresults:3\nprefix:t/_delta_log/\n"
                        "restype:container",
         authorization="SharedKey devstoreaccount1:pyD0/icJk+wir7FJoElfL/N9XM7YCAPueXFR1pwintQ="),
]


def _self_check() -> None:
    for vector in SIGNER_VECTORS:
        args = (ACCOUNT_NAME, vector["method"], vector["url"], vector["headers"])
        assert shared_key_string_to_sign(*args) == vector["string_to_sign"], vector["url"]
        assert shared_key_authorization(ACCOUNT_NAME, ACCOUNT_KEY, *args[1:]) \
            == vector["authorization"], vector["url"]
    with start_azure_emulator() as az:
        print(f"azurite-blob pid {az.proc.pid} at {az.endpoint}")
        created = az.create_container("selfcheck")
        assert created.status == 201, created
        assert az.create_container("selfcheck").status == 409
        first = az.put_blob("selfcheck", "_delta_log/00000000000000000000.json", b"{}\n",
                            if_none_match="*")
        assert first.status == 201, first
        again = az.put_blob("selfcheck", "_delta_log/00000000000000000000.json", b"{}\n",
                            if_none_match="*")
        assert (again.status, again.error_code) == (409, "BlobAlreadyExists"), again
        got = az.get_blob("selfcheck", "_delta_log/00000000000000000000.json")
        assert (got.status, got.body) == (200, b"{}\n"), got
        bad = az.request("GET", "selfcheck", query={"restype": "container", "comp": "list"},
                         auth="none")
        assert bad.status == 403, bad
        print(f"create-only put: first {first.status}, second {again.status} {again.error_code}")
        proc, workspace = az.proc, az.workspace
    assert proc.poll() is not None and not workspace.exists()
    print("emulator_azure self-check OK")


if __name__ == "__main__":
    _self_check()
