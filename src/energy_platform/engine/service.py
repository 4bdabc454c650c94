"""The engine service: drains the processing queues every poll interval and at each bucket end.

Several engine processes may run against one database: intake takes disjoint dirty ranges
(SKIP LOCKED) and processing takes whole feeds under advisory locks, so no bucket is computed
by two workers at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import asyncpg
import msgspec
import structlog
from prometheus_client import Counter

from energy_platform.background import sleep_unless_stopped
from energy_platform.db.pool import Connection, create_pool
from energy_platform.engine.processing import BUCKET, intake, process_batch
from energy_platform.engine.rollups import rollup_batch
from energy_platform.settings import DatabaseSettings, EngineSettings

log = structlog.get_logger()
POINTS_WRITTEN = Counter("ep_engine_points_written", "Processed points inserted or changed")
POINTS_DELETED = Counter("ep_engine_points_deleted", "Processed points that no longer qualified")
STREAMS_CREATED = Counter("ep_engine_streams_created", "Processed streams created by the engine")
HOURS_WRITTEN = Counter("ep_engine_hourly_rollups_written", "Hourly rollups inserted or changed")
# Wake a little after a bucket closes, so that its end is behind the database's clock too.
BOUNDARY_MARGIN = 0.2

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    return datetime.now(UTC)


class EngineService:
    name = "engine"

    def __init__(
        self,
        settings: DatabaseSettings,
        engine: EngineSettings | None = None,
        *,
        clock: Clock = system_clock,
    ) -> None:
        self._settings = settings
        self._engine = engine or EngineSettings()
        self._clock = clock

    async def run(self, stop: asyncio.Event) -> None:
        pool = await create_pool(self._settings)
        try:
            async with asyncio.TaskGroup() as group:
                for n in range(self._engine.workers):
                    group.create_task(self._work(pool, stop), name=f"engine-worker-{n}")
        finally:
            await pool.close()

    async def _work(self, pool: asyncpg.Pool, stop: asyncio.Event) -> None:
        while not stop.is_set():
            rollups_left = False
            try:
                async with pool.acquire() as conn:
                    # One rollup batch a round: new points and closed buckets go first, and a
                    # backlog of rollups (thousands of stream-hours a minute) catches up between.
                    done = await drain(conn, self._engine, self._clock, stop, rollup_batches=1)
                    rollups_left = done.rollups_left
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
                # A failed transaction leaves the queues as they were: the next round retries.
                log.warning("processing failed; retrying", error=f"{type(e).__name__}: {e}")
            if not rollups_left:
                await sleep_unless_stopped(stop, self._next_wake())

    def _next_wake(self) -> float:
        seconds = self._clock().timestamp()
        to_boundary = BUCKET.total_seconds() - seconds % BUCKET.total_seconds()
        return min(self._engine.poll_interval, to_boundary + BOUNDARY_MARGIN)


class Drained(msgspec.Struct, frozen=True):
    written: int
    """Processed points written."""
    rollups_left: bool
    """The last rollup batch was full: more queued periods may be due."""


async def drain(
    conn: Connection,
    settings: EngineSettings,
    clock: Clock = system_clock,
    stop: asyncio.Event | None = None,
    *,
    rollup_batches: int | None = None,
) -> Drained:
    """Take all dirty ranges in, process closed work until none is left, then up to
    ``rollup_batches`` batches (default: all) of the rollups that waited long enough."""
    while not (stop and stop.is_set()):
        taken = await intake(
            conn,
            batch=settings.intake_batch,
            currency=settings.currency,
            work_mem=settings.work_mem,
        )
        STREAMS_CREATED.inc(taken.created)
        if taken.claimed < settings.intake_batch:
            break
    written = 0
    while not (stop and stop.is_set()):
        result = await process_batch(
            conn,
            now=clock(),
            feeds=settings.batch_feeds,
            max_span=timedelta(seconds=settings.max_span),
            work_mem=settings.work_mem,
        )
        if not result.periods:
            break
        # Counted, not logged: a line per batch would drown the log of a busy engine.
        POINTS_WRITTEN.inc(result.written)
        POINTS_DELETED.inc(result.deleted)
        written += result.written
    batches, full = 0, False
    while not (stop and stop.is_set()) and (rollup_batches is None or batches < rollup_batches):
        rolled = await rollup_batch(conn, batch=settings.rollup_batch, delay=settings.rollup_delay)
        HOURS_WRITTEN.inc(rolled.written)
        batches += 1
        full = rolled.periods == settings.rollup_batch
        if not full:
            break
    return Drained(written, full)
