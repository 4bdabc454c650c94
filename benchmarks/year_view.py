"""The Year view: 10 processed streams with a year of 90 s points each, asked per local day
(`resolution=day`) as 10 parallel requests, beside the same statements straight from asyncpg.
Also how long the engine takes to build those streams' hourly rollups from nothing, and the
same year view with one local day of every stream queued for the engine (cluster.rollup_work):
real-time rollups answer that day from its 960 points, the rest from the rollups.

    python -m benchmarks.year_view [--full] [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import statistics
import time

import asyncpg
import httpx
import psycopg

from benchmarks.data_api import TOKEN, start_servers, stop_servers, timed_queries, timed_requests
from benchmarks.support import bench_database, figure, report
from energy_platform import seeding
from energy_platform.api import queries
from energy_platform.api.feeds import BUCKET_REACH
from energy_platform.core.settings import HttpSettings
from energy_platform.core.tokens import token_digest
from energy_platform.engine.rollups import rollup_batch
from tests.support.services import free_port

# A year of local days in Europe/Prague: 2025-01-01T00:00+01:00 to 2026-01-01T00:00+01:00.
YEAR_FROM = 1_735_686_000
YEAR_TO = 1_767_222_000
BUCKETS = (YEAR_TO - YEAR_FROM) // 90  # 350,400 points per stream
STREAMS = 10
GOAL_MS = 50
QUEUED_GOAL = 2.0  # x the year view with nothing queued, in the same run
# The local day 2025-06-15 in Prague (CEST, +02:00): its points are recomputed at read time.
QUEUED_DAY = ("2025-06-14T22:00:00Z", "2025-06-15T22:00:00Z")
QUEUE_DAY = """
INSERT INTO cluster.rollup_work (stream_id, span)
SELECT s, tstzrange(%s, %s) FROM unnest(%s::bigint[]) s"""


async def seed(url: str) -> tuple[int, list[int]]:
    """A Prague feed with 10 processed energy streams, a year of 90 s points each."""
    conn = await asyncpg.connect(url)
    try:
        owner = await seeding.add_user(conn, "bench", token=TOKEN)
        feed = await seeding.add_feed(conn, owner.id, "BE00000000000002")
        streams = [
            await seeding.processed_stream(conn, feed, i, title="Electricity")
            for i in range(1, STREAMS + 1)
        ]
        await year_of_points(conn, streams)
        await conn.execute("ANALYZE")
    finally:
        await conn.close()
    return feed, streams


def year_paths(feed: int, streams: list[int]) -> list[str]:
    """The year view's requests: each stream's 365 local days, ``resolution=day``."""
    year = f"resolution=day&time_from={YEAR_FROM}&time_to={YEAR_TO - 1}&limit=366"
    return [f"/feeds/{feed}/streams/{s}/data?{year}" for s in streams]


async def year_of_points(conn: asyncpg.Connection, streams: list[int]) -> None:
    """A year of 90 s points (0 to 50 Wh each) on each of ``streams``, their whole span queued
    for the engine's rollups (:func:`build_rollups` builds them)."""
    await conn.execute(
        "INSERT INTO cluster.processed_points (stream_id, ts, value)"
        " SELECT s, to_timestamp($1::bigint + 90 * i), round((random() * 50)::numeric, 3)"
        "   FROM unnest($2::bigint[]) s, generate_series(0, $3) i",
        YEAR_FROM,
        streams,
        BUCKETS - 1,
    )
    await queue_rollups(conn, streams)


async def queue_rollups(conn: asyncpg.Connection, streams: list[int]) -> None:
    """All of ``streams``' hours and days queued for the engine, as new points queue theirs."""
    await conn.execute(
        "INSERT INTO cluster.rollup_work (stream_id, span)"
        " SELECT s, tstzrange(NULL, NULL) FROM unnest($1::bigint[]) s",
        streams,
    )


