"""The compact tier: bytes per raw 5 s point of realistic power data (a household's steps and
noise) at a meter's 1 W and 0.1 W resolutions beside the row tier's, measured in the same run,
and both tiers' bytes at rest once compaction has dropped the emptied chunks; compaction
points/s beside COPY of the same points into the row tier; and a week of one stream's raw points
read from the compact tier beside the same week read from the row tier.

    python -m benchmarks.compact_tier [--full] [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import asyncpg

from benchmarks.support import bench_database, figure, phase, report
from energy_platform import seeding
from energy_platform.core.settings import CompactionSettings
from energy_platform.engine.compaction import compact

STREAMS = 10  # full; quick: 5 (two data sets of three runs each)
STEP = 5
GOAL_BYTES = 4.0
GOAL_TENTHS_BYTES = 1.5  # issue 30: 0.1 W meter data, and both tiers at rest
SIZE = """
SELECT hypertable_size('cluster.raw_points')::float8, hypertable_size('cluster.point_days')::float8,
       (SELECT count(*) FROM cluster.raw_points)"""
WEEK = "SELECT ts, value FROM cluster.stream_points($1, $2, $3) ORDER BY ts"


async def sizes(conn: asyncpg.Connection) -> tuple[float, float, int]:
    """Bytes of the row tier and of the compact tier, and the points left in the row tier."""
    row = await conn.fetchrow(SIZE)
    assert row is not None  # an aggregate has a row
    return row[0], row[1], row[2]


def readings(seed: int, days: int) -> Iterator[float]:
    """A meter's 5 s power readings: a base load, a fridge cycling, appliances switched on for
    minutes at a time, and +-2 W of noise."""
    rng = random.Random(seed)
    base = rng.uniform(80, 200)
    appliance = 0.0
    for i in range(days * 86_400 // STEP):
        if rng.random() < 0.002:
            appliance = rng.choice([0.0, 0.0, 60.0, 800.0, 2000.0])
        fridge = 120.0 if (i // 150) % 3 == 0 else 0.0
        yield base + fridge + appliance + rng.uniform(-2, 2)


def household(
    seed: int, start: datetime, days: int, digits: int = 0, values: list[float] | None = None
) -> list[tuple[datetime, float]]:
    """:func:`readings` from ``start`` in whole watts (or to ``digits`` decimals); ``values``:
    those readings, made already."""
    made = readings(seed, days) if values is None else values
    return [
        (start + timedelta(seconds=STEP * i), float(round(v, digits))) for i, v in enumerate(made)
    ]


async def setup(conn: asyncpg.Connection, count: int) -> list[int]:
    owner = await seeding.add_user(conn, "bench")
    feed = await seeding.add_feed(conn, owner.id, "BE00000000000003")
    return await seeding.raw_streams(conn, feed, range(1, count + 1), 1, device=3)


async def one_run(
    url: str,
    streams: list[int],
    data: list[list[tuple[datetime, float]]],
    week: tuple[datetime, datetime],
) -> dict[str, float]:
    conn = await asyncpg.connect(url)
    pool = await asyncpg.create_pool(url, min_size=1, max_size=2)
    try:
        await conn.execute("TRUNCATE cluster.raw_points, cluster.point_days")
        records = [(s, t, v) for s, points in zip(streams, data, strict=True) for t, v in points]
        phase(f"COPY of {len(records):,} points into the row tier")
        started = time.perf_counter()
        await conn.copy_records_to_table(
            "raw_points",
            schema_name="cluster",
            records=records,
            columns=["stream_id", "ts", "value"],
        )
        copy = len(records) / (time.perf_counter() - started)
        await conn.execute("VACUUM ANALYZE cluster.raw_points")
        row_bytes, _, count = await sizes(conn)
        started = time.perf_counter()
        row_week = await conn.fetch(WEEK, streams[0], *week)
        row_read = time.perf_counter() - started
        phase("compaction")
        started = time.perf_counter()
        result = await compact(pool, CompactionSettings(after_days=7))
        compaction = result.points / (time.perf_counter() - started)
        assert result.points == count, (result.points, count)
        await conn.execute("VACUUM ANALYZE cluster.point_days, cluster.raw_points")
        rest_row_bytes, compact_bytes, left = await sizes(conn)
        assert left == 0
        started = time.perf_counter()
        compact_week = await conn.fetch(WEEK, streams[0], *week)
        compact_read = time.perf_counter() - started
        assert compact_week == row_week, "the compact tier must give back the same points"
        return {
            "row_bytes": row_bytes / count,
            "compact_bytes": compact_bytes / count,
            "rest_bytes": (rest_row_bytes + compact_bytes) / count,
            "copy": copy,
            "compaction": compaction,
            "row_read": row_read * 1000,
            "compact_read": compact_read * 1000,
            "points": count,
            "week": len(row_week),
        }
    finally:
        await pool.close()
        await conn.close()


def main(days: int, runs: int, count: int) -> None:
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    start = today - timedelta(days=days + 10)
    week = (start, start + timedelta(days=7))
    phase(f"{count} streams x {days} days of points, in watts and in tenths")
    made = [list(readings(n, days)) for n in range(count)]  # once for both resolutions
    watts = [household(n, start, days, values=v) for n, v in enumerate(made)]
    tenths = [household(n, start, days, 1, v) for n, v in enumerate(made)]
    with bench_database() as settings:
        url = settings.database.url

        async def measure() -> tuple[list[dict[str, float]], list[dict[str, float]]]:
            conn = await asyncpg.connect(url)
            try:
                streams = await setup(conn, count)
            finally:
                await conn.close()
            return (
                [await one_run(url, streams, watts, week) for _ in range(runs)],
                [await one_run(url, streams, tenths, week) for _ in range(runs)],
            )

        results, decimals = asyncio.run(measure())

    def col(name: str, of: list[dict[str, float]] = results) -> list[float]:
        return [r[name] for r in of]

    print(
        f"compact tier: {count} raw power streams x {days} days of 5 s points"
        f" ({results[0]['points']:,.0f} points), {runs} runs each in whole watts and in tenths"
        f" of a watt; a week is {results[0]['week']:,.0f} points of one stream, read in full"
        " with asyncpg through cluster.stream_points"
    )
    report(
        [
            figure(
                "storage: bytes per raw point (compact)",
                "B",
                col("compact_bytes"),
                "row tier B/point",
                col("row_bytes"),
                better="low",
                goal=f"<= {GOAL_BYTES:.0f} B",
                goal_met=statistics.median(col("compact_bytes")) <= GOAL_BYTES,
            ),
            figure(
                "storage: bytes per raw point (compact, 0.1 W)",
                "B",
                col("compact_bytes", decimals),
                "row tier B/point",
                col("row_bytes", decimals),
                better="low",
                goal=f"<= {GOAL_TENTHS_BYTES} B",
                goal_met=statistics.median(col("compact_bytes", decimals)) <= GOAL_TENTHS_BYTES,
            ),
            figure(
                "storage: bytes per raw point at rest (both tiers)",
                "B",
                col("rest_bytes", decimals),
                "row tier B/point",
                col("row_bytes", decimals),
                better="low",
                goal=f"<= {GOAL_TENTHS_BYTES} B",
                goal_met=statistics.median(col("rest_bytes", decimals)) <= GOAL_TENTHS_BYTES,
            ),
            figure(
                "compaction points/s", "points/s", col("compaction"), "COPY points/s", col("copy")
            ),
            figure(
                "compaction points/s (0.1 W)",
                "points/s",
                col("compaction", decimals),
                "COPY points/s",
                col("copy", decimals),
            ),
            figure(
                "a week of raw points from the compact tier",
                "ms",
                col("compact_read"),
                "row tier ms",
                col("row_read"),
            ),
            figure(
                "a week of raw points from the compact tier (0.1 W)",
                "ms",
                col("compact_read", decimals),
                "row tier ms",
                col("row_read", decimals),
            ),
        ]
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--full", action="store_true", help="10 streams x 28 days, not 5 x 7")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    main(28 if args.full else 7, args.runs, STREAMS if args.full else STREAMS // 2)
