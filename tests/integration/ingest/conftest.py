"""Ingest's own fixtures; ``platform`` (provisioning, ingest and the data API in the test's loop)
is registered in tests/conftest.py, since the forwarder's end-to-end test runs it too."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator

import pytest

from energy_platform.core.settings import Settings
from energy_platform.services import build_services
from tests.support.admin import run_admin_async
from tests.support.platform import Platform, platform_settings, with_cluster
from tests.support.services import running


@pytest.fixture(scope="module")
async def provisioning_only(settings: Settings, mqtt_url: str) -> AsyncIterator[Platform]:
    """Provisioning in the test's loop, for tests that run ingest as a process of its own."""
    s = with_cluster(platform_settings(settings, mqtt_url))
    user = await run_admin_async(s, "users", "add", f"ingest-{secrets.token_hex(3)}")
    base = s.cluster.provisioning_url
    async with running(*build_services("provisioning", s), ready_urls=(base + "/healthz",)):
        yield Platform(s, "", base, user["token"], user["id"])
