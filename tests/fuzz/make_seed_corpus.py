#!/usr/bin/env python3
"""Write the seed corpora of tests/fuzz/corpus/<target>/ from ../shared/fixtures.

The committed corpus is this script's output (kept small: a few hundred KB in all); run it
again after changing it:  python3 tests/fuzz/make_seed_corpus.py
Standard library only. Seeds are named by the SHA-1 of their bytes, as libFuzzer names
the inputs it adds, so a re-run rewrites the same files.
"""

import hashlib
import json
import os
import pathlib
import shutil
import struct
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT.parent / "shared" / "fixtures"
CORPUS = ROOT / "tests" / "fuzz" / "corpus"

# Type indices of partition_path_fuzzer.cc's Types().
PARTITION_TYPES = {"byte": 0, "short": 1, "integer": 2, "long": 3, "float": 4, "double": 5,
                   "boolean": 6, "string": 7, "date": 8, "timestamp": 9, "timestamp_ntz": 10,
                   "decimal": 11, "binary": 13}

Z85 = ("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
       ".-:+=^!/*?&<>()[]{}@%$#")


def z85_decode(text):
    out = bytearray()
    for group in range(0, len(text) - len(text) % 5, 5):
        value = 0
        for char in text[group:group + 5]:
            value = value * 85 + Z85.index(char)
        out += struct.pack(">I", value & 0xFFFFFFFF)
    return bytes(out)


class Corpus:
    def __init__(self, target, max_bytes):
        self.dir = CORPUS / target
        self.max_bytes = max_bytes
        self.total = 0
        self.seen = set()
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir.mkdir(parents=True)

    def add(self, data):
        if isinstance(data, str):
            data = data.encode()
        digest = hashlib.sha1(data).hexdigest()
        if digest in self.seen or self.total + len(data) > self.max_bytes:
            return
        self.seen.add(digest)
        self.total += len(data)
        (self.dir / digest).write_bytes(data)


def fixture_tables():
    return sorted(p.parent for p in FIXTURES.rglob("_delta_log") if p.is_dir())


def commit_files():
    for table in fixture_tables():
        yield from sorted((table / "_delta_log").glob("*.json"))


def actions():
    for path in commit_files():
        for line in path.read_text(errors="replace").splitlines():
            try:
                yield path, json.loads(line)
            except ValueError:
                continue


def commit_json():
    corpus = Corpus("commit_json", 160_000)
    tables = fixture_tables()
    # The first and the last commit of every table, whole, when small.
    for table in tables:
        commits = sorted((table / "_delta_log").glob("*.json"))
        for path in commits[:1] + commits[-1:]:
            data = path.read_bytes()
            if len(data) <= 6000:
                corpus.add(data)
    # One line of each action kind and shape seen.
    shapes = set()
    for _, action in actions():
        for kind, body in action.items():
            shape = (kind, tuple(sorted(body)) if isinstance(body, dict) else ())
            if shape not in shapes:
                shapes.add(shape)
                corpus.add(json.dumps(action, separators=(",", ":")))
    return corpus


def schema_json():
    corpus = Corpus("schema_json", 60_000)
    for _, action in actions():
        schema = action.get("metaData", {}).get("schemaString")
        if isinstance(schema, str) and len(schema) <= 4000:
            corpus.add(schema)
    return corpus


