"""The platform with the engine really running, its notification rules on short clocks."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator

import msgspec
import pytest

from energy_platform.core.settings import NotificationsSettings, Settings
from energy_platform.services import build_services
from tests.support.admin import run_admin
from tests.support.platform import Platform, platform_settings, with_cluster
from tests.support.services import running

OFFLINE_AFTER = 2
SILENT_AFTER = 2


@pytest.fixture(scope="module")
async def platform(settings: Settings, mqtt_url: str) -> AsyncIterator[Platform]:
    s = await with_cluster(platform_settings(settings, mqtt_url))
    s = msgspec.structs.replace(
        s,
        notifications=NotificationsSettings(
            interval=0.2, offline_after=OFFLINE_AFTER, silent_after=SILENT_AFTER, unusual_settle=0
        ),
    )
    user = await run_admin(s, "users", "add", f"notified-{secrets.token_hex(3)}")
    api = f"http://127.0.0.1:{s.http.api_port}"
    services = build_services(["api", "provisioning", "ingest", "engine"], s)
    ready = (api + "/healthz", s.pairing.provisioning_url + "/healthz")
    async with running(*services, ready_urls=ready):
        yield Platform(s, api, s.pairing.provisioning_url, user["token"], user["id"])
