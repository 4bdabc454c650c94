"""The broker admits only known homebases, each to its own topics (docs/devices.md)."""

import contextlib
import secrets
from urllib.parse import urlsplit

import aiomqtt
import asyncpg
import msgspec
import pytest

from energy_platform.core.settings import MqttSettings
from energy_platform.devices.simulator.homebase import (
    SimulatedHomebase,
    data_topic,
    homebase_client,
    status_topic,
)
from energy_platform.pairing.broker_accounts import broker_accounts
from energy_platform.pairing.pairings import account_reconciliation
from tests.support.admin import run_admin
from tests.support.http import http_client
from tests.support.platform import Platform, paired_homebase, publish_as
from tests.support.provisioning import add_homebase
from tests.support.services import eventually, running


def client(mqtt: MqttSettings, username: str | None, password: str | None) -> aiomqtt.Client:
    url = urlsplit(mqtt.url)
    return aiomqtt.Client(
        url.hostname or "127.0.0.1",
        url.port or 1883,
        username=username,
        password=password,
        identifier=f"intruder-{secrets.token_hex(4)}",
        protocol=aiomqtt.ProtocolVersion.V5,
    )


async def test_an_anonymous_client_or_a_wrong_password_is_refused(platform: Platform) -> None:
    sn, _, _ = await paired_homebase(platform)
    mqtt = platform.settings.mqtt
    with pytest.raises(aiomqtt.MqttError):
        async with client(mqtt, None, None):
            pass
    with pytest.raises(aiomqtt.MqttError):
        async with homebase_client(mqtt, sn, bytes(256)):  # not its secret
            pass


async def test_another_homebase_can_neither_read_nor_publish_under_a_serial_number(
    platform: Platform, database_url: str
) -> None:
    sn, secret, feed = await paired_homebase(platform)
    other_sn, other_secret, _ = await paired_homebase(platform)
    mqtt = platform.settings.mqtt
    prefix = mqtt.topic_prefix
    async with homebase_client(mqtt, other_sn, other_secret) as other:
        refused = [
            await other.subscribe(topic, qos=1)
            for topic in (
                data_topic(sn, prefix),
                f"$share/ingest/{prefix}homebases/+/data",
                f"$share/{mqtt.share_group}/{prefix}homebases/+/data",
                f"{prefix}homebases/#",
                "#",
            )
        ]
    # Publishes the broker must refuse (Mosquitto closes the connection): data and a presence
    # under the other SN.
    for topic, payload in (
        (data_topic(sn, prefix), b"\x01" + bytes(40)),
        (status_topic(sn, prefix), b"online"),
    ):
        with contextlib.suppress(aiomqtt.MqttError):
            async with homebase_client(mqtt, other_sn, other_secret, will=False) as other:
                await other.publish(topic, payload, qos=1, retain=True)
    await publish_as(platform, sn, secret, SimulatedHomebase(sn, secret).batch([1_790_000_000]))

    conn = await asyncpg.connect(database_url)
    try:

        async def own_data_stored() -> bool:
            return bool(
                await conn.fetchval(
                    "SELECT count(*) FROM cluster.raw_points p JOIN cluster.streams s"
                    " ON s.id = p.stream_id WHERE s.feed_id = $1",
                    int(feed or 0),
                )
            )

        await eventually(own_data_stored)
        letters = await conn.fetchval("SELECT count(*) FROM cluster.dead_letters WHERE sn = $1", sn)
        presence = await conn.fetchval(
            "SELECT online FROM cluster.homebase_presence WHERE homebase_sn = $1", sn
        )
    finally:
        await conn.close()
    assert all(r.is_failure for codes in refused for r in codes), refused
    assert letters == 0  # the forged message never reached ingest
    assert presence is True  # set by its own data, not by the forged "online"


async def test_an_anonymous_client_cannot_take_a_share_of_the_data(platform: Platform) -> None:
    with pytest.raises(aiomqtt.MqttError):
        async with client(platform.settings.mqtt, None, None) as anonymous:
            await anonymous.subscribe("$share/ingest/homebases/+/data", qos=1)


