"""One provisioning and two clusters as the spec shards them (docs/scaling.md): separate
processes (``serve ingest api`` per cluster) on three databases and two brokers. Homebases
boot to their own cluster and their data lands only in its database; a cluster cannot have
another's secrets; a homebase moved from A to B sends to B; a CoAP device is served by its own
data server and refused (4.05) by the other."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator

import aiocoap
import aiomqtt
import asyncpg
import httpx
import msgspec
import pytest

from energy_platform.core.coap import JSON
from energy_platform.core.settings import (
    DatabaseSettings,
    DeviceSettings,
    HttpSettings,
    PairingSettings,
    Settings,
)
from energy_platform.devices.simulator.homebase import (
    SimulatedHomebase,
    data_topic,
    homebase_client,
)
from tests.support.admin import run_admin
from tests.support.broker import KillableBroker
from tests.support.coap import reading
from tests.support.databases import Databases
from tests.support.http import http_client
from tests.support.platform import add_feed, platform_settings, start_serve, wait_subscribed
from tests.support.provisioning import add_homebase, new_sn
from tests.support.services import eventually, free_port, wait_for_http, with_port

RAW_POINTS_OF = """
SELECT count(*) FROM cluster.raw_points p JOIN cluster.streams s ON s.id = p.stream_id
  JOIN cluster.feeds f ON f.id = s.feed_id WHERE f.homebase_sn = $1"""


class Cluster(msgspec.Struct, frozen=True):
    name: str
    settings: Settings
    broker_port: int
    user_id: str


@pytest.fixture
def cluster_databases(databases: Databases) -> Iterator[list[str]]:
    urls = [databases.take() for _ in range(3)]
    yield urls
    for url in urls:
        databases.drop(url)


def cluster_settings(
    base: Settings, name: str, database: str, mqtt_url: str, provisioning: Settings, secret: str
) -> Settings:
    s = platform_settings(base, mqtt_url)
    return msgspec.structs.replace(
        s,
        database=DatabaseSettings(url=database, connect_timeout=2.0),
        mqtt=msgspec.structs.replace(
            s.mqtt, accounts_url=with_port(base.mqtt.accounts_url, int(mqtt_url.rsplit(":", 1)[1]))
        ),
        devices=DeviceSettings(coap_port=free_port(socket.SOCK_DGRAM)),
        pairing=PairingSettings(
            provisioning_url=f"http://127.0.0.1:{provisioning.http.provisioning_port}",
            cluster_secret=secret,
        ),
        provisioning=provisioning.provisioning,
    )


async def points(cluster: Cluster, sn: str) -> int:
    conn = await asyncpg.connect(cluster.settings.database.url)
    try:
        return int(await conn.fetchval(RAW_POINTS_OF, sn))
    finally:
        await conn.close()


async def boot_mqtt_port(provisioning: str, sn: str) -> int:
    async with http_client() as http:
        answer = await http.get(f"{provisioning}/api/device/{sn}/boot/")
    assert answer.status_code == 200, answer.text
    return int(answer.json()["cluster"]["mqtt"][1])


async def secret_for(provisioning: str, cluster: Cluster, sn: str) -> httpx.Response:
    auth = {"X-SvcClusterAuth": cluster.settings.pairing.cluster_secret}
    async with http_client(headers=auth) as http:
        return await http.get(f"{provisioning}/api/device/{sn}/secret/")


async def publish(cluster: Cluster, sn: str, secret: bytes, t: int) -> None:
    mqtt = cluster.settings.mqtt
    async with homebase_client(mqtt, sn, secret, will=False) as client:
        payload = SimulatedHomebase(sn, secret).batch([t])
        await client.publish(data_topic(sn, mqtt.topic_prefix), payload, qos=1)


async def coap_post(port: int, sn: str) -> aiocoap.numbers.codes.Code:
    context = await aiocoap.Context.create_client_context()
    try:
        request = aiocoap.Message(
            code=aiocoap.POST,
            uri=f"coap://127.0.0.1:{port}/data/{sn}",
            payload=reading(o={"1.7.0": 42.0}),
        )
        request.opt.content_format = JSON
        return (await context.request(request).response).code
    finally:
        await context.shutdown()


async def test_two_clusters_share_one_provisioning_and_nothing_else(
    settings: Settings, mqtt_url: str, cluster_databases: list[str]
) -> None:
    provisioning_db, db_a, db_b = cluster_databases
    p = platform_settings(settings, mqtt_url)
    p = msgspec.structs.replace(
        p,
        database=DatabaseSettings(url=provisioning_db, connect_timeout=2.0),
        http=HttpSettings(provisioning_port=free_port()),
    )
    provisioning = f"http://127.0.0.1:{p.http.provisioning_port}"
    processes: list[subprocess.Popen[bytes]] = []
    with KillableBroker() as broker_b:
        ports = {"A": int(mqtt_url.rsplit(":", 1)[1]), "B": broker_b.port}
        urls = {"A": mqtt_url, "B": with_port(mqtt_url, broker_b.port)}
        try:
            processes.append(start_serve(p, "provisioning"))
            await wait_for_http(provisioning + "/healthz")
            clusters: dict[str, Cluster] = {}
            for name, db in (("A", db_a), ("B", db_b)):
                made = await run_admin(
                    p, "clusters", "add", "--title", name,
                    "--http", "127.0.0.1:8000", "--mqtt", f"127.0.0.1:{ports[name]}",
                )  # fmt: skip
                s = cluster_settings(settings, name, db, urls[name], p, made["secret"])
                user = await run_admin(s, "users", "add", f"owner-{name}")
                clusters[name] = Cluster(name, s, ports[name], user["id"])
                # A cluster's services in one process, provisioning not among them.
                ingest = start_serve(s, "ingest", "api")
                processes.append(ingest)
                await wait_subscribed(ingest)
                await wait_for_http(f"http://127.0.0.1:{s.http.api_port}/healthz")
            a, b = clusters["A"], clusters["B"]

            # Each homebase boots to its own cluster and its data lands only there.
            ha, hb = await add_homebase(p), await add_homebase(p)
            feed_ha = await add_feed(a.settings, a.user_id, ha)
            await add_feed(b.settings, b.user_id, hb)
            assert await boot_mqtt_port(provisioning, ha) == a.broker_port
            assert await boot_mqtt_port(provisioning, hb) == b.broker_port
            secret_a = bytes.fromhex((await secret_for(provisioning, a, ha)).json()["secret"])
            secret_b = bytes.fromhex((await secret_for(provisioning, b, hb)).json()["secret"])
            t = int(time.time()) - 60
            await publish(a, ha, secret_a, t)
            await publish(b, hb, secret_b, t)
            await eventually(lambda: _stored(a, ha), within=60)
            await eventually(lambda: _stored(b, hb), within=60)
            assert (await points(a, hb), await points(b, ha)) == (0, 0)

            # A cluster has no secret of another's homebase.
            assert (await secret_for(provisioning, a, hb)).status_code == 403

            # Moved from A to B: it boots to B, sends there, and A's broker no longer has it.
            await run_admin(a.settings, "feeds", "delete", feed_ha["id"])
            await add_feed(b.settings, b.user_id, ha)
            assert await boot_mqtt_port(provisioning, ha) == b.broker_port
            await publish(b, ha, secret_a, t + 5)
            await eventually(lambda: _stored(b, ha), within=60)
            with pytest.raises(aiomqtt.MqttError):
                await publish(a, ha, secret_a, t + 10)

            # A CoAP device is served by its own data server, refused (4.05) by the other.
            device = new_sn()
            await run_admin(
                p, "coap-devices", "add", device,
                "--data-server", f"127.0.0.1:{a.settings.devices.coap_port}",
            )  # fmt: skip
            await add_feed(a.settings, a.user_id, device, pair=False)
            await add_feed(b.settings, b.user_id, device, pair=False)
            assert await coap_post(a.settings.devices.coap_port, device) == aiocoap.CHANGED
            refused = await coap_post(b.settings.devices.coap_port, device)
            assert refused == aiocoap.numbers.codes.Code(4 << 5 | 5)
            assert (await points(a, device), await points(b, device)) == (1, 0)
        finally:
            for process in processes:
                process.terminate()
                process.wait(10)


async def _stored(cluster: Cluster, sn: str) -> bool:
    return await points(cluster, sn) > 0
