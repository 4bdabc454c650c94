"""Where a homebase's data goes: its feed, or the forwarder while it is registered there."""

from __future__ import annotations

import time

import asyncpg
import msgspec

ROUTE = """
SELECT (SELECT id FROM cluster.feeds WHERE homebase_sn = $1) AS feed_id,
       EXISTS (SELECT 1 FROM forwarder.registrations WHERE homebase_sn = $1) AS forwarded"""


class Route(msgspec.Struct, frozen=True):
    sn: str
    feed_id: int | None
    """None: the data goes to the forwarder."""


class RouteTable:
    """Cached for ``ttl`` seconds: a registration takes effect after at most that delay."""

    def __init__(self, pool: asyncpg.Pool, ttl: float) -> None:
        self._pool = pool
        self._ttl = ttl
        self._cache: dict[str, tuple[float, Route | None]] = {}

    async def resolve(self, sn: str) -> Route | None:
        """None when the homebase has neither a feed nor a registration."""
        now = time.monotonic()
        cached = self._cache.get(sn)
        if cached is not None and now - cached[0] < self._ttl:
            return cached[1]
        row = await self._pool.fetchrow(ROUTE, sn)
        route: Route | None = None
        if row is not None and row["forwarded"]:
            route = Route(sn, None)
        elif row is not None and row["feed_id"] is not None:
            route = Route(sn, row["feed_id"])
        self._cache[sn] = (now, route)
        return route
