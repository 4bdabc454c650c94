"""Writing a raw stream's history over the data API, as its owner (the history and undo
tests)."""

from __future__ import annotations

import json

import asyncpg
import httpx

from tests.support.engine import Feed


def auth(feed: Feed) -> dict[str, str]:
    return {"Authorization": f"Bearer {feed.owner_token}"}


def points_json(points: list[tuple[float, float]]) -> bytes:
    return json.dumps(points).encode()


async def send(
    api: httpx.AsyncClient,
    feed: Feed,
    stream: int,
    body: bytes,
    content_type: str,
    *,
    interval: int | None = None,
) -> httpx.Response:
    """``POST .../data`` with ``body`` (``?interval=``: values are the Wh of each interval)."""
    return await api.post(
        f"/feeds/{feed.id}/streams/{stream}/data",
        content=body,
        headers={**auth(feed), "Content-Type": content_type},
        params={} if interval is None else {"interval": interval},
    )


async def remove(
    api: httpx.AsyncClient, feed: Feed, stream: int, time_from: int, time_to: int
) -> httpx.Response:
    """``DELETE .../data`` between the two times."""
    return await api.delete(
        f"/feeds/{feed.id}/streams/{stream}/data",
        params={"time_from": time_from, "time_to": time_to},
        headers=auth(feed),
    )


async def undo(api: httpx.AsyncClient, feed: Feed, correction: str) -> httpx.Response:
    """``POST /feeds/F/corrections/C/undo``."""
    return await api.post(f"/feeds/{feed.id}/corrections/{correction}/undo", headers=auth(feed))


async def points_of(db: asyncpg.Connection, stream: int) -> dict[int, float]:
    """The stream's raw points in the row tier, Unix seconds to value."""
    rows = await db.fetch(
        "SELECT extract(epoch FROM ts)::int8 AS t, value FROM cluster.raw_points"
        " WHERE stream_id = $1 ORDER BY ts",
        stream,
    )
    return {r["t"]: r["value"] for r in rows}
