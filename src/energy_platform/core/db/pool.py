"""asyncpg pools for the services' hot paths."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from energy_platform.core.errors import Unavailable
from energy_platform.core.settings import DatabaseSettings

PROBE_TIMEOUT = 2.0

Connection = asyncpg.Connection | PoolConnectionProxy
"""A connection of its own or one lent by a pool."""


async def create_pool(
    settings: DatabaseSettings,
    *,
    stateless_queries: bool = False,
    session: Mapping[str, str] | None = None,
) -> asyncpg.Pool:
    """Open a pool lazily: a service starts even while the database is down and connects later.

    ``stateless_queries``: the caller never changes session state (no SET, LISTEN, advisory
    locks or cursors outside a transaction), so a connection goes back to the pool without
    asyncpg's reset query (a second round trip per use), and each prepared statement is planned
    once per connection: by default PostgreSQL keeps re-planning statements on hypertables at
    every call (TimescaleDB makes the generic plan look dearer than it runs), about 1 ms each.
    An open transaction is still rolled back on release either way.

    ``session``: PostgreSQL settings each connection starts with (the data API's timeouts).
    """
    server_settings = dict(session or {})
    if stateless_queries:
        server_settings["plan_cache_mode"] = "force_generic_plan"
    pool = FairPool(
        settings.url,
        min_size=0,
        max_size=settings.pool_max,
        timeout=settings.connect_timeout,
        command_timeout=60,
        server_settings=server_settings or None,
        reset=_keep_session if stateless_queries else None,
    )
    await pool
    return pool


class FairPool(asyncpg.Pool):
    """An asyncpg pool that lends its connections first come, first served.

    asyncpg's own queue lets a caller that arrives just as a connection comes back take it
    before the waiter woken for it, which then queues again at the end: under load a few
    requests wait many turns (the data API's p99 was 9 times its p50 at 50 connections). A FIFO
    semaphore of the pool's size in front of it gives each caller its turn in arrival order.
    """

    def __init__(self, dsn: str, *, max_size: int, **kwargs: Any) -> None:
        # asyncpg.create_pool() builds its Pool with these defaults and takes no pool class.
        super().__init__(
            dsn,
            max_size=max_size,
            max_queries=50_000,
            max_inactive_connection_lifetime=300.0,
            loop=None,
            connection_class=asyncpg.Connection,
            record_class=asyncpg.Record,
            **kwargs,
        )
        self._turns = asyncio.Semaphore(max_size)

    # asyncpg's acquire() and every pool.fetch*() come through _acquire (not in its stubs); if
    # a release renamed it, tests/integration/test_pool.py would see callers served unfairly.
    async def _acquire(
        self,
        timeout: float | None,  # noqa: ASYNC109 - asyncpg's signature
    ) -> PoolConnectionProxy:
        # The timeout bounds the wait for a turn; once it is ours a connection is free.
        if timeout is None:
            await self._turns.acquire()
        else:
            async with asyncio.timeout(timeout):
                await self._turns.acquire()
        try:
            proxy: PoolConnectionProxy = await super()._acquire(timeout)  # type: ignore[misc]
        except BaseException:
            self._turns.release()
            raise
        return proxy

    async def release(
        self,
        connection: PoolConnectionProxy,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - asyncpg's signature
    ) -> None:
        lent = getattr(connection, "_con", None) is not None  # a second release gives no turn
        try:
            await super().release(connection, timeout=timeout)
        finally:
            if lent:
                self._turns.release()


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