async def build_rollups(url: str) -> float:
    """Seconds the engine takes to roll the whole year of every stream up."""
    conn = await asyncpg.connect(url)
    try:
        started = time.perf_counter()
        while (await rollup_batch(conn, batch=1, delay=0)).periods:
            pass
        return time.perf_counter() - started
    finally:
        await conn.close()


def main(runs: int) -> None:
    digest = token_digest(TOKEN)
    with bench_database() as settings:
        url = settings.database.url
        feed, streams = asyncio.run(seed(url))
        build = asyncio.run(build_rollups(url))
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE cluster.hourly_rollups, cluster.daily_rollups")
            sizes = conn.execute(
                "SELECT pg_total_relation_size('cluster.hourly_rollups')::float8"
                "       / (SELECT count(*) FROM cluster.hourly_rollups),"
                "       pg_total_relation_size('cluster.daily_rollups')::float8"
                "       / (SELECT count(*) FROM cluster.daily_rollups)"
            ).fetchone()
            assert sizes
        port = free_port()
        servers = start_servers(url, port, HttpSettings().server)
        try:
            base = f"http://127.0.0.1:{port}"
            paths = year_paths(feed, streams)
            days = httpx.get(base + paths[0], headers={"Authorization": f"Bearer {TOKEN}"}).json()
            assert len(days) == 365, f"a year has 365 local days, got {len(days)}"
            rounds = 10 * runs
            api = asyncio.run(timed_requests(base, paths, rounds))
            calls: list[tuple[object, ...]] = [
                (digest, feed, s, YEAR_FROM, YEAR_TO - 1, 366, "day", BUCKET_REACH["day"], False)
                for s in streams
            ]
            direct = asyncio.run(timed_queries(url, queries.STREAM_BUCKETS, calls, rounds))
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(QUEUE_DAY, (*QUEUED_DAY, streams))
            same = httpx.get(base + paths[0], headers={"Authorization": f"Bearer {TOKEN}"})
            # The same days and values (summed in another order: equal to rounding).
            assert [t for t, _ in same.json()] == [t for t, _ in days]
            assert all(
                math.isclose(a, b, rel_tol=1e-12)
                for (_, a), (_, b) in zip(same.json(), days, strict=True)
            ), "a queued day must answer as its rollups do"
            queued = asyncio.run(timed_requests(base, paths, rounds))
            queued_direct = asyncio.run(timed_queries(url, queries.STREAM_BUCKETS, calls, rounds))
        finally:
            stop_servers(servers)
    print(
        f"year view: {STREAMS} processed streams x {BUCKETS:,} points of 90 s (365 days),"
        f" resolution=day, {rounds} rounds after one; rollups of all {STREAMS} built from"
        f" nothing in {build:.1f} s ({STREAMS * BUCKETS / build:,.0f} points/s); at rest an"
        f" hourly rollup takes {sizes[0]:.0f} bytes, a daily one {sizes[1]:.0f} (with indexes)"
    )
    print(
        f"with one day of every stream queued: the API {statistics.median(queued):.1f} ms,"
        f" its statements from asyncpg {statistics.median(queued_direct):.1f} ms"
        f" (nothing queued: {statistics.median(direct):.1f} ms)"
    )
    median = statistics.median(api)
    report(
        [
            figure(
                f"year view: {STREAMS} streams x 365 days",
                "ms",
                api,
                "same statements, asyncpg ms",
                direct,
                goal=f"<= {GOAL_MS} ms",
                goal_met=median <= GOAL_MS,
            ),
            figure(
                "year view with one day queued",
                "ms",
                queued,
                "year view ms (nothing queued)",
                api,
                goal=f"<= {QUEUED_GOAL:.0f}x the year view",
                goal_met=statistics.median(queued) <= QUEUED_GOAL * median,
            ),
        ]
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--full", action="store_true", help="the same size (already a year)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    main(args.runs)
