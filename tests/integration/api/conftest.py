"""The data API served by a real uvicorn on a free port, over the world of
tests/support/data.py."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import psycopg
import pytest
import pytest_asyncio

from energy_platform.api import app as data
from energy_platform.core.http.server import HttpService
from energy_platform.core.settings import Settings
from tests.support.data import World, seed
from tests.support.services import free_port, running


@pytest.fixture(scope="module")
def world_data(database_url: str) -> Iterator[World]:
    with psycopg.connect(database_url) as conn:
        world = seed(conn)
    yield world
    with psycopg.connect(database_url) as conn:
        conn.execute(
            "DELETE FROM forwarder.registrations WHERE homebase_sn LIKE 'D00000000000000%%'"
        )
        conn.execute("DELETE FROM cluster.feeds WHERE id = ANY(%s)", (list(world.feeds.values()),))
        conn.execute("DELETE FROM cluster.users WHERE id = ANY(%s)", (list(world.users.values()),))


@pytest_asyncio.fixture(scope="module")
async def world(world_data: World, settings: Settings) -> AsyncIterator[World]:
    port = free_port()
    service = HttpService("api", data.create_app(settings), "127.0.0.1", port)
    world_data.url = f"http://127.0.0.1:{port}"
    async with running(service, ready_urls=(world_data.url + "/healthz",)):
        yield world_data
