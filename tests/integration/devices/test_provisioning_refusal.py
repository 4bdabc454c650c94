"""Provisioning refusing this cluster (disabled) is a fault outside the messages: they wait,
unacknowledged, and only the homebases whose secret is needed wait; nothing is dead-lettered."""

import secrets
import time
from collections.abc import AsyncIterator

import asyncpg
import msgspec
import pytest
from prometheus_client import REGISTRY

from energy_platform.core.settings import PairingSettings, Settings
from energy_platform.devices.simulator.homebase import SimulatedHomebase
from energy_platform.services import build_services
from tests.support.admin import run_admin
from tests.support.platform import Platform, paired_homebase, platform_settings, publish_as
from tests.support.provisioning import add_cluster
from tests.support.services import eventually, running

POINTS = (
    "SELECT count(*) FROM cluster.raw_points p JOIN cluster.streams s ON s.id = p.stream_id"
    " WHERE s.feed_id = $1"
)


def refused_secrets() -> float:
    """Requests for a homebase's secret that provisioning (in this process) did not answer."""
    return sum(
        sample.value
        for metric in REGISTRY.collect()
        if metric.name == "ep_http_requests"
        for sample in metric.samples
        if sample.name == "ep_http_requests_total"
        and sample.labels["path"].endswith("/secret")
        and sample.labels["status_code"] != "200"
    )


@pytest.fixture(scope="module")
async def platform_and_cluster(
    settings: Settings, mqtt_url: str
) -> AsyncIterator[tuple[Platform, int]]:
    s = platform_settings(settings, mqtt_url)
    cluster = await add_cluster(s, f"refusal-{secrets.token_hex(3)}")
    s = msgspec.structs.replace(
        s,
        pairing=PairingSettings(
            provisioning_url=f"http://127.0.0.1:{s.http.provisioning_port}",
            cluster_secret=cluster.secret,
        ),
    )
    user = await run_admin(s, "users", "add", f"refusal-{secrets.token_hex(3)}")
    api, base = f"http://127.0.0.1:{s.http.api_port}", s.pairing.provisioning_url
    services = build_services(["api", "provisioning", "ingest"], s)
    async with running(*services, ready_urls=(api + "/healthz", base + "/healthz")):
        yield Platform(s, api, base, user["token"], user["id"]), cluster.id


async def test_a_disabled_cluster_holds_only_the_homebases_it_needs_a_secret_for(
    platform_and_cluster: tuple[Platform, int], database_url: str
) -> None:
    platform, cluster_id = platform_and_cluster
    held_sn, held_secret, held_feed = await paired_homebase(platform)
    known_sn, known_secret, known_feed = await paired_homebase(platform)
    known = SimulatedHomebase(known_sn, known_secret)
    t = int(time.time()) - 60
    conn = await asyncpg.connect(database_url)
    try:

        async def points(feed: str | None, at_least: int) -> bool:
            return bool(await conn.fetchval(POINTS, int(feed or 0)) >= at_least)

        await publish_as(platform, known_sn, known_secret, known.batch([t]))
        await eventually(lambda: points(known_feed, 5))  # its key is cached from now on
        await run_admin(platform.settings, "clusters", "disable", str(cluster_id))

        held = SimulatedHomebase(held_sn, held_secret)
        refused = refused_secrets()
        await publish_as(platform, held_sn, held_secret, held.batch([t]))
        await publish_as(platform, known_sn, known_secret, known.batch([t + 5]))
        await eventually(lambda: points(known_feed, 10))  # not held up by the other
        # Its secret asked for three times: its first try and a retry were held, not dropped
        # (a message is judged before its lane asks again).
        await eventually(lambda: refused_secrets() >= refused + 3)
        stored_while_refused = await conn.fetchval(POINTS, int(held_feed or 0))
        letters = await conn.fetchval(
            "SELECT count(*) FROM cluster.dead_letters WHERE sn = $1", held_sn
        )

        await run_admin(platform.settings, "clusters", "enable", str(cluster_id))
        await eventually(lambda: points(held_feed, 5), within=60)
    finally:
        await conn.close()
    assert stored_while_refused == 0
    assert letters == 0
