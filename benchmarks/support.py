"""What the benchmarks share: a fresh migrated database, settings, and honest statistics."""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import msgspec
import psycopg
from psycopg import sql

from energy_platform.core.logs import configure_logging
from energy_platform.core.settings import EngineSettings, LogSettings, Settings
from energy_platform.engine.rollups import rollup_batch
from energy_platform.seeding import copy_database, drop_database, with_database
from tests.support.databases import create_session_database


@contextmanager
def bench_database() -> Iterator[Settings]:
    """Settings pointing at a new database migrated to sql/, dropped afterwards.

    Benchmarks log warnings only: per-request lines would cost time and bury the figures.
    """
    settings = Settings.from_env(os.environ)
    configure_logging(LogSettings(format="console", level="warning"))
    # A copy of the tests' template of the current sql/ (made once, kept on the server) costs a
    # fraction of a second where migrating costs several.
    url = create_session_database(settings.database.url)
    try:
        yield _on(settings, url)
    finally:
        drop_database(url)


TIME_UNITS = frozenset({"ms", "s"})


class Figure(msgspec.Struct):
    """One measured figure beside the limit it is compared against, from the same run."""

    name: str
    unit: str
    median: float
    low: float
    high: float
    limit_name: str
    limit: float
    better: str = "high"
    """"high" when a larger figure is better (throughput), "low" when smaller is (latency)."""
    goal: str = ""
    """The issue's goal for this figure, e.g. "ratio >= 0.8" or "<= 20 ms"; empty if none."""
    goal_met: bool | None = None

    @property
    def ratio(self) -> float:
        return self.median / self.limit if self.limit else 0.0


def figure(
    name: str,
    unit: str,
    runs: Sequence[float],
    limit_name: str,
    limits: Sequence[float],
    *,
    better: str | None = None,
    goal: str = "",
    goal_met: bool | None = None,
) -> Figure:
    """``better`` defaults to "low" for times (ms, s) and "high" for everything else."""
    return Figure(
        name,
        unit,
        statistics.median(runs),
        min(runs),
        max(runs),
        limit_name,
        statistics.median(limits),
        better or ("low" if unit in TIME_UNITS else "high"),
        goal,
        goal_met,
    )


def report(figures: Sequence[Figure]) -> None:
    """A table for people, then one JSON line per figure for `make bench`."""
    for f in figures:
        goal = f"  goal {f.goal}: {'met' if f.goal_met else 'NOT met'}" if f.goal else ""
        print(
            f"{f.name:<34} {f.median:>12,.1f} {f.unit:<10} (min {f.low:,.1f}, max {f.high:,.1f})"
            f"  {f.limit_name}: {f.limit:,.1f}  ratio {f.ratio:.2f} ({f.better} is better){goal}"
        )
    for f in figures:
        print(
            "RESULT "
            + msgspec.json.encode({**msgspec.structs.asdict(f), "ratio": f.ratio}).decode()
        )


def report_against(
    row: str,
    runs: Sequence[float],
    limit_name: str,
    limits: Sequence[float],
    goal: float,
    what: str,
) -> None:
    """Reports ``row``'s times (ms) of each run beside ``limits`` of the same runs (goal: at
    most ``goal`` times ``what``)."""
    report(
        [
            figure(
                row,
                "ms",
                runs,
                limit_name,
                limits,
                goal=f"<= {goal:g}x {what}",
                goal_met=statistics.median(runs) <= goal * statistics.median(limits),
            )
        ]
    )


SHARED = "EP_BENCH_SHARED"
"""A tag of this `make bench` run (set by run_all): data a benchmark seeds through
:func:`shared_database` is kept for the run's other benchmarks as the database
``ep_bench_<tag>_<kind>``, and run_all drops it at the end. Unset, each seeds its own."""
SEEDED_INFO = "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s"


