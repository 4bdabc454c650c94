"""Where a homebase's data goes: its feed, or the forwarder while it is registered there."""

from __future__ import annotations

import asyncpg
import msgspec

from energy_platform.core.cache import BoundedCache

ROUTE = """
SELECT (SELECT id FROM cluster.feeds WHERE homebase_sn = $1) AS feed_id,
       EXISTS (SELECT 1 FROM forwarder.registrations WHERE homebase_sn = $1) AS forwarded"""


class Route(msgspec.Struct, frozen=True):
    sn: str
    feed_id: int | None
    """None: the data goes to the forwarder."""


_NO_ROUTE = Route("", None)


class RouteTable:
    """Cached for ``ttl`` seconds: a registration takes effect after at most that delay."""

    def __init__(self, pool: asyncpg.Pool, ttl: float, size: int) -> None:
        self._pool = pool
        self._cache: BoundedCache[str, Route] = BoundedCache(size, ttl)

    async def resolve(self, sn: str) -> Route | None:
        """None when the homebase has neither a feed nor a registration."""
        cached = self._cache.get(sn)
        if cached is not None:
            return None if cached is _NO_ROUTE else cached
        row = await self._pool.fetchrow(ROUTE, sn)
        route: Route | None = None
        if row is not None and row["forwarded"]:
            route = Route(sn, None)
        elif row is not None and row["feed_id"] is not None:
            route = Route(sn, row["feed_id"])
        self._cache.put(sn, _NO_ROUTE if route is None else route)
        return route
