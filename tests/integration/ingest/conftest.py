"""The platform as a cluster runs it: provisioning (secrets), ingest (MQTT + CoAP data server)
and the data API, in the test's loop; homebases are paired through the real provisioning API and
their feeds added with the real admin commands (helpers in tests/support/platform.py)."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator

import pytest

from energy_platform.services import build_services
from energy_platform.settings import Settings
from tests.support.admin import run_admin_async
from tests.support.platform import Platform, platform_settings, with_cluster
from tests.support.services import running


@pytest.fixture(scope="module")
async def platform(settings: Settings, mqtt_url: str) -> AsyncIterator[Platform]:
    s = with_cluster(platform_settings(settings, mqtt_url))
    user = await run_admin_async(s, "users", "add", f"ingest-{secrets.token_hex(3)}")
    api = f"http://127.0.0.1:{s.http.api_port}"
    provisioning = s.cluster.provisioning_url
    services = build_services(["api", "provisioning", "ingest"], s)
    async with running(*services, ready_urls=(api + "/healthz", provisioning + "/healthz")):
        yield Platform(s, api, provisioning, user["token"], user["id"])


@pytest.fixture(scope="module")
async def provisioning_only(settings: Settings, mqtt_url: str) -> AsyncIterator[Platform]:
    """Provisioning in the test's loop, for tests that run ingest as a process of its own."""
    s = with_cluster(platform_settings(settings, mqtt_url))
    user = await run_admin_async(s, "users", "add", f"ingest-{secrets.token_hex(3)}")
    base = s.cluster.provisioning_url
    async with running(*build_services("provisioning", s), ready_urls=(base + "/healthz",)):
        yield Platform(s, "", base, user["token"], user["id"])
