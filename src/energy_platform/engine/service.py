"""The engine service: owns a database pool on which its jobs run until stopped."""

from __future__ import annotations

import asyncio

from energy_platform.db.pool import create_pool
from energy_platform.settings import DatabaseSettings


class EngineService:
    name = "engine"

    def __init__(self, settings: DatabaseSettings) -> None:
        self._settings = settings

    async def run(self, stop: asyncio.Event) -> None:
        pool = await create_pool(self._settings)
        try:
            await stop.wait()
        finally:
            await pool.close()
