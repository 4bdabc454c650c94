"""RabbitMQ as the cluster's broker (docs/devices.md#rabbitmq): no message is acknowledged to a
homebase and then dropped, whether no ingest has run yet or the broker is SIGKILLed mid-burst;
a homebase publishes its own topics and no other SN's; poison is dead-lettered as on
Mosquitto. Every test runs on the session's one node (``rabbitmq``), each on a queue of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import aio_pika
import aiomqtt
import asyncpg
import msgspec
import pytest

from energy_platform.core.codec.envelope import seal
from energy_platform.core.settings import Settings
from energy_platform.devices.ingest.service import IngestService
from energy_platform.devices.simulator.homebase import (
    RAW_POINTS_PER_TIME,
    SimulatedHomebase,
    data_topic,
    homebase_client,
    status_topic,
)
from energy_platform.pairing.rabbitmq import routing_key
from tests.support.http import http_client
from tests.support.platform import (
    Platform,
    later_message,
    messages,
    paired_homebase,
    publish_as,
    publish_killing,
)
from tests.support.rabbitmq import RabbitCluster
from tests.support.services import eventually, running

POINTS_PER_BATCH = 50
COUNT = (
    "SELECT count(*), count(DISTINCT (p.stream_id, p.ts)) FROM cluster.raw_points p"
    " JOIN cluster.streams s ON s.id = p.stream_id WHERE s.feed_id = $1"
    " AND p.ts >= to_timestamp($2)"
)


def takes(port: int) -> bool:
    """Whether something on this machine takes connections on ``port``."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
    except OSError:
        return False
    return True


def own_queue(platform: Platform) -> Platform:
    """The platform with a queue (and topic prefix) of the test's own."""
    tag = secrets.token_hex(4)
    mqtt = msgspec.structs.replace(
        platform.settings.mqtt, share_group=f"test-{tag}", topic_prefix=f"test-{tag}/"
    )
    return msgspec.structs.replace(
        platform, settings=msgspec.structs.replace(platform.settings, mqtt=mqtt)
    )


@asynccontextmanager
async def ingesting(s: Settings) -> AsyncIterator[IngestService]:
    ingest = IngestService(s)
    async with running(ingest):
        await asyncio.wait_for(ingest.subscribed.wait(), 60)
        yield ingest


async def stored(
    database_url: str, feed: str | None, at_least: int, since: int = 0, within: float = 120
) -> tuple[int, int]:
    """(points, distinct points) of the feed (at ``since`` or later, a Unix time) once there
    are ``at_least``, or after ``within`` seconds: fewer then, for the caller's assertion to
    show. A quiet spell is no sign that the rest is lost (a restarted node's recovering queue
    held its consumer for a minute once), so only the count ends the wait early."""
    conn = await asyncpg.connect(database_url)
    n, distinct = 0, 0

    async def enough() -> bool:
        nonlocal n, distinct
        n, distinct = await conn.fetchrow(COUNT, int(feed or 0), since)
        return bool(n >= at_least)

    try:
        with contextlib.suppress(TimeoutError):
            await eventually(enough, within)
        return int(n), int(distinct)
    finally:
        await conn.close()


async def test_what_a_homebase_sends_before_any_ingest_ran_is_kept_for_it(
    rabbit_platform: Platform, rabbitmq: RabbitCluster, database_url: str, db: asyncpg.Connection
) -> None:
    # RabbitMQ acknowledges a message that no queue receives, then drops it: the queue must be
    # there before the homebase can log in at all. Pairing it (admin feeds add) is what makes it.
    platform = own_queue(rabbit_platform)
    s = platform.settings
    sn, secret, feed = await paired_homebase(platform)
    batches = messages(SimulatedHomebase(sn, secret), 3)
    async with homebase_client(s.mqtt, sn, secret, will=False) as client:
        await client.publish(status_topic(sn, s.mqtt.topic_prefix), b"online", qos=1, retain=True)
        for payload in batches:
            await client.publish(data_topic(sn, s.mqtt.topic_prefix), payload, qos=1)

    queue = rabbitmq.nodes[0].queue(s.mqtt.share_group)
    async with ingesting(s):
        n, distinct = await stored(database_url, feed, len(batches) * POINTS_PER_BATCH)
        await eventually(
            lambda: db.fetchval(
                "SELECT online FROM cluster.homebase_presence WHERE homebase_sn = $1", sn
            )
        )

    assert (n, distinct) == (3 * POINTS_PER_BATCH, 3 * POINTS_PER_BATCH)
    assert queue["durable"] is True
    assert queue["auto_delete"] is False
    assert queue["arguments"] == {"x-queue-type": "quorum"}  # no x-expires, no TTL


