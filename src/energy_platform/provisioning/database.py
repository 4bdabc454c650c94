"""A pool opened for the life of a UDP service (the HTTP app opens its own in its lifespan)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg

from energy_platform.db.pool import create_pool
from energy_platform.errors import Unavailable
from energy_platform.settings import DatabaseSettings


class PoolHolder:
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
