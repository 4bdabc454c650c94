"""Engine freshness: how long after the raw point that completes a 90 s bucket is committed the
bucket's processed point shows its final value, with 10,000 streams sampled every 5 s in real time.

A writer commits each second the points of a fifth of the streams (so each stream gets a point
every 5 s), with ingest's own statement (points and the engine's dirty ranges in one
transaction); the engine runs as `energy-platform serve engine` in its own process, as deployed.
A bucket's value is final once the first point at or after its end is in (the segment that
crosses the end is cut there), so that point's commit starts the clock; it stops when a probe
first sees the bucket's final value in `cluster.processed_points`, which the data API reads
directly (no cache), i.e. the moment the API would serve it. The probe reads a sample of streams
spread over every feed, four times a second.

    python -m benchmarks.engine_freshness [--full] [--streams N] [--buckets N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import time

import asyncpg
import psycopg

from benchmarks.engine_throughput import CHANNELS_PER_FEED, SEED_FEEDS, SEED_TARIFFS
from benchmarks.support import bench_database, figure, report
from energy_platform.devices.ingest.store import RAW_POINTS_INSERT

BUCKET = 90
STEP = 5
GOAL_P99 = 15.0
PROBE_EVERY = 0.25
SAMPLE = 500
PROCESSED_PAIRS = """
SELECT ps.id AS processed, rs.id AS raw
  FROM cluster.streams ps
  JOIN cluster.streams rs ON rs.feed_id = ps.feed_id AND rs.channel = ps.channel
 WHERE ps.type = 'processed' AND rs.type = 'raw' AND NOT ps.cost AND NOT ps.combined"""
PROBE = """
SELECT stream_id, date_part('epoch', ts)::bigint, value
  FROM cluster.processed_points WHERE stream_id = ANY($1::bigint[]) AND ts >= to_timestamp($2)"""


class Run:
    """What the writer committed when, and what the probe saw when."""

    def __init__(self) -> None:
        self.committed: dict[int, float] = {}
        """Second of the points -> wall time their transaction committed."""
        self.seen: dict[tuple[int, int], list[tuple[float, float]]] = {}
        """(processed stream, bucket start) -> [(value, first seen at)] in order of change."""


async def write(url: str, raw_ids: list[int], run: Run, stop: asyncio.Event) -> None:
    """Each second s, one point for every raw stream whose id is s modulo 5, at time s."""
    conn = await asyncpg.connect(url)
    by_phase = {p: [r for r in raw_ids if r % STEP == p] for p in range(STEP)}
    try:
        second = int(time.time()) + 1
        while not stop.is_set():
            await asyncio.sleep(max(0.0, second - time.time()))
            streams = by_phase[second % STEP]
            values = [500 + 400 * random.random() for _ in streams]
            await conn.execute(RAW_POINTS_INSERT, streams, [second] * len(streams), values)
            run.committed[second] = time.time()
            second += 1
    finally:
        await conn.close()


async def probe(url: str, sample: list[int], since: int, run: Run, stop: asyncio.Event) -> None:
    conn = await asyncpg.connect(url)
    try:
        while not stop.is_set():
            rows = await conn.fetch(PROBE, sample, since)
            now = time.time()
            for stream, ts, value in rows:
                history = run.seen.setdefault((stream, ts), [])
                if not history or history[-1][0] != value:
                    history.append((value, now))
            await asyncio.sleep(PROBE_EVERY)
    finally:
        await conn.close()


def start_engine(url: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "EP_DATABASE_URL": url, "EP_LOG_LEVEL": "warning"}
    command = [sys.executable, "-m", "energy_platform", "serve", "engine"]
    return subprocess.Popen(command, env=env)


async def measure(url: str, streams: int, buckets: int) -> tuple[list[float], int]:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            SEED_FEEDS, {"feeds": streams // CHANNELS_PER_FEED, "channels": CHANNELS_PER_FEED}
        )
        conn.execute(SEED_TARIFFS)
        raw_ids = [r[0] for r in conn.execute("SELECT id FROM cluster.streams ORDER BY id")]
    run = Run()
    stop_writing, stop_probing = asyncio.Event(), asyncio.Event()
    engine = start_engine(url)
    try:
        writer = asyncio.create_task(write(url, raw_ids, run, stop_writing))
        # Warm-up: the engine creates the processed streams on first sight of each channel.
        conn = await asyncpg.connect(url)
        try:
            while True:
                pairs = await conn.fetch(PROCESSED_PAIRS)
                if len(pairs) >= streams:
                    break
                await asyncio.sleep(1)
        finally:
            await conn.close()
        first = (int(time.time()) // BUCKET + 1) * BUCKET  # the first bucket measured
        sample = random.Random(15).sample([p["processed"] for p in pairs], min(SAMPLE, streams))
        raw_of = {p["processed"]: p["raw"] for p in pairs}
        prober = asyncio.create_task(probe(url, sample, first, run, stop_probing))
        last_end = first + buckets * BUCKET
        # Write until each measured bucket has its completing point (at most STEP s after its
        # end), then leave the engine time to publish it.
        await asyncio.sleep(max(0.0, last_end + STEP + 1 - time.time()))
        stop_writing.set()
        await writer
        await asyncio.sleep(GOAL_P99 * 2)
        stop_probing.set()
        await prober
    finally:
        engine.terminate()
        engine.wait(10)
    freshness = []
    for stream in sample:
        phase = raw_of[stream] % STEP
        for start in range(first, last_end, BUCKET):
            end = start + BUCKET
            completing = end + (phase - end) % STEP  # first second >= end with this phase
            history = run.seen.get((stream, start))
            if history is None or completing not in run.committed:
                raise RuntimeError(f"bucket {start} of stream {stream} was never seen")
            final_seen = history[-1][1]
            freshness.append(final_seen - run.committed[completing])
    return freshness, len(run.committed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--full", action="store_true", help="8 measured buckets instead of 2")
    parser.add_argument("--streams", type=int, default=10_000)
    parser.add_argument("--buckets", type=int, default=None)
    args = parser.parse_args()
    buckets = args.buckets or (8 if args.full else 2)
    with bench_database() as settings:
        freshness, seconds = asyncio.run(measure(settings.database.url, args.streams, buckets))
    freshness.sort()
    p99 = freshness[min(len(freshness) - 1, int(len(freshness) * 0.99))]
    print(
        f"engine freshness: {args.streams:,} streams every {STEP} s ({args.streams // STEP:,}"
        f" points/s) for {seconds} s; {buckets} buckets x {min(SAMPLE, args.streams)} sampled"
        f" streams = {len(freshness):,} buckets measured; max {freshness[-1]:.1f} s"
    )
    report(
        [
            figure(
                "freshness p50 (commit -> API)",
                "s",
                [statistics.median(freshness)],
                "goal s (p99)",
                [GOAL_P99],
            ),
            figure(
                "freshness p99 (commit -> API)",
                "s",
                [p99],
                "goal s",
                [GOAL_P99],
                goal=f"< {GOAL_P99:.0f} s",
                goal_met=p99 < GOAL_P99,
            ),
        ]
    )


if __name__ == "__main__":
    main()