async def test_a_homebase_that_drops_off_is_offline_by_its_last_will(
    rabbit_platform: Platform, db: asyncpg.Connection
) -> None:
    platform = own_queue(rabbit_platform)
    s = platform.settings
    sn, secret, _ = await paired_homebase(platform)

    async def online() -> bool | None:
        found = await db.fetchval(
            "SELECT online FROM cluster.homebase_presence WHERE homebase_sn = $1", sn
        )
        return None if found is None else bool(found)

    async with ingesting(s):
        with contextlib.suppress(aiomqtt.MqttError):
            async with homebase_client(s.mqtt, sn, secret) as client:  # will: offline
                topic = status_topic(sn, s.mqtt.topic_prefix)
                await client.publish(topic, b"online", qos=1, retain=True)
                await eventually(lambda: _is(online, True))
                # The connection dies without a DISCONNECT, as when power or the network fails.
                client._client.socket().shutdown(socket.SHUT_RDWR)
        await eventually(lambda: _is(online, False), within=60)


async def _is(value: Callable[[], Awaitable[bool | None]], expected: bool) -> bool:
    return await value() is expected


async def test_a_homebase_publishes_its_own_topics_and_no_other_serial_numbers(
    rabbit_platform: Platform, database_url: str, db: asyncpg.Connection
) -> None:
    platform = own_queue(rabbit_platform)
    s = platform.settings
    sn, secret, feed = await paired_homebase(platform)
    other_sn, other_secret, _ = await paired_homebase(platform)
    homebase = SimulatedHomebase(sn, secret)
    t = int(time.time()) - 60
    await publish_as(platform, sn, secret, homebase.batch([t]))  # acknowledged: no error
    await publish_as(platform, sn, secret, b"online", kind="status", retain=True)
    forged = SimulatedHomebase(sn, other_secret).batch([t + 5])
    for topic in (data_topic(sn, s.mqtt.topic_prefix), status_topic(sn, s.mqtt.topic_prefix)):
        # RabbitMQ sends no PUBACK for a publish its topic permissions refuse, and disconnects.
        with pytest.raises(aiomqtt.MqttError):
            async with homebase_client(s.mqtt, other_sn, other_secret, will=False) as other:
                await other.publish(topic, forged, qos=1, timeout=1)

    # Behind the forged ones in the queue, were they queued: once it is stored, they are judged.
    first, later = later_message(homebase)
    await publish_as(platform, sn, secret, later)

    async with ingesting(s):
        n, _ = await stored(database_url, feed, 1)
        marker, _ = await stored(database_url, feed, POINTS_PER_BATCH, since=first)
        letters = await db.fetchval("SELECT count(*) FROM cluster.dead_letters WHERE sn = $1", sn)
    assert n > 0  # its own batch
    assert marker == POINTS_PER_BATCH
    assert letters == 0  # the forged ones (under its SN, another key) never reached ingest


async def waiting(s: Settings) -> int:
    """Messages in the ingest queue, unacknowledged ones of closed connections included."""
    async with await aio_pika.connect(s.mqtt.amqp_url) as connection:
        channel = await connection.channel()
        queue = await channel.declare_queue(s.mqtt.share_group, passive=True)
        return int(queue.declaration_result.message_count or 0)


async def test_poison_is_dead_lettered_and_the_homebase_goes_on(
    rabbit_platform: Platform, db: asyncpg.Connection, database_url: str
) -> None:
    platform = own_queue(rabbit_platform)
    sn, secret, feed = await paired_homebase(platform)
    homebase = SimulatedHomebase(sn, secret)
    t = int(time.time()) - 60
    async with ingesting(platform.settings):
        await publish_as(platform, sn, secret, b"\x01" + bytes(40))  # cannot be decrypted
        await publish_as(platform, sn, secret, seal(homebase.aead, sn, b"[{not json"))
        await publish_as(platform, sn, secret, homebase.batch([t]))
        n, _ = await stored(database_url, feed, 7)
        letters = await db.fetch(
            "SELECT cause, topic FROM cluster.dead_letters WHERE sn = $1 ORDER BY id", sn
        )
    # Acknowledged: nothing of them is left in the queue for the next ingest to meet again.
    assert await waiting(platform.settings) == 0
    assert n == RAW_POINTS_PER_TIME  # the good batch
    assert [r["cause"] for r in letters] == ["undecryptable", "invalid_json"]
    assert letters[0]["topic"] == data_topic(sn)  # the SN, from the routing key