def partition_path():
    corpus = Corpus("partition_path", 20_000)
    types = {}
    for _, action in actions():
        metadata = action.get("metaData")
        if metadata and isinstance(metadata.get("schemaString"), str):
            try:
                fields = json.loads(metadata["schemaString"]).get("fields", [])
            except ValueError:
                continue
            for field in fields:
                if isinstance(field.get("type"), str):
                    types[field["name"]] = field["type"].split("(")[0]
        add = action.get("add")
        if add:
            corpus.add(bytes([PARTITION_TYPES["string"]]) + add["path"].encode())
            for column, value in (add.get("partitionValues") or {}).items():
                if value is None:
                    continue
                index = PARTITION_TYPES.get(types.get(column, "string"), 7)
                corpus.add(bytes([index]) + value.encode())
    names = set()
    for table in fixture_tables():
        for path in (table / "_delta_log").iterdir():
            names.add(path.name)
    for name in sorted(names)[:400:7]:
        corpus.add(b"\x00" + name.encode())
        corpus.add(b"\x00_delta_log/" + name.encode())
    for text in ["2024-01-01T10:00:00.000000Z", "2021-09-08 11:11:11", "1970-01-01"]:
        corpus.add(bytes([PARTITION_TYPES["timestamp"]]) + text.encode())
        corpus.add(bytes([PARTITION_TYPES["date"]]) + text.encode())
    for text in ["-9223372036854775808", "NaN", "-Infinity", "1.7976931348623157e+308",
                 "123.45", "true", "__HIVE_DEFAULT_PARTITION__", "a%2Fb=c"]:
        for index in (3, 5, 6, 11, 7):
            corpus.add(bytes([index]) + text.encode())
    return corpus


# Checkpoints of each kind ampdelta reads: classic (python, Spark, Spark 0.2), multi-part,
# V2 with sidecars, partitioned, with deletion vectors, column mapping, domain metadata,
# stats_parsed only.
CHECKPOINTS = [
    "delta-rs/simple_table_with_checkpoint/_delta_log/00000000000000000010.checkpoint.parquet",
    "delta-rs/python-0.25.5-checkpoint/_delta_log/00000000000000000000.checkpoint.parquet",
    "delta-rs/delta-0.2.0/_delta_log/00000000000000000003.checkpoint.parquet",
    "delta-golden/multi-part-checkpoint/_delta_log/"
    "00000000000000000001.checkpoint.0000000002.0000000002.parquet",
    "delta-golden/v2-checkpoint-parquet/_delta_log/"
    "00000000000000000002.checkpoint.e8fa2696-9728-4e9c-b285-634743fdd4fb.parquet",
    "delta-golden/v2-checkpoint-parquet/_delta_log/_sidecars/00000000000000000002.checkpoint."
    "0000000001.0000000002.055454d8-329c-4e0e-864d-7f867075af33.parquet",
    "delta-rs/checkpoint_with_partitions/_delta_log/00000000000000000002.checkpoint.parquet",
    "delta-golden/dv-partitioned-with-checkpoint/_delta_log/"
    "00000000000000000010.checkpoint.parquet",
    "delta-golden/dv-with-columnmapping/_delta_log/00000000000000000010.checkpoint.parquet",
    "delta-rs/delta-1.2.1-only-struct-stats/_delta_log/00000000000000000010.checkpoint.parquet",
    "delta-rs/table-with-domain-metadata/_delta_log/00000000000000000108.checkpoint.parquet",
]


def checkpoint_parquet():
    corpus = Corpus("checkpoint_parquet", 250_000)
    for relative in CHECKPOINTS:
        path = FIXTURES / relative
        if path.is_file():
            corpus.add(path.read_bytes())
    return corpus


def deletion_vector():
    corpus = Corpus("deletion_vector", 40_000)
    files = {}
    for table in fixture_tables():
        for path in table.rglob("deletion_vector_*.bin"):
            files[path.name] = path
    kinds = {"i": 0, "u": 1, "p": 2}
    for _, action in actions():
        for body in (action.get("add"), action.get("remove")):
            dv = (body or {}).get("deletionVector")
            if not dv or dv.get("storageType") not in kinds:
                continue
            header = bytes([kinds[dv["storageType"]]]) + struct.pack(
                "<iI", dv.get("offset") or 1, dv["cardinality"] & 0xFFFFFFFF)
            if dv["storageType"] == "i":
                bitmap = z85_decode(dv["pathOrInlineDv"])[:dv["sizeInBytes"]]
                corpus.add(header + bitmap)
                corpus.add(bitmap)
                corpus.add(dv["pathOrInlineDv"])
                continue
            encoded = dv["pathOrInlineDv"]
            uuid = z85_decode(encoded[-20:]).hex()
            name = "deletion_vector_%s-%s-%s-%s-%s.bin" % (
                uuid[:8], uuid[8:12], uuid[12:16], uuid[16:20], uuid[20:])
            if name in files:
                data = files[name].read_bytes()
                if len(data) <= 4000:
                    corpus.add(header + data)
                    offset = dv.get("offset") or 1
                    corpus.add(data[offset + 4:offset + 4 + dv["sizeInBytes"]])
            corpus.add(encoded)
    return corpus


