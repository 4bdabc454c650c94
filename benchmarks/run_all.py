"""`make bench`: every benchmark, one table of figures beside their limits, JSON and a chart.

Each benchmark runs in its own process, within a time budget, and prints ``RESULT {json}``
lines (see support.report); this collects them into benchmarks/results/{quick,full}.json and
.png, keeps a dated copy of the JSON (benchmarks/results/<date>-<size>.json), and rewrites the
current figures of benchmarks/README.md between its markers. A benchmark that fails or runs
past its budget becomes a failed row; the others still run.

A budget guards against a hang; it is not a verdict on the machine's speed. The run starts by
timing a fixed workload (``calibrate``) and scales every budget by its seconds over
``REFERENCE_S``, its seconds on the machine the budgets were set on (never below 1). Data that
several benchmarks read is seeded once a run (support.shared_database).

    python -m benchmarks.run_all [--full] [--strict]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path

import msgspec

from benchmarks.support import SHARED, bench_database, drop_shared, tag
from energy_platform.core.settings import Settings

RESULTS = Path(__file__).parent / "results"
README = Path(__file__).parent / "README.md"
# The fixed workload of the calibration: the database's share of most benchmarks (generate,
# bucket, aggregate a million rows) and the Python's (a loop in the interpreter).
CALIBRATION_SQL = """
SELECT count(*) FROM (
  SELECT time_bucket('90 s', to_timestamp(i * 5)) AS bucket, avg(i % 977) AS value
    FROM generate_series(1, 1000000) i GROUP BY 1) buckets"""
CALIBRATION_LOOP = 3_000_000
REFERENCE_S = 0.9
"""The calibration's seconds (median of 3) on the machine the budgets were set on (README)."""
BEGIN, END = "<!-- figures: written by benchmarks/run_all.py -->", "<!-- end of figures -->"


class Benchmark(msgspec.Struct, frozen=True):
    """One entry of ``make bench``: a module run in its own process."""

    module: str
    label: str
    """What it measures: the first column of the table."""
    budget: float
    """Seconds it may take at quick size on the reference machine (scaled by the run's
    calibration); past it, it is a failed row (no budget at full size)."""
    quick: tuple[str, ...] = ()
    """Extra arguments at quick size."""
    full: tuple[str, ...] = ()
    """Extra arguments at full size (with --full)."""
    full_only: bool = False
    """At quick size it would repeat another entry, or it measures a one-off choice."""
    variant: str = ""
    """What tells this entry from another of the same module and label (e.g. "register")."""

    def command(self, full: bool) -> list[str]:
        extra = ["--full", *self.full] if full else list(self.quick)
        return [sys.executable, "-m", self.module, *extra]

    @property
    def key(self) -> str:
        """The entry's name in the seconds per benchmark: one per entry."""
        variant = f" {self.variant}" if self.variant else ""
        return f"{self.module}{variant} ({self.label})"


