"""The restore drill (docs/operations.md#backups): on a PostgreSQL cluster of its own, holding
a provisioning database and a cluster database, with WAL archived by pgBackRest and a full and
a differential backup taken through deploy/pgbackrest/backup.sh:

a homebase publishes and the drill notes the time; more points arrive; the feed is deleted by
mistake (its points go, the homebase is unpaired); the disk is lost (the data directory
removed); the cluster is restored to the noted time. Every point committed before that time is
back and none after it; provisioning says the homebase is paired with this cluster again (it
boots to it); after the broker accounts are synced, its new points are stored and served."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from datetime import datetime, timedelta

import asyncpg
import msgspec
import pytest

from energy_platform.core.lifecycle import Service
from energy_platform.core.settings import (
    DatabaseSettings,
    DeviceSettings,
    PairingSettings,
    Settings,
)
from energy_platform.devices.simulator.homebase import (
    RAW_POINTS_PER_TIME,
    SimulatedHomebase,
    data_topic,
    homebase_client,
)
from energy_platform.services import build_services
from tests.support.admin import run_admin
from tests.support.databases import create_session_database
from tests.support.http import http_client
from tests.support.pgcluster import DrillCluster
from tests.support.platform import add_feed, platform_settings
from tests.support.provisioning import add_cluster, add_homebase
from tests.support.services import eventually, free_port, running

RAW_POINTS = """
SELECT count(*) FROM cluster.raw_points p JOIN cluster.streams s ON s.id = p.stream_id
  JOIN cluster.feeds f ON f.id = s.feed_id
 WHERE f.homebase_sn = $1 AND p.ts BETWEEN to_timestamp($2) AND to_timestamp($3)"""


class Laps:
    """Seconds each step of the drill took (printed: the figures of docs/operations.md)."""

    def __init__(self) -> None:
        self.last = time.monotonic()
        self.steps: dict[str, float] = {}

    def __call__(self, step: str) -> None:
        now = time.monotonic()
        self.steps[step] = round(now - self.last, 2)
        self.last = now


@pytest.fixture
def drill() -> Iterator[DrillCluster]:
    pg = DrillCluster()
    try:
        pg.initdb()
        pg.start()
        yield pg
    finally:
        pg.close()


async def raw_points(url: str, sn: str, first: int, last: int) -> int:
    conn = await asyncpg.connect(url)
    try:
        return int(await conn.fetchval(RAW_POINTS, sn, first, last))
    finally:
        await conn.close()


async def publish(s: Settings, homebase: SimulatedHomebase, times: list[int]) -> None:
    async with homebase_client(s.mqtt, homebase.sn, homebase.secret, will=False) as client:
        for k in range(0, len(times), 50):
            payload = homebase.batch(times[k : k + 50])
            await client.publish(data_topic(homebase.sn, s.mqtt.topic_prefix), payload, qos=1)


async def test_restore_to_a_noted_time_keeps_what_was_committed_before_it(
    drill: DrillCluster, settings: Settings, mqtt_url: str
) -> None:
    started = time.monotonic()
    lap = Laps()
    provisioning_db = create_session_database(drill.url)
    cluster_db = create_session_database(drill.url)
    drill.drop_templates()
    lap("migrate two databases")
    drill.backup("init")
    lap("stanza")
    drill.backup("full", provisioning_db, cluster_db)
    lap("full backup")

    base = platform_settings(settings, mqtt_url)
    p = msgspec.structs.replace(base, database=DatabaseSettings(url=provisioning_db))
    provisioning = f"http://127.0.0.1:{p.http.provisioning_port}"
    cluster = await add_cluster(p, "drill")
    c = msgspec.structs.replace(
        base,
        database=DatabaseSettings(url=cluster_db),
        devices=DeviceSettings(coap_port=free_port(socket.SOCK_DGRAM)),
        pairing=PairingSettings(provisioning_url=provisioning, cluster_secret=cluster.secret),
    )
    api = f"http://127.0.0.1:{c.http.api_port}"

    def services() -> list[Service]:
        return [*build_services(["provisioning"], p), *build_services(["api", "ingest"], c)]

    sn = await add_homebase(p)
    t0 = int(time.time()) - 3600
    before, after = list(range(t0, t0 + 600)), list(range(t0 + 600, t0 + 1200))
    async with running(*services(), ready_urls=(api + "/healthz", provisioning + "/healthz")):
        user = await run_admin(c, "users", "add", "drill")
        feed = await add_feed(c, user["id"], sn, title="Drill", timezone="UTC")
        async with http_client(headers={"X-SvcClusterAuth": cluster.secret}) as http:
            got = await http.get(f"{provisioning}/api/device/{sn}/secret/")
        homebase = SimulatedHomebase(sn, bytes.fromhex(got.json()["secret"]))

        lap("services, feed")
        await publish(c, homebase, before)
        expected = RAW_POINTS_PER_TIME * len(before)
        await eventually(lambda: _count_is(cluster_db, sn, before, expected))
        lap("points stored")
        conn = await asyncpg.connect(cluster_db)
        noted_at: datetime = await conn.fetchval("SELECT clock_timestamp()")
        await conn.close()
        drill.backup("diff", provisioning_db, cluster_db)
        lap("differential backup")

        await publish(c, homebase, after)
        await eventually(lambda: _count_is(cluster_db, sn, after, RAW_POINTS_PER_TIME * len(after)))
        await run_admin(c, "feeds", "delete", str(feed["id"]))  # the mistake
        assert await raw_points(cluster_db, sn, before[0], after[-1]) == 0
        async with http_client() as http:
            assert (await http.get(f"{provisioning}/api/device/{sn}/boot/")).status_code == 409

    # What archive_timeout does in production: the WAL up to the mistake is in the repository.
    drill.archive_current_wal()
    drill.destroy()
    lap("more points, the mistake, WAL archived, destroyed")
    restore_started = time.monotonic()
    # pgBackRest takes milliseconds: rounded up, still before anything published after it.
    target = (noted_at + timedelta(milliseconds=1)).isoformat(sep=" ", timespec="milliseconds")
    drill.backup("restore", target)
    drill.start()
    drill.wait_promoted()
    restore_seconds = time.monotonic() - restore_started
    lap("restore and recovery")

    assert await raw_points(cluster_db, sn, before[0], before[-1]) == expected
    assert await raw_points(cluster_db, sn, after[0], after[-1]) == 0
    async with running(*services(), ready_urls=(api + "/healthz", provisioning + "/healthz")):
        async with http_client() as http:
            boot = await http.get(f"{provisioning}/api/device/{sn}/boot/")
        assert boot.status_code == 200, boot.text  # paired with this cluster again
        # The broker is not restored: the account the unpairing removed is given back.
        await run_admin(c, "broker-accounts", "sync")
        late = [after[-1] + 1 + k for k in range(10)]
        await publish(c, homebase, late)
        await eventually(lambda: _count_is(cluster_db, sn, late, RAW_POINTS_PER_TIME * len(late)))
        headers = {"Authorization": f"Bearer {user['token']}"}
        async with http_client(base_url=api, headers=headers) as http:
            streams = await http.get(f"/feeds/{feed['id']}/streams")
        assert streams.status_code == 200, streams.text
        assert streams.json()
    lap("serves again")
    print(lap.steps)
    print(
        f"drill: {expected} points before {noted_at.isoformat()} restored in "
        f"{restore_seconds:.1f} s; whole drill {time.monotonic() - started:.1f} s"
    )


async def _count_is(url: str, sn: str, times: list[int], expected: int) -> bool:
    return await raw_points(url, sn, times[0], times[-1]) == expected
