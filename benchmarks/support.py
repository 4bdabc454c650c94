"""What the benchmarks share: a fresh migrated database, settings, and honest statistics."""

from __future__ import annotations

import os
import secrets
import statistics
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import msgspec

from energy_platform.core.db.migrations import migrate
from energy_platform.core.logs import configure_logging
from energy_platform.core.paths import migrations_dir
from energy_platform.core.settings import LogSettings, Settings
from energy_platform.seeding import create_empty_database, drop_database


@contextmanager
def bench_database() -> Iterator[Settings]:
    """Settings pointing at a new database migrated to sql/, dropped afterwards.

    Benchmarks log warnings only: per-request lines would cost time and bury the figures.
    """
    settings = Settings.from_env(os.environ)
    configure_logging(LogSettings(format="console", level="warning"))
    url = create_empty_database(settings.database.url)
    try:
        migrate(url, migrations_dir())
        yield msgspec.structs.replace(
            settings, database=msgspec.structs.replace(settings.database, url=url)
        )
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


def tag() -> str:
    return secrets.token_hex(4)
