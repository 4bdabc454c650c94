"""Several ingest processes on one shared subscription (Mosquitto) or one queue (RabbitMQ)
(docs/scaling.md): SIGKILL one while a homebase publishes 20,000 points, start it again as an
orchestrator would, and every point is stored exactly once."""

import asyncio
import signal
import subprocess
from collections.abc import Awaitable, Callable

import asyncpg
import msgspec

from energy_platform.core.settings import Settings
from energy_platform.devices.simulator.homebase import (
    SimulatedHomebase,
    data_topic,
    homebase_client,
)
from tests.support.platform import (
    Platform,
    later_messages,
    messages,
    paired_homebase,
    publish_as,
    start_ingest,
    wait_subscribed,
)
from tests.support.services import eventually

POINTS = 20_000
MARKERS = 4
COUNT = (
    "SELECT count(*), count(DISTINCT (p.stream_id, p.ts)) FROM cluster.raw_points p"
    " JOIN cluster.streams s ON s.id = p.stream_id WHERE s.feed_id = $1"
)
SINCE = (
    "SELECT count(*) FROM cluster.raw_points p JOIN cluster.streams s ON s.id = p.stream_id"
    " WHERE s.feed_id = $1 AND p.ts >= to_timestamp($2)"
)


def worker(s: Settings, n: int) -> Settings:
    """Worker ``n``: the same share group, a client id (and so a session) of its own."""
    mqtt = msgspec.structs.replace(s.mqtt, client_id=f"{s.mqtt.client_id}-{n}")
    return msgspec.structs.replace(s, mqtt=mqtt)


async def test_two_workers_one_killed_and_restarted_store_every_point_once(
    provisioning_only: Platform, database_url: str
) -> None:
    platform = provisioning_only
    sn, secret, feed = await paired_homebase(platform)
    payloads = messages(SimulatedHomebase(sn, secret), POINTS // 50)
    conn = await asyncpg.connect(database_url)
    workers: list[subprocess.Popen[bytes]] = []
    try:
        workers = [start_ingest(worker(platform.settings, n)) for n in (1, 2)]
        for w in workers:
            await wait_subscribed(w)

        async def publish_all() -> None:
            async with homebase_client(platform.settings.mqtt, sn, secret) as client:
                for i, payload in enumerate(payloads):
                    topic = data_topic(sn, platform.settings.mqtt.topic_prefix)
                    await client.publish(topic, payload, qos=1)
                    if i % 20 == 19:
                        await asyncio.sleep(0.1)  # ~200 messages/s: the kill lands mid-stream

        async def stored() -> int:
            row = await conn.fetchrow(COUNT, int(feed or 0))
            assert row is not None
            return int(row[0])

        publisher = asyncio.create_task(publish_all())
        await eventually(lambda: _at_least(stored, 3_000), within=90)
        workers[1].send_signal(signal.SIGKILL)
        workers[1].wait()
        at_kill = await stored()
        # The survivor goes on storing while the other is dead.
        await eventually(lambda: _at_least(stored, at_kill + 2_000), within=90)
        await publisher  # every message acknowledged by the broker

        workers[1] = start_ingest(worker(platform.settings, 2))  # its session, its queue
        await wait_subscribed(workers[1])
        await eventually(lambda: _at_least(stored, POINTS), within=240)
        # Later messages behind the stream, four so that the broker, which spreads messages
        # over the workers, gives each one at least one in practice: once they are stored, what
        # a worker held before its own (a duplicate, a stray) has been handled.
        first, later = later_messages(SimulatedHomebase(sn, secret), MARKERS)
        for payload in later:
            await publish_as(platform, sn, secret, payload)

        async def later_stored() -> bool:
            return bool(await conn.fetchval(SINCE, int(feed or 0), first) >= 50 * MARKERS)

        await eventually(later_stored, within=60)
        final = await conn.fetchrow(COUNT, int(feed or 0))
    finally:
        for w in workers:
            w.terminate()
            w.wait(30)
        await conn.close()
    assert 0 < at_kill < POINTS
    assert final is not None
    assert (final[0], final[1]) == (POINTS + 50 * MARKERS, POINTS + 50 * MARKERS)


async def _at_least(stored: Callable[[], Awaitable[int]], n: int) -> bool:
    return await stored() >= n
