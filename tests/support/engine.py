"""Feeds for engine tests: raw points stored the way ingest stores them, and the engine run
until its queues are empty (the ``new_feed`` fixture is in the engine tests' conftest)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

import asyncpg

from energy_platform.core.settings import EngineSettings
from energy_platform.engine.service import drain

# Rollups are taken at once: a test does not wait for the delay that batches live data.
ENGINE = EngineSettings(currency="CZK", rollup_delay=0)


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


async def process(db: asyncpg.Connection) -> None:
    """Run the engine until both queues are empty (every test's data is long closed)."""
    await drain(db, ENGINE)