BENCHMARKS = [
    # Budgets of the data API's benchmarks: about 3x what each took in one run of the seven in
    # a row on 2026-11-27 at a load of 4 to 5 from other work (the load REFERENCE_S was measured
    # at; calibration 0.64 s), seconds in each comment. wrk runs of 3 s after 1 s: 45.9 s.
    Benchmark("benchmarks.data_api", "data API", 140, quick=("--runs", "1")),
    # Seeds the household the bill and the overview read too (its year of points and rollups):
    # 67.5 s, of which seeding 50.9 s.
    Benchmark("benchmarks.year_view", "data API", 200, quick=("--runs", "2")),
    # History in: 100,000-point JSON imports over HTTP beside COPY of as many rows; 3 a round,
    # after a warm-up of one: 18.7 s.
    Benchmark(
        "benchmarks.import_history", "data API", 60, quick=("--runs", "2", "--requests", "3")
    ),
    # A household's bill of a year beside its year view, among 200 (full: 1,000) other feeds;
    # one run of 300 of each on a copy of the year view's household: 28.5 s. Run without the
    # year view before it, it seeds its own (50.9 s more in that run).
    Benchmark("benchmarks.bill", "data API", 120, quick=("--runs", "1", "--requests", "300")),
    # Issue 50: a year's overview (GET /feeds/{id}/overview?period=year) beside its year view, on
    # the same household: one run of 300 of each, 38.8 s (and the seeding, run alone).
    Benchmark("benchmarks.overview", "data API", 150, quick=("--runs", "1", "--requests", "300")),
    # Issue 61: a year's what-if of 4 contracts beside the year's bill on the same household
    # (two runs of 50 of each), and one contract over 1,000 feeds' year (a point an hour each)
    # in one statement beside the floor statement (seeding them: most of its time).
    Benchmark("benchmarks.what_if", "data API", 600, quick=("--runs", "2", "--requests", "50")),
    # Issue 62: a 2-hour load planned over two days of quarter hours beside the data endpoint's
    # p99 at 10 connections, one server: wrk runs of 3 s after 1 s, as the data API's.
    Benchmark("benchmarks.plan", "data API", 60, quick=("--runs", "1")),
    # One stream's year of 5 s points (6.3 M) as CSV over HTTP beside COPY, and the API's RSS;
    # one run after a warm-up: 32.3 s.
    Benchmark("benchmarks.csv_export", "data API", 100, quick=("--runs", "1")),
    # Issue 40: 2,000 live clients on 200 feeds of one `serve api`, ingest at 2,000 points/s;
    # windows of 5 s, drains of 100,000 points: 107.4 s, of which pairing the 200 homebases 38 s.
    Benchmark("benchmarks.live_stream", "data API", 320, quick=("--runs", "2")),
    # Budgets (this benchmark to restore's) are about 3x each one's quick time alone on
    # 2026-11-27 at a load of 1.5 to 2.8 from other work, local-stack's start and stop included:
    # the compact tier 21.7 s (one run of each resolution).
    Benchmark("benchmarks.compact_tier", "storage", 65, quick=("--runs", "1")),
    # 5 feeds x 2 streams x 20 days compacted at quick size (full: 60), a point every 30 s: 16.7 s
    # (loading and compacting 9 s).
    Benchmark("benchmarks.analyst_queries", "analysts", 50, quick=("--runs", "2")),
    # One run of 1 and of 2 processes after a 400-message warm-up: 22.8 s.
    Benchmark("benchmarks.ingest_throughput", "ingestion", 70, quick=("--runs", "1")),
    # Mosquitto as shipped beside RabbitMQ at quick size; every persistence setting at full:
    # throughput, the acknowledged points a SIGKILL loses, 1 and 2 ingest processes, the
    # broker's CPU, memory and start. 86.5 s (RabbitMQ's start and two restarts about 21 s of
    # it); it hung in make bench before the ingest drain was fixed (53f7c28).
    Benchmark(
        "benchmarks.broker_persistence",
        "ingestion",
        250,
        quick=("--runs", "1", "--only", "interval 1 s", "rabbitmq"),
    ),
    # The RabbitMQ ingest queue's type (quorum against lazy classic): the figures behind a choice.
    Benchmark("benchmarks.rabbitmq_queues", "ingestion", 0, full_only=True),
    # A hot standby of the private server: commit-to-visible lag, idle and under COPY load; one
    # run at quick size: 14.9 s (its base backup copies every database on the server: 0.9 s
    # here, more while the run's shared databases are kept).
    Benchmark("benchmarks.replica_lag", "replica", 45, quick=("--runs", "1")),
    # pgBackRest on a PostgreSQL cluster of its own: restore to a time beside a full backup;
    # 14.5 s, 6.7 s of it making, migrating and backing up the cluster.
    Benchmark("benchmarks.restore", "backup", 45),
    # A full round of the engine takes about 20 minutes here: one counted round after a warm-up.
    # Quick: 500 streams (one batch of 50 feeds) x 6 h, one counted round and no warm-up (the
    # first round costs what later ones do: README): 28.1 s (power) and 26.3 s (registers) at
    # a load of 3.7 to 4.1 on 2026-11-27, where 1,000 streams after a warm-up took 60 s quiet.
    Benchmark(
        "benchmarks.engine_throughput",
        "engine",
        80,
        quick=("--runs", "1", "--streams", "500"),
        full=("--runs", "1"),
        variant="power",
    ),
    # The same with energy registers (medium 22) instead of power clamps.
    Benchmark(
        "benchmarks.engine_throughput",
        "engine",
        80,
        quick=("--runs", "1", "--streams", "500", "--medium", "register"),
        full=("--runs", "1", "--medium", "register"),
        variant="register",
    ),
    # Feeds on one area: a day's new prices against computing the day from scratch. Quick: 100
    # feeds (one batch of the engine), no warm-up: 30 s at a load of 3.4 to 3.6 on 2026-11-27,
    # where 1,000 feeds took 176 s quiet and 200 took 203 s (the rollups were quadratic in the
    # batch's feeds, since fixed: README). (A sample a minute instead of 30 s halved the points
    # but not the time: 78.7 and 85.2 s against 75.7 and 95.0 s at 1,000 feeds, so the interval
    # stays.)
    Benchmark("benchmarks.reprice", "engine", 90, quick=("--runs", "1", "--feeds", "100")),
    # Real time: 10,000 streams every 5 s; one bucket (quick) or eight (full) after a warm-up;
    # then the same with one poisoned feed among them (parked), on a database of its own. Two
    # 90 s buckets in real time, each after a warm-up, are most of its time: 246 s quiet at
    # 4a9b125, 245 s at a load of 2.5 to 3.0 on 2026-11-27 (README), so the budget stays.
    Benchmark("benchmarks.engine_freshness", "engine", 720),
    # 200 (full: 1,000) customers x 10 homebases after an outage; then 10,000 customers x 1.
    # Its live phase waits for the end of the minute it stores (up to 60 s, the product's
    # shortest interval): 31.1 s alone on 2026-11-27, 46 s in a make bench; 120 s holds the
    # longest wait and its setup with room to spare.
    Benchmark("benchmarks.forwarder_delivery", "forwarder", 120, full=("--backlog", "60")),
    Benchmark(
        "benchmarks.forwarder_delivery",
        "forwarder 10k",
        0,
        full=("--customers", "10000", "--homebases", "1", "--backlog", "2"),
        full_only=True,
    ),
]


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
    """Seconds each benchmark took, by ``Benchmark.key`` (module, variant and label)."""
    calibration: float = 0.0
    """Seconds of the fixed workload at the start of the run (REFERENCE_S on the reference)."""
    budget_scale: float = 1.0
    """What every budget was multiplied by in this run."""


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


