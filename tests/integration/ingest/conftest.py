"""Ingest's own fixtures; ``platform`` (provisioning, ingest and the data API in the test's loop)
is registered in tests/conftest.py, since the forwarder's end-to-end test runs it too."""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import msgspec
import pytest

from energy_platform.services import build_services
from energy_platform.settings import Settings
from tests.support.admin import run_admin_async
from tests.support.platform import Platform, platform_settings, with_cluster
from tests.support.rabbitmq import RabbitCluster
from tests.support.services import running


@pytest.fixture(scope="session")
def rabbitmq() -> Iterator[RabbitCluster]:
    """One RabbitMQ node for every RabbitMQ test of the session (a node takes seconds to
    start); a test that kills it starts it again."""
    began = time.monotonic()
    with RabbitCluster(1) as node:
        print(f"rabbitmq node ready in {time.monotonic() - began:.1f} s")
        yield node


@pytest.fixture(scope="module", params=["mosquitto", "rabbitmq"])
async def provisioning_only(
    request: pytest.FixtureRequest, settings: Settings, mqtt_url: str
) -> AsyncIterator[Platform]:
    """Provisioning in the test's loop, for tests that run ingest as a process of its own; once
    with each broker (on RabbitMQ: the session's node, a queue of the module's own)."""
    node = request.getfixturevalue("rabbitmq") if request.param == "rabbitmq" else None
    async with provisioning(settings, mqtt_url, node) as platform:
        yield platform


@pytest.fixture(scope="module")
async def rabbit_platform(
    settings: Settings, mqtt_url: str, rabbitmq: RabbitCluster
) -> AsyncIterator[Platform]:
    """``provisioning_only`` on the session's RabbitMQ node."""
    async with provisioning(settings, mqtt_url, rabbitmq) as platform:
        yield platform


@asynccontextmanager
async def provisioning(
    settings: Settings, mqtt_url: str, rabbitmq: RabbitCluster | None
) -> AsyncIterator[Platform]:
    s = platform_settings(settings, mqtt_url)
    if rabbitmq is not None:
        s = msgspec.structs.replace(s, mqtt=rabbitmq.nodes[0].settings(s.mqtt))
    s = with_cluster(s)
    user = await run_admin_async(s, "users", "add", f"ingest-{secrets.token_hex(3)}")
    base = s.cluster.provisioning_url
    async with running(*build_services("provisioning", s), ready_urls=(base + "/healthz",)):
        yield Platform(s, "", base, user["token"], user["id"])
