"""The engine's round that keeps the live log to ``EP_LIVE_REPLAY_S`` (cluster.live_prune).

A round that fails for any reason but the server's state (``core/faults.py::fails_alone``: a
statement timeout, a program limit) is narrowed down to the stream: each stream's old events go
alone, and a stream whose removal fails keeps them, logged and counted
(``ep_live_pruning_skipped_streams``), while every other stream's go; the next round tries it
again.
"""

from __future__ import annotations

import asyncio

import asyncpg
import structlog
from prometheus_client import Counter

from energy_platform.core.background import Periodic
from energy_platform.core.faults import fails_alone
from energy_platform.core.settings import DatabaseSettings, LiveSettings
from energy_platform.live.queries import PRUNABLE_STREAMS, PRUNE, PRUNE_STREAM

log = structlog.get_logger()
SKIPPED = Counter(
    "ep_live_pruning_skipped_streams", "Streams whose old live events a pruning round kept"
)


async def prune(pool: asyncpg.Pool, keep_s: float) -> int:
    """One round: the events older than ``keep_s`` seconds removed; on a failure of the whole,
    a stream at a time, skipping the streams that fail. How many went."""
    try:
        removed: int = await pool.fetchval(PRUNE, keep_s)
    except asyncpg.PostgresError as e:
        if not fails_alone(e):
            raise
    else:
        return removed
    removed = 0
    for row in await pool.fetch(PRUNABLE_STREAMS, keep_s):
        try:
            removed += await pool.fetchval(PRUNE_STREAM, keep_s, row["stream_id"])
        except asyncpg.PostgresError as e:
            if not fails_alone(e):
                raise
            SKIPPED.inc()
            log.warning(
                "live log pruning skipped a stream",
                stream=row["stream_id"],
                sqlstate=e.sqlstate,
                error=str(e),
            )
    return removed


def live_pruning(database: DatabaseSettings, live: LiveSettings) -> Periodic:
    """A background service: every tenth of the replay window (at most a minute), events older
    than the window go."""

    async def work(pool: asyncpg.Pool, _: asyncio.Event) -> dict[str, int]:
        return {"live_events_removed": await prune(pool, float(live.replay_s))}

    return Periodic("live-log", database, min(60.0, live.replay_s / 10), work)
