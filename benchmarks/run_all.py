"""`make bench`: every benchmark, one table of figures beside their limits, JSON and a chart.

Each benchmark runs in its own process, within a time budget, and prints ``RESULT {json}``
lines (see support.report); this collects them into benchmarks/results/{quick,full}.json and
.png, keeps a dated copy of the JSON (benchmarks/results/<date>-<size>.json), and rewrites the
current figures of benchmarks/README.md between its markers. A benchmark that fails or runs
past its budget becomes a failed row; the others still run.

    python -m benchmarks.run_all [--full] [--strict]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import msgspec

RESULTS = Path(__file__).parent / "results"
README = Path(__file__).parent / "README.md"
BEGIN, END = "<!-- figures: written by benchmarks/run_all.py -->", "<!-- end of figures -->"
# Seconds a benchmark may take at quick size (the whole quick run stays under 12 minutes);
# at full size there is no budget.
QUICK_BUDGET = 150.0
# (module, what it measures, extra arguments at full size); each accepts --full.
BENCHMARKS = [
    ("benchmarks.data_api", "data API", []),
    ("benchmarks.year_view", "data API", []),
    ("benchmarks.compact_tier", "storage", []),
    # 5 feeds x 2 streams x 60 days compacted: about a minute at quick size (a point every 30 s).
    ("benchmarks.analyst_queries", "analysts", []),
    ("benchmarks.ingest_throughput", "ingestion", []),
    # Four Mosquitto persistence settings and RabbitMQ: throughput, the acknowledged points a
    # SIGKILL loses, 1 and 2 ingest processes, the broker's CPU, memory and start.
    ("benchmarks.broker_persistence", "ingestion", []),
    # The RabbitMQ ingest queue's type: quorum against lazy classic.
    ("benchmarks.rabbitmq_queues", "ingestion", []),
    # A hot standby of the private server: commit-to-visible lag, idle and under COPY load.
    ("benchmarks.replica_lag", "replica", []),
    # pgBackRest on a PostgreSQL cluster of its own: restore to a time beside a full backup.
    ("benchmarks.restore", "backup", []),
    # A full round of the engine takes about 20 minutes here: one counted round after a warm-up.
    ("benchmarks.engine_throughput", "engine", ["--runs", "1"]),
    # Real time: 10,000 streams every 5 s; a warm-up, then 2 (quick) or 8 (full) buckets.
    ("benchmarks.engine_freshness", "engine", []),
    # 1,000 customers x 10 homebases after a one-hour outage; then 10,000 customers x 1.
    ("benchmarks.forwarder_delivery", "forwarder", ["--backlog", "60"]),
    (
        "benchmarks.forwarder_delivery",
        "forwarder 10k",
        ["--customers", "10000", "--homebases", "1", "--backlog", "2"],
    ),
]
# At quick size these would repeat another entry.
FULL_ONLY = {"forwarder 10k"}


class Row(msgspec.Struct):
    benchmark: str
    name: str
    unit: str
    median: float
    low: float
    high: float
    limit_name: str
    limit: float
    ratio: float
    better: str = "high"
    """"high": a larger figure (and ratio) is better; "low": a smaller one is (latency, time)."""
    goal: str = ""
    goal_met: bool | None = None
    failed: str = ""
    """Why this benchmark gave no figures (its exit status or budget); empty for a figure."""


class Report(msgspec.Struct):
    date: str
    size: str
    commit: str
    machine: dict[str, str]
    seconds: float
    rows: list[Row]
    failed: list[str]
    durations: dict[str, float] = {}
    """Seconds each benchmark took, by module and label."""


def machine() -> dict[str, str]:
    memory = ""
    if Path("/proc/meminfo").exists():
        total_kb = int(Path("/proc/meminfo").read_text().split()[1])
        memory = f"{total_kb / 1024 / 1024:.0f} GiB"
    postgres = subprocess.run(
        ["/usr/lib/postgresql/15/bin/postgres", "--version"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return {
        "cores": str(os.cpu_count()),
        "memory": memory,
        "python": platform.python_version(),
        "postgres": postgres,
        "system": platform.platform(),
    }


def run(module: str, full: bool, extra: list[str]) -> tuple[list[dict[str, object]], str]:
    """The benchmark's rows, and why it failed ("" when it did not)."""
    command = [sys.executable, "-m", module, *(["--full", *extra] if full else [])]
    print(f"\n== {module}", flush=True)
    try:
        process = subprocess.run(
            command,
            capture_output=True,
            text=True,
            check=False,
            timeout=None if full else QUICK_BUDGET,
        )
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else e.stdout
        print((out or "")[-2000:])
        return [], f"over its budget of {QUICK_BUDGET:.0f} s"
    rows = []
    for line in process.stdout.splitlines():
        if line.startswith("RESULT "):
            rows.append(msgspec.json.decode(line.removeprefix("RESULT ")))
        elif not line.startswith("{"):
            print(line)
    if process.returncode != 0:
        print(process.stderr[-2000:], file=sys.stderr)
        return rows, f"exit status {process.returncode}"
    return rows, ""


def failed_row(label: str, module: str, why: str) -> Row:
    """A benchmark that gave no figure, as a row of the table."""
    nan = float("nan")
    return Row(
        label, module.removeprefix("benchmarks."), "", nan, nan, nan, "", nan, nan, failed=why
    )


