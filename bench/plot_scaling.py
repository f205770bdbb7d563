#!/usr/bin/env python3
"""Draw a bench/scale_cores.py report (or several, one line each) as the scaling curves
docs/benchmarks.md shows: load time against loader cores (ampdelta, the Python stack at its
best, the source's drain, the encoder's limit), peak RSS against loader cores, and
parallel-backfill throughput against workers beside linear scaling from one worker.

Usage: bench/plot_scaling.py REPORT.json [REPORT.json ...] --out-dir docs/img
                             [--label "2-core VM" ...]
"""
import argparse
import json
import pathlib

PEERS = {"ampdelta": "ampdelta load", "b": "Python at its best", "drain": "source (bare drain)",
         "encoder": "encoder limit (parquet_limit)"}


def load_points(report: dict, peer: str, key: str) -> tuple[list, list]:
    cores, values = [], []
    for count, bench in sorted(report["load"].items(), key=lambda item: int(item[0])):
        entry = bench["peers"].get(peer)
        if entry is not None:
            cores.append(int(count))
            values.append(entry[key])
    return cores, values


def shared_point(report: dict, peer: str, key: str):
    """(cores, value) of the run with the server on the loader's cores too, if any."""
    shared = report.get("shared")
    if not shared or peer not in shared["peers"]:
        return None
    cores = 0
    for part in shared["loader_cpus"].split(","):
        low, _, high = part.partition("-")
        cores += int(high or low) - int(low) + 1
    return cores, shared["peers"][peer][key]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", nargs="+")
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--label", action="append", default=[],
                        help="a name per report (default: its machine's core count)")
    args = parser.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    reports = [json.loads(pathlib.Path(p).read_text()) for p in args.reports]
    labels = args.label + [f"{r['machine']['cpus']} cores" for r in reports[len(args.label):]]
    out = pathlib.Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    styles = ["-", "--", ":"]

    def plot_peers(axis, peers, key):
        for report, label, style in zip(reports, labels, styles):
            for peer in peers:
                cores, values = load_points(report, peer, key)
                line = None
                if cores:
                    (line,) = axis.plot(cores, values, style, marker="o",
                                        label=f"{PEERS[peer]} ({label})")
                shared = shared_point(report, peer, key)
                if shared:
                    axis.plot(*shared, marker="s", fillstyle="none", linestyle="none",
                              color=line.get_color() if line else None,
                              label=f"{PEERS[peer]}, server on the same cores ({label})")

    def finish(fig, axis, xlabel: str, ylabel: str, title: str, name: str) -> None:
        axis.set_xlabel(xlabel)
        axis.set_ylabel(ylabel)
        axis.set_ylim(bottom=0)
        axis.legend(fontsize=7)
        axis.set_title(title)
        fig.tight_layout()
        fig.savefig(out / f"{name}.png", dpi=110)
        print(out / f"{name}.png")

    fig, axis = plt.subplots(figsize=(6, 4))
    plot_peers(axis, PEERS, "seconds_median")
    axis.set_xlim(left=0)
    finish(fig, axis, "loader cores", f"seconds for {reports[0]['rows']:,} rows (median)",
           "One load against loader cores", "load_vs_cores")

    fig, axis = plt.subplots(figsize=(6, 4))
    plot_peers(axis, ("ampdelta", "b"), "peak_rss_mib_median")
    axis.axhline(512, color="grey", linewidth=0.8)
    axis.text(0.02, 512, "512 MiB goal", fontsize=7, va="bottom",
              transform=axis.get_yaxis_transform())
    axis.set_xlim(left=0)
    finish(fig, axis, "loader cores", "peak RSS, MiB (median)",
           "Peak memory against loader cores", "rss_vs_cores")

    fig, axis = plt.subplots(figsize=(6, 4))
    for report, label, style in zip(reports, labels, styles):
        runs = (report.get("workers") or {}).get("runs") or {}
        if not runs:
            continue
        workers = sorted(int(w) for w in runs)
        rate = [runs[str(w)]["rows_per_second"] / 1e6 for w in workers]
        axis.plot(workers, rate, style, marker="o", label=f"--workers N ({label})")
        axis.plot(workers, [rate[0] * w / workers[0] for w in workers], style, color="grey",
                  linewidth=0.8, label=f"linear from {workers[0]} ({label})")
    finish(fig, axis, "workers", "million rows per second (median)",
           "Parallel backfill, final compaction included", "workers_vs_throughput")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
