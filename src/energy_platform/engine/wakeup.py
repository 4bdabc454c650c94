"""Wake the engine the moment ingest commits work, not at its next poll.

A statement trigger on ``cluster.dirty_ranges`` (sql/functions/20_engine.sql) runs
``pg_notify('ep_engine_work', '')`` in the transaction that stores points; PostgreSQL delivers
it when that transaction commits (never for one rolled back), and folds the notifications of one
transaction into one. :class:`Wakeups` keeps a connection that LISTENs on the channel and sets
every subscribed worker's event. While that connection is down, the engine still wakes every
``EP_ENGINE_POLL_INTERVAL`` and at each bucket end, as before: a lost notification costs at
most one poll interval, never work.
"""

from __future__ import annotations

import asyncio

import asyncpg
import structlog

from energy_platform.core.background import Backoff, sleep_unless_stopped
from energy_platform.core.faults import is_outside_fault, world_faults_logged
from energy_platform.core.settings import DatabaseSettings

log = structlog.get_logger()
CHANNEL = "ep_engine_work"


class Wakeups:
    """The events of the engine's workers, set by every notification on :data:`CHANNEL`."""

    def __init__(self) -> None:
        self._events: list[asyncio.Event] = []

    def subscribe(self) -> asyncio.Event:
        """A worker's own event: set on each notification; the worker clears it."""
        event = asyncio.Event()
        self._events.append(event)
        return event

    def wake_all(self, *_: object) -> None:
        """asyncpg's listener callback (connection, pid, channel, payload), and a reconnect's."""
        for event in self._events:
            event.set()

    async def listen(self, settings: DatabaseSettings, stop: asyncio.Event) -> None:
        """LISTEN until ``stop``; reconnect with backoff when the connection is lost."""
        backoff = Backoff(base=0.5, cap=30.0)
        while not stop.is_set():
            lost = asyncio.Event()
            try:
                conn = await asyncpg.connect(settings.url, timeout=settings.connect_timeout)
            except Exception as e:
                if not is_outside_fault(e):
                    raise
                log.warning("engine wake-up: cannot listen", error=f"{type(e).__name__}: {e}")
                await sleep_unless_stopped(stop, backoff.next_delay())
                continue
            try:
                with world_faults_logged("engine wake-up: listening failed"):
                    conn.add_termination_listener(lambda _, lost=lost: lost.set())
                    await conn.add_listener(CHANNEL, self.wake_all)
                    backoff.reset()
                    self.wake_all()  # whatever was committed while nobody listened
                    while not (stop.is_set() or lost.is_set()):
                        await sleep_unless_stopped(stop, 3600.0, lost)
            finally:
                if not conn.is_closed():
                    await conn.close(timeout=5)
            if not stop.is_set():
                await sleep_unless_stopped(stop, backoff.next_delay())
