#!/usr/bin/env python3
"""`make bench`: every benchmark in one run, a progress line per benchmark, then the report:
bench/results/<date>.json (every benchmark's own JSON), bench/results/<date>.md (the headline
tables) and the plots in docs/img (rows/s and peak RSS vs rows, commit latency vs versions,
checkpoint and snapshot-open time vs files).

Usage: bench/run_all.py [--only load,scale,...] [--quick]   (--quick: small sizes, for a smoke run;
its results are written under bench/results/quick-<date>.*)
"""
import argparse
import datetime
import json
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
RESULTS = BENCH / "results"
IMAGES = ROOT / "docs" / "img"
PYTHON = sys.executable
sys.path.insert(0, str(BENCH))
WHEEL_PYTHON = ROOT / "build/wheel-venv/bin/python"

# name -> (full arguments, quick arguments); each script prints its JSON report last.
BENCHMARKS = {
    "chain_stats": ("chain_stats.py --json", "chain_stats.py --json --blocks 4"),
    "load": ("load_bench.py --rows 2000000 --rounds 5",
             "load_bench.py --rows 100000 --rounds 1 --sdk-default-max-rows 20000"),
    "scale": ("scale_bench.py --sizes 1000000,4000000,16000000,32000000",
              "scale_bench.py --sizes 100000,200000 --python-max-rows 100000"),
    "write": ("write_bench.py --rows 2000000 --rounds 5", "write_bench.py --rows 100000 --rounds 1"),
    "stream": ("stream_bench.py --commits 100000 --compact --checkpoint-interval 100 "
               "--window 200 --blocks 100000",
               "stream_bench.py --commits 1000 --blocks 2000"),
    "checkpoint": ("checkpoint_bench.py --sizes 10000,100000,1000000 --rounds 3",
                   "checkpoint_bench.py --sizes 10000 --rounds 1"),
    "snapshot": ("snapshot_bench.py --commits 10000 --rounds 5",
                 "snapshot_bench.py --commits 200 --rounds 1"),
    "merge": ("merge_bench.py --rows 10000000 --fraction 0.01 --rounds 3",
              "merge_bench.py --rows 100000 --fraction 0.01 --rounds 1"),
    "parallel": ("parallel_bench.py --rows 1000000 --rounds 3 --sdk-rows 100000",
                 "parallel_bench.py --rows 100000 --rounds 1 --sdk-rows 20000"),
    "python": ("python_bench.py --rows 1000000 --rounds 5", "python_bench.py --rows 100000 --rounds 1"),
}


def last_json(text: str):
    """The last top-level JSON document in a script's stdout."""
    lines = text.splitlines()
    for start in range(len(lines) - 1, -1, -1):
        if lines[start].startswith("{"):
            try:
                return json.loads("\n".join(lines[start:]))
            except json.JSONDecodeError:
                continue
    raise ValueError("no JSON report in the output")


