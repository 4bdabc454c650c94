"""Each engine test gets its own feed (helpers in tests/support/engine.py), so tests never see
each other's points; tests of what works on the whole database (retention, compaction) get a
database of their own."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator

import asyncpg
import httpx
import pytest

from energy_platform import seeding
from energy_platform.core.db.pool import create_pool
from energy_platform.core.settings import DatabaseSettings, Settings
from tests.support.data import YEAR, data_api
from tests.support.databases import create_session_database
from tests.support.engine import Feed, NewFeed

_serials = itertools.count(1)


@pytest.fixture
def new_feed(db: asyncpg.Connection) -> NewFeed:
    async def make(timezone: str = "Europe/Prague") -> Feed:
        n = next(_serials)
        owner = await seeding.add_user(db, f"engine-user-{n}-{id(db)}")
        sn = f"E{id(db) % 0xFFFFFFFF:08X}{n:07X}"
        feed_id = await seeding.add_feed(
            db, owner.id, sn, timezone=timezone, start=YEAR[0], end=YEAR[1]
        )
        return Feed(db, feed_id, sn, owner.token)

    return make


@pytest.fixture
def own_database(database_server_url: str) -> Iterator[str]:
    """A database of the test's own, migrated, dropped afterwards."""
    url = create_session_database(database_server_url)
    yield url
    seeding.drop_database(url)


@pytest.fixture
async def pool(own_database: str) -> AsyncIterator[asyncpg.Pool]:
    """A pool on ``own_database``."""
    pool = await create_pool(DatabaseSettings(url=own_database))
    yield pool
    await pool.close()


@pytest.fixture
async def api(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """The data API on a free port, and a client of it (the rollup tests read through it)."""
    async with data_api(settings) as url, httpx.AsyncClient(base_url=url) as client:
        yield client
