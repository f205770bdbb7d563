"""Cloud object stores (S3, Azure Blob, GCS) against emulators on 127.0.0.1.

Each emulator is started by this module and stopped when it ends: versitygw (S3, atomic
`If-None-Match`, checks SigV4 signatures), Azurite (Azure, checks Shared Key signatures)
and fake-gcs-server (GCS, `ifGenerationMatch` under its backend lock). Tables written by
`ampdelta load` are read back by deltalake and Polars with the storage options a user would
pass them; the C++ conformance suite runs against each store; several processes append to
one table at once; a proxy injects lost replies and 5xx answers into commits.
"""
from __future__ import annotations

import concurrent.futures
import json
import os
import subprocess
from dataclasses import dataclass, field

import pytest

import emulator_azure
import emulator_gcs
import emulator_s3
import fault_proxy
import readers
from conftest import REPO_ROOT, cli_env, cli_path

QUICKSTART = 'SELECT block_num, timestamp, hash, gas_used FROM "acme/eth_mainnet".blocks'
FIRST_BLOCK = 24_000_000
BLOCKS = 100
CONFORMANCE_TEST = REPO_ROOT / "build" / "asan" / "tests" / "conformance-test"


@dataclass
class Store:
    """One running emulator and how each client reaches it."""

    name: str
    root: str  # bucket/container URL tables go under
    cli_options: dict[str, str]  # ampdelta --storage-option pairs
    reader_options: dict[str, str]  # deltalake / Polars storage_options
    endpoint: str
    env: dict[str, str] = field(default_factory=dict)

    def uri(self, table: str) -> str:
        return f"{self.root}/{table}"

    def with_endpoint(self, endpoint: str) -> Store:
        """The same store reached through another endpoint (the fault proxy)."""
        swap = lambda options: {k: v.replace(self.endpoint, endpoint) for k, v in options.items()}
        return Store(self.name, self.root, swap(self.cli_options), self.reader_options, endpoint,
                     swap(self.env))


@pytest.fixture(scope="module")
def s3_store():
    with emulator_s3.start_s3_emulator() as s3:
        s3.create_bucket("ampdelta")
        options = s3.storage_options()
        yield Store("s3", "s3://ampdelta", options, options, s3.endpoint)


@pytest.fixture(scope="module")
def azure_store():
    with emulator_azure.start_azure_emulator() as az:
        az.create_container("ampdelta")
        options = az.storage_options()
        yield Store("azure", "az://ampdelta", options, options, az.endpoint.rsplit("/", 1)[0])


@pytest.fixture(scope="module")
def gcs_store():
    with emulator_gcs.start_gcs_emulator(buckets=("ampdelta",)) as gcs:
        # ampdelta speaks GCS's JSON API to the emulator itself; object_store (deltalake,
        # Polars) speaks the XML API, through the emulator module's front.
        cli = {"STORAGE_EMULATOR_HOST": gcs.endpoint}
        yield Store("gcs", "gs://ampdelta", cli, gcs.storage_options(), gcs.endpoint)


@pytest.fixture(params=["s3", "azure", "gcs"])
def store(request) -> Store:
    return request.getfixturevalue(f"{request.param}_store")


