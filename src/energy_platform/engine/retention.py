"""Retention: how long each kind of data stays (``EP_RETENTION_*``), enforced once an interval.

Points of raw, processed and system streams go a whole chunk at a time in the row tier
(TimescaleDB's ``drop_chunks``, in the Apache-2 build: only chunks entirely older than the age,
so nothing younger is ever touched) and a stream-day at a time in the compact tier. Forwarder
points go row by row, and only those every customer they belong to has had delivered (the
customer's storage cursor, ``delivery_state.seen``, covers them); a point stored while its
homebase was registered to nobody was never deliverable. The delivery log goes by attempt time,
the audit of corrections (``EP_HISTORY_CORRECTIONS_DAYS``) by when they were made, the devices'
events (``EP_NOTIFICATIONS_EVENTS_DAYS``) by when they arrived.

A run over the compact tier that fails for any reason but the server's state is narrowed down
to the stream: each stream's old days are removed alone, and one that fails is parked for
retention (``engine/parking.py::skip_stream``), skipped by later rounds until ``admin engine
retry``, while the round goes on for every other stream.
"""

from __future__ import annotations

import asyncio

import asyncpg
from prometheus_client import Counter

from energy_platform.core.background import Periodic
from energy_platform.core.faults import fails_alone
from energy_platform.core.settings import DatabaseSettings, RetentionSettings
from energy_platform.engine.compaction import utc_day
from energy_platform.engine.parking import STREAMS_CLEARED, skip_stream

REMOVED = Counter("ep_retention_removed", "Rows or chunks removed by retention", ["kind"])

DROP_RAW = """
SELECT count(*) FROM drop_chunks('cluster.raw_points',
                                 older_than => now() - make_interval(days => $1))"""
DROP_PROCESSED = """
SELECT count(*) FROM drop_chunks('cluster.processed_points',
                                 older_than => now() - make_interval(days => $1))"""
DROP_SYSTEM = """
SELECT count(*) FROM drop_chunks('cluster.system_points',
                                 older_than => now() - make_interval(days => $1))"""
# The compact tier's days of one stream type that ended before the age (by keys: a hypertable's
# ctid is not unique across its chunks), of one stream ($3; null: every stream not parked for
# retention).
DELETE_COMPACT = """
DELETE FROM cluster.point_days d
 USING (SELECT c.stream_id, c.day
          FROM cluster.point_days c
          JOIN cluster.streams s ON s.id = c.stream_id
         WHERE s.type = $1
           AND c.day < ((now() - make_interval(days => $2)) AT TIME ZONE 'UTC')::date
           AND ($3::bigint IS NULL OR c.stream_id = $3)
           AND c.stream_id NOT IN (SELECT stream_id FROM cluster.parked_work
                                    WHERE stage = 'retention' AND retried_at IS NULL)
         LIMIT $4) x
 WHERE d.stream_id = x.stream_id AND d.day = x.day"""
# The streams of one type with compact days older than the age, for a run narrowed down to them.
COMPACT_STREAMS = """
SELECT DISTINCT c.stream_id, min(c.day) OVER (PARTITION BY c.stream_id) AS first_day
  FROM cluster.point_days c
  JOIN cluster.streams s ON s.id = c.stream_id
 WHERE s.type = $1
   AND c.day < ((now() - make_interval(days => $2)) AT TIME ZONE 'UTC')::date
   AND c.stream_id NOT IN (SELECT stream_id FROM cluster.parked_work
                            WHERE stage = 'retention' AND retried_at IS NULL)"""
# Measured and received before the cutoff (the measurement time lets old chunks be skipped),
# and no customer it belongs to is still waiting for it.
DELETE_FORWARDER_POINTS = """
WITH doomed AS (
    SELECT p.stream_id, p.ts
      FROM forwarder.points p
      JOIN forwarder.streams s ON s.id = p.stream_id
     WHERE p.ts < now() - make_interval(days => $1)
       AND p.received_at < now() - make_interval(days => $1)
       AND NOT EXISTS (
           SELECT 1 FROM forwarder.registration_periods r
             LEFT JOIN forwarder.delivery_state d ON d.customer_id = r.customer_id
            WHERE r.homebase_sn = s.homebase_sn AND r.period @> p.received_at
              AND NOT coalesce(forwarder.visible(p.stored_by, d.seen), false))
     LIMIT $2)
DELETE FROM forwarder.points p USING doomed d WHERE p.stream_id = d.stream_id AND p.ts = d.ts"""
DELETE_DELIVERY_LOG = """
DELETE FROM forwarder.delivery_log WHERE attempted_at < now() - make_interval(days => $1)"""
# A correction's points (cluster.correction_points) go with its log row (ON DELETE CASCADE).
DELETE_CORRECTIONS = """
DELETE FROM cluster.correction_log WHERE made_at < now() - make_interval(days => $1)"""
# Devices' events by arrival, through the index on their UTC arrival time
# (cluster.device_events_arrival), and only those the power-change rule has read (its
# position): an event is never removed before the rule compared it.
DELETE_EVENTS = """
DELETE FROM cluster.device_events d
 WHERE d.id IN (
       SELECT e.id FROM cluster.device_events e
        WHERE (e.received_at AT TIME ZONE 'UTC')
              < (now() - make_interval(days => $1)) AT TIME ZONE 'UTC'
          AND e.id <= coalesce((SELECT r.position FROM cluster.rule_positions r
                                 WHERE r.rule = 'power_change'), 0)
        LIMIT $2)"""


