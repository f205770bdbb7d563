"""Stream a query into a Delta table through the real Amp SDK with ampdelta registered, as a
user's script does: `amp.Client(url).sql(q).load(connection, destination, stream=True)`.

    sdk_stream.py URL TABLE_PATH DESTINATION CONNECTION QUERY [LOAD_KEYWORDS_JSON]

Prints one JSON object per result (success, rows, is_reorg, error, metadata's block_ranges,
rows_replaced). Ctrl-C (SIGINT) is the SDK's own stop: its iterator closes the Flight
stream, the loader commits what is complete, and the script exits 0.
"""
import json
import os
import sys

import ampdelta.sdk
from amp.client import Client
from amp.streaming.parallel import ParallelConfig


def main() -> int:
    url, table_path, destination, connection, query = sys.argv[1:6]
    keywords = json.loads(sys.argv[6]) if len(sys.argv) > 6 else {}
    if "parallel_config" in keywords:
        keywords["parallel_config"] = ParallelConfig(**keywords["parallel_config"])
    ampdelta.sdk.register()
    client = Client(url)
    client.configure_connection(connection, "ampdelta", {"table_path": table_path})
    for result in client.sql(query).load(connection, destination, stream=True, **keywords):
        metadata = result.metadata or {}
        print(json.dumps({
            "success": result.success, "rows": result.rows_loaded,
            "is_reorg": bool(getattr(result, "is_reorg", False)), "error": result.error,
            "block_ranges": str(metadata.get("block_ranges")),
            "rows_replaced": metadata.get("rows_replaced"),
        }), flush=True)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    # deltalake 1.6.6 can abort the interpreter at exit (DEVELOPERS.md): leave at once.
    os._exit(code)
