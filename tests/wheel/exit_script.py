"""One run of test_wheel_anywhere.py's exit test: `python exit_script.py URL WORKDIR`.

Imports pyarrow (when installed), polars, deltalake and ampdelta, uses ampdelta a little
(a batch load through Client.sql().load(), a to_arrow(), a to_reader() left unread, a
DeltaLakeLoader.load_table of a Polars frame) and then ends as a script ends, through the
interpreter's normal exit: no os._exit. The test runs it 50 times and checks each exit
status and stderr.
"""

import os
import sys

url, workdir = sys.argv[1], sys.argv[2]

try:
    import pyarrow
except ImportError:
    pyarrow = None
import polars as pl
import deltalake  # noqa: F401  (loaded beside ampdelta, as in a user's script)

import ampdelta
from ampdelta.loaders import DeltaLakeLoader, LoadMode

SQL = ('SELECT block_num, hash FROM "acme/eth_mainnet".blocks '
       'WHERE block_num < 24000010')


def check(condition, message):
    if not condition:
        sys.exit(f"exit_script: {message}")


client = ampdelta.Client(url)
client.configure_connection("wheel_exit", "deltalake",
                            {"table_path": os.path.join(workdir, "loaded")})
results = list(client.sql(SQL).load("wheel_exit", "blocks"))
check(results and all(r.success for r in results), f"load failed: {results}")
check(sum(r.rows_loaded for r in results) == 10, f"load rows: {results}")

table = client.sql(SQL).to_arrow()
check(table.num_rows == 10, f"to_arrow rows: {table.num_rows}")
# A result left unread: its stream is released only as the interpreter exits.
pending = client.sql(SQL).to_reader()

with DeltaLakeLoader({"table_path": os.path.join(workdir, "frame")}) as loader:
    frame = pl.DataFrame({"block_num": [1, 2, 3], "label": ["a", "b", "c"]})
    result = loader.load_table(frame, "frame", mode=LoadMode.APPEND)
    check(result.success and result.rows_loaded == 3, f"load_table: {result}")

print("exit_script: done", "with pyarrow" if pyarrow is not None else "without pyarrow",
      flush=True)
