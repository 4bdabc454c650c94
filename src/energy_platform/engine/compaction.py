"""Compaction: points older than ``EP_COMPACTION_AFTER_DAYS`` move from the row tier (a row per
point) into the compact tier (a row per stream and UTC day, ``cluster.point_days``).

Each stream-day moves in a transaction of its own (``cluster.compact_day``), so ingest and reads
wait at most for one day of one stream, and a crash leaves every day wholly in one tier; the
next round simply goes on. Once no row older than the cutoff is left, the emptied chunks are
dropped (an index never shrinks by deleting its rows), under a short lock that keeps a late
point from slipping into a chunk as it goes. docs/schema.md#tiers.
"""

from __future__ import annotations

import asyncio
from datetime import datetime

import asyncpg
import msgspec
from prometheus_client import Counter

from energy_platform.core.background import Periodic
from energy_platform.core.settings import CompactionSettings, DatabaseSettings

COMPACTED = Counter("ep_compaction_points", "Points moved into the compact tier")

# Whole UTC days only: the cutoff is the midnight at or before now minus the age.
CUTOFF = "SELECT date_trunc('day', now() - make_interval(days => $1), 'UTC')"
STREAMS = "SELECT id FROM cluster.streams WHERE id > $1 ORDER BY id LIMIT $2"
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
# Waits at most a second for the lock (writers queue behind a waiting lock); SHARE lets reads
# through and holds inserts back until the drop is done.
DROP_EMPTIED = (
    "SET LOCAL lock_timeout = '1s'",
    "LOCK TABLE ONLY cluster.raw_points, cluster.processed_points, cluster.system_points"
    " IN SHARE MODE",
)
ROWS_BEFORE = """
SELECT EXISTS (SELECT FROM cluster.raw_points WHERE ts < $1)
    OR EXISTS (SELECT FROM cluster.processed_points WHERE ts < $1)
    OR EXISTS (SELECT FROM cluster.system_points WHERE ts < $1)"""
DROP_CHUNKS = """
SELECT (SELECT count(*) FROM drop_chunks('cluster.raw_points', older_than => $1::timestamptz))
     + (SELECT count(*) FROM drop_chunks('cluster.processed_points', older_than => $1::timestamptz))
     + (SELECT count(*) FROM drop_chunks('cluster.system_points', older_than => $1::timestamptz))"""


class CompactionResult(msgspec.Struct, frozen=True):
    days: int
    """Stream-days moved into the compact tier."""
    points: int
    """Points in the compact rows written."""
    chunks: int
    """Emptied row-tier chunks dropped."""


async def compact(
    pool: asyncpg.Pool, settings: CompactionSettings, stop: asyncio.Event | None = None
) -> CompactionResult:
    """One round: every stream-day older than the age, then the emptied chunks."""
    cutoff: datetime = await pool.fetchval(CUTOFF, settings.after_days)
    days = points = 0
    after = 0
    while stop is None or not stop.is_set():
        streams = [r["id"] for r in await pool.fetch(STREAMS, after, settings.page)]
        if not streams:
            break
        after = streams[-1]
        # A stream may have several old days: ask again until none of the page has one.
        while stop is None or not stop.is_set():
            oldest = await pool.fetch(OLDEST_DAYS, streams, cutoff)
            if not oldest:
                break
            for row in oldest:  # a transaction each
                points += await pool.fetchval(COMPACT_DAY, row["stream_id"], row["day"])
                days += 1
    chunks = 0 if stop is not None and stop.is_set() else await drop_emptied(pool, cutoff)
    COMPACTED.inc(points)
    return CompactionResult(days=days, points=points, chunks=chunks)


async def drop_emptied(pool: asyncpg.Pool, cutoff: datetime) -> int:
    """Drop the row-tier chunks wholly before ``cutoff`` if no row is left in them."""
    async with pool.acquire() as conn, conn.transaction():
        try:
            for statement in DROP_EMPTIED:
                await conn.execute(statement)
        except asyncpg.LockNotAvailableError:
            return 0  # busy: the next round tries again
        if await conn.fetchval(ROWS_BEFORE, cutoff):
            return 0  # late points came in: compacted next round
        dropped: int = await conn.fetchval(DROP_CHUNKS, cutoff)
        return dropped


def compaction(database: DatabaseSettings, settings: CompactionSettings) -> Periodic:
    """The engine's compaction loop (a background service; idle when compaction is off)."""

    async def work(pool: asyncpg.Pool, stop: asyncio.Event) -> dict[str, int]:
        if not settings.after_days:
            return {}
        return msgspec.structs.asdict(await compact(pool, settings, stop))

    return Periodic("compaction", database, settings.interval, work)