@pytest.fixture(scope="module", params=["mosquitto", "rabbitmq"])
def either_broker(request: pytest.FixtureRequest) -> Platform:
    """The platform on Mosquitto, then on RabbitMQ: the accounts interface's two sides."""
    name = "platform" if request.param == "mosquitto" else "rabbit_platform"
    platform: Platform = request.getfixturevalue(name)
    return platform


async def test_unpairing_removes_the_homebase_account(either_broker: Platform) -> None:
    platform = either_broker
    sn, secret, feed = await paired_homebase(platform)
    async with homebase_client(platform.settings.mqtt, sn, secret):
        pass  # it logs in while paired
    await run_admin(platform.settings, "feeds", "delete", str(feed))
    with pytest.raises(aiomqtt.MqttError):
        async with homebase_client(platform.settings.mqtt, sn, secret):
            pass


async def pair_directly(platform: Platform, sn: str) -> bytes:
    """Pair ``sn`` the way no command of this cluster does (an operator at provisioning, an
    older release): no broker account comes with it. Its secret."""
    auth = {"X-SvcClusterAuth": platform.settings.pairing.cluster_secret}
    async with http_client(base_url=platform.provisioning + "/api", headers=auth) as http:
        assert (await http.post(f"/device/{sn}/pair/")).status_code == 200
        return bytes.fromhex((await http.get(f"/device/{sn}/secret/")).json()["secret"])


async def logs_in(mqtt: MqttSettings, sn: str, secret: bytes) -> bool:
    try:
        async with homebase_client(mqtt, sn, secret, will=False):
            return True
    except aiomqtt.MqttError:
        return False


async def test_sync_puts_accounts_in_step_with_this_clusters_pairings_both_ways(
    either_broker: Platform,
) -> None:
    platform = either_broker
    s = platform.settings
    unaccounted = await add_homebase(s)
    secret = await pair_directly(platform, unaccounted)
    stale, stale_secret = await add_homebase(s), secrets.token_bytes(256)
    await broker_accounts(s.mqtt).give(stale, stale_secret)  # an account, but no pairing here
    # Another cluster's homebase on the same broker (its own topic prefix) is not this
    # cluster's to remove.
    elsewhere = msgspec.structs.replace(s.mqtt, topic_prefix=f"other-{secrets.token_hex(3)}/")
    foreign, foreign_secret = await add_homebase(s), secrets.token_bytes(256)
    await broker_accounts(elsewhere).give(foreign, foreign_secret)
    assert not await logs_in(s.mqtt, unaccounted, secret)

    done = await run_admin(s, "broker-accounts", "sync")

    assert unaccounted in done["given"]
    assert done["removed"] == [stale]
    assert await logs_in(s.mqtt, unaccounted, secret)
    assert not await logs_in(s.mqtt, stale, stale_secret)
    assert await logs_in(elsewhere, foreign, foreign_secret)
    again = await run_admin(s, "broker-accounts", "sync")
    assert (again["given"], again["removed"]) == ([], [])  # in step: nothing to do
    await broker_accounts(elsewhere).remove(foreign)


async def test_the_engine_reconciles_accounts_on_its_own(platform: Platform) -> None:
    cluster = msgspec.structs.replace(platform.settings.pairing, accounts_sync_interval=0.2)
    s = msgspec.structs.replace(platform.settings, pairing=cluster)
    sn = await add_homebase(s)
    async with running(*account_reconciliation(s)):
        secret = await pair_directly(platform, sn)
        await eventually(lambda: logs_in(s.mqtt, sn, secret), within=60)


async def test_sync_without_the_cluster_secret_says_what_to_set(
    platform: Platform, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = msgspec.structs.replace(platform.settings.pairing, cluster_secret="")
    with pytest.raises(SystemExit):
        await run_admin(
            msgspec.structs.replace(platform.settings, pairing=cluster), "broker-accounts", "sync"
        )
    assert "EP_PAIRING_CLUSTER_SECRET is not set" in capsys.readouterr().err
