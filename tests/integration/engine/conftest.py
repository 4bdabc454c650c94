"""Tests of what works on the whole database (retention, compaction) get a database of their
own; every other engine test gets its own feed (``new_feed``, registered in tests/conftest.py,
helpers in tests/support/engine.py), so tests never see each other's points."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import asyncpg
import pytest

from energy_platform.core.db.pool import create_pool
from energy_platform.core.settings import DatabaseSettings
from tests.support.databases import Databases


@pytest.fixture
def own_database(databases: Databases) -> Iterator[str]:
    """A database of the test's own, migrated, dropped afterwards."""
    url = databases.take()
    yield url
    databases.drop(url)


@pytest.fixture
async def pool(own_database: str) -> AsyncIterator[asyncpg.Pool]:
    """A pool on ``own_database``."""
    pool = await create_pool(DatabaseSettings(url=own_database))
    yield pool
    await pool.close()
