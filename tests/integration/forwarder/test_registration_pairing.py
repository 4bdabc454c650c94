"""A customer's registration is what a forwarder-only homebase needs: registering a granted
homebase that no cluster holds pairs it with this cluster and gives its broker account, so it
boots here and its data reaches the forwarder with no feed; unregistering undoes what the
registration did, and nothing a feed holds (docs/forwarder.md#registrations)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiomqtt
import asyncpg
import httpx
import msgspec
import pytest

from energy_platform.core.errors import ConfigurationError
from energy_platform.core.http.server import HttpService
from energy_platform.devices.simulator.homebase import SimulatedHomebase, homebase_client
from energy_platform.forwarder.http import app as forwarder
from tests.support.admin import run_admin
from tests.support.forwarder import Customer, NewCustomer, grant, loopback_allowed
from tests.support.http import http_client
from tests.support.platform import Platform, add_feed, publish_as
from tests.support.provisioning import add_cluster, add_homebase
from tests.support.services import eventually, running


@pytest.fixture(scope="module")
async def cluster_api(platform: Platform) -> AsyncIterator[str]:
    """The forwarder API of the platform's cluster (its secret, its broker accounts)."""
    s = platform.settings
    url = f"http://127.0.0.1:{s.http.forwarder_port}"
    app = forwarder.create_app(loopback_allowed(s))
    async with running(
        HttpService("forwarder", app, "127.0.0.1", s.http.forwarder_port),
        ready_urls=(url + "/healthz",),
    ):
        yield url


async def pairing(platform: Platform, sn: str, secret: str | None = None) -> tuple[bool, bool]:
    """(paired, paired to this cluster) as provisioning answers the cluster."""
    auth = {"X-SvcClusterAuth": secret or platform.settings.pairing.cluster_secret}
    async with http_client(base_url=platform.provisioning + "/api", headers=auth) as http:
        status = (await http.get(f"/device/{sn}/pair/")).json()
    return status["paired"], status["your_device"]


async def secret_of(platform: Platform, sn: str) -> bytes:
    auth = {"X-SvcClusterAuth": platform.settings.pairing.cluster_secret}
    async with http_client(base_url=platform.provisioning + "/api", headers=auth) as http:
        answer = await http.get(f"/device/{sn}/secret/")
    assert answer.status_code == 200, answer.text
    return bytes.fromhex(answer.json()["secret"])


async def can_log_in(platform: Platform, sn: str, secret: bytes) -> bool:
    try:
        async with homebase_client(platform.settings.mqtt, sn, secret, will=False):
            return True
    except aiomqtt.MqttError:
        return False


async def call(api: str, customer: Customer, method: str, sn: str) -> httpx.Response:
    async with http_client(base_url=api, headers=customer.headers(), timeout=20) as http:
        return await http.request(method, f"/register/{sn}")


async def test_registering_a_granted_homebase_pairs_it_and_its_data_reaches_the_forwarder(
    platform: Platform, cluster_api: str, db: asyncpg.Connection, new_customer: NewCustomer
) -> None:
    sn = await add_homebase(platform.settings)
    customer = await new_customer()
    await grant(db, customer, sn)
    async with http_client() as http:
        before = await http.get(f"{platform.provisioning}/api/device/{sn}/boot/")
    assert before.status_code == 409  # paired with no cluster: it has nowhere to send

    assert (await call(cluster_api, customer, "POST", sn)).status_code == 201

    assert await pairing(platform, sn) == (True, True)
    async with http_client() as http:
        boot = await http.get(f"{platform.provisioning}/api/device/{sn}/boot/")
    assert boot.status_code == 200  # it boots to this cluster's addresses
    secret = await secret_of(platform, sn)
    homebase = SimulatedHomebase(sn, secret)
    await publish_as(platform, sn, secret, homebase.batch([1_790_000_000]))

    async def forwarded() -> bool:
        return bool(
            await db.fetchval(
                "SELECT count(*) FROM forwarder.points p JOIN forwarder.streams s"
                " ON s.id = p.stream_id WHERE s.homebase_sn = $1",
                sn,
            )
        )

    await eventually(forwarded)
    assert await db.fetchval("SELECT count(*) FROM cluster.feeds WHERE homebase_sn = $1", sn) == 0

    # Unregistering undoes it: unpaired, and the broker no longer lets it in.
    assert (await call(cluster_api, customer, "DELETE", sn)).status_code == 200
    assert await pairing(platform, sn) == (False, False)
    assert not await can_log_in(platform, sn, secret)