async def enforce(
    pool: asyncpg.Pool,
    settings: RetentionSettings,
    corrections_days: int = 0,
    events_days: int = 0,
) -> dict[str, int]:
    """One round over every kind with an age: what each removed (chunks or rows).
    ``corrections_days``: ``EP_HISTORY_CORRECTIONS_DAYS``, ``events_days``:
    ``EP_NOTIFICATIONS_EVENTS_DAYS`` (0: kept for ever)."""
    removed: dict[str, int] = {}
    for kind, days, statement in (
        ("raw", settings.raw_days, DROP_RAW),
        ("processed", settings.processed_days, DROP_PROCESSED),
        ("system", settings.system_days, DROP_SYSTEM),
    ):
        if days:
            removed[f"{kind}_chunks"] = await pool.fetchval(statement, days)
            removed[f"{kind}_compact_days"] = await _compact_days(pool, kind, days, settings.batch)
    if settings.delivery_log_days:
        removed["delivery_log"] = _rows(
            await pool.execute(DELETE_DELIVERY_LOG, settings.delivery_log_days)
        )
    if settings.forwarder_points_days:
        removed["forwarder_points"] = await _batches(
            pool, DELETE_FORWARDER_POINTS, settings.batch, settings.forwarder_points_days
        )
    if corrections_days:
        removed["corrections"] = _rows(await pool.execute(DELETE_CORRECTIONS, corrections_days))
    if events_days:
        removed["device_events"] = await _batches(pool, DELETE_EVENTS, settings.batch, events_days)
    for kind, count in removed.items():
        REMOVED.labels(kind).inc(count)
    return removed


async def _compact_days(pool: asyncpg.Pool, kind: str, days: int, batch: int) -> int:
    """The compact days of ``kind`` older than ``days`` removed; on a failure that is not the
    server's, a stream at a time, skipping (parking) the streams that fail."""
    total = 0
    failed: list[int] = []
    try:
        total = await _batches(pool, DELETE_COMPACT, batch, kind, days, None)
    except asyncpg.PostgresError as e:
        if not fails_alone(e):
            raise
        total, failed = await _each_stream(pool, kind, days, batch)
    await pool.execute(STREAMS_CLEARED, "retention", failed)
    return total


async def _each_stream(
    pool: asyncpg.Pool, kind: str, days: int, batch: int
) -> tuple[int, list[int]]:
    """:func:`_compact_days` a stream at a time: the days removed, the streams that failed
    (parked)."""
    removed = 0
    failed: list[int] = []
    for row in await pool.fetch(COMPACT_STREAMS, kind, days):
        try:
            removed += await _batches(pool, DELETE_COMPACT, batch, kind, days, row["stream_id"])
        except asyncpg.PostgresError as e:
            if not fails_alone(e):
                raise
            await skip_stream(pool, "retention", row["stream_id"], utc_day(row["first_day"]), e)
            failed.append(row["stream_id"])
    return removed, failed


async def _batches(pool: asyncpg.Pool, statement: str, batch: int, *args: object) -> int:
    """Run a deleting ``statement`` (its last parameter: ``batch``, the rows per run) until a
    run comes back short: small transactions, so that writers into the same chunks never wait
    long."""
    total = 0
    while True:
        rows = _rows(await pool.execute(statement, *args, batch))
        total += rows
        if rows < batch:
            return total


def _rows(status: str) -> int:
    """The row count of a command status such as ``DELETE 12``."""
    return int(status.rsplit(" ", 1)[-1])


def retention(
    database: DatabaseSettings,
    settings: RetentionSettings,
    corrections_days: int = 0,
    events_days: int = 0,
) -> Periodic:
    """The engine's retention loop (a background service)."""

    async def work(pool: asyncpg.Pool, _: asyncio.Event) -> dict[str, int]:
        return await enforce(pool, settings, corrections_days, events_days)

    return Periodic("retention", database, settings.interval, work)
