"""The engine's round that keeps the live log to ``EP_LIVE_REPLAY_S`` (cluster.live_prune)."""

from __future__ import annotations

import asyncio

import asyncpg

from energy_platform.core.background import Periodic
from energy_platform.core.settings import DatabaseSettings, LiveSettings
from energy_platform.live.queries import PRUNE


def live_pruning(database: DatabaseSettings, live: LiveSettings) -> Periodic:
    """A background service: every tenth of the replay window (at most a minute), events older
    than the window go."""

    async def work(pool: asyncpg.Pool, _: asyncio.Event) -> dict[str, int]:
        return {"live_events_removed": await pool.fetchval(PRUNE, float(live.replay_s))}

    return Periodic("live-log", database, min(60.0, live.replay_s / 10), work)
