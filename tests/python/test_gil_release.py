"""The GIL is released while native work runs (docs/python.md): a pure-Python loop in the
main thread keeps counting while a load runs in another thread. A load holding the GIL
would stop the loop for the whole load (the loading thread runs no bytecode that could
hand the GIL over), so the loop would count next to nothing."""

from __future__ import annotations

import threading
import time

import pytest

import ampdelta
from conftest import QUICKSTART_DATASET, delta_config

SQL = f'SELECT * FROM "{QUICKSTART_DATASET}".transactions'
MIN_LOAD_S = 1.0
# Share of the loop's idle rate it must keep during the loads: the loads' own threads and the
# dev server compete for the 2 cores, but a held GIL leaves it ~0.
MIN_SHARE = 0.20


def count_for(seconds: float) -> int:
    n = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        n += 1
    return n


@pytest.mark.timeout(120)
def test_python_threads_run_while_a_load_runs(big_server, tmp_path):
    client = ampdelta.Client(big_server.url)
    baseline_rate = count_for(0.5) / 0.5
    done = threading.Event()
    errors, rows = [], []
    durations = []

    def load_repeatedly():
        try:
            started = time.perf_counter()
            index = 0
            while time.perf_counter() - started < MIN_LOAD_S:
                path = tmp_path / f"t{index}"
                client.configure_connection(f"g{index}", "deltalake",
                                            delta_config(path, optimize_after_write=False))
                t0 = time.perf_counter()
                result = client.sql(SQL).load(connection=f"g{index}", destination="t",
                                              read_all=True)
                durations.append(time.perf_counter() - t0)
                rows.append(result.rows_loaded)
                index += 1
        except BaseException as error:  # noqa: BLE001
            errors.append(error)
        finally:
            done.set()

    thread = threading.Thread(target=load_repeatedly)
    counted = 0
    started = time.perf_counter()
    thread.start()
    while not done.is_set():
        end = time.perf_counter() + 0.01
        while time.perf_counter() < end:
            counted += 1
    elapsed = time.perf_counter() - started
    thread.join(timeout=60)
    assert not errors, errors
    assert rows and all(r == 6000 * 17 for r in rows), rows
    # The loads themselves must be long enough for a held GIL to show.
    assert max(durations) >= 0.2, f"loads too short to tell: {durations}"
    share = counted / (baseline_rate * elapsed)
    print(f"GIL: main thread kept {share:.0%} of its idle rate during {len(durations)} loads")
    assert share >= MIN_SHARE, (
        f"the main thread counted {counted} in {elapsed:.2f} s of loads ({durations}), "
        f"{share:.1%} of its idle rate {baseline_rate:.0f}/s")