def run(name: str, arguments: str, index: int, total: int) -> dict:
    script, *rest = arguments.split()
    python = WHEEL_PYTHON if name == "python" else PYTHON
    cmd = [str(python), str(BENCH / script), *rest]
    shown = " ".join([str((BENCH / script).relative_to(ROOT)), *rest])  # as docs quote it
    print(f"[{index}/{total}] {name}: {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
    start = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        print(f"[{index}/{total}] {name}: FAILED ({done.returncode}) after {seconds:.0f}s",
              file=sys.stderr, flush=True)
        return {"failed": done.returncode, "command": shown}
    try:
        report = last_json(done.stdout)
    except ValueError as error:  # one benchmark's broken report does not lose the others'
        print(f"[{index}/{total}] {name}: FAILED ({error}) after {seconds:.0f}s",
              file=sys.stderr, flush=True)
        return {"failed": str(error), "command": shown}
    print(f"[{index}/{total}] {name}: done in {seconds:.0f}s", file=sys.stderr, flush=True)
    return {"command": shown, "seconds": round(seconds, 1), "report": report}


def load_table(report: dict) -> list[str]:
    names = {"ampdelta": "ampdelta", "a": "(a) SDK default (extrapolated)",
             "s": "(s) SDK read_all, a write per batch", "b": "(b) Python at its best",
             "c": "(c) pyarrow ParquetWriter", "drain": "source limit: bare DoGet",
             "encoder": "encoder limit: bench/parquet_limit"}
    lines = ["| peer | seconds | process wall | rows/s | CPU-s / M rows | server CPU-s | peak RSS MiB |",
             "|---|---|---|---|---|---|---|"]
    for peer, entry in report["peers"].items():
        lines.append(f"| {names.get(peer, peer)} | {entry['seconds_median']:.2f} | "
                     f"{entry['process_wall_seconds_median']:.2f} | {entry['rows_per_second']:,} | "
                     f"{entry['cpu_seconds_per_million_rows']:.2f} | {entry['server_cpu_seconds_median']:.2f} | "
                     f"{entry['peak_rss_mib_median']} |")
    lines.append("")
    lines.append("Ratios: " + ", ".join(f"{k} = {v}" for k, v in report["ratios"].items()))
    return lines


def markdown(results: dict, stamp: str) -> str:
    out = [f"# Benchmark results, {stamp}", "",
           "Generated by `make bench` (bench/run_all.py); medians. See docs/benchmarks.md for what "
           "each benchmark does.", ""]
    for name, result in results.items():
        out.append(f"## {name}")
        out.append("")
        if "failed" in result:
            failed = result["failed"]
            why = f"exit {failed}" if isinstance(failed, int) else failed
            out += [f"FAILED ({why}): `{result['command']}`", ""]
            continue
        out += [f"    {result['command']}   # {result['seconds']} s", ""]
        report = result["report"]
        if name == "chain_stats":
            import chain_stats
            for table, rows in report.items():
                out += [chain_stats.markdown(table, rows), ""]
        elif name == "load":
            out += load_table(report)
        elif name == "scale":
            out += ["| peer | rows | seconds | rows/s | CPU-s / M rows | peak RSS MiB |", "|---|---|---|---|---|---|"]
            out += [f"| {p['peer']} | {p['rows']:,} | {p['seconds']:.2f} | {p['rows_per_second']:,} | "
                    f"{p['cpu_seconds_per_million_rows']:.2f} | {p['peak_rss_mib']} |" for p in report["points"]]
        elif name == "merge":
            out += ["| engine | seconds | files removed | files added | peak RSS MiB |", "|---|---|---|---|---|"]
            out += [f"| {engine} | {e['seconds_median']:.2f} | {e['files_removed']} | {e['files_added']} | "
                    f"{e['peak_rss_mib_median']} |" for engine, e in report["engines"].items()]
            out += ["", f"{report['source_rows']:,} source rows ({report['where']}) into {report['rows']:,} rows "
                    f"in {report['target_files']} files"]
        elif name == "checkpoint":
            out += ["| files | checkpoint ampdelta s | deltalake s | ratio | open ampdelta s | deltalake s | ratio "
                    "| peak RSS (open) ampdelta / deltalake MiB |", "|---|---|---|---|---|---|---|---|"]
            for p in report["points"]:
                c, o = p["checkpoint"], p["open_from_ampdelta_checkpoint"]
                out.append(f"| {p['files']:,} | {c['ampdelta_seconds']:.3f} | {c['deltalake_seconds']:.3f} | "
                           f"{c['ampdelta_over_deltalake']:.2f} | {o['ampdelta_seconds']:.3f} | "
                           f"{o['deltalake_seconds']:.3f} | {o['ampdelta_over_deltalake']:.2f} | "
                           f"{o['ampdelta_peak_rss_mib']} / {o['deltalake_peak_rss_mib']} |")
        elif name == "python":
            out += [f"{report['rows']:,} rows, {report['rounds']} rounds", "",
                    "| peer | seconds | rows/s | peak RSS MiB |", "|---|---|---|---|"]
            out += [f"| {peer} | {e['seconds']:.3f} | {e['rows_per_s']:,.0f} | "
                    f"{e['rss_mib']:.0f} |" if "rss_mib" in e else
                    f"| {peer} | {e['seconds']:.3f} | {e['rows_per_s']:,.0f} | — |"
                    for peer, e in report["median"].items()]
            out += ["", "Ratios: " + ", ".join(f"{k} = {v}" for k, v in report["ratios"].items())]
        else:
            out += ["```json", json.dumps(report, indent=2)[:4000], "```"]
        out.append("")
    return "\n".join(out) + "\n"


def plots(results: dict) -> list[str]:
    """PNGs under docs/img; returns their paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    IMAGES.mkdir(parents=True, exist_ok=True)
    written = []

    def save(fig, name: str) -> str:
        fig.tight_layout()
        path = IMAGES / f"{name}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return str(path)

    scale = results.get("scale", {}).get("report")
    if scale:
        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
        for peer, label in (("ampdelta", "ampdelta"), ("b", "Python at its best")):
            points = [p for p in scale["points"] if p["peer"] == peer]
            if not points:
                continue
            rows = [p["rows"] / 1e6 for p in points]
            left.plot(rows, [p["rows_per_second"] / 1e3 for p in points], marker="o", label=label)
            right.plot(rows, [p["peak_rss_mib"] for p in points], marker="o", label=label)
        left.set_ylim(bottom=0)
        right.set_ylim(bottom=0)
        left.set(xscale="log", xlabel="rows loaded (millions)", ylabel="thousand rows/s",
                 title="Batch load throughput")
        right.set(xscale="log", xlabel="rows loaded (millions)", ylabel="peak RSS (MiB)",
                  title="Batch load peak memory")
        for axis in (left, right):
            axis.grid(True, alpha=0.3)
            axis.legend()
        written.append(save(fig, "load_scale"))
    stream = results.get("stream", {}).get("report")
    if stream and "latency" in stream:
        latency = stream["latency"]
        points = sorted((int(k.split("_")[1]), v["median_ms"]) for k, v in latency.items()
                        if k.startswith("version_"))
        fig, axis = plt.subplots(figsize=(5, 4))
        axis.plot([p[0] for p in points], [p[1] for p in points], marker="o")
        axis.set(xscale="log", xlabel="table version", ylabel="median commit latency (ms)",
                 title="Stream commit latency", ylim=(0, max(p[1] for p in points) * 1.5))
        axis.grid(True, alpha=0.3)
        written.append(save(fig, "commit_latency"))
    checkpoint = results.get("checkpoint", {}).get("report")
    if checkpoint:
        files = [p["files"] for p in checkpoint["points"]]
        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
        for engine in ("ampdelta", "deltalake"):
            left.plot(files, [p["checkpoint"][f"{engine}_seconds"] for p in checkpoint["points"]],
                      marker="o", label=engine)
            right.plot(files, [p["open_from_ampdelta_checkpoint"][f"{engine}_seconds"]
                               for p in checkpoint["points"]], marker="o", label=engine)
        left.set(xscale="log", yscale="log", xlabel="active files", ylabel="seconds",
                 title="Checkpoint write")
        right.set(xscale="log", yscale="log", xlabel="active files", ylabel="seconds",
                  title="Snapshot open (from a checkpoint)")
        for axis in (left, right):
            axis.grid(True, alpha=0.3)
            axis.legend()
        written.append(save(fig, "checkpoint_scale"))
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help=f"comma-separated subset of {','.join(BENCHMARKS)}")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--report-only", action="store_true",
                        help="rewrite the Markdown and plots from the day's JSON")
    args = parser.parse_args()
    names = [n.strip() for n in args.only.split(",") if n.strip()] or list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmarks {unknown}")
    stamp = datetime.date.today().isoformat()
    prefix = f"quick-{stamp}" if args.quick else stamp
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{prefix}.json"
    # A run of some benchmarks updates the day's results instead of replacing them.
    results = json.loads(path.read_text()) if path.exists() else {}
    if not args.report_only:
        for index, name in enumerate(names, 1):
            results[name] = run(name, BENCHMARKS[name][1 if args.quick else 0], index, len(names))
            path.write_text(json.dumps(results, indent=2) + "\n")  # kept if a later one dies
    (RESULTS / f"{prefix}.md").write_text(markdown(results, stamp))
    images = [] if args.quick else plots(results)
    print(f"wrote {RESULTS / prefix}.json, .md" + (f" and {', '.join(images)}" if images else ""),
          file=sys.stderr)
    return 1 if any("failed" in results.get(n, {}) for n in names) else 0


if __name__ == "__main__":
    sys.exit(main())
