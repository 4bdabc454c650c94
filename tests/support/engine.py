"""Feeds for engine tests: raw points stored by ingest's own store, and the engine run until
its queues are empty (the ``new_feed`` fixture is in the engine tests' conftest)."""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

import asyncpg
import httpx

from energy_platform import seeding
from energy_platform.core.settings import EngineSettings
from energy_platform.engine.service import drain

# Rollups are taken at once: a test does not wait for the delay that batches live data.
ENGINE = EngineSettings(rollup_delay=0)
# What the tests' money is in (EP_BILLING_CURRENCY): the engine gives it to new cost streams.
CURRENCY = "CZK"


@dataclass
class Feed:
    """One homebase's feed and what a test does with it."""

    db: asyncpg.Connection
    id: int
    sn: str
    owner_token: str

    async def raw_stream(
        self, channel: int, medium: int, idx: int | None = None, device: int = 1
    ) -> int:
        return await seeding.raw_stream(self.db, self.id, channel, medium, device=device, idx=idx)

    async def ingest(self, stream_id: int, points: Iterable[tuple[int, float]]) -> None:
        """Store a batch as ingest does (``seeding.write_points``): only the points it adds mark
        their range dirty, and a compacted day they fall in goes back to the row tier first."""
        await seeding.write_points(self.db, stream_id, points)

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


async def api_buckets(
    api: httpx.AsyncClient, feed: Feed, stream_id: int, resolution: str, **params: int
) -> list[list[float]]:
    """A stream's buckets per ``resolution`` as the data API answers its owner."""
    answer = await api.get(
        f"/feeds/{feed.id}/streams/{stream_id}/data",
        params={"resolution": resolution, "limit": 1000, **params},
        headers={"Authorization": f"Bearer {feed.owner_token}"},
    )
    assert answer.status_code == 200, answer.text
    result: list[list[float]] = answer.json()
    return result


_engines: weakref.WeakKeyDictionary[asyncpg.Connection, asyncpg.Connection] = (
    weakref.WeakKeyDictionary()
)


def drains_on(db: asyncpg.Connection, engine: asyncpg.Connection) -> None:
    """``process(db)`` runs the engine on ``engine``, a connection to the same database that
    outlives ``db`` (the ``db`` fixture's: the module's ``engine_db``)."""
    _engines[db] = engine


async def process(db: asyncpg.Connection) -> None:
    """Run the engine until both queues are empty (every test's data is long closed), on the
    long-lived connection ``db`` was paired with (``drains_on``), else on ``db`` itself, as the
    engine's worker keeps its connection and its plans (docs/engine.md#plans). On the test's
    own connection, a new one for each test, the compute statement was planned again in each
    test: 265 plans for 1,270 calls in a whole run, 60 s (pg_stat_statements); on one
    connection 166 plans, 46 s (what still plans again: a new chunk, an ANALYZE)."""
    await drain(_engines.get(db, db), ENGINE, currency=CURRENCY)


# Every processed point of one feed meets {act} as it is inserted: a test's own trigger on its
# own feed (format() of an integer id and of the test's constants, not of input).
ON_PROCESSED_INSERTS = """
CREATE FUNCTION cluster.test_refuse_{feed}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM cluster.streams WHERE id = NEW.stream_id AND feed_id = {feed}) THEN
        {act};
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER refuse_{feed} BEFORE INSERT ON cluster.processed_points
   FOR EACH ROW EXECUTE FUNCTION cluster.test_refuse_{feed}();
"""


async def fail_processing(
    db: asyncpg.Connection, feed_id: int, sqlstate: str, message: str
) -> None:
    """Make every processed point of the feed fail its insert with ``sqlstate``."""
    act = f"RAISE EXCEPTION '{message}' USING ERRCODE = '{sqlstate}'"
    await db.execute(ON_PROCESSED_INSERTS.format(feed=feed_id, act=act))


async def slow_processing(db: asyncpg.Connection, feed_id: int, seconds: float) -> None:
    """Make every processed point of the feed take ``seconds`` to insert."""
    await db.execute(ON_PROCESSED_INSERTS.format(feed=feed_id, act=f"PERFORM pg_sleep({seconds})"))


async def heal_processing(db: asyncpg.Connection, feed_id: int) -> None:
    """Undo :func:`fail_processing` or :func:`slow_processing`."""
    await db.execute(f"DROP TRIGGER refuse_{feed_id} ON cluster.processed_points")
    await db.execute(f"DROP FUNCTION cluster.test_refuse_{feed_id}()")
