"""Read replica lag: how long after its commit on the primary a row is visible on a streaming hot
standby (`pg_basebackup -R`, as docs/scaling.md makes one), with nothing else writing and while
ingest's write path (COPY batches into cluster.raw_points, on two connections) runs flat out.

A probe commits a row on the primary and polls the replica until it sees it, every 100 ms
(quick: every 25 ms, so that a window of 5 s holds enough probes for a p99 in one run). The
probes under load start once every writer has committed its first batch.

    python -m benchmarks.replica_lag [--full] [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import statistics
import time

import asyncpg

from benchmarks.support import bench_database, figure, phase, report
from energy_platform import seeding
from tests.support.replica import hot_standby

PROBE = "CREATE TABLE bench_probe (n bigint PRIMARY KEY)"
BATCH = 5_000  # points per COPY: a few of ingest's batches of 50-point messages
WRITERS = 2


async def visible_after(primary: asyncpg.Connection, replica: asyncpg.Connection, n: int) -> float:
    """Seconds from the commit of probe row ``n`` on the primary until the replica has it."""
    await primary.execute("INSERT INTO bench_probe VALUES ($1)", n)
    committed = time.perf_counter()
    seen = "SELECT EXISTS (SELECT FROM bench_probe WHERE n = $1)"
    while True:
        if await replica.fetchval(seen, n):
            return time.perf_counter() - committed
        await asyncio.sleep(0.0005)


async def probe(
    primary_url: str, replica_url: str, seconds: float, every: float, first: int
) -> list[float]:
    primary = await asyncpg.connect(primary_url)
    replica = await asyncpg.connect(replica_url)
    lags = []
    try:
        deadline = time.monotonic() + seconds
        n = first
        while time.monotonic() < deadline:
            lags.append(await visible_after(primary, replica, n))
            n += 1
            await asyncio.sleep(every)
    finally:
        await primary.close()
        await replica.close()
    return lags


async def write_points(
    url: str, stream: int, stop: asyncio.Event, start: dt.datetime, going: asyncio.Event
) -> int:
    """COPY batches of points of ``stream`` until ``stop``, ``going`` set once the first is
    in; the number of points written."""
    conn = await asyncpg.connect(url)
    written = 0
    try:
        while not stop.is_set():
            rows = [
                (stream, start + dt.timedelta(seconds=5 * (written + i)), 230.0)
                for i in range(BATCH)
            ]
            await conn.copy_records_to_table(
                "raw_points",
                schema_name="cluster",
                records=rows,
                columns=["stream_id", "ts", "value"],
            )
            written += BATCH
            going.set()
    finally:
        await conn.close()
    return written


async def seed_streams(url: str, count: int) -> list[int]:
    """``count`` raw streams of one feed, for the writers to fill."""
    conn = await asyncpg.connect(url)
    try:
        owner = await seeding.add_user(conn, "bench")
        feed = await seeding.add_feed(conn, owner.id, "BE00000000000001")
        return await seeding.raw_streams(conn, feed, range(1, count + 1), 1, device=3)
    finally:
        await conn.close()


async def under_load(
    primary_url: str,
    replica_url: str,
    seconds: float,
    every: float,
    streams: list[int],
    first: int,
) -> tuple[list[float], float]:
    """Probe lags while one connection per stream COPYs its points; (lags, points/s written)."""
    stop = asyncio.Event()
    start = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    started = time.perf_counter()
    going = [asyncio.Event() for _ in streams]
    writers = [
        asyncio.create_task(write_points(primary_url, s, stop, start, g))
        for s, g in zip(streams, going, strict=True)
    ]
    await asyncio.wait_for(asyncio.gather(*(g.wait() for g in going)), 60)  # all writing
    lags = await probe(primary_url, replica_url, seconds, every, first)
    stop.set()
    written = sum(await asyncio.gather(*writers))
    return lags, written / (time.perf_counter() - started)


async def main(full: bool, runs: int) -> None:
    seconds, every = (20.0, 0.1) if full else (5.0, 0.025)
    with bench_database() as settings:
        url = settings.database.url
        conn = await asyncpg.connect(url)
        await conn.execute(PROBE)
        await conn.close()
        streams = await seed_streams(url, WRITERS * runs)
        phase("a hot standby (pg_basebackup of the server)")
        with hot_standby(url) as replica_url:
            idle_p50, idle_p99, load_p50, load_p99, rates = [], [], [], [], []
            for run in range(1, runs + 1):
                phase(f"run {run}: idle, then under load")
                idle = await probe(url, replica_url, seconds, every, 2 * run * 1_000_000)
                phase("under load")
                mine = streams[(run - 1) * WRITERS : run * WRITERS]
                busy, rate = await under_load(
                    url, replica_url, seconds, every, mine, (2 * run + 1) * 1_000_000
                )
                idle_p50.append(statistics.median(idle) * 1000)
                idle_p99.append(statistics.quantiles(idle, n=100)[98] * 1000)
                load_p50.append(statistics.median(busy) * 1000)
                load_p99.append(statistics.quantiles(busy, n=100)[98] * 1000)
                rates.append(rate)
                samples = (len(idle), len(busy))
            phase("stopping the standby")
    print(
        f"replica lag: a hot standby on loopback, a probe every {every * 1000:.0f} ms for"
        f" {seconds:.0f} s idle and {seconds:.0f} s under {WRITERS} COPY writers"
        f" ({statistics.median(rates):,.0f} points/s), {runs} runs; the last run's probes:"
        f" {samples[0]} idle, {samples[1]} under load"
    )
    report(
        [
            figure("replica lag p50 under ingest load", "ms", load_p50, "idle p50 ms", idle_p50),
            figure("replica lag p99 under ingest load", "ms", load_p99, "idle p99 ms", idle_p99),
        ]
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--full", action="store_true", help="20 s of probes a setup, not 5")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.full, args.runs))
