"""Analysts' queries, as Grafana's PostgreSQL data source writes them, over compacted history:
5 feeds x 2 raw power streams x 60 days (quick: 20) of points, everything older than 2 days
compacted by the project's own compaction. Each query through the range functions
(cluster.raw_readings(from, to), cluster.readings(from, to)) beside the same answer read through
cluster.stream_points, stream by stream, in the same run; the answers are checked equal.

    python -m benchmarks.analyst_queries [--full] [--runs N]

Quick: 20 days compacted, a point every 30 s (about 0.65 M points), no warm-up run (each figure is
the median of 15 executions: a cold first one does not move it); full: 60 days, a point every
5 s (10.9 M), as in issue 30.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from benchmarks.support import bench_database, figure, phase, report
from energy_platform import seeding
from energy_platform.core.settings import CompactionSettings
from energy_platform.engine.compaction import compact

FEEDS = 5
STREAMS_PER_FEED = 2
RECENT_DAYS = 2  # the row tier: compaction takes whole UTC days older than this
GOAL_RATIO = 2.0
REPEAT = 15  # executions of each statement per run; the median counts (the machine is noisy)

# A household's power at the meter's 0.1 W: a base load, a fridge cycling, noise; server-side,
# so that making 10 M points costs no Python.
POINTS = """
INSERT INTO cluster.raw_points (stream_id, ts, value)
SELECT s, $2::timestamptz + i * make_interval(secs => $3),
       round((100 + s % 7 * 10 + CASE WHEN i / 150 % 3 = 0 THEN 120 ELSE 0 END
              + random() * 4 - 2)::numeric, 1)::float8
  FROM unnest($1::bigint[]) s, generate_series(0, $4 - 1) i"""

# The queries: Grafana puts $__timeFrom() and $__timeTo() in as instants; both inclusive.
FEED_HOURS = """
SELECT time_bucket('1 hour', ts) AS time, avg(value) AS value
  FROM cluster.raw_readings($1, $2)
 WHERE feed_id = $3
 GROUP BY 1 ORDER BY 1"""
FEED_HOURS_BY_STREAM = """
SELECT time_bucket('1 hour', p.ts) AS time, avg(p.value) AS value
  FROM cluster.streams s
 CROSS JOIN LATERAL cluster.stream_points(
           s.id, $1::timestamptz, $2::timestamptz + interval '1 microsecond') p
 WHERE s.feed_id = $3 AND s.type = 'raw'
 GROUP BY 1 ORDER BY 1"""
ALL_FEEDS_MAX = """
SELECT stream_id, max(value) AS value
  FROM cluster.readings($1, $2)
 GROUP BY stream_id ORDER BY 1"""
ALL_FEEDS_MAX_BY_STREAM = """
SELECT s.id AS stream_id, max(p.value) AS value
  FROM cluster.streams s
 CROSS JOIN LATERAL cluster.stream_points(
           s.id, $1::timestamptz, $2::timestamptz + interval '1 microsecond') p
 GROUP BY s.id ORDER BY 1"""


async def load(url: str, days: int, step: int) -> tuple[list[int], int]:
    """The feeds, their streams and ``days`` + RECENT_DAYS of points up to now; compacted."""
    conn = await asyncpg.connect(url)
    try:
        now = datetime.now(UTC).replace(microsecond=0)
        owner = await seeding.add_user(conn, "analyst")
        feeds, streams = [], []
        for n in range(1, FEEDS + 1):
            feed = await seeding.add_feed(
                conn,
                owner.id,
                f"AA0000000000000{n}",
                title=f"Home {n}",
                start=now - timedelta(days=365),
                end=now + timedelta(days=365),
            )
            feeds.append(feed)
            streams += await seeding.raw_streams(
                conn, feed, range(1, STREAMS_PER_FEED + 1), 1, device=3
            )
        start = now.replace(hour=0, minute=0, second=0) - timedelta(days=days + RECENT_DAYS)
        count = int((now - start).total_seconds()) // step
        phase(f"{len(streams) * count:,} points")
        await conn.execute(POINTS, streams, start, step, count)
        phase("compaction")
        pool = await asyncpg.create_pool(url, min_size=1, max_size=2)
        try:
            result = await compact(pool, CompactionSettings(after_days=RECENT_DAYS))
        finally:
            await pool.close()
        assert result.days == len(streams) * days, result
        phase("VACUUM ANALYZE")
        await conn.execute("VACUUM ANALYZE")
        return feeds, len(streams) * count
    finally:
        await conn.close()


async def timed(conn: asyncpg.Connection, query: str, *args: Any) -> tuple[float, list[Any]]:
    """The median of REPEAT executions of a prepared statement, in ms, and its answer."""
    statement = await conn.prepare(query)
    times = []
    answer: list[Any] = []
    for _ in range(REPEAT):
        started = time.perf_counter()
        answer = await statement.fetch(*args)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), [tuple(r) for r in answer]


def same(a: Sequence[tuple[Any, ...]], b: Sequence[tuple[Any, ...]]) -> bool:
    """Equal answers; averages may differ in the last bits by the order of summing."""
    return len(a) == len(b) and all(
        x[0] == y[0] and abs(x[1] - y[1]) <= 1e-9 * max(1.0, abs(y[1]))
        for x, y in zip(a, b, strict=True)
    )


async def one_run(url: str, feeds: list[int]) -> dict[str, float]:
    conn = await asyncpg.connect(url)
    try:
        now = datetime.now(UTC)
        day, week, hour = now - timedelta(days=1), now - timedelta(days=7), now - timedelta(hours=1)
        figures: dict[str, float] = {}
        for name, (query, by_stream, args) in {
            "feed_day": (FEED_HOURS, FEED_HOURS_BY_STREAM, (day, now, feeds[0])),
            "feed_week": (FEED_HOURS, FEED_HOURS_BY_STREAM, (week, now, feeds[0])),
            "all_hour": (ALL_FEEDS_MAX, ALL_FEEDS_MAX_BY_STREAM, (hour, now)),
        }.items():
            figures[name], answer = await timed(conn, query, *args)
            figures[f"{name}_streams"], expected = await timed(conn, by_stream, *args)
            assert answer, f"{name}: no answer"
            assert same(answer, expected), f"{name}: the answers differ"
        return figures
    finally:
        await conn.close()


def main(full: bool, runs: int) -> None:
    days, step = (60, 5) if full else (20, 30)
    with bench_database() as settings:
        url = settings.database.url

        async def measure() -> tuple[int, list[dict[str, float]]]:
            started = time.perf_counter()
            feeds, points = await load(url, days, step)
            print(
                f"loaded and compacted {points:,} points in {time.perf_counter() - started:.0f} s"
            )
            phase("queries")
            if full:
                await one_run(url, feeds)  # warm-up
            return points, [await one_run(url, feeds) for _ in range(runs)]

        points, results = asyncio.run(measure())

    def col(name: str) -> list[float]:
        return [r[name] for r in results]

    def goal_met(name: str) -> bool:
        return statistics.median(col(name)) <= GOAL_RATIO * statistics.median(
            col(f"{name}_streams")
        )

    print(
        f"analyst queries: {FEEDS} feeds x {STREAMS_PER_FEED} raw streams x {days} days compacted"
        f" + {RECENT_DAYS} days of rows, a point every {step} s ({points:,} points), {runs} runs"
        f" of {REPEAT} executions each (median)"
    )
    goal = f"<= {GOAL_RATIO:.0f}x stream_points"
    report(
        [
            figure(
                "analyst query: 1 feed, last 24 h per hour",
                "ms",
                col("feed_day"),
                "stream_points ms",
                col("feed_day_streams"),
                goal=goal,
                goal_met=goal_met("feed_day"),
            ),
            figure(
                "analyst query: all feeds, last hour",
                "ms",
                col("all_hour"),
                "stream_points ms",
                col("all_hour_streams"),
                goal=goal,
                goal_met=goal_met("all_hour"),
            ),
            figure(
                "analyst query: 1 feed, last 7 days per hour",
                "ms",
                col("feed_week"),
                "stream_points ms",
                col("feed_week_streams"),
            ),
        ]
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--full", action="store_true", help="60 days of a point every 5 s, not 20 of every 30 s"
    )
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    main(args.full, args.runs)
