"""The engine's housekeeping loops (retention, compaction): a round every interval on a pool of
their own. A database fault ends a round, which the next one retries: each round's statements
are small transactions that leave nothing half-done."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import asyncpg
import structlog
from prometheus_client import Counter, Gauge

from energy_platform.background import sleep_unless_stopped
from energy_platform.db.pool import create_pool
from energy_platform.devices.ingest.faults import is_outside_fault
from energy_platform.settings import DatabaseSettings

log = structlog.get_logger()
ROUNDS = Counter("ep_housekeeping_rounds_total", "Rounds by loop and outcome", ["loop", "outcome"])
LAST_SUCCESS = Gauge(
    "ep_housekeeping_last_success_timestamp_seconds", "When a round last succeeded", ["loop"]
)
FAILURES = Gauge(
    "ep_housekeeping_consecutive_failures", "Rounds failed since the last success", ["loop"]
)

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
                    # Counted before anything else: a failing round is what an operator must
                    # see (alerting rule EPHousekeepingFailing), not only a line in the log.
                    ROUNDS.labels(self.name, "failed").inc()
                    FAILURES.labels(self.name).inc()
                    if not is_outside_fault(e):
                        raise
                    log.warning(f"{self.name} failed; retrying", error=type(e).__name__)
                else:
                    ROUNDS.labels(self.name, "ok").inc()
                    LAST_SUCCESS.labels(self.name).set_to_current_time()
                    FAILURES.labels(self.name).set(0)
                await sleep_unless_stopped(stop, self._interval)
        finally:
            await pool.close()
