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

from energy_platform.core.background import sleep_unless_stopped
from energy_platform.core.db.listening import listening
from energy_platform.core.settings import DatabaseSettings

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

        async def session(_: asyncpg.Connection, lost: asyncio.Event) -> None:
            self.wake_all()  # whatever was committed while nobody listened
            while not (stop.is_set() or lost.is_set()):
                await sleep_unless_stopped(stop, 3600.0, lost)

        await listening(settings, {CHANNEL: self.wake_all}, stop, session, who="engine wake-up")