def calibrate(url: str) -> float:
    """Seconds of the fixed workload on this machine now: the median of 3."""
    import psycopg

    times = []
    with psycopg.connect(url, autocommit=True) as conn:
        for _ in range(3):
            began = time.perf_counter()
            conn.execute(CALIBRATION_SQL).fetchone()
            sum(i * i for i in range(CALIBRATION_LOOP))
            times.append(time.perf_counter() - began)
    return sorted(times)[1]


def run(
    bench: Benchmark, full: bool, scale: float, env: dict[str, str]
) -> tuple[list[dict[str, object]], str]:
    """The benchmark's rows, and why it failed ("" when it did not)."""
    print(f"\n== {bench.key}", flush=True)
    budget = None if full else bench.budget * scale
    # A session of its own: past its budget the benchmark is killed with everything it started
    # (a `serve engine`, brokers, wrk), so nothing it left running slows the next one.
    process = subprocess.Popen(
        bench.command(full),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
    )
    try:
        stdout, stderr = process.communicate(timeout=budget)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, _ = process.communicate()
        print(stdout[-2000:])
        return [], f"over its budget of {budget:.0f} s ({bench.budget:.0f} s x {scale:.2f})"
    rows = []
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            rows.append(msgspec.json.decode(line.removeprefix("RESULT ")))
        elif not line.startswith("{"):
            print(line)
    if process.returncode != 0:
        print(stderr[-2000:], file=sys.stderr)
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
    server = Settings.from_env(os.environ).database.url
    with bench_database() as settings:
        seconds = calibrate(settings.database.url)
    scale = max(1.0, seconds / REFERENCE_S)
    print(
        f"calibration: {seconds:.2f} s against {REFERENCE_S:.2f} s on the reference machine;"
        f" budgets x {scale:.2f}; load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    shared_tag = tag()
    try:
        rows, failed, durations = run_all(full, scale, {**os.environ, SHARED: shared_tag})
    finally:
        drop_shared(server, shared_tag)
    report = Report(
        date=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        size="full" if full else "quick",
        commit=commit(),
        machine=machine(),
        seconds=round(time.monotonic() - started, 1),
        rows=rows,
        failed=failed,
        durations=durations,
        calibration=round(seconds, 3),
        budget_scale=round(scale, 2),
    )
    write(report, strict)


def run_all(
    full: bool, scale: float, env: dict[str, str]
) -> tuple[list[Row], list[str], dict[str, float]]:
    """Every benchmark of this size in turn: (rows, failed modules, seconds by benchmark)."""
    rows: list[Row] = []
    failed: list[str] = []
    durations: dict[str, float] = {}
    for bench in BENCHMARKS:
        if bench.full_only and not full:
            continue
        began = time.monotonic()
        results, why = run(bench, full, scale, env)
        durations[bench.key] = round(time.monotonic() - began, 1)
        rows += [msgspec.convert({**r, "benchmark": bench.label}, Row) for r in results]
        if why:
            failed.append(bench.module)
            rows.append(failed_row(bench.label, bench.module, why))
    return rows, failed, durations


def write(report: Report, strict: bool) -> None:
    """The report as JSON, chart, README figures and a table; exit 1 on a failure if strict."""
    RESULTS.mkdir(exist_ok=True)
    json_path, png_path = RESULTS / f"{report.size}.json", RESULTS / f"{report.size}.png"
    encoded = msgspec.json.format(msgspec.json.encode(report))
    json_path.write_bytes(encoded)
    stamp = report.date[:16].replace(" ", "-").replace(":", "")  # 2026-11-25-1349
    (RESULTS / f"{stamp}-{report.size}.json").write_bytes(encoded)
    chart(report, png_path)
    write_readme(report)
    print("\n" + table(report.rows))
    print(f"\n{report.size} sizes, {report.seconds:.0f} s; machine: {report.machine}")
    print(
        "seconds per benchmark: " + ", ".join(f"{k} {v:.0f}" for k, v in report.durations.items())
    )
    print(f"written: {json_path}, {png_path}, {README}")
    if report.failed:
        print(f"failed: {', '.join(report.failed)}", file=sys.stderr)
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
