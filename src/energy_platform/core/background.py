"""Background loops: jittered backoff between retries, sleeps that end when the service is
asked to stop, and the periodic round of retention, compaction, the rules and reconciliation.

Every loop (ingest, the engine, the rules, the forwarder, the lifecycle's restarts, the
simulators) waits through these, so a stop is never held up by a sleep and the retries of many
workers never fall into step."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable

import asyncpg
import structlog
from prometheus_client import Counter, Gauge

from energy_platform.core.db.pool import create_pool
from energy_platform.core.faults import world_faults_logged
from energy_platform.core.settings import DatabaseSettings

log = structlog.get_logger()
ROUNDS = Counter("ep_housekeeping_rounds_total", "Rounds by loop and outcome", ["loop", "outcome"])
LAST_SUCCESS = Gauge(
    "ep_housekeeping_last_success_timestamp_seconds", "When a round last succeeded", ["loop"]
)
FAILURES = Gauge(
    "ep_housekeeping_consecutive_failures", "Rounds failed since the last success", ["loop"]
)


class Backoff:
    """Delays of ``base * 2**n`` capped at ``cap``, each drawn uniformly from ``[0, delay]``."""

    def __init__(self, base: float = 0.5, cap: float = 30.0) -> None:
        self.base = base
        self.cap = cap
        self._attempt = 0

    def reset(self) -> None:
        self._attempt = 0

    def next_delay(self) -> float:
        delay = min(self.cap, self.base * 2**self._attempt)
        self._attempt += 1
        # Full jitter keeps many reconnecting workers from hitting the broker in step.
        return random.uniform(0, delay)  # noqa: S311 - not a secret


async def sleep_unless_stopped(
    stop: asyncio.Event, seconds: float, wake: asyncio.Event | None = None
) -> None:
    """Sleep ``seconds``, waking early when ``stop`` (or ``wake``, when given) is set; the
    caller checks ``stop`` after it, and clears ``wake``."""
    events = (stop,) if wake is None else (stop, wake)
    waits = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in waits:
            task.cancel()


Round = Callable[[asyncpg.Pool, asyncio.Event], Awaitable[dict[str, int]]]
"""One round of a periodic loop; returns what it did (counts), for the log."""


class Periodic:
    """A background service that runs ``work`` every ``interval`` seconds on a pool of its own
    (retention, compaction, the notification rules, broker-account reconciliation).

    The fault policy of ``core/faults.py`` decides what an error does: a fault of the world
    (database away, network) ends the round with a warning and the next round retries, since
    each round's statements are transactions that leave nothing half-done; anything else (a
    data error, a bug) fails the service, which the lifecycle logs and restarts with backoff.
    A round that did something logs its counts; an idle one logs nothing."""

    def __init__(self, name: str, database: DatabaseSettings, interval: float, work: Round) -> None:
        self.name = name
        self._database = database
        self._interval = interval
        self._work = work

    async def run(self, stop: asyncio.Event) -> None:
        pool = await create_pool(self._database)
        try:
            while not stop.is_set():
                with world_faults_logged(f"{self.name} round failed; next round retries"):
                    try:
                        done = await self._work(pool, stop)
                    except Exception:
                        # Counted whatever the fault: a failing round is what an operator must
                        # see (alerting rule EPHousekeepingFailing), not only a line in the log.
                        ROUNDS.labels(self.name, "failed").inc()
                        FAILURES.labels(self.name).inc()
                        raise
                    ROUNDS.labels(self.name, "ok").inc()
                    LAST_SUCCESS.labels(self.name).set_to_current_time()
                    FAILURES.labels(self.name).set(0)
                    if any(done.values()):
                        log.info(f"{self.name} round", **done)
                await sleep_unless_stopped(stop, self._interval)
        finally:
            await pool.close()