async def test_broker_sigkill_mid_burst_loses_nothing_it_acknowledged(
    rabbit_platform: Platform,
    rabbitmq: RabbitCluster,
    database_url: str,
    record_property: pytest.RecordProperty,
) -> None:
    platform = own_queue(rabbit_platform)
    s = platform.settings
    node = rabbitmq.nodes[0]
    sn, secret, feed = await paired_homebase(platform)
    homebase = SimulatedHomebase(sn, secret)
    burst = messages(homebase, 400)
    async with ingesting(s) as ingest:
        # The new queue saved, as a queue in service is (RabbitNode.restart); ingest sees the
        # node go while it restarts and subscribes again on its own.
        await asyncio.to_thread(node.restart)
        await asyncio.wait_for(ingest.subscribed.wait(), 60)
        ports_after_kill: list[int] = []

        def kill() -> None:
            node.kill()
            ports_after_kill.extend(p for p in (node.amqp_port, node.mqtt_port) if takes(p))

        acknowledged = await publish_killing(s, sn, secret, burst, kill, at=200)
        # Nothing of the killed node listens once kill() returns: wait_ready() after start()
        # cannot take its ports for the new node's.
        assert ports_after_kill == []
        await eventually(lambda: not ingest.subscribed.is_set())  # it saw the broker go
        began = time.monotonic()
        node.start()
        node.wait_ready()
        restarted_in = time.monotonic() - began
        await asyncio.wait_for(ingest.subscribed.wait(), 60)  # it reconnects on its own
        owed = acknowledged * POINTS_PER_BATCH
        kept, distinct = await stored(database_url, feed, owed)
        _, later = later_message(homebase)
        await publish_as(platform, sn, secret, later)
        after, _ = await stored(database_url, feed, kept + POINTS_PER_BATCH)

    record_property("acknowledged_points_lost", owed - kept)
    print(f"rabbitmq SIGKILL mid-burst: {owed} acknowledged, {owed - kept} lost;")
    print(f"node restarted in {restarted_in:.1f} s")
    assert acknowledged == 200
    assert (kept, distinct) == (owed, owed)  # nothing lost, nothing twice
    assert after == kept + POINTS_PER_BATCH


async def test_the_documented_service_accounts_are_enough(
    rabbit_platform: Platform, rabbitmq: RabbitCluster, database_url: str
) -> None:
    # docs/operations.md#running-rabbitmq: `ingest` and `accounts` with only the rights listed
    # there (the node's administrator makes them, as rabbitmqctl would).
    platform = own_queue(rabbit_platform)
    node, queue = rabbitmq.nodes[0], platform.settings.mqtt.share_group
    q = re.escape(queue)
    rights = {
        "ingest": ("", f"^{q}$", f"^{q}$", f"^({q}|amq\\.topic)$"),
        "accounts": ("administrator", f"^{q}$", f"^{q}$", "^amq\\.topic$"),
    }
    password = secrets.token_hex(8)
    async with http_client(base_url=node.api + "/api") as admin:
        for user, (tags, configure, write, read) in rights.items():
            name = f"{user}-{queue}"
            body = {"password": password, "tags": tags}
            assert (await admin.put(f"/users/{name}", json=body)).is_success
            body = {"configure": configure, "write": write, "read": read}
            assert (await admin.put(f"/permissions/%2F/{name}", json=body)).is_success
    port = f"127.0.0.1:{node.amqp_port}"
    mqtt = msgspec.structs.replace(
        platform.settings.mqtt,
        amqp_url=f"amqp://ingest-{queue}:{password}@{port}/",
        accounts_url=f"http://accounts-{queue}:{password}@127.0.0.1:{node.http_port}",
    )
    platform = msgspec.structs.replace(
        platform, settings=msgspec.structs.replace(platform.settings, mqtt=mqtt)
    )
    sn, secret, feed = await paired_homebase(platform)  # the queue declared as `accounts`
    await publish_as(platform, sn, secret, SimulatedHomebase(sn, secret).batch([1_790_000_000]))
    async with ingesting(platform.settings):  # declares, binds and consumes as `ingest`
        n, _ = await stored(database_url, feed, 7)
    assert n == RAW_POINTS_PER_TIME


def test_routing_keys_are_mqtt_topics_with_slashes_and_dots_swapped() -> None:
    assert routing_key("test-1/homebases/0123456789ABCDEF/data") == (
        "test-1.homebases.0123456789ABCDEF.data"
    )
