"""Ingest's own fixtures; ``platform`` (provisioning, ingest and the data API in the test's loop)
is registered in tests/conftest.py, since the forwarder's end-to-end test runs it too."""

from __future__ import annotations

from collections.abc import AsyncIterator

import msgspec
import pytest

from energy_platform.core.settings import Settings
from tests.support.platform import (
    Platform,
    platform_settings,
    provisioning_platform,
    with_cluster,
)
from tests.support.rabbitmq import RabbitCluster


@pytest.fixture(scope="module", params=["mosquitto", "rabbitmq"])
async def provisioning_only(
    request: pytest.FixtureRequest, settings: Settings, mqtt_url: str
) -> AsyncIterator[Platform]:
    """Provisioning in the test's loop, for tests that run ingest as a process of its own; once
    with each broker (on RabbitMQ: the session's node, a queue of the module's own)."""
    s = platform_settings(settings, mqtt_url)
    if request.param == "rabbitmq":
        node: RabbitCluster = request.getfixturevalue("rabbitmq")
        s = msgspec.structs.replace(s, mqtt=node.nodes[0].settings(s.mqtt))
    async with provisioning_platform(await with_cluster(s)) as platform:
        yield platform
