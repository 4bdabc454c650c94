"""The platform as a cluster runs it: provisioning (secrets), ingest (MQTT + CoAP data server)
and the data API, in the test's loop; homebases are paired through the real provisioning API and
their feeds added with the real admin commands."""

from __future__ import annotations

import secrets
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import msgspec
import pytest

from energy_platform.services import build_services
from energy_platform.settings import (
    ClusterSettings,
    DeviceSettings,
    HttpSettings,
    IngestSettings,
    MqttSettings,
    ProvisioningSettings,
    Settings,
)
from tests.integration.provisioning.conftest import add_cluster, add_homebase
from tests.support.admin import run_admin_async
from tests.support.services import free_port, running


class Platform(msgspec.Struct, frozen=True):
    settings: Settings
    api: str
    provisioning: str
    user_token: str
    user_id: str

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.api, headers={"Authorization": f"Bearer {self.user_token}"}, timeout=10
        )


def platform_settings(settings: Settings, mqtt_url: str, **ingest: Any) -> Settings:
    """Free ports, a fresh MQTT identity and share group, and a short-lived broker session."""
    tag = secrets.token_hex(4)
    return msgspec.structs.replace(
        settings,
        http=HttpSettings(
            api_port=free_port(), provisioning_port=free_port(), forwarder_port=free_port()
        ),
        devices=DeviceSettings(
            coap_port=free_port(socket.SOCK_DGRAM), tftp_port=free_port(socket.SOCK_DGRAM)
        ),
        mqtt=MqttSettings(
            url=mqtt_url,
            client_id=f"ingest-test-{tag}",
            share_group=f"test-{tag}",
            session_expiry=120,
            topic_prefix=f"test-{tag}/",
        ),
        provisioning=ProvisioningSettings(secret_key=secrets.token_hex(32)),
        ingest=IngestSettings(route_cache_seconds=0.2, **ingest),
    )


def with_cluster(settings: Settings) -> Settings:
    """Register this cluster with provisioning; settings that carry its secret."""
    cluster = add_cluster(settings, "ingest-test cluster")
    provisioning = f"http://127.0.0.1:{settings.http.provisioning_port}"
    return msgspec.structs.replace(
        settings, cluster=ClusterSettings(provisioning_url=provisioning, secret=cluster.secret)
    )


@pytest.fixture(scope="module")
async def platform(settings: Settings, mqtt_url: str) -> AsyncIterator[Platform]:
    s = with_cluster(platform_settings(settings, mqtt_url))
    user = await run_admin_async(s, "users", "add", f"ingest-{secrets.token_hex(3)}")
    api = f"http://127.0.0.1:{s.http.api_port}"
    provisioning = s.cluster.provisioning_url
    services = build_services(["api", "provisioning", "ingest"], s)
    async with running(*services, ready_urls=(api + "/healthz", provisioning + "/healthz")):
        yield Platform(s, api, provisioning, user["token"], user["id"])


async def paired_homebase(
    platform: Platform, *, feed: bool = True
) -> tuple[str, bytes, str | None]:
    """A new homebase paired with this cluster: (sn, secret, feed id or None).

    With a feed, the pairing is what ``admin feeds add`` does; without one, a direct call.
    """
    s = platform.settings
    sn = add_homebase(s)
    auth = {"X-SvcClusterAuth": s.cluster.secret}
    feed_id = None
    async with httpx.AsyncClient(base_url=platform.provisioning + "/api", headers=auth) as http:
        if feed:
            added = await run_admin_async(
                s,
                "feeds",
                "add",
                "--owner",
                platform.user_id,
                "--homebase",
                sn,
                "--title",
                "Test home",
                "--timezone",
                "Europe/Prague",
            )
            feed_id = added["id"]
        else:
            assert (await http.post(f"/device/{sn}/pair/")).status_code == 200
        secret = bytes.fromhex((await http.get(f"/device/{sn}/secret/")).json()["secret"])
    return sn, secret, feed_id