def table(rows: list[Row]) -> str:
    lines = [
        f"{'benchmark':<10} {'figure':<44} {'median':>12} {'limit (same run)':>36} {'ratio':>6}"
        f"  {'better':<6}  goal"
    ]
    for r in rows:
        if r.failed:
            lines.append(f"{r.benchmark:<10} {r.name:<44} FAILED: {r.failed}")
            continue
        limit = f"{r.limit_name} {r.limit:,.1f}"
        goal = f"{r.goal}: {'met' if r.goal_met else 'NOT met'}" if r.goal else ""
        lines.append(
            f"{r.benchmark:<10} {r.name:<44} {r.median:>12,.1f} {limit:>36} {r.ratio:>6.2f}"
            f"  {r.better:<6}  {goal}"
        )
    return "\n".join(lines)


def markdown(report: Report) -> str:
    """The current figures as benchmarks/README.md shows them: one table, date and commit."""
    lines = [
        f"{report.size.capitalize()} sizes, {report.date}, commit `{report.commit}`, "
        f"{report.seconds / 60:.1f} minutes on {report.machine.get('cores', '?')} cores "
        f"({report.machine.get('postgres', '')}).",
        "",
        "| benchmark | figure | median | limit, same run | ratio | better | goal |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in report.rows:
        if r.failed:
            lines.append(f"| {r.benchmark} | `{r.name}` | **failed**: {r.failed} | | | | |")
            continue
        goal = f"{r.goal}: {'met' if r.goal_met else '**not met**'}" if r.goal else ""
        lines.append(
            f"| {r.benchmark} | {r.name} | {r.median:,.1f} {r.unit} | {r.limit_name} "
            f"{r.limit:,.1f} | {r.ratio:.2f} | {r.better} | {goal} |"
        )
    return "\n".join(lines)


def write_readme(report: Report, readme: Path = README) -> None:
    """Replace the figures between the README's markers with this report's."""
    text = readme.read_text()
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(f"{head}{BEGIN}\n{markdown(report)}\n{END}{tail}")


def commit() -> str:
    done = subprocess.run(
        ["git", "describe", "--always", "--dirty"], capture_output=True, text=True, check=False
    )
    return done.stdout.strip() or "unknown"


def chart(report: Report, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report.rows
    fig, ax = plt.subplots(figsize=(12, 0.55 * len(rows) + 2))
    # Throughput-like ratios are better high (blue), latency-like ones better low (orange).
    arrow = {"high": "higher is better", "low": "lower is better"}
    rows = [r for r in rows if not r.failed]
    labels = [f"{r.benchmark}: {r.name} ({arrow[r.better]})" for r in rows]
    colors = ["#3b7dd8" if r.better == "high" else "#e08a1e" for r in rows]
    ax.barh(labels, [r.ratio for r in rows], color=colors)
    for i, r in enumerate(rows):
        goal = f"; goal {r.goal}: {'met' if r.goal_met else 'NOT met'}" if r.goal else ""
        ax.text(
            r.ratio + 0.01,
            i,
            f"{r.ratio:.2f}  ({r.median:,.1f} vs {r.limit:,.1f} {r.unit}){goal}",
            va="center",
            fontsize=8,
        )
    ax.axvline(1.0, color="grey", linestyle="--", linewidth=1)
    ax.set_xlim(0, max([1.2, *[min(r.ratio, 8) + 3 for r in rows]]))
    ax.invert_yaxis()
    ax.set_xlabel(
        "figure / its limit measured in the same run (blue: higher is better; orange: lower is)"
    )
    ax.set_title(f"energy-platform benchmarks, {report.date} ({report.size} sizes)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(full: bool, strict: bool) -> None:
    started = time.monotonic()
    rows: list[Row] = []
    failed: list[str] = []
    durations: dict[str, float] = {}
    for module, label, extra in BENCHMARKS:
        if label in FULL_ONLY and not full:
            continue
        began = time.monotonic()
        results, why = run(module, full, extra)
        durations[f"{module} ({label})"] = round(time.monotonic() - began, 1)
        rows += [msgspec.convert({**r, "benchmark": label}, Row) for r in results]
        if why:
            failed.append(module)
            rows.append(failed_row(label, module, why))
    report = Report(
        date=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        size="full" if full else "quick",
        commit=commit(),
        machine=machine(),
        seconds=round(time.monotonic() - started, 1),
        rows=rows,
        failed=failed,
        durations=durations,
    )
    RESULTS.mkdir(exist_ok=True)
    json_path, png_path = RESULTS / f"{report.size}.json", RESULTS / f"{report.size}.png"
    encoded = msgspec.json.format(msgspec.json.encode(report))
    json_path.write_bytes(encoded)
    (RESULTS / f"{report.date[:10]}-{report.size}.json").write_bytes(encoded)
    chart(report, png_path)
    write_readme(report)
    print("\n" + table(rows))
    print(f"\n{report.size} sizes, {report.seconds:.0f} s; machine: {report.machine}")
    print("seconds per benchmark: " + ", ".join(f"{k} {v:.0f}" for k, v in durations.items()))
    print(f"written: {json_path}, {png_path}, {README}")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        if strict:
            sys.exit(1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--full", action="store_true", help="the sizes the issues name")
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 when a benchmark failed (CI gates)"
    )
    arguments = parser.parse_args()
    main(arguments.full, arguments.strict)