@contextmanager
def shared_database(
    kind: str, seed: Callable[[str], msgspec.Struct]
) -> Iterator[tuple[Settings, object]]:
    """Settings pointing at a database of its own holding the rows ``seed(url)`` writes, and
    what it returned (as JSON built-ins). Within one `make bench` run they are seeded once: the
    first benchmark to ask seeds them and keeps a copy as the run's database of ``kind``, the
    next ones work on copies of that."""
    shared_tag = os.environ.get(SHARED)
    settings = Settings.from_env(os.environ)
    shared = with_database(settings.database.url, f"ep_bench_{shared_tag}_{kind}")
    name = urlsplit(shared).path.lstrip("/")
    row = None
    if shared_tag:
        with psycopg.connect(with_database(shared, "postgres"), autocommit=True) as conn:
            row = conn.execute(SEEDED_INFO, (name,)).fetchone()
    if row is None or row[0] is None:  # not there, or a seeding that failed half-way
        with bench_database() as seeding:
            began = time.perf_counter()
            info = msgspec.json.encode(seed(seeding.database.url)).decode()
            seeded = time.perf_counter() - began
            if shared_tag:
                drop_database(shared)
                began = time.perf_counter()
                copy_database(seeding.database.url, shared)
                copied = time.perf_counter() - began
                with psycopg.connect(with_database(shared, "postgres"), autocommit=True) as conn:
                    conn.execute(
                        sql.SQL("COMMENT ON DATABASE {} IS {}").format(
                            sql.Identifier(name), sql.Literal(info)
                        )
                    )
                print(
                    f"{kind}: seeded in {seeded:.1f} s; a copy kept for the run's other"
                    f" benchmarks, made in {copied:.1f} s",
                    flush=True,
                )
            yield seeding, msgspec.json.decode(info)
        return
    began = time.perf_counter()
    url = copy_database(shared)
    print(
        f"{kind}: a copy of the rows seeded earlier in this run, made in"
        f" {time.perf_counter() - began:.1f} s",
        flush=True,
    )
    try:
        yield _on(settings, url), msgspec.json.decode(row[0])
    finally:
        drop_database(url)


def _on(settings: Settings, url: str) -> Settings:
    return msgspec.structs.replace(
        settings, database=msgspec.structs.replace(settings.database, url=url)
    )


def drop_shared(server: str, shared_tag: str) -> None:
    """Drop the databases :func:`shared_database` kept under ``shared_tag``."""
    with psycopg.connect(with_database(server, "postgres"), autocommit=True) as conn:
        names = [
            name
            for (name,) in conn.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE %s",
                (f"ep_bench_{shared_tag}_%",),
            )
        ]
    for name in names:
        drop_database(with_database(server, name))


def tag() -> str:
    return secrets.token_hex(4)


BEGAN = time.monotonic()


def phase(what: str) -> None:
    """Print what the benchmark starts now, at the seconds since it started, at once: run_all
    reads a benchmark's output through a pipe, so unflushed lines die with one killed at its
    budget, and a flushed line says where it was."""
    print(f"[{time.monotonic() - BEGAN:6.1f} s] {what}", flush=True)


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def household_arguments(description: str) -> argparse.Namespace:
    """The command line of the benchmarks read from the household (bill, overview): runs,
    requests of each kind per run, and the other feeds beside it (``--full``: 1,000)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--requests", type=int, default=400, help="of each kind, per run")
    parser.add_argument(
        "--neighbours", type=int, default=200, help="other feeds, a reading a meter"
    )
    parser.add_argument("--full", action="store_true", help="1,000 other feeds")
    args = parser.parse_args()
    if args.full:
        args.neighbours = 1_000
    return args


async def roll_up_queued(conn: asyncpg.Connection, batch: int) -> None:
    """Recompute every queued rollup period as the engine does, ``batch`` streams a
    transaction, until none is left."""
    engine = EngineSettings()
    while (
        await rollup_batch(
            conn,
            batch=batch,
            delay=0,
            timeout_ms=engine.timeout_ms(),
            park_after=engine.park_after,
        )
    ).periods:
        pass
