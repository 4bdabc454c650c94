"""The database goes away while a homebase publishes 20,000 points: ingest waits, never exits,
and stores every point exactly once when the database is back. The same for the broker."""

import asyncio
import time
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import msgspec
import pytest

from energy_platform.core.settings import DatabaseSettings
from energy_platform.devices.simulator.homebase import (
    SimulatedHomebase,
    data_topic,
    homebase_client,
)
from tests.support.platform import (
    Platform,
    later_message,
    messages,
    paired_homebase,
    publish_as,
    start_ingest,
    wait_subscribed,
)
from tests.support.services import eventually, free_port
from tests.support.tcp_proxy import TcpProxy

POINTS = 20_000  # 400 messages of 50 points
COUNT = (
    "SELECT count(*), count(DISTINCT (p.stream_id, p.ts)) FROM cluster.raw_points p"
    " JOIN cluster.streams s ON s.id = p.stream_id WHERE s.feed_id = $1"
)
SINCE = (
    "SELECT count(*) FROM cluster.raw_points p JOIN cluster.streams s ON s.id = p.stream_id"
    " WHERE s.feed_id = $1 AND p.ts >= to_timestamp($2)"
)
# What ingest logs when the database fails a write, or a look-up that holds a message.
RETRIES = ("database unavailable; retrying batch", "message held; retrying")


async def test_a_database_outage_while_publishing_loses_and_duplicates_nothing(
    provisioning_only: Platform, database_url: str
) -> None:
    platform = provisioning_only
    sn, secret, feed = await paired_homebase(platform)
    payloads = messages(SimulatedHomebase(sn, secret), POINTS // 50)
    db = urlsplit(database_url)
    # Ingest reaches the database only through a relay the test cuts: connections break
    # mid-transaction, then new ones are refused, as during a restart. Its sessions carry an
    # application name, so that the test can also end them as a server shutdown does.
    proxy = TcpProxy(db.hostname or "127.0.0.1", db.port or 5432, free_port())
    await proxy.start()
    relayed = urlunsplit(
        db._replace(
            netloc=f"{db.username}@127.0.0.1:{proxy.port}", query="application_name=outage-test"
        )
    )
    s = msgspec.structs.replace(
        platform.settings, database=DatabaseSettings(url=relayed, connect_timeout=1.0)
    )
    conn = await asyncpg.connect(database_url)
    ingest = start_ingest(s)
    try:
        log = await wait_subscribed(ingest)

        async def stored(at_least: int) -> bool:
            total, _ = await conn.fetchrow(COUNT, int(feed or 0))
            return bool(total >= at_least)

        # The second half waits for the cut, so that the outage lands mid-stream however fast
        # or slow the machine is (a fixed pace let a slow one store everything before it).
        cut = asyncio.Event()

        async def publish_all() -> None:
            async with homebase_client(platform.settings.mqtt, sn, secret) as client:
                topic = data_topic(sn, platform.settings.mqtt.topic_prefix)
                for i, payload in enumerate(payloads):
                    if i == len(payloads) // 2:
                        await cut.wait()
                    await client.publish(topic, payload, qos=1)

        publisher = asyncio.create_task(publish_all())
        await eventually(lambda: stored(2_000), within=60)
        # First what a restart does to open sessions (57P01 admin shutdown), then the outage.
        terminated = await conn.fetchval(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE application_name = 'outage-test'"
        )
        await eventually(lambda: stored(6_000), within=60)
        await proxy.cut()
        at_cut, _ = await conn.fetchrow(COUNT, int(feed or 0))
        met = log.count(*RETRIES)
        cut.set()
        # Ingest meets the refusing database a few times (with backoff: seconds) and lives.
        await eventually(lambda: log.count(*RETRIES) >= met + 3, within=60)
        assert ingest.poll() is None, "ingest exited during the outage"
        await publisher  # every message is the broker's now
        await proxy.start()
        await eventually(lambda: stored(POINTS), within=120)
        # One ingest on one session, in order: once a later message is stored, nothing of the
        # burst (a duplicate, a stray) can still come.
        first, later = later_message(SimulatedHomebase(sn, secret))
        await publish_as(platform, sn, secret, later)

        async def later_stored() -> bool:
            return bool(await conn.fetchval(SINCE, int(feed or 0), first) >= 50)

        await eventually(later_stored, within=60)
        total, distinct = await conn.fetchrow(COUNT, int(feed or 0))
        total, distinct = total - 50, distinct - 50
        alive = ingest.poll() is None
    finally:
        ingest.kill()
        ingest.wait(10)
        await proxy.cut()
        await conn.close()
    assert alive
    assert terminated >= 1
    assert at_cut < POINTS
    assert total == distinct == POINTS


# Mosquitto only, to keep the suite lean: on RabbitMQ, test_rabbitmq.py's broker SIGKILL proves
# that ingest comes back over AMQP and stores what was queued meanwhile.
@pytest.mark.parametrize("provisioning_only", ["mosquitto"], indirect=True)
async def test_ingest_rides_out_a_broker_outage(
    provisioning_only: Platform, database_url: str
) -> None:
    platform = provisioning_only
    sn, secret, feed = await paired_homebase(platform)
    homebase = SimulatedHomebase(sn, secret)
    mqtt = urlsplit(platform.settings.mqtt.url)
    # Ingest reaches the broker through a relay the test cuts; the homebase goes direct.
    proxy = TcpProxy(mqtt.hostname or "127.0.0.1", mqtt.port or 1883, free_port())
    await proxy.start()
    relayed = mqtt._replace(netloc=f"{mqtt.username}:{mqtt.password}@127.0.0.1:{proxy.port}")
    s = msgspec.structs.replace(
        platform.settings,
        mqtt=msgspec.structs.replace(platform.settings.mqtt, url=urlunsplit(relayed)),
    )
    conn = await asyncpg.connect(database_url)
    ingest = start_ingest(s)
    try:
        log = await wait_subscribed(ingest)

        async def stored(at_least: int) -> bool:
            total, _ = await conn.fetchrow(COUNT, int(feed or 0))
            return bool(total >= at_least)

        t = int(time.time()) - 60
        await publish_as(platform, sn, secret, homebase.batch([t]))
        await eventually(lambda: stored(5))
        lost = log.count("broker unreachable; retrying")
        await proxy.cut()
        await publish_as(platform, sn, secret, homebase.batch([t + 5]))  # queued by the broker
        # It saw the broker go, and a try to reach it again failed too: it lives on.
        await eventually(lambda: log.count("broker unreachable; retrying") >= lost + 2, 60)
        assert ingest.poll() is None, "ingest exited when the broker went away"
        await proxy.start()
        await eventually(lambda: stored(10), within=60)
        alive = ingest.poll() is None
    finally:
        ingest.kill()
        ingest.wait(10)
        await proxy.cut()
        await conn.close()
    assert alive
