"""Raw points processed per second by the engine, beside a plain time_bucket aggregate.

Builds a scratch database next to ``EP_DATABASE_URL`` (migrated from sql/), fills it with
power streams (one clamp per channel, ten channels per feed, a flat tariff per feed so that
cost is computed too), then alternates two measurements over the same rows:

- engine: ingest-style dirty ranges (one per stream and hour) drained by the engine's own code
  (intake, claim, compute: trapezoids, configurations, tariffs, upserts), from empty output;
- baseline: ``INSERT ... SELECT stream_id, time_bucket('90 s', ts), avg(value) ... GROUP BY``
  into an empty hypertable shaped like ``cluster.processed_points``.

With ``--medium register`` the streams are import energy registers (medium 22, ``1-0:1.8.0``)
counting up, with a reset now and then, instead of power clamps: the row ``engine, registers``
(the register's rise along its line, its spans, and cost as for power).

Both run with the engine's work_mem and JIT off. The processed streams are made before the
first round, by the engine's own intake, so that every round does the same work and all are
counted (``--warm-up``, as ``--full`` does: an uncounted round first); the medians are reported.

    .venv/bin/python -m benchmarks.engine_throughput            # 1,000 streams x 6 h at 5 s
    .venv/bin/python -m benchmarks.engine_throughput --full     # 10,000 streams x 1 day at 10 s
    .venv/bin/python -m benchmarks.engine_throughput --medium register
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from datetime import UTC, datetime, timedelta

import asyncpg
import psycopg

from benchmarks.support import cpu_s, figure, report
from energy_platform import seeding
from energy_platform.core.settings import BillingSettings, EngineSettings, Settings
from energy_platform.engine.processing import MeterLimits, intake
from energy_platform.engine.service import drain
from tests.support.databases import create_session_database

START = datetime(2026, 1, 5, tzinfo=UTC)  # a bucket start, long closed
YEAR = (datetime(2026, 1, 1, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC))  # subscribed
CHANNELS_PER_FEED = 10

CREATE_BASELINE = """
CREATE TABLE bench_baseline (
    stream_id bigint NOT NULL, ts timestamptz NOT NULL, value double precision NOT NULL,
    PRIMARY KEY (stream_id, ts));
SELECT create_hypertable('bench_baseline', by_range('ts', INTERVAL '7 days'),
                         create_default_indexes => false);
"""
SEED_TARIFFS = """
SELECT cluster.set_tariff(id, 'power', '-infinity', ARRAY['06:00', '22:00']::time[],
                          ARRAY[0.30, 0.10])
  FROM cluster.feeds"""
STREAM_ID_RANGE = "SELECT min(id), max(id) FROM cluster.streams WHERE type = 'raw'"
# Power: 100 to 900 W. Registers: Wh counting up by 0.3 to 2.2 Wh a sample, reset to 0 every
# 10,000 samples (a meter replaced), so that the rise, not the reading, varies.
SEED_POINTS = {
    "power": """
INSERT INTO cluster.raw_points (stream_id, ts, value)
SELECT s, %(start)s + i * %(step)s::interval, 500 + 400 * sin(i / 40.0 + s)
  FROM generate_series(%(first)s::bigint, %(last)s::bigint) s,
       generate_series(0, %(count)s - 1) i""",
    "register": """
