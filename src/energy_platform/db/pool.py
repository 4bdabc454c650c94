"""asyncpg pools for the services' hot paths."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg

from energy_platform.errors import Unavailable
from energy_platform.settings import DatabaseSettings

PROBE_TIMEOUT = 2.0


async def create_pool(settings: DatabaseSettings, *, generic_plans: bool = False) -> asyncpg.Pool:
    """Open a pool lazily: a service starts even while the database is down and connects later.

    ``generic_plans``: plan each prepared statement once per connection. PostgreSQL otherwise
    keeps re-planning a statement on hypertables at every call (TimescaleDB makes the generic
    plan look costlier than it runs), about 1 ms each time: most of a short query's cost.
    """
    pool = asyncpg.create_pool(
        settings.url,
        min_size=0,
        max_size=settings.pool_max,
        timeout=settings.connect_timeout,
        command_timeout=60,
        server_settings={"plan_cache_mode": "force_generic_plan"} if generic_plans else None,
    )
    await pool
    return pool


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
