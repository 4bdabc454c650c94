"""The Year view: 10 processed streams with a year of 90 s points each, asked per local day
(`resolution=day`) as 10 parallel requests, beside the same statements straight from asyncpg.
The streams are the household's of benchmarks/household.py (seeded once per `make bench`, shared
with the bill). Also how long the engine took to build their rollups from nothing, and the same
year view with one local day of every stream queued for the engine (cluster.rollup_work):
real-time rollups answer that day from its 960 points, the rest from the rollups.

    python -m benchmarks.year_view [--full] [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import statistics

import httpx
import psycopg

from benchmarks.data_api import TOKEN, start_servers, stop_servers, timed_queries, timed_requests
from benchmarks.household import BUCKETS, YEAR_FROM, YEAR_TO, household, year_paths
from benchmarks.support import figure, report
from energy_platform.api import queries
from energy_platform.api.feeds import BUCKET_REACH
from energy_platform.core.settings import HttpSettings
from energy_platform.core.tokens import token_digest
from tests.support.services import free_port

STREAMS = 10
NEIGHBOURS = 200  # the bill's other feeds at quick size: the same seeded rows
GOAL_MS = 50
QUEUED_GOAL = 2.0  # x the year view with nothing queued, in the same run
# The local day 2025-06-15 in Prague (CEST, +02:00): its points are recomputed at read time.
QUEUED_DAY = ("2025-06-14T22:00:00Z", "2025-06-15T22:00:00Z")
QUEUE_DAY = """
INSERT INTO cluster.rollup_work (stream_id, span)
SELECT s, tstzrange(%s, %s) FROM unnest(%s::bigint[]) s"""


def main(runs: int) -> None:
    digest = token_digest(TOKEN)
    with household(NEIGHBOURS) as (settings, seeded):
        url = settings.database.url
        feed, streams = seeded.feed, seeded.streams
        with psycopg.connect(url, autocommit=True) as conn:
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
        f" resolution=day, {rounds} rounds after one; {seeded.rollups()}; at rest an"
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
