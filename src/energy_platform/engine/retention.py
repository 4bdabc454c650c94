"""Retention: how long each kind of data stays (``EP_RETENTION_*``), enforced once an interval.

Points of raw, processed and system streams go a whole chunk at a time (TimescaleDB's
``drop_chunks``, in the Apache-2 build): only chunks entirely older than the age, so nothing
younger is ever touched, and dropping a chunk costs no row-by-row delete. Forwarder points go
row by row, and only those every customer they belong to has had delivered (the customer's
storage cursor, ``delivery_state.seen``, covers them); a point stored while its homebase was
registered to nobody was never deliverable. The delivery log goes by attempt time.
"""

from __future__ import annotations

import asyncio

import asyncpg
import structlog
from prometheus_client import Counter

from energy_platform.background import sleep_unless_stopped
from energy_platform.db.pool import create_pool
from energy_platform.devices.ingest.faults import is_outside_fault
from energy_platform.settings import DatabaseSettings, RetentionSettings

log = structlog.get_logger()
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


async def enforce(pool: asyncpg.Pool, settings: RetentionSettings) -> dict[str, int]:
    """One round over every kind with an age: what each removed (chunks or rows)."""
    removed: dict[str, int] = {}
    for kind, days, statement in (
        ("raw_chunks", settings.raw_days, DROP_RAW),
        ("processed_chunks", settings.processed_days, DROP_PROCESSED),
        ("system_chunks", settings.system_days, DROP_SYSTEM),
    ):
        if days:
            removed[kind] = await pool.fetchval(statement, days)
    if settings.delivery_log_days:
        removed["delivery_log"] = _rows(
            await pool.execute(DELETE_DELIVERY_LOG, settings.delivery_log_days)
        )
    if settings.forwarder_points_days:
        removed["forwarder_points"] = 0
        while True:  # small transactions: ingest into the same chunks is never held up long
            rows = _rows(
                await pool.execute(
                    DELETE_FORWARDER_POINTS, settings.forwarder_points_days, settings.batch
                )
            )
            removed["forwarder_points"] += rows
            if rows < settings.batch:
                break
    for kind, count in removed.items():
        REMOVED.labels(kind).inc(count)
    return removed


def _rows(status: str) -> int:
    """The row count of a command status such as ``DELETE 12``."""
    return int(status.rsplit(" ", 1)[-1])


class Retention:
    """The engine's retention loop (a background service)."""

    name = "retention"

    def __init__(self, database: DatabaseSettings, settings: RetentionSettings) -> None:
        self._database = database
        self._settings = settings

    async def run(self, stop: asyncio.Event) -> None:
        pool = await create_pool(self._database)
        try:
            while not stop.is_set():
                try:
                    removed = await enforce(pool, self._settings)
                    log.info("retention enforced", **removed)
                except Exception as e:
                    if not is_outside_fault(e):
                        raise
                    # The next round retries: nothing is half-removed (each statement is one).
                    log.warning("retention failed; retrying", error=type(e).__name__)
                await sleep_unless_stopped(stop, self._settings.interval)
        finally:
            await pool.close()
