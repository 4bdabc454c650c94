"""``kill -9`` of a real ingest process in the middle of a stream: nothing acknowledged is lost."""

import asyncio
import signal

import asyncpg
import pytest

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
from tests.support.services import eventually


# Mosquitto only: on RabbitMQ the same kill is test_workers.py's (one of two workers), which
# the suite runs on both brokers; 100,000 points more on RabbitMQ cost about 35 s.
@pytest.mark.parametrize("provisioning_only", ["mosquitto"], indirect=True)
async def test_kill_9_while_publishing_loses_and_duplicates_nothing(
    provisioning_only: Platform, database_url: str
) -> None:
    platform = provisioning_only
    sn, secret, feed = await paired_homebase(platform)
    payloads = messages(SimulatedHomebase(sn, secret))
    count = (
        "SELECT count(*) FROM cluster.raw_points p JOIN cluster.streams s ON s.id = p.stream_id"
        " WHERE s.feed_id = $1"
    )
    conn = await asyncpg.connect(database_url)
    ingest = start_ingest(platform.settings)
    try:
        await wait_subscribed(ingest)

        async def publish_all() -> None:
            async with homebase_client(platform.settings.mqtt, sn, secret) as client:
                for i, payload in enumerate(payloads):
                    await client.publish(
                        data_topic(sn, platform.settings.mqtt.topic_prefix), payload, qos=1
                    )
                    if i % 50 == 49:
                        await asyncio.sleep(0.1)  # ~500 messages/s: the kill lands mid-stream

        async def stored_at_least(n: int) -> bool:
            return bool(await conn.fetchval(count, int(feed or 0)) >= n)

        publisher = asyncio.create_task(publish_all())
        await eventually(lambda: stored_at_least(10_000), within=90)
        ingest.send_signal(signal.SIGKILL)
        ingest.wait()
        at_kill = await conn.fetchval(count, int(feed or 0))
        await publisher  # every message acknowledged by the broker

        ingest = start_ingest(platform.settings)
        await wait_subscribed(ingest)
        await eventually(lambda: stored_at_least(100_000), within=240)
        # One ingest on one session, in order: once a later message is stored, nothing of the
        # stream (a duplicate, a stray) can still come.
        first, later = later_message(SimulatedHomebase(sn, secret))
        await publish_as(platform, sn, secret, later)
        since = count + " AND p.ts >= to_timestamp($2)"

        async def later_stored() -> bool:
            return bool(await conn.fetchval(since, int(feed or 0), first) >= 50)

        await eventually(later_stored, within=60)
        final = await conn.fetchval(count, int(feed or 0)) - 50
        distinct = await conn.fetchval(
            "SELECT count(DISTINCT (p.stream_id, p.ts)) FROM cluster.raw_points p"
            " JOIN cluster.streams s ON s.id = p.stream_id WHERE s.feed_id = $1",
            int(feed or 0),
        )
        distinct -= 50
    finally:
        ingest.terminate()
        ingest.wait(30)
        await conn.close()
    assert 0 < at_kill < 100_000
    assert final == distinct == 100_000
