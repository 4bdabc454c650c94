"""asyncpg pools for the services' hot paths."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from energy_platform.errors import Unavailable
from energy_platform.settings import DatabaseSettings

PROBE_TIMEOUT = 2.0

Connection = asyncpg.Connection | PoolConnectionProxy
"""A connection of its own or one lent by a pool."""


async def create_pool(
    settings: DatabaseSettings, *, stateless_queries: bool = False
) -> asyncpg.Pool:
    """Open a pool lazily: a service starts even while the database is down and connects later.

    ``stateless_queries``: the caller never changes session state (no SET, LISTEN, advisory
    locks or cursors outside a transaction), so a connection goes back to the pool without
    asyncpg's reset query (a second round trip per use), and each prepared statement is planned
    once per connection: by default PostgreSQL keeps re-planning statements on hypertables at
    every call (TimescaleDB makes the generic plan look dearer than it runs), about 1 ms each.
    An open transaction is still rolled back on release either way.
    """
    pool = asyncpg.create_pool(
        settings.url,
        min_size=0,
        max_size=settings.pool_max,
        timeout=settings.connect_timeout,
        command_timeout=60,
        server_settings={"plan_cache_mode": "force_generic_plan"} if stateless_queries else None,
        reset=_keep_session if stateless_queries else None,
    )
    await pool
    return pool


async def _keep_session(_: asyncpg.Connection) -> None:
    """Nothing to undo: see ``stateless_queries``."""


async def check_database(pool: asyncpg.Pool) -> None:
    """Raise :class:`Unavailable` unless the database answers a query promptly."""
    try:
        # Connecting is bounded by the pool's connect timeout, the query by this one.
        await pool.fetchval("SELECT 1", timeout=PROBE_TIMEOUT)
    except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
        raise Unavailable(f"database unreachable: {type(e).__name__}") from e


class PoolHolder:
    """A pool opened for the life of a non-HTTP service (an HTTP app opens its own)."""

    def __init__(self, settings: DatabaseSettings) -> None:
        self._settings = settings
        self._pool: asyncpg.Pool | None = None

    @property
    def pool(self) -> asyncpg.Pool:
        if self._pool is None:
            raise Unavailable("the database pool is not open")
        return self._pool

    @asynccontextmanager
    async def opened(self) -> AsyncIterator[None]:
        self._pool = await create_pool(self._settings)
        try:
            yield
        finally:
            pool, self._pool = self._pool, None
            await pool.close()
