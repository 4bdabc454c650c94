"""SIGKILL of the broker (docs/devices.md#the-brokers-crash-window). A homebase deletes what the
broker acknowledged, so an acknowledged point that never reaches the database is lost for good:
Mosquitto 2.0 keeps its queue in memory and saves it as a snapshot every
``autosave_interval`` seconds, so what it acknowledged since the last snapshot and had not yet
handed to ingest dies with it. These tests hold the window to the configured interval, report
what a burst loses, and check that ingest comes back on its own."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
import msgspec
import pytest

from energy_platform.core.settings import Settings
from energy_platform.devices.ingest.service import IngestService
from energy_platform.devices.simulator.homebase import (
    SimulatedHomebase,
    data_topic,
    homebase_client,
)
from energy_platform.services import build_services
from tests.support.admin import run_admin
from tests.support.broker import PERSISTENCE, ROOT, KillableBroker
from tests.support.platform import (
    Platform,
    later_message,
    messages,
    paired_homebase,
    platform_settings,
    publish_killing,
    with_cluster,
)
from tests.support.services import eventually, running, with_port

POINTS_PER_BATCH = 50
SHIPPED = ("deploy/mosquitto/mosquitto.conf", "scripts/local-stack.sh")


def test_the_shipped_brokers_save_as_the_tested_one() -> None:
    for path in SHIPPED:
        lines = {line.strip() for line in (ROOT / path).read_text().splitlines()}
        assert PERSISTENCE in lines, path


class Crashable(msgspec.Struct, frozen=True):
    platform: Platform
    broker: KillableBroker


@pytest.fixture
async def crashable(settings: Settings, mqtt_url: str) -> AsyncIterator[Crashable]:
    """Provisioning on a broker of this test's own, to kill; ingest started by the test."""
    with KillableBroker() as broker:
        s = await with_cluster(platform_settings(settings, with_port(mqtt_url, broker.port)))
        mqtt = msgspec.structs.replace(
            s.mqtt, accounts_url=with_port(settings.mqtt.accounts_url, broker.port)
        )
        s = msgspec.structs.replace(s, mqtt=mqtt)
        user = await run_admin(s, "users", "add", f"crash-{secrets.token_hex(3)}")
        provisioning = s.pairing.provisioning_url
        async with running(
            *build_services("provisioning", s), ready_urls=(provisioning + "/healthz",)
        ):
            platform = Platform(s, "", provisioning, user["token"], user["id"])
            yield Crashable(platform, broker)


@asynccontextmanager
async def ingesting(s: Settings) -> AsyncIterator[IngestService]:
    ingest = IngestService(s)
    async with running(ingest):
        await asyncio.wait_for(ingest.subscribed.wait(), 60)
        yield ingest


COUNT = (
    "SELECT count(*) FROM cluster.raw_points p JOIN cluster.streams s ON s.id = p.stream_id"
    " WHERE s.feed_id = $1 AND p.ts >= to_timestamp($2)"
)


async def stored(database_url: str, feed: str | None, since: int = 0) -> int:
    """The feed's points (at ``since`` or later, a Unix time)."""
    conn = await asyncpg.connect(database_url)
    try:
        return int(await conn.fetchval(COUNT, int(feed or 0), since))
    finally:
        await conn.close()


async def test_what_the_broker_acknowledged_before_its_last_snapshot_survives_sigkill(
    crashable: Crashable, database_url: str
) -> None:
    platform, broker = crashable.platform, crashable.broker
    s = platform.settings
    sn, secret, feed = await paired_homebase(platform)
    async with ingesting(s):
        pass  # ingest's session exists, and the broker queues for it while it is away
    # ... in a snapshot, as after any long run. The broker saves every autosave_interval
    # seconds, later on a loaded machine: the test waits for the save, not for a guess of it.
    await eventually(lambda: broker.saved(s.mqtt.client_id.encode()))
    batches = messages(SimulatedHomebase(sn, secret), 20)
    async with homebase_client(s.mqtt, sn, secret, will=False) as client:
        for payload in batches:
            await client.publish(data_topic(sn, s.mqtt.topic_prefix), payload, qos=1)
    await eventually(lambda: broker.saved(*batches))  # every one of them queued in a snapshot

    broker.kill()
    broker.start()
    owed = len(batches) * POINTS_PER_BATCH

    async def all_there() -> bool:
        return await stored(database_url, feed) >= owed

    async with ingesting(s):
        await eventually(all_there, within=60)
    assert await stored(database_url, feed) == owed


async def test_a_burst_cut_by_sigkill_reports_its_loss_and_ingest_comes_back(
    crashable: Crashable, database_url: str, record_property: pytest.RecordProperty
) -> None:
    platform, broker = crashable.platform, crashable.broker
    s = platform.settings
    sn, secret, feed = await paired_homebase(platform)
    homebase = SimulatedHomebase(sn, secret)
    burst = messages(homebase, 400)
    async with ingesting(s) as ingest:
        acknowledged = await publish_killing(s, sn, secret, burst, broker.kill, at=200)
        await eventually(lambda: not ingest.subscribed.is_set())  # it saw the broker go
        broker.start()
        # Ingest reconnects on its own (a writer that outlived its connection once stalled it
        # here for good) and stores what the homebase sends next.
        await asyncio.wait_for(ingest.subscribed.wait(), 60)
        owed = acknowledged * POINTS_PER_BATCH
        # What the homebase sends next is stored, and behind all that the broker kept: once
        # it is there, nothing more of the burst can come.
        first, later = later_message(homebase)
        async with homebase_client(s.mqtt, sn, secret, will=False) as client:
            await client.publish(data_topic(sn, s.mqtt.topic_prefix), later, qos=1)

        async def later_stored() -> bool:
            return await stored(database_url, feed, since=first) >= POINTS_PER_BATCH

        await eventually(later_stored, within=60)
        kept = await stored(database_url, feed) - POINTS_PER_BATCH

    lost = owed - kept
    record_property("acknowledged_points", owed)
    record_property("acknowledged_points_lost", lost)
    print(f"broker SIGKILL in a burst: {owed} points acknowledged, {lost} lost")
    assert acknowledged == 200
    assert 0 <= lost <= owed