def batch_metadata():
    corpus = Corpus("batch_metadata", 20_000)
    hash_a = "0x" + "a" * 64
    hash_b = "0x" + "b" * 64
    ranges = [{"network": "mainnet", "numbers": {"start": 24000000, "end": 24000009},
               "hash": hash_a, "prev_hash": hash_b, "timestamp": 1765584479}]
    for document in [
        {"ranges": ranges, "ranges_complete": False},
        {"ranges": ranges, "ranges_complete": True},
        {"ranges": [], "ranges_complete": True},
        {"ranges": [{"network": "anvil", "start": 0, "end": 2, "hash": hash_a,
                     "prev_hash": hash_b}], "extra": {"k": [1, None]}},
        {"ranges": ranges + [{"network": "base", "numbers": {"start": 1, "end": 1}}]},
        {"mainnet": {"number": 24000049, "hash": hash_a}},
        {"mainnet": {"number": 0, "hash": ""}, "base": {"number": 18446744073709551615,
                                                        "hash": hash_b}},
    ]:
        corpus.add(json.dumps(document, separators=(",", ":")))
    # Streams, one app_metadata a line (batch_metadata_fuzzer.cc's Interpret): microbatches
    # with their completion markers, then a reorg; the second starts from a cursor.
    def batch(start, end, complete, fork=0):
        return json.dumps({"ranges": [{"network": "mainnet",
                                       "numbers": {"start": start, "end": end},
                                       "hash": "0x%064x" % (end + fork),
                                       "prev_hash": "0x%064x" % (start - 1)}],
                           "ranges_complete": complete}, separators=(",", ":"))
    stream = [batch(s, s + 9, c) for s in (0, 10, 20) for c in (False, True)]
    stream += [batch(15, 24, False, fork=1), batch(15, 24, True, fork=1)]
    corpus.add("\n".join(stream))
    cursor = json.dumps({"mainnet": {"number": 9, "hash": "0x%064x" % 9}})
    corpus.add("\n".join([cursor] + stream[2:]))
    corpus.add(json.dumps([{"network": "mainnet", "start": 1, "end": 2, "hash": hash_a,
                            "prev_hash": hash_b, "timestamp": 5}]))
    corpus.add(b'{"table":"blocks","filename":"015000000-cce9bf788517474d.parquet",'
               b'"created_at":{"secs":1770149591,"nanos":747913636},"ranges":[{"numbers":'
               b'{"start":15000000,"end":15000000},"network":"mainnet","hash":"0x9a71a95be3'
               b'fe957457b11817587e5af4c7e24836d5b383c430ff25b9286a457f","prev_hash":"0x93a'
               b'8a23a2f5296db7251ab4c5e9b10bdc5a6c9c4ed56fb230dc729d3dc03a138"}]}')
    for sql in ["SELECT * FROM t SETTINGS stream = true",
                "SELECT * FROM (SELECT 1 SETTINGS stream=true) settings stream = false;",
                "SELECT '-- settings' FROM t -- SETTINGS stream = true"]:
        corpus.add(sql)
    return corpus


