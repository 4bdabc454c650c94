"""Compaction: points older than ``EP_COMPACTION_AFTER_DAYS`` move from the row tier (a row per
point) into the compact tier (a row per stream and UTC day, ``cluster.point_days``).

Each stream-day moves in a transaction of its own (``cluster.compact_day``), so ingest and reads
wait at most for one day of one stream, and a crash leaves every day wholly in one tier; the
next round simply goes on. Then the emptied chunks are dropped (an index never shrinks by
deleting its rows), each under a short lock that keeps a late point from slipping into it as it
goes; a chunk another session holds waits for a later round. docs/schema.md#tiers.

A stream-day that fails to compact for any reason but the server's state (a value the codec
cannot carry, a statement timeout) costs only its stream: the stream is parked for compaction
(``engine/parking.py::skip_stream``), later rounds skip it until ``admin engine retry``, and the
round goes on for every other stream.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, date, datetime, time, timedelta

import asyncpg
import msgspec
from prometheus_client import Counter

from energy_platform.core.background import Periodic
from energy_platform.core.faults import fails_alone
from energy_platform.core.settings import CompactionSettings, DatabaseSettings
from energy_platform.engine.parking import STREAMS_CLEARED, skip_stream

COMPACTED = Counter("ep_compaction_points", "Points moved into the compact tier")

# Whole UTC days only: the cutoff is the midnight at or before now minus the age.
CUTOFF = "SELECT date_trunc('day', now() - make_interval(days => $1), 'UTC')"
# Streams parked for compaction wait for `admin engine retry` (one hashed subplan over a table
# that is empty while every stream compacts).
STREAMS = """
SELECT id FROM cluster.streams
 WHERE id > $1
   AND id NOT IN (SELECT stream_id FROM cluster.parked_work
                   WHERE stage = 'compaction' AND retried_at IS NULL)
 ORDER BY id LIMIT $2"""

# The oldest day before the cutoff that each of the given streams still has in the row tier:
# one primary-key probe per stream, in the table of its type only.
OLDEST_DAYS = """
SELECT s.id AS stream_id, (f.ts AT TIME ZONE 'UTC')::date AS day
  FROM cluster.streams s
 CROSS JOIN LATERAL (
     (SELECT p.ts FROM cluster.raw_points p
       WHERE s.type = 'raw' AND p.stream_id = s.id AND p.ts < $2 ORDER BY p.ts LIMIT 1)
     UNION ALL
     (SELECT p.ts FROM cluster.processed_points p
       WHERE s.type = 'processed' AND p.stream_id = s.id AND p.ts < $2 ORDER BY p.ts LIMIT 1)
     UNION ALL
     (SELECT p.ts FROM cluster.system_points p
       WHERE s.type = 'system' AND p.stream_id = s.id AND p.ts < $2 ORDER BY p.ts LIMIT 1)) f
 WHERE s.id = ANY ($1::bigint[])
 ORDER BY s.id"""
COMPACT_DAY = "SELECT cluster.compact_day($1, $2)"
# Days written before the decimal codec (codec 1), by the partial index; compact_day re-encodes
# a compacted day with the current codec, a stream-day per transaction (docs/schema.md#codec).
OLD_CODEC_DAYS = """
SELECT stream_id, day FROM cluster.point_days
 WHERE codec = 1 AND (stream_id, day) > ($1, $2)
   AND stream_id NOT IN (SELECT stream_id FROM cluster.parked_work
                          WHERE stage = 'compaction' AND retried_at IS NULL)
 ORDER BY stream_id, day LIMIT $3"""
# The row-tier chunks wholly before the cutoff: compaction has emptied them, unless late points
# came in since.
CHUNKS_BEFORE = """
SELECT format('%I.%I', chunk_schema, chunk_name) AS chunk
  FROM timescaledb_information.chunks
 WHERE hypertable_schema = 'cluster'
   AND hypertable_name IN ('raw_points', 'processed_points', 'system_points')
   AND range_end <= $1
 ORDER BY range_start, chunk_name"""
# Longer than PostgreSQL's deadlock_timeout (1 s), after which it cancels an autovacuum worker
# that holds the chunk; short enough that the writers queued behind the waiting lock hardly
# notice (docs/schema.md#tiers).
DROP_CHUNK = (
    "SET LOCAL lock_timeout = '2s'",
    "SELECT cluster.drop_emptied_chunk($1::regclass)",
)


class CompactionResult(msgspec.Struct, frozen=True):
    days: int
    """Stream-days moved into the compact tier."""
    points: int
    """Points in the compact rows written."""
    chunks: int
    """Emptied row-tier chunks dropped."""
    busy: int = 0
    """Emptied chunks another session held (a long read, VACUUM): dropped by a later round."""
    recoded: int = 0
    """Compacted stream-days written before the decimal codec, encoded again with it."""


async def compact(
    pool: asyncpg.Pool, settings: CompactionSettings, stop: asyncio.Event | None = None
) -> CompactionResult:
    """One round: every stream-day older than the age, then the emptied chunks."""
    cutoff: datetime = await pool.fetchval(CUTOFF, settings.after_days)
    days = points = 0
    after = 0
    failed: list[int] = []
    while stop is None or not stop.is_set():
        streams = [r["id"] for r in await pool.fetch(STREAMS, after, settings.page)]
        if not streams:
            break
        after = streams[-1]
        # A stream may have several old days: ask again until none of the page has one.
        while streams and (stop is None or not stop.is_set()):
            oldest = await pool.fetch(OLDEST_DAYS, streams, cutoff)
            if not oldest:
                break
            for row in oldest:  # a transaction each
                try:
                    points += await pool.fetchval(COMPACT_DAY, row["stream_id"], row["day"])
                except asyncpg.PostgresError as e:
                    if not fails_alone(e):
                        raise
                    await skip_stream(pool, "compaction", row["stream_id"], utc_day(row["day"]), e)
                    failed.append(row["stream_id"])
                    streams.remove(row["stream_id"])
                    continue
                days += 1
    await pool.execute(STREAMS_CLEARED, "compaction", failed)
    chunks = busy = 0
    if stop is None or not stop.is_set():
        chunks, busy = await drop_emptied(pool, cutoff)
    recoded = await recode(pool, settings.page, stop)
    COMPACTED.inc(points)
    return CompactionResult(days=days, points=points, chunks=chunks, busy=busy, recoded=recoded)


def utc_day(day: date) -> asyncpg.Range[datetime]:
    """The UTC day ``day`` as a range of instants."""
    start = datetime.combine(day, time(), UTC)
    return asyncpg.Range(start, start + timedelta(days=1))


async def recode(pool: asyncpg.Pool, page: int, stop: asyncio.Event | None) -> int:
    """Encode the compacted days of an older codec again, a stream-day per transaction."""
    recoded, after = 0, (0, date.min)
    while stop is None or not stop.is_set():
        old = await pool.fetch(OLD_CODEC_DAYS, *after, page)
        if not old:
            break
        for row in old:
            try:
                await pool.fetchval(COMPACT_DAY, row["stream_id"], row["day"])
            except asyncpg.PostgresError as e:
                if not fails_alone(e):
                    raise
                await skip_stream(pool, "compaction", row["stream_id"], utc_day(row["day"]), e)
                continue
            recoded += 1
        after = (old[-1]["stream_id"], old[-1]["day"])
    return recoded


async def drop_emptied(pool: asyncpg.Pool, cutoff: datetime) -> tuple[int, int]:
    """Drop the row-tier chunks wholly before ``cutoff`` that hold no row, each in a transaction
    of its own; returns (dropped, busy). A busy chunk is expected (autovacuum starts on the rows
    compaction deleted, an analyst reads): it waits for the next round, and nothing is logged."""
    dropped = busy = 0
    for row in await pool.fetch(CHUNKS_BEFORE, cutoff):
        async with pool.acquire() as conn:
            try:
                async with conn.transaction():
                    await conn.execute(DROP_CHUNK[0])
                    dropped += bool(await conn.fetchval(DROP_CHUNK[1], row["chunk"]))
            except asyncpg.LockNotAvailableError:
                busy += 1
    return dropped, busy


def compaction(database: DatabaseSettings, settings: CompactionSettings) -> Periodic:
    """The engine's compaction loop (a background service; idle when compaction is off)."""

    async def work(pool: asyncpg.Pool, stop: asyncio.Event) -> dict[str, int]:
        if not settings.after_days:
            return {}
        return msgspec.structs.asdict(await compact(pool, settings, stop))

    return Periodic("compaction", database, settings.interval, work)