def run_cli(args: list[str], store: Store | None = None, env_extra: dict | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess:
    env = cli_env()
    if store is not None:
        env.update(store.env)
        for key, value in store.cli_options.items():
            args = [*args, "--storage-option", f"{key}={value}"]
    env.update(env_extra or {})
    return subprocess.run([str(cli_path()), *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def load(url: str, table: str, sql: str, store: Store, *extra: str, **kwargs):
    return run_cli(["load", "--server", url, "--table", table, "--sql", sql, *extra], store,
                   **kwargs)


def blocks_sql(first: int, last: int) -> str:
    return f"{QUICKSTART} WHERE block_num >= {first} AND block_num <= {last}"


def read_deltalake(store: Store, uri: str, version: int | None = None):
    from deltalake import DeltaTable

    return DeltaTable(uri, storage_options=store.reader_options, version=version)


def writes(table) -> int:
    """The WRITE commits in a table's history (the loader may compact after writes)."""
    return sum(1 for commit in table.history() if commit.get("operation") == "WRITE")


def rows_by_block(table) -> list[tuple]:
    return sorted(zip(table.column("block_num").to_pylist(), table.column("hash").to_pylist()))


@pytest.fixture(scope="module")
def local_reference(quickstart_url, tmp_path_factory):
    """The Quickstart load on the local disk: what every store must read back as."""
    from deltalake import DeltaTable

    path = tmp_path_factory.mktemp("reference") / "blocks"
    done = run_cli(["load", "--server", quickstart_url, "--table", str(path), "--sql", QUICKSTART])
    assert done.returncode == 0, done.stderr
    return rows_by_block(DeltaTable(str(path)).to_pyarrow_table())


@pytest.mark.timeout(300)
def test_conformance_suite_passes_against_the_emulator(store):
    assert CONFORMANCE_TEST.is_file(), f"{CONFORMANCE_TEST} not built (make build)"
    variable = f"AMPDELTA_TEST_{store.name.upper()}_ROOT"
    env = {**os.environ, **store.env, variable: store.root,
           "ARROW_DEFAULT_MEMORY_POOL": "system"}
    # The suite opens its stores from the environment (options are looked up there too).
    env.update({key.upper(): value for key, value in store.cli_options.items()})
    done = subprocess.run([str(CONFORMANCE_TEST), f"--gtest_filter=*/{store.name}"], env=env,
                          capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "SKIPPED" not in done.stdout
    assert "[  PASSED  ] 14 tests." in done.stdout, done.stdout[-2000:]


@pytest.mark.timeout(180)
def test_loaded_table_reads_back_identically_with_deltalake_polars_and_duckdb(
        store, quickstart_url, local_reference):
    import polars as pl

    uri = store.uri("blocks_readback")
    done = load(quickstart_url, uri, QUICKSTART, store)
    assert done.returncode == 0, done.stderr
    assert f"Loaded {BLOCKS} rows" in done.stdout
    table = read_deltalake(store, uri)
    assert table.version() == 0
    assert rows_by_block(table.to_pyarrow_table()) == local_reference
    frame = pl.read_delta(uri, storage_options=store.reader_options)
    assert sorted(zip(frame["block_num"].to_list(), frame["hash"].to_list())) == local_reference
    if store.name == "s3":
        # DuckDB (delta-kernel-rs) reaches S3-compatible endpoints through httpfs; its Azure
        # and GCS support cannot be pointed at these emulators.
        options = store.reader_options
        duck = readers.read_duckdb_s3(uri, options["AWS_ENDPOINT_URL"],
                                      options["AWS_ACCESS_KEY_ID"],
                                      options["AWS_SECRET_ACCESS_KEY"])
        assert rows_by_block(duck) == local_reference
    # A second, overwriting load: the history and the old version stay readable.
    again = load(quickstart_url, uri, blocks_sql(FIRST_BLOCK, FIRST_BLOCK + 9), store,
                 "--mode", "overwrite")
    assert again.returncode == 0, again.stderr
    assert read_deltalake(store, uri).to_pyarrow_table().num_rows == 10
    assert rows_by_block(read_deltalake(store, uri, version=0).to_pyarrow_table()) == local_reference
    # ampdelta's own table commands reach the store with the same options.
    info = run_cli(["table", "info", uri, "--json"], store)
    assert info.returncode == 0, info.stderr
    assert json.loads(info.stdout)["version"] == 1


@pytest.mark.timeout(300)
def test_concurrent_appending_processes_load_every_row_exactly_once(store, quickstart_url):
    """Ten loader processes append disjoint block ranges to one new table at once."""
    uri = store.uri("concurrent")
    slices = [(FIRST_BLOCK + 10 * i, FIRST_BLOCK + 10 * i + 9) for i in range(10)]
    with concurrent.futures.ThreadPoolExecutor(len(slices)) as pool:
        results = list(pool.map(lambda s: load(quickstart_url, uri, blocks_sql(*s), store),
                                slices))
    for result in results:
        assert result.returncode == 0, result.stderr
    table = read_deltalake(store, uri)
    blocks = table.to_pyarrow_table().column("block_num").to_pylist()
    assert sorted(blocks) == list(range(FIRST_BLOCK, FIRST_BLOCK + BLOCKS))
    assert writes(table) == len(slices)  # one WRITE each (compactions may follow them)


def commit_path_regex(store: Store) -> str:
    # The commit file in a request's path (S3, Azure) or in GCS's `name=` query parameter.
    return r"_delta_log(/|%2F)\d{20}\.json"


@pytest.mark.timeout(300)
def test_lost_replies_and_5xx_during_commits_lose_and_duplicate_nothing(store, quickstart_url):
    """Commits meet faults: refused with 503, applied but the connection closed before any
    reply, applied but answered 500, applied but the reply cut short. Each load must still
    succeed, exactly once."""
    uri = store.uri("faults")
    commit = commit_path_regex(store)
    method = "POST" if store.name == "gcs" else "PUT"
    rules = [
        fault_proxy.Rule("503", method, commit, "status_before", status=503, times=2),
        fault_proxy.Rule("lost", method, commit, "lost_reply", times=1),
        fault_proxy.Rule("500", method, commit, "status_after", status=500, times=1),
        fault_proxy.Rule("truncated", method, commit, "truncated_reply", times=1),
    ]
    with fault_proxy.start_fault_proxy(store.endpoint, rules) as proxy:
        faulty = store.with_endpoint(proxy.endpoint)
        for i in range(5):
            done = load(quickstart_url, uri, blocks_sql(FIRST_BLOCK + 20 * i, FIRST_BLOCK + 20 * i + 19),
                        faulty, env_extra={"AMPDELTA_MAX_RETRIES": "4"})
            assert done.returncode == 0, f"load {i}: {done.stderr}"
        assert proxy.counts == {"503": 2, "lost": 1, "500": 1, "truncated": 1}, proxy.counts
    table = read_deltalake(store, uri)
    assert writes(table) == 5
    blocks = table.to_pyarrow_table().column("block_num").to_pylist()
    assert sorted(blocks) == list(range(FIRST_BLOCK, FIRST_BLOCK + BLOCKS))


@pytest.mark.timeout(120)
def test_a_store_rejecting_conditional_writes_names_the_unsafe_option(s3_store, quickstart_url):
    uri = s3_store.uri("no_conditional")
    rules = [fault_proxy.Rule("501", "PUT", commit_path_regex(s3_store), "status_before",
                              status=501, times=None)]
    with fault_proxy.start_fault_proxy(s3_store.endpoint, rules) as proxy:
        faulty = s3_store.with_endpoint(proxy.endpoint)
        refused = load(quickstart_url, uri, QUICKSTART, faulty)
        assert refused.returncode != 0
        output = refused.stdout + refused.stderr
        assert "If-None-Match" in output and "AWS_S3_ALLOW_UNSAFE_RENAME=true" in output, output
        with pytest.raises(Exception):
            read_deltalake(s3_store, uri)  # no table was created
        # The option makes a single writer work on such a store, with a warning.
        proxy.set_rules([])
        unsafe = load(quickstart_url, uri, QUICKSTART, faulty,
                      "--storage-option", "AWS_S3_ALLOW_UNSAFE_RENAME=true")
        assert unsafe.returncode == 0, unsafe.stderr
        assert "concurrent writers" in unsafe.stderr
    assert read_deltalake(s3_store, uri).to_pyarrow_table().num_rows == BLOCKS


@pytest.mark.timeout(120)
def test_secrets_never_appear_in_output_logs_or_the_log(s3_store, azure_store, quickstart_url):
    for store, secret_key in ((s3_store, "AWS_SECRET_ACCESS_KEY"),
                              (azure_store, "azure_storage_account_key")):
        secret = store.cli_options[secret_key]
        uri = store.uri("secrets")
        done = run_cli(["--log-level", "debug", "load", "--server", quickstart_url, "--table", uri,
                        "--sql", QUICKSTART], store)
        assert done.returncode == 0, done.stderr
        assert secret not in done.stdout and secret not in done.stderr
        # A failing request (wrong bucket) must not echo credentials either.
        bad = run_cli(["table", "info", uri.replace("ampdelta", "missing-bucket"), "--json"], store)
        assert bad.returncode != 0
        assert secret not in bad.stdout and secret not in bad.stderr
        history = read_deltalake(store, uri).history()
        assert secret not in json.dumps(history, default=str)


@pytest.mark.timeout(120)
def test_wrong_credentials_fail_clearly_and_leave_no_table(s3_store, quickstart_url):
    uri = s3_store.uri("wrong_credentials")
    wrong = Store(s3_store.name, s3_store.root,
                  {**s3_store.cli_options, "AWS_SECRET_ACCESS_KEY": "not-the-secret"},
                  s3_store.reader_options, s3_store.endpoint)
    done = load(quickstart_url, uri, QUICKSTART, wrong)
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert "HTTP 403" in output and "credentials" in output, output
    assert "not-the-secret" not in output
    with pytest.raises(Exception):
        read_deltalake(s3_store, uri)


@pytest.mark.timeout(120)
def test_aws_profile_file_supplies_the_credentials(s3_store, quickstart_url, tmp_path):
    options = dict(s3_store.cli_options)
    key_id = options.pop("AWS_ACCESS_KEY_ID")
    secret = options.pop("AWS_SECRET_ACCESS_KEY")
    credentials = tmp_path / "credentials"
    credentials.write_text(f"[default]\naws_access_key_id = {key_id}\naws_secret_access_key = wrong\n\n"
                           f"[loader]\naws_access_key_id = {key_id}\n"
                           f"aws_secret_access_key = {secret}\n")
    profiled = Store(s3_store.name, s3_store.root, options, s3_store.reader_options,
                     s3_store.endpoint)
    env = {"AWS_SHARED_CREDENTIALS_FILE": str(credentials), "AWS_PROFILE": "loader",
           "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_EC2_METADATA_DISABLED": "true"}
    done = load(quickstart_url, s3_store.uri("profile"), QUICKSTART, profiled, env_extra=env)
    assert done.returncode == 0, done.stderr
    assert read_deltalake(s3_store, s3_store.uri("profile")).to_pyarrow_table().num_rows == BLOCKS
    # The default profile's wrong keys are refused by the emulator's signature check.
    env["AWS_PROFILE"] = "default"
    refused = load(quickstart_url, s3_store.uri("profile_wrong"), QUICKSTART, profiled,
                   env_extra=env)
    assert refused.returncode != 0 and "HTTP 403" in refused.stdout + refused.stderr


class _FakeAwsCredentialServer:
    """A fake EC2 instance-metadata service (IMDSv2) and STS on 127.0.0.1 that hand out the
    emulator's keys as temporary credentials, recording what clients asked.

    The session token is empty: versitygw refuses every `x-amz-security-token` it did not
    issue. That the token is sent and signed is a unit test (cloud_signing_test.cc)."""

    def __init__(self, key_id: str, secret: str):
        import http.server
        import threading

        self.requests: list[tuple[str, str, dict]] = []
        server = self
        expiration = "2099-01-01T00:00:00Z"

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def reply(self, status: int, body: str, content_type="text/plain"):
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_PUT(self):
                server.requests.append(("PUT", self.path, dict(self.headers)))
                if self.path == "/latest/api/token" and \
                        self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
                    self.reply(200, "imds-session-token")
                else:
                    self.reply(400, "bad token request")

            def do_POST(self):
                # STS: the web identity token arrives in a form body.
                body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
                server.requests.append(("POST", self.path + "?" + body, dict(self.headers)))
                self.path = self.path + "?" + body
                self.do_sts()

            def do_GET(self):
                server.requests.append(("GET", self.path, dict(self.headers)))
                if self.path.startswith("/latest/meta-data/"):
                    if self.headers.get("X-aws-ec2-metadata-token") != "imds-session-token":
                        return self.reply(401, "no IMDSv2 token")
                    if self.path == "/latest/meta-data/iam/security-credentials/":
                        return self.reply(200, "loader-role")
                    if self.path == "/latest/meta-data/iam/security-credentials/loader-role":
                        return self.reply(200, json.dumps({
                            "Code": "Success", "AccessKeyId": key_id, "SecretAccessKey": secret,
                            "Token": "", "Expiration": expiration}),
                            "application/json")
                    return self.reply(404, "not found")
                self.reply(403, "<Error><Code>AccessDenied</Code></Error>")

            def do_sts(self):
                if "Action=AssumeRoleWithWebIdentity" in self.path and \
                        "WebIdentityToken=the-oidc-token" in self.path:
                    return self.reply(200, (
                        "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult>"
                        f"<Credentials><AccessKeyId>{key_id}</AccessKeyId>"
                        f"<SecretAccessKey>{secret}</SecretAccessKey>"
                        "<SessionToken></SessionToken>"
                        f"<Expiration>{expiration}</Expiration></Credentials>"
                        "</AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>"),
                        "text/xml")
                self.reply(403, "<Error><Code>AccessDenied</Code></Error>")

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("source", ["instance_metadata", "web_identity"])
def test_temporary_credentials_from_instance_metadata_and_web_identity(s3_store, quickstart_url,
                                                                       tmp_path, source):
    options = dict(s3_store.cli_options)
    key_id = options.pop("AWS_ACCESS_KEY_ID")
    secret = options.pop("AWS_SECRET_ACCESS_KEY")
    fake = _FakeAwsCredentialServer(key_id, secret)
    try:
        env = {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_PROFILE": "",
               "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
               "AWS_CONFIG_FILE": str(tmp_path / "none")}
        if source == "instance_metadata":
            env["AWS_EC2_METADATA_SERVICE_ENDPOINT"] = fake.endpoint
        else:
            token = tmp_path / "token"
            token.write_text("the-oidc-token\n")
            env.update({"AWS_WEB_IDENTITY_TOKEN_FILE": str(token),
                        "AWS_ROLE_ARN": "arn:aws:iam::123456789012:role/loader",
                        "AWS_ENDPOINT_URL_STS": fake.endpoint})
        temporary = Store(s3_store.name, s3_store.root, options, s3_store.reader_options,
                          s3_store.endpoint)
        uri = s3_store.uri(f"temporary_{source}")
        done = load(quickstart_url, uri, QUICKSTART, temporary, env_extra=env)
        assert done.returncode == 0, done.stdout + done.stderr
        assert read_deltalake(s3_store, uri).to_pyarrow_table().num_rows == BLOCKS
        paths = [path for _, path, _ in fake.requests]
        if source == "instance_metadata":
            assert paths[:3] == ["/latest/api/token", "/latest/meta-data/iam/security-credentials/",
                                 "/latest/meta-data/iam/security-credentials/loader-role"]
        else:
            # POST: the token travels in the form body, not in a logged URL.
            assert [method for method, _, _ in fake.requests] == ["POST"], fake.requests
            assert "RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Floader" in paths[0]
        # Credentials are fetched once and reused until they near expiry.
        assert len(fake.requests) <= 3
    finally:
        fake.close()


@pytest.mark.timeout(120)
def test_gcs_service_account_key_is_exchanged_for_a_token_with_a_signed_jwt(gcs_store,
                                                                           quickstart_url,
                                                                           tmp_path):
    """The store signs an RS256 assertion with the key file's private key and trades it for a
    bearer token at the key's token_uri (a fake token service here, which checks the
    signature with the public key via the openssl command)."""
    import base64
    import http.server
    import threading
    import urllib.parse

    key = tmp_path / "key.pem"
    public = tmp_path / "public.pem"
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                    "-out", str(key)], check=True, capture_output=True)
    subprocess.run(["openssl", "pkey", "-in", str(key), "-pubout", "-out", str(public)],
                   check=True, capture_output=True)
    seen: list[dict] = []

    def unb64(text: str) -> bytes:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))

    class TokenService(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
            header, claims, signature = form["assertion"][0].split(".")
            (tmp_path / "signed").write_bytes(f"{header}.{claims}".encode())
            (tmp_path / "signature").write_bytes(unb64(signature))
            verified = subprocess.run(["openssl", "dgst", "-sha256", "-verify", str(public),
                                       "-signature", str(tmp_path / "signature"),
                                       str(tmp_path / "signed")], capture_output=True, text=True)
            seen.append({"grant_type": form["grant_type"][0], "header": json.loads(unb64(header)),
                         "claims": json.loads(unb64(claims)),
                         "verified": verified.returncode == 0})
            body = json.dumps({"access_token": "token-from-fake-service", "expires_in": 3600,
                               "token_type": "Bearer"}).encode()
            self.send_response(200 if verified.returncode == 0 else 401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    service = http.server.ThreadingHTTPServer(("127.0.0.1", 0), TokenService)
    threading.Thread(target=service.serve_forever, daemon=True).start()
    token_uri = f"http://127.0.0.1:{service.server_address[1]}/token"
    try:
        key_file = tmp_path / "service-account.json"
        key_file.write_text(json.dumps({
            "type": "service_account", "client_email": "loader@project.iam.gserviceaccount.com",
            "private_key": key.read_text(), "private_key_id": "k1", "token_uri": token_uri}))
        options = {"GOOGLE_STORAGE_ENDPOINT": gcs_store.endpoint, "allow_http": "true",
                   "GOOGLE_SERVICE_ACCOUNT": str(key_file)}
        signed = Store("gcs", gcs_store.root, options, gcs_store.reader_options,
                       gcs_store.endpoint)
        uri = gcs_store.uri("service_account")
        done = load(quickstart_url, uri, QUICKSTART, signed)
        assert done.returncode == 0, done.stdout + done.stderr
        assert read_deltalake(gcs_store, uri).to_pyarrow_table().num_rows == BLOCKS
        assert len(seen) == 1, "one token serves the whole load"
        assert seen[0]["verified"], "the assertion's RS256 signature must verify"
        assert seen[0]["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
        assert seen[0]["header"] == {"alg": "RS256", "typ": "JWT"}
        claims = seen[0]["claims"]
        assert claims["iss"] == "loader@project.iam.gserviceaccount.com"
        assert claims["aud"] == token_uri
        assert "devstorage" in claims["scope"]
        assert claims["exp"] - claims["iat"] == 3600
        assert key.read_text().split("\n")[1] not in done.stdout + done.stderr
    finally:
        service.shutdown()
        service.server_close()


@pytest.mark.timeout(120)
def test_azure_sas_token_authorises_instead_of_the_account_key(azure_store, quickstart_url):
    options = dict(azure_store.cli_options)
    key = options.pop("azure_storage_account_key")
    sas = emulator_azure.account_sas(options["azure_storage_account_name"], key)
    uri = azure_store.uri("sas")
    done = load(quickstart_url, uri, QUICKSTART,
                Store("azure", azure_store.root, {**options, "AZURE_STORAGE_SAS_TOKEN": sas},
                      azure_store.reader_options, azure_store.endpoint),
                env_extra={"AZURE_STORAGE_ACCOUNT_KEY": ""})
    assert done.returncode == 0, done.stdout + done.stderr
    assert sas.split("sig=")[1].split("&")[0] not in done.stdout + done.stderr
    assert read_deltalake(azure_store, uri).to_pyarrow_table().num_rows == BLOCKS
    # A read-only SAS is refused by the service on the first write: a clear 403.
    read_only = emulator_azure.account_sas(options["azure_storage_account_name"], key,
                                           permissions="rl")
    refused = load(quickstart_url, azure_store.uri("sas_read_only"), QUICKSTART,
                   Store("azure", azure_store.root, {**options, "AZURE_STORAGE_SAS_TOKEN": read_only},
                         azure_store.reader_options, azure_store.endpoint),
                   env_extra={"AZURE_STORAGE_ACCOUNT_KEY": ""})
    assert refused.returncode != 0
    assert "HTTP 403" in refused.stdout + refused.stderr


@pytest.mark.timeout(180)
def test_streaming_load_to_s3_is_exactly_once_across_a_restart(s3_store, streaming_server):
    """`load --stream` keeps its state in the table on S3 too: a second run resumes after the
    committed blocks and adds nothing twice."""
    uri = s3_store.uri("stream")
    last = FIRST_BLOCK + BLOCKS - 1
    for run in range(2):
        done = load(streaming_server.url, uri, QUICKSTART, s3_store, "--stream", "--until-block",
                    str(last), "--commit-interval-ms", "100")
        assert done.returncode == 0, f"run {run}: {done.stdout}{done.stderr}"
    table = read_deltalake(s3_store, uri).to_pyarrow_table()
    blocks = table.column("block_num").to_pylist()
    assert sorted(blocks) == list(range(FIRST_BLOCK, FIRST_BLOCK + BLOCKS))
    assert "_amp_batch_id" in table.column_names


@pytest.mark.timeout(300)
def test_full_vacuums_with_zero_retention_during_loads_delete_nothing_a_commit_needs(
        store, quickstart_url):
    """Write leases on object stores: `table vacuum --full --retention-hours 0 --force` runs
    over and over while loader processes write many small files each; every load commits
    whole, every file the log names exists, and the last vacuum leaves no unreferenced file."""
    uri = store.uri("vacuum-during-loads")
    slices = [(FIRST_BLOCK + 20 * i, FIRST_BLOCK + 20 * i + 19) for i in range(5)]
    config = json.dumps({"max_rows_per_file": 2, "optimize_after_write": False})
    vacuum = ["table", "vacuum", uri, "--full", "--retention-hours", "0", "--force"]
    first = load(quickstart_url, uri, blocks_sql(FIRST_BLOCK - 1, FIRST_BLOCK - 1), store,
                 "--config", config)
    assert first.returncode == 0, first.stderr
    with concurrent.futures.ThreadPoolExecutor(len(slices) + 1) as pool:
        loads = [pool.submit(load, quickstart_url, uri, blocks_sql(*s), store, "--config", config)
                 for s in slices]
        vacuums = 0
        while not all(f.done() for f in loads):
            done = run_cli(vacuum, store)
            assert done.returncode == 0, done.stderr
            vacuums += 1
        for f in loads:
            assert f.result().returncode == 0, f.result().stderr
    assert vacuums >= 1
    table = read_deltalake(store, uri)
    blocks = table.to_pyarrow_table().column("block_num").to_pylist()
    assert sorted(blocks) == list(range(FIRST_BLOCK, FIRST_BLOCK + BLOCKS))
    # A final vacuum, then a listing: every file is one the log names.
    done = run_cli(vacuum, store)
    assert done.returncode == 0, done.stderr
    table = read_deltalake(store, uri)
    assert sorted(table.to_pyarrow_table().column("block_num").to_pylist()) == sorted(blocks)
    dry = run_cli([*vacuum, "--dry-run"], store)
    assert dry.returncode == 0, dry.stderr
    assert "would delete 0 files" in dry.stdout, dry.stdout
