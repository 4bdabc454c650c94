"""The fixtures every test directory shares, registered here once; helpers that are not
fixtures live in tests/support/ and are imported from there (never from a conftest)."""

from __future__ import annotations

import itertools
import os
import sys
import time
from collections.abc import AsyncIterator, Iterator

import aiocoap
import asyncpg
import httpx
import hypothesis
import msgspec
import psycopg
import pytest
import pytest_asyncio
import structlog

from energy_platform import seeding
from energy_platform.core.settings import (
    CompactionSettings,
    DatabaseSettings,
    HttpSettings,
    MqttSettings,
    Settings,
)
from energy_platform.seeding import create_empty_database
from tests.support import engine, xdist_groups
from tests.support.data import YEAR, World, data_api, seed
from tests.support.databases import Databases, database_server
from tests.support.engine import Feed, NewFeed
from tests.support.http import http_client
from tests.support.platform import (
    Platform,
    platform_in_loop,
    platform_settings,
    provisioning_platform,
    with_cluster,
)
from tests.support.rabbitmq import RabbitCluster
from tests.support.services import free_port

# Hypothesis's per-example deadline (200 ms) is a verdict on the machine's speed: at a load of 15
# an example of the price-file parsers took longer, and the test failed as "flaky". Examples
# are judged on what they return, as every other test is.
hypothesis.settings.register_profile("ep", deadline=None)
hypothesis.settings.load_profile("ep")

# Each new_feed's owner and serial number are the session's own.
_serials = itertools.count(1)


@pytest.fixture(scope="session", autouse=True)
def logs_on_stderr() -> None:
    """Services in the test's loop log to stderr, never into the stdout that ``run_admin``
    reads the admin commands' JSON from (sys.stderr looked up at each line: pytest swaps it)."""
    structlog.configure(logger_factory=lambda *_: structlog.PrintLogger(sys.stderr))


@pytest.fixture(scope="session")
def database_server_url() -> Iterator[str]:
    with database_server() as url:
        yield url


@pytest.fixture(scope="session")
def databases(database_server_url: str) -> Iterator[Databases]:
    """This process's supply of migrated databases (tests/support/databases.py)."""
    supply = Databases(database_server_url)
    try:
        yield supply
    finally:
        supply.close()


@pytest.fixture(scope="module")
def database_url(databases: Databases) -> Iterator[str]:
    """This module's own database, migrated to the current sql/: a copy of the template
    (tests/support/databases.py), about 0.2 s of PostgreSQL's CPU to make and drop. One for a
    worker's whole session grew with every module's feeds, chunks and queued work, and every
    later statement planned and ran over them: a whole run (parallel, at a load of 7-8) took
    PostgreSQL 380 s of CPU with a database per session, 330 s with one per module, its
    planning 149 s and 55 s (pg_stat_statements); the engine's property test took 50 s on a
    worker's database after its other modules, 8 s on a new one."""
    url = databases.take()
    yield url
    databases.drop(url)


@pytest.fixture
def empty_database_url(database_server_url: str, databases: Databases) -> Iterator[str]:
    url = create_empty_database(database_server_url)
    yield url
    databases.drop(url)


@pytest.fixture(scope="session")
def mqtt_url() -> str:
    return Settings.from_env(os.environ).mqtt.url


@pytest.fixture(scope="module")
def settings(database_url: str, mqtt_url: str) -> Settings:
    """Settings for services started by a test: the module's database, free ports. No
    compaction round runs on its own: the module's database is shared, and the compaction tests
    (tests/integration/engine/test_compaction.py) run theirs on databases of their own."""
    return Settings(
        database=DatabaseSettings(url=database_url, connect_timeout=2.0),
        compaction=CompactionSettings(after_days=0),
        mqtt=MqttSettings(
            url=mqtt_url, accounts_url=Settings.from_env(os.environ).mqtt.accounts_url
        ),
        http=HttpSettings(
            api_port=free_port(), provisioning_port=free_port(), forwarder_port=free_port()
        ),
    )


@pytest.fixture(scope="module")
async def engine_db(database_url: str) -> AsyncIterator[asyncpg.Connection]:
    """The connection ``process`` runs the engine on for the module's database: one for the
    module, as the engine's worker keeps one, so its statements are planned once, not again
    for every test (docs/engine.md#plans)."""
    conn = await asyncpg.connect(database_url)
    try:
        yield conn
    finally:
        await conn.close()


