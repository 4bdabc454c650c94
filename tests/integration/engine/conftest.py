"""Each engine test gets its own feed (helpers in tests/support/engine.py), so tests never see
each other's points; tests of what works on the whole database (retention, compaction) get a
database of their own."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator

import asyncpg
import httpx
import pytest

from energy_platform.api import app as data
from energy_platform.core.db.pool import create_pool
from energy_platform.core.http.server import HttpService
from energy_platform.core.settings import DatabaseSettings, Settings
from energy_platform.core.tokens import token_digest
from tests.support.databases import create_session_database, drop_database
from tests.support.engine import Feed, NewFeed
from tests.support.services import free_port, running

_serials = itertools.count(1)


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


@pytest.fixture
def own_database(database_server_url: str) -> Iterator[str]:
    """A database of the test's own, migrated, dropped afterwards."""
    url = create_session_database(database_server_url)
    yield url
    drop_database(url)


@pytest.fixture
async def pool(own_database: str) -> AsyncIterator[asyncpg.Pool]:
    """A pool on ``own_database``."""
    pool = await create_pool(DatabaseSettings(url=own_database))
    yield pool
    await pool.close()


@pytest.fixture
async def api(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """The data API on a free port, and a client of it (the rollup tests read through it)."""
    port = free_port()
    service = HttpService("api", data.create_app(settings), "127.0.0.1", port)
    url = f"http://127.0.0.1:{port}"
    async with (
        running(service, ready_urls=(url + "/healthz",)),
        httpx.AsyncClient(base_url=url) as client,
    ):
        yield client