async def test_a_homebase_with_a_feed_stays_paired_whatever_the_registration_does(
    platform: Platform, cluster_api: str, db: asyncpg.Connection, new_customer: NewCustomer
) -> None:
    sn = await add_homebase(platform.settings)
    feed = await add_feed(platform.settings, platform.user_id, sn)
    secret = await secret_of(platform, sn)
    customer = await new_customer()
    await grant(db, customer, sn)
    assert (await call(cluster_api, customer, "POST", sn)).status_code == 201
    assert (await call(cluster_api, customer, "DELETE", sn)).status_code == 200
    assert await pairing(platform, sn) == (True, True)
    assert await can_log_in(platform, sn, secret)

    # The other way round: the feed goes while the registration holds the homebase.
    assert (await call(cluster_api, customer, "POST", sn)).status_code == 201
    deleted = await run_admin(platform.settings, "feeds", "delete", feed["id"])
    assert deleted == {"deleted": feed["id"], "homebase": sn, "unpaired": False}
    assert await pairing(platform, sn) == (True, True)
    assert await can_log_in(platform, sn, secret)
    # ... until the registration goes too.
    assert (await call(cluster_api, customer, "DELETE", sn)).status_code == 200
    assert await pairing(platform, sn) == (False, False)


async def test_a_homebase_paired_with_another_cluster_is_not_registered(
    platform: Platform, cluster_api: str, db: asyncpg.Connection, new_customer: NewCustomer
) -> None:
    sn = await add_homebase(platform.settings)
    other = await add_cluster(platform.settings, "another cluster")
    async with http_client(base_url=platform.provisioning + "/api") as http:
        await http.post(f"/device/{sn}/pair/", headers={"X-SvcClusterAuth": other.secret})
    customer = await new_customer()
    await grant(db, customer, sn)

    answer = await call(cluster_api, customer, "POST", sn)

    assert answer.status_code == 409
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert f"homebase {sn} is paired to another cluster" in answer.json()["detail"]
    registered = "SELECT count(*) FROM forwarder.registrations WHERE homebase_sn = $1"
    assert await db.fetchval(registered, sn) == 0
    assert await pairing(platform, sn, other.secret) == (True, True)


async def test_revoking_a_grant_unpairs_what_the_registration_paired(
    platform: Platform, cluster_api: str, db: asyncpg.Connection
) -> None:
    sn = await add_homebase(platform.settings)
    customer = await run_admin(platform.settings, "customers", "add", f"revoke-{sn}")
    await run_admin(platform.settings, "customers", "grant", customer["id"], sn)
    c = Customer(int(customer["id"]), customer["token"])
    assert (await call(cluster_api, c, "POST", sn)).status_code == 201
    secret = await secret_of(platform, sn)

    revoked = await run_admin(platform.settings, "customers", "revoke", customer["id"], sn)

    assert revoked["unregistered"] == [sn]
    assert await pairing(platform, sn) == (False, False)
    assert not await can_log_in(platform, sn, secret)


def test_a_cluster_forwarder_without_the_accounts_setting_does_not_start(
    platform: Platform,
) -> None:
    mqtt = msgspec.structs.replace(platform.settings.mqtt, accounts_url="")
    with pytest.raises(ConfigurationError, match="EP_MQTT_ACCOUNTS_URL is not set"):
        forwarder.create_app(msgspec.structs.replace(platform.settings, mqtt=mqtt))