INSERT INTO cluster.raw_points (stream_id, ts, value)
SELECT s, %(start)s + i * %(step)s::interval,
       1.25 * (i %% 10000) - 0.95 * 40 * cos((i %% 10000) / 40.0 + s)
  FROM generate_series(%(first)s::bigint, %(last)s::bigint) s,
       generate_series(0, %(count)s - 1) i""",
}
MEDIA = {"power": 1, "register": 22}
ROW = {"power": "engine, {workers} worker(s)", "register": "engine, registers"}
QUEUE_DIRTY = """
INSERT INTO cluster.dirty_ranges (stream_id, ts_from, ts_to)
SELECT s.id, $1::timestamptz + h * interval '1 hour',
       least($1::timestamptz + (h + 1) * interval '1 hour' - $2::interval, $3::timestamptz)
  FROM cluster.streams s, generate_series(0, $4 - 1) h
 WHERE s.type = 'raw'"""
QUEUES_EMPTY = """
SELECT NOT EXISTS (SELECT 1 FROM cluster.dirty_ranges)
       AND NOT EXISTS (SELECT 1 FROM cluster.engine_work)"""
RESET_ENGINE = "TRUNCATE cluster.processed_points, cluster.engine_work"
EMPTY_QUEUES = "TRUNCATE cluster.engine_work, cluster.rollup_work"
RESET_BASELINE = "TRUNCATE bench_baseline"
BASELINE = """
INSERT INTO bench_baseline (stream_id, ts, value)
SELECT stream_id, time_bucket('90 s', ts), avg(value) FROM cluster.raw_points GROUP BY 1, 2"""
TUNE = "SELECT set_config('work_mem', $1, false), set_config('jit', 'off', false)"


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--streams", type=int, default=1_000)
    parser.add_argument("--hours", type=int, default=6)
    parser.add_argument("--interval", type=int, default=5, help="seconds between samples")
    parser.add_argument("--runs", type=int, default=3, help="counted rounds")
    parser.add_argument("--warm-up", action="store_true", help="an uncounted round first")
    parser.add_argument(
        "--full", action="store_true", help="10,000 streams x 1 day at 10 s, after a warm-up"
    )
    parser.add_argument("--batch-feeds", type=int, default=EngineSettings().batch_feeds)
    parser.add_argument("--max-span", type=int, default=EngineSettings().max_span)
    parser.add_argument("--work-mem", default=EngineSettings().work_mem)
    parser.add_argument("--workers", type=int, default=1, help="engine workers (connections)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    parser.add_argument(
        "--medium", choices=sorted(MEDIA), default="power", help="power clamps or registers"
    )
    args = parser.parse_args()
    if args.full:
        args.streams, args.hours, args.interval, args.warm_up = 10_000, 24, 10, True
    if args.streams % CHANNELS_PER_FEED:
        parser.error(f"--streams must be a multiple of {CHANNELS_PER_FEED}")
    return args


async def seed_feeds(url: str, feeds: int, medium: int, channels: int = CHANNELS_PER_FEED) -> None:
    """``feeds`` feeds of one user, with a raw stream of ``medium`` on each of ``channels``
    channels."""
    conn = await asyncpg.connect(url)
    try:
        owner = await seeding.add_user(conn, "bench")
        for n in range(1, feeds + 1):
            feed = await seeding.add_feed(
                conn, owner.id, f"{n:016X}", title=f"Bench {n}", start=YEAR[0], end=YEAR[1]
            )
            await seeding.raw_streams(conn, feed, range(1, channels + 1), medium)
    finally:
        await conn.close()


async def make_processed_streams(url: str) -> None:
    """The processed streams the engine makes when it first sees a channel, made now by its own
    intake (a range of an hour queued for every raw stream), its queues emptied after: what is
    measured then does what the engine does from its second round on."""
    engine = EngineSettings()
    conn = await asyncpg.connect(url)
    try:
        step = timedelta(seconds=1)
        await conn.execute(QUEUE_DIRTY, START, step, START + timedelta(hours=1) - step, 1)
        while True:
            taken = await intake(
                conn,
                batch=engine.intake_batch,
                currency=BillingSettings().currency,
                work_mem=engine.work_mem,
                limits=MeterLimits.of(engine),
            )
            if taken.claimed < engine.intake_batch:
                break
        await conn.execute(EMPTY_QUEUES)
    finally:
        await conn.close()


def build(url: str, args: argparse.Namespace) -> int:
    """Seed feeds, streams, tariffs and points; the number of raw points."""
    per_stream = args.hours * 3600 // args.interval
    asyncio.run(seed_feeds(url, args.streams // CHANNELS_PER_FEED, MEDIA[args.medium]))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(CREATE_BASELINE)
        conn.execute(SEED_TARIFFS)
        row = conn.execute(STREAM_ID_RANGE).fetchone()
        assert row is not None
        first, last = row
        started = time.perf_counter()
        for low in range(first, last + 1, 500):
            conn.execute(
                SEED_POINTS[args.medium],
                {
                    "start": START,
                    "step": timedelta(seconds=args.interval),
                    "first": low,
                    "last": min(low + 499, last),
                    "count": per_stream,
                },
            )
        conn.execute("VACUUM ANALYZE cluster.raw_points")
        total: int = args.streams * per_stream
        print(f"seeded {total:,} raw points in {time.perf_counter() - started:.0f} s")
    asyncio.run(make_processed_streams(url))
    return total


async def engine_round(
    url: str, args: argparse.Namespace, engine: EngineSettings
) -> tuple[float, float]:
    """Queue the data as ingest would and time ``engine.workers`` workers draining it: wall
    seconds, and the CPU seconds of their database backends (on a shared machine the wall time
    moves with the others' load, the CPU time much less)."""
    conns = [await asyncpg.connect(url) for _ in range(engine.workers)]
    try:
        await conns[0].execute(RESET_ENGINE)
        end = START + timedelta(hours=args.hours) - timedelta(seconds=args.interval)
        await conns[0].execute(
            QUEUE_DIRTY, START, timedelta(seconds=args.interval), end, args.hours
        )
        backends = [await conn.fetchval("SELECT pg_backend_pid()") for conn in conns]
        cpu = sum(cpu_s(pid) for pid in backends)
        started = time.perf_counter()
        await asyncio.gather(*(work_until_empty(conn, engine) for conn in conns))
        return time.perf_counter() - started, sum(cpu_s(pid) for pid in backends) - cpu
    finally:
        for conn in conns:
            await conn.close()


async def work_until_empty(conn: asyncpg.Connection, engine: EngineSettings) -> None:
    """One worker as the service runs it, polling until both queues are empty."""
    while True:
        await drain(conn, engine)
        if not await conn.fetchval(QUEUES_EMPTY):
            await asyncio.sleep(0.05)  # another worker holds what is left
        else:
            return


async def baseline_round(url: str, work_mem: str) -> float:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(RESET_BASELINE)
        await conn.execute(TUNE, work_mem)
        started = time.perf_counter()
        await conn.execute(BASELINE)
        return time.perf_counter() - started
    finally:
        await conn.close()


async def measure(url: str, args: argparse.Namespace, points: int) -> None:
    engine = EngineSettings(
        batch_feeds=args.batch_feeds,
        max_span=args.max_span,
        work_mem=args.work_mem,
        workers=args.workers,
    )
    engine_times: list[float] = []
    baseline_times: list[float] = []
    first = 0 if args.warm_up else 1
    for round_ in range(first, args.runs + 1):
        e, cpu = await engine_round(url, args, engine)
        b = await baseline_round(url, args.work_mem)
        label = "warm-up" if round_ == 0 else f"round {round_}"
        print(
            f"{label}: engine {points / e:,.0f} points/s (backend CPU {cpu:.1f} s),"
            f" baseline {points / b:,.0f} points/s",
            flush=True,
        )
        if round_:
            engine_times.append(e)
            baseline_times.append(b)
    report(
        [
            figure(
                ROW[args.medium].format(workers=args.workers),
                "points/s",
                [points / t for t in engine_times],
                "plain time_bucket GROUP BY",
                [points / t for t in baseline_times],
            )
        ]
    )
    e, b = statistics.median(engine_times), statistics.median(baseline_times)
    print(
        f"\n{args.streams:,} {args.medium} streams x {args.hours} h at {args.interval} s"
        f" = {points:,} raw points"
        f" (workers={args.workers}, batch_feeds={args.batch_feeds}, max_span={args.max_span} s,"
        f" work_mem={args.work_mem})"
    )
    print(f"engine   (median of {args.runs}): {points / e:>12,.0f} raw points/s  ({e:.1f} s)")
    print(f"baseline (median of {args.runs}): {points / b:>12,.0f} raw points/s  ({b:.1f} s)")
    print(f"ratio engine / baseline: {b / e:.2f}")


def main() -> None:
    args = parse()
    # A copy of the tests' template of sql/ (benchmarks.support.bench_database), kept on --keep.
    url = create_session_database(Settings.from_env(os.environ).database.url)
    try:
        points = build(url, args)
        asyncio.run(measure(url, args, points))
    finally:
        if args.keep:
            print(f"kept {url}")
        else:
            seeding.drop_database(url)


if __name__ == "__main__":
    main()
