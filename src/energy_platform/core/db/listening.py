"""A connection that LISTENs, kept up until the service stops: the engine's wake-ups and the
data API's live follower each hold one.

``listening`` connects, adds the channel callbacks, runs ``session`` while the connection
lasts, and after a fault of the world (database away, connection killed) connects again with
jittered backoff. A notification lost while nobody listened is the session's to make up for
at its start: it runs again on every new connection.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping

import asyncpg
import structlog

from energy_platform.core.background import Backoff, sleep_unless_stopped
from energy_platform.core.faults import is_outside_fault, world_faults_logged
from energy_platform.core.settings import DatabaseSettings

log = structlog.get_logger()
Notified = Callable[..., None]
"""asyncpg's listener callback: (connection, pid, channel, payload)."""
Session = Callable[[asyncpg.Connection, asyncio.Event], Awaitable[None]]
"""What runs while connected: given the connection and the event set when it is lost."""


async def listening(
    database: DatabaseSettings,
    channels: Mapping[str, Notified],
    stop: asyncio.Event,
    session: Session,
    *,
    who: str,
    cap: float = 30.0,
) -> None:
    """LISTEN on ``channels`` and run ``session`` until ``stop``; ``who`` names the listener
    in the log and, as its application_name, in pg_stat_activity."""
    backoff = Backoff(base=0.5, cap=cap)
    while not stop.is_set():
        try:
            conn = await asyncpg.connect(
                database.url,
                timeout=database.connect_timeout,
                server_settings={"application_name": who},
            )
        except Exception as e:
            if not is_outside_fault(e):
                raise
            log.warning(f"{who}: cannot listen", error=f"{type(e).__name__}: {e}")
            await sleep_unless_stopped(stop, backoff.next_delay())
            continue
        try:
            with world_faults_logged(f"{who}: listening failed"):
                lost = asyncio.Event()
                conn.add_termination_listener(lambda _, lost=lost: lost.set())
                for channel, notified in channels.items():
                    await conn.add_listener(channel, notified)
                backoff.reset()
                await session(conn, lost)
        finally:
            if not conn.is_closed():
                await conn.close(timeout=5)
        if not stop.is_set():
            await sleep_unless_stopped(stop, backoff.next_delay())
