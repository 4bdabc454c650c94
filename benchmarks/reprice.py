"""Repricing: a day of new prices for an area, and every feed on it priced again.

1,000 feeds with one power clamp each and a day of points, all on one dynamic tariff of one
area (1.19 x the area's price + a band), are first processed from scratch (the engine's
consumption and cost of every bucket, as ``engine_throughput`` measures it). Then the area's
96 quarter-hour prices of that day are all replaced in one ``cluster.set_prices`` call, and
the wall time from the call until the engine's queues are empty again (every cost point of the
day repriced, its hours and days with it) is compared with the time from scratch: repricing
may recompute only what a price changes, and should not cost more than 1.5 times computing
the day afresh. The engine's processed streams are made before the first round (by its own
intake), so that its first computation from scratch does what every later one does; ``--full``
still computes the day once, uncounted, before its rounds (``--warm-up``).

    .venv/bin/python -m benchmarks.reprice               # 1,000 feeds x 1 day at 30 s
    .venv/bin/python -m benchmarks.reprice --feeds 200   # make bench: two batches of the engine
    .venv/bin/python -m benchmarks.reprice --full        # 1,000 feeds x 1 day at 10 s
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from datetime import UTC, datetime, timedelta

import asyncpg
import psycopg

from benchmarks.engine_throughput import (
    QUEUE_DIRTY,
    SEED_POINTS,
    make_processed_streams,
    seed_feeds,
    work_until_empty,
)
from benchmarks.support import bench_database, cpu_s, figure, report
from energy_platform.core.settings import EngineSettings

DAY = datetime(2026, 1, 5, tzinfo=UTC)  # a bucket start, long closed
AREA = "BENCH-1"
GOAL = 1.5
ROW = "reprice: one day of new prices, 1,000 feeds on the area"
TARIFFS = """
SELECT cluster.set_tariff(id, 'power', '-infinity', ARRAY['00:00', '17:00']::time[],
                          ARRAY[0.12, 0.21], $1, 1.19)
  FROM cluster.feeds"""
SET_PRICES = "SELECT cluster.set_prices($1, $2::tstzrange[], $3::float8[])"
RESET = "TRUNCATE cluster.processed_points, cluster.engine_work, cluster.rollup_work"
COSTS = """
SELECT count(*), sum(p.value) FROM cluster.processed_points p
  JOIN cluster.streams s ON s.id = p.stream_id WHERE s.quantity = 'cost'"""


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--feeds", type=int, default=1_000)
    parser.add_argument("--interval", type=int, default=30, help="seconds between samples")
    parser.add_argument("--runs", type=int, default=2, help="counted rounds")
    parser.add_argument(
        "--warm-up", action="store_true", help="the day computed once from scratch first, uncounted"
    )
    parser.add_argument("--full", action="store_true", help="samples every 10 s, after a warm-up")
    args = parser.parse_args()
    if args.full:
        args.interval, args.warm_up = 10, True
    return args


def quarter_hours(seed: int) -> tuple[list[asyncpg.Range[datetime]], list[float]]:
    """The day's 96 slots and a price for each, per kWh."""
    rng = random.Random(seed)
    slots = [
        asyncpg.Range(DAY + timedelta(minutes=15 * q), DAY + timedelta(minutes=15 * (q + 1)))
        for q in range(96)
    ]
    return slots, [round(rng.uniform(-0.05, 0.40), 5) for _ in slots]


async def seed(url: str, args: argparse.Namespace) -> int:
    """Feeds with a clamp each, a day of points, the area's prices and the tariffs."""
    await seed_feeds(url, args.feeds, 1, channels=1)
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(SET_PRICES, AREA, *quarter_hours(1))
        await conn.execute(TARIFFS, AREA)
        row = await conn.fetchrow("SELECT min(id), max(id) FROM cluster.streams WHERE type = 'raw'")
        assert row is not None  # an aggregate has a row
        first, last = row
    finally:
        await conn.close()
    per_stream = 86_400 // args.interval
    with psycopg.connect(url, autocommit=True) as setup:
        setup.execute(
            SEED_POINTS["power"],
            {
                "start": DAY,
                "step": timedelta(seconds=args.interval),
                "first": first,
                "last": last,
                "count": per_stream,
            },
        )
        setup.execute("VACUUM ANALYZE cluster.raw_points")
    await make_processed_streams(url)
    points: int = args.feeds * per_stream
    return points


async def rounds(url: str, args: argparse.Namespace) -> tuple[list[float], list[float]]:
    engine = EngineSettings(rollup_delay=0)
    scratch: list[float] = []
    reprice: list[float] = []
    conn = await asyncpg.connect(url)
    try:
        backend = await conn.fetchval("SELECT pg_backend_pid()")
        for n in range(0 if args.warm_up else 1, args.runs + 1):
            await conn.execute(RESET)
            interval = timedelta(seconds=args.interval)
            end = DAY + timedelta(days=1) - interval
            await conn.execute(QUEUE_DIRTY, DAY, interval, end, 24)
            cpu, started = cpu_s(backend), time.perf_counter()
            await work_until_empty(conn, engine)
            from_scratch = time.perf_counter() - started
            scratch_cpu = cpu_s(backend) - cpu
            if n == 0:
                print(f"warm-up: from scratch {from_scratch:.1f} s", flush=True)
                continue
            before = await conn.fetchrow(COSTS)
            cpu, started = cpu_s(backend), time.perf_counter()
            changed = await conn.fetchval(SET_PRICES, AREA, *quarter_hours(100 + n))
            await work_until_empty(conn, engine)
            repriced = time.perf_counter() - started
            reprice_cpu = cpu_s(backend) - cpu
            after = await conn.fetchrow(COSTS)
            assert changed == 96, changed
            assert before is not None  # aggregates have a row
            assert after is not None
            # Every cost point priced again, none made or lost.
            assert after[0] == before[0], (before, after)
            assert after[1] != before[1], (before, after)
            # The backend's CPU seconds move less with the machine's other load than the wall time.
            print(
                f"round {n}: from scratch {from_scratch:.1f} s (backend CPU {scratch_cpu:.1f} s),"
                f" repriced {repriced:.1f} s (backend CPU {reprice_cpu:.1f} s)",
                flush=True,
            )
            scratch.append(from_scratch)
            reprice.append(repriced)
    finally:
        await conn.close()
    return reprice, scratch


def main() -> None:
    args = parse()
    with bench_database() as settings:
        points = asyncio.run(seed(settings.database.url, args))
        print(
            f"{args.feeds:,} feeds x 1 day at {args.interval} s = {points:,} raw points",
            flush=True,
        )
        reprice, scratch = asyncio.run(rounds(settings.database.url, args))
    ratio = statistics.median(reprice) / statistics.median(scratch)
    report(
        [
            figure(
                ROW,
                "s",
                reprice,
                "engine from scratch",
                scratch,
                goal=f"<= {GOAL} x",
                goal_met=ratio <= GOAL,
            )
        ]
    )


if __name__ == "__main__":
    main()