def devserver_sql():
    corpus = Corpus("devserver_sql", 20_000)
    queries = [
        'SELECT block_num, timestamp, hash, gas_used FROM "acme/eth_mainnet".blocks',
        'SELECT * FROM "acme/eth_mainnet".logs WHERE block_num BETWEEN 24000001 AND 24000005 '
        "LIMIT 10",
        'SELECT MIN(block_num) AS lo, MAX(block_num), COUNT(*) FROM "acme/eth_mainnet".blocks',
        "SELECT b.block_num FROM (SELECT block_num FROM eth_mainnet.blocks WHERE "
        "block_num >= 24000000) AS b WHERE b.block_num < 24000050",
        'SELECT tx_hash, "from", "to" FROM "acme/eth_mainnet".transactions WHERE '
        "hash = x'00ff' AND gas_used > 21000 SETTINGS stream = true",
        "SELECT * FROM eth_mainnet.blocks WHERE hash = '0x" + "ab" * 32 + "';",
        "SELECT * FROM eth_mainnet.blocks WHERE timestamp >= '2025-12-13T00:20:00Z' "
        "AND block_num != -1 AND gas_used <= 1.5",
        "SELECT * FROM eth_mainnet.blocks WHERE (block_num = 1 AND (gas_used <> 2))",
        "select count(*) from eth_mainnet.blocks where miner = 'x' limit 0",
        "SELECT _block_num, COUNT(*) AS n, MIN(tx_index), MAX(hash) FROM eth_mainnet.transactions "
        "GROUP BY _block_num, block_hash LIMIT 3 SETTINGS stream = true",
        'SELECT DISTINCT ON (_block_num, "from") * FROM eth_mainnet.transactions',
        "SELECT DISTINCT miner, gas_used FROM eth_mainnet.blocks WHERE gas_used > 0",
        "SELECT a FROM t ORDER BY a",
        "SELECT * FROM t JOIN u ON t.a = u.a",
        "SELECT a + 1 FROM t",
        # Amp's EVM functions (docs/evm-functions.md).
        "SELECT block_num, evm_decode_log(topic1, topic2, topic3, data, 'Swap(address indexed "
        "sender, address indexed recipient, int256 amount0, int256 amount1, uint160 "
        "sqrtPriceX96, uint128 liquidity, int24 tick)') AS swap FROM eth_mainnet.logs WHERE "
        "topic0 = evm_topic('Swap(address,address,int256,int256,uint160,uint128,int24)')",
        "SELECT shift_units(t['value'], -18) AS v, evm_decode_hex(address) AS a FROM (SELECT "
        "address, evm_decode(topic1, topic2, topic3, data, 'Approval(address indexed o, "
        "address indexed s, uint256 value)') AS t FROM eth_mainnet.logs)",
        "SELECT evm_decode_params(input, 'function transfer(address to, uint256 v)') AS c, "
        "evm_decode_type(evm_encode_type(gas_used, 'uint64[]'), '(uint64,bytes)') AS d, "
        "evm_encode_params(nonce, 'f(uint64 n)') AS e, evm_encode_hex('0x" + "11" * 20 +
        "') AS h FROM eth_mainnet.transactions",
    ]
    for sql in queries:
        corpus.add(sql)
        url = b"type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery"
        inner = b"\x0a" + bytes([len(sql)]) + sql.encode() if len(sql) < 128 else None
        if inner:
            corpus.add(b"\x0a" + bytes([len(url)]) + url + b"\x12" + bytes([len(inner)]) + inner)
    for ticket in [{"query": queries[0], "stream": False, "cursor": None},
                   {"query": queries[1], "stream": True,
                    "cursor": {"mainnet": {"number": 24000049, "hash": "0x" + "a" * 64}}}]:
        corpus.add(json.dumps(ticket, separators=(",", ":")))
    return corpus


def main():
    if not FIXTURES.is_dir():
        sys.exit(f"fixtures not found at {FIXTURES}")
    total = 0
    for make in (commit_json, checkpoint_parquet, schema_json, partition_path,
                 batch_metadata, devserver_sql, deletion_vector):
        corpus = make()
        count = len(os.listdir(corpus.dir))
        total += corpus.total
        print(f"{corpus.dir.name:20} {count:4} seeds {corpus.total:8} bytes")
    print(f"{'total':20}      {total:8} bytes")


if __name__ == "__main__":
    main()