@pytest.fixture
async def db(database_url: str, engine_db: asyncpg.Connection) -> AsyncIterator[asyncpg.Connection]:
    """A connection to the module's database for setting up and asserting on rows
    (``process(db)`` runs the engine on ``engine_db``)."""
    conn = await asyncpg.connect(database_url)
    engine.drains_on(conn, engine_db)
    try:
        yield conn
    finally:
        await conn.close()


@pytest.fixture(scope="module")
def sync_db(database_url: str) -> Iterator[psycopg.Connection]:
    """The same from synchronous code (autocommit: each query sees the latest state)."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        yield conn


@pytest.fixture(scope="module")
async def coap() -> AsyncIterator[aiocoap.Context]:
    """A CoAP client, as a device uses."""
    context = await aiocoap.Context.create_client_context()
    yield context
    await context.shutdown()


@pytest.fixture(scope="module")
async def platform(settings: Settings, mqtt_url: str) -> AsyncIterator[Platform]:
    """The platform as a cluster runs it: provisioning (secrets), ingest (MQTT + CoAP data
    server) and the data API, in the test's loop; homebases are paired through the real
    provisioning API and their feeds added with the real admin commands (tests/support/platform.py).
    """
    async with platform_in_loop(
        await with_cluster(platform_settings(settings, mqtt_url))
    ) as platform:
        yield platform


@pytest.fixture(scope="session")
def rabbitmq() -> Iterator[RabbitCluster]:
    """One RabbitMQ node for every RabbitMQ test of the session (a node takes seconds to
    start); a test that kills it starts it again."""
    began = time.monotonic()
    with RabbitCluster(1) as node:
        print(f"rabbitmq node ready in {time.monotonic() - began:.1f} s")
        yield node


@pytest.fixture(scope="module")
async def rabbit_platform(
    settings: Settings, mqtt_url: str, rabbitmq: RabbitCluster
) -> AsyncIterator[Platform]:
    """``provisioning_only`` on the session's RabbitMQ node."""
    s = platform_settings(settings, mqtt_url)
    s = msgspec.structs.replace(s, mqtt=rabbitmq.nodes[0].settings(s.mqtt))
    async with provisioning_platform(await with_cluster(s)) as platform:
        yield platform


@pytest.fixture
def new_feed(db: asyncpg.Connection) -> NewFeed:
    """Feeds of the test's own (each with its own owner and serial number), for the engine's,
    history's, billing's and the CSV export's tests; their points go through ingest's ``PointStore``
    (``seeding.write_points``)."""

    async def make(timezone: str = "Europe/Prague") -> Feed:
        n = next(_serials)
        owner = await seeding.add_user(db, f"engine-user-{n}-{id(db)}")
        sn = f"E{id(db) % 0xFFFFFFFF:08X}{n:07X}"
        feed_id = await seeding.add_feed(
            db, owner.id, sn, timezone=timezone, start=YEAR[0], end=YEAR[1]
        )
        return Feed(db, feed_id, sn, owner.token)

    return make


@pytest.fixture(scope="module")
async def api(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """The data API on a free port, and a client of it (rollup and history tests read with it);
    one per module: building and serving the app cost a test a quarter of a second of CPU.
    A bill or a year's rollups took over httpx's 5 s on a machine at a load of 8: a test waits
    for the answer, up to a minute."""
    async with data_api(settings) as url, http_client(base_url=url) as client:
        yield client


@pytest_asyncio.fixture(scope="module")
async def world_data(database_url: str) -> AsyncIterator[World]:
    """The users, feeds and streams of tests/support/data.py, removed after the module."""
    conn = await asyncpg.connect(database_url)
    try:
        async with conn.transaction():
            world = await seed(conn)
    finally:
        await conn.close()
    yield world
    with psycopg.connect(database_url) as conn:
        conn.execute(
            "DELETE FROM forwarder.registrations WHERE homebase_sn LIKE 'D00000000000000%%'"
        )
        conn.execute("DELETE FROM cluster.feeds WHERE id = ANY(%s)", (list(world.feeds.values()),))
        conn.execute("DELETE FROM cluster.users WHERE id = ANY(%s)", (list(world.users.values()),))


@pytest_asyncio.fixture(scope="module")
async def world(world_data: World, settings: Settings) -> AsyncIterator[World]:
    """That world behind the data API, served by a real uvicorn on a free port."""
    async with data_api(settings) as url:
        world_data.url = url
        yield world_data


def pytest_configure(config: pytest.Config) -> None:
    """With pytest-xdist (``--dist loadgroup``, scripts/test.sh): a module's tests on one
    worker, and the tests on the session's RabbitMQ node on one (tests/support/xdist_groups.py)."""
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(xdist_groups.Groups(), "ep-xdist-groups")
