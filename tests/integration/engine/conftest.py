"""Feeds for engine tests: raw points stored the way ingest stores them, and the engine run
until its queues are empty. Each test gets its own feed, so tests never see each other's points."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass

import asyncpg
import pytest
import pytest_asyncio

from energy_platform.engine.service import drain
from energy_platform.settings import EngineSettings
from energy_platform.tokens import token_digest

T0 = 1_767_225_600  # 2026-01-01T00:00:00Z, a bucket start (a multiple of 90 s)
ENGINE = EngineSettings(currency="CZK")
_serials = itertools.count(1)


@dataclass
class Feed:
    """One homebase's feed and what a test does with it."""

    db: asyncpg.Connection
    id: int
    owner_token: str

    async def raw_stream(
        self, channel: int, medium: int, idx: int | None = None, device: int = 1
    ) -> int:
        stream_id: int = await self.db.fetchval(
            "INSERT INTO cluster.streams (feed_id, type, channel, device, medium, idx)"
            " VALUES ($1, 'raw', $2, $3, $4, $5) RETURNING id",
            self.id,
            channel,
            device,
            medium,
            idx,
        )
        return stream_id

    async def ingest(self, stream_id: int, points: Iterable[tuple[float, float]]) -> None:
        """Store a batch as ingest does: the points and, in the same transaction, their range."""
        batch = [(stream_id, t, v) for t, v in points]
        async with self.db.transaction():
            await self.db.executemany(
                "INSERT INTO cluster.raw_points (stream_id, ts, value)"
                " VALUES ($1, to_timestamp($2), $3) ON CONFLICT DO NOTHING",
                batch,
            )
            await self.db.execute(
                "INSERT INTO cluster.dirty_ranges (stream_id, ts_from, ts_to)"
                " VALUES ($1, to_timestamp($2), to_timestamp($3))",
                stream_id,
                min(t for _, t, _ in batch),
                max(t for _, t, _ in batch),
            )

    async def points(self, title: str) -> dict[int, float]:
        """The processed points of the stream titled ``title``: {unix time: value}."""
        rows = await self.db.fetch(
            "SELECT extract(epoch FROM ts)::bigint AS t, value FROM cluster.processed_readings"
            " WHERE feed_id = $1 AND stream_title = $2 ORDER BY ts",
            self.id,
            title,
        )
        return {r["t"]: r["value"] for r in rows}

    async def stream_id(self, title: str) -> int:
        stream_id: int = await self.db.fetchval(
            "SELECT s.id FROM cluster.streams s JOIN cluster.stream_configs c ON c.stream_id = s.id"
            " WHERE s.feed_id = $1 AND c.title = $2",
            self.id,
            title,
        )
        return stream_id


NewFeed = Callable[..., Awaitable[Feed]]


@pytest_asyncio.fixture
async def db(database_url: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(database_url)
    try:
        yield conn
    finally:
        await conn.close()


@pytest.fixture
def new_feed(db: asyncpg.Connection) -> NewFeed:
    async def make(timezone: str = "Europe/Prague") -> Feed:
        n = next(_serials)
        token = f"engine-token-{n}-{id(db)}"
        owner = await db.fetchval(
            "INSERT INTO cluster.users (name, token_sha256) VALUES ($1, $2) RETURNING id",
            f"engine-user-{n}-{id(db)}",
            token_digest(token),
        )
        feed_id = await db.fetchval(
            "INSERT INTO cluster.feeds (owner_id, homebase_sn, subscription_from, subscription_to)"
            " VALUES ($1, $2, '2026-01-01T00:00:00Z', '2027-01-01T00:00:00Z') RETURNING id",
            owner,
            f"E{id(db) % 0xFFFFFFFF:08X}{n:07X}",
        )
        await db.execute(
            "INSERT INTO cluster.feed_configs (feed_id, title, timezone, validity)"
            " VALUES ($1, 'Home', $2, tstzrange(NULL, NULL))",
            feed_id,
            timezone,
        )
        return Feed(db, feed_id, token)

    return make


async def process(db: asyncpg.Connection) -> None:
    """Run the engine until both queues are empty (every test's data is long closed)."""
    await drain(db, ENGINE)
