"""The engine's housekeeping loops (retention, compaction): a round every interval on a pool of
their own. A database fault ends a round, which the next one retries: each round's statements
are small transactions that leave nothing half-done."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import asyncpg
import structlog

from energy_platform.background import sleep_unless_stopped
from energy_platform.db.pool import create_pool
from energy_platform.devices.ingest.faults import is_outside_fault
from energy_platform.settings import DatabaseSettings

log = structlog.get_logger()

Round = Callable[[asyncpg.Pool, asyncio.Event], Awaitable[dict[str, int]]]


class Housekeeping:
    """A background service running ``work`` (which returns what it did, for the log) every
    ``interval`` seconds."""

    def __init__(self, name: str, database: DatabaseSettings, interval: float, work: Round) -> None:
        self.name = name
        self._database = database
        self._interval = interval
        self._work = work

    async def run(self, stop: asyncio.Event) -> None:
        pool = await create_pool(self._database)
        try:
            while not stop.is_set():
                try:
                    done = await self._work(pool, stop)
                    log.info(f"{self.name} round", **done)
                except Exception as e:
                    if not is_outside_fault(e):
                        raise
                    log.warning(f"{self.name} failed; retrying", error=type(e).__name__)
                await sleep_unless_stopped(stop, self._interval)
        finally:
            await pool.close()
