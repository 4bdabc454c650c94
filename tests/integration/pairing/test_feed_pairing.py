"""Adding a feed is the customer registering a serial number: the cluster pairs the homebase."""

import time

import asyncpg
import msgspec
import psycopg
import pytest

from energy_platform import seeding
from tests.support.admin import run_admin
from tests.support.http import http_client
from tests.support.platform import Platform, add_feed
from tests.support.provisioning import add_cluster, add_homebase


async def test_adding_a_feed_pairs_the_homebase_with_this_cluster(platform: Platform) -> None:
    sn = await add_homebase(platform.settings)
    await add_feed(platform.settings, platform.user_id, sn, title="Pairing", timezone="UTC")
    auth = {"X-SvcClusterAuth": platform.settings.pairing.cluster_secret}
    async with http_client(base_url=platform.provisioning + "/api", headers=auth) as http:
        status = (await http.get(f"/device/{sn}/pair/")).json()
    assert (status["paired"], status["your_device"]) == (True, True)


async def test_a_homebase_paired_elsewhere_gets_no_feed(
    platform: Platform, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sn = await add_homebase(platform.settings)
    other = await add_cluster(platform.settings, "another cluster")
    async with http_client(base_url=platform.provisioning + "/api") as http:
        await http.post(f"/device/{sn}/pair/", headers={"X-SvcClusterAuth": other.secret})
    with pytest.raises(SystemExit) as exit_:
        await add_feed(platform.settings, platform.user_id, sn, title="Pairing", timezone="UTC")
    assert exit_.value.code == 1
    assert f"homebase {sn} is paired to another cluster" in capsys.readouterr().err
    with psycopg.connect(database_url) as conn:
        feeds = conn.execute(
            "SELECT count(*) FROM cluster.feeds WHERE homebase_sn = %s", (sn,)
        ).fetchone()
    assert feeds == (0,)


async def test_deleting_a_feed_removes_its_data_and_unpairs_the_homebase(
    platform: Platform, database_url: str, db: asyncpg.Connection
) -> None:
    sn = await add_homebase(platform.settings)
    feed = await add_feed(platform.settings, platform.user_id, sn, title="Pairing", timezone="UTC")
    assert isinstance(feed, dict)
    stream = await seeding.raw_stream(db, int(feed["id"]), 1, 1, device=3)
    await seeding.write_points(db, stream, [(int(time.time()), 1)])

    deleted = await run_admin(platform.settings, "feeds", "delete", feed["id"])

    auth = {"X-SvcClusterAuth": platform.settings.pairing.cluster_secret}
    async with http_client(base_url=platform.provisioning + "/api", headers=auth) as http:
        status = (await http.get(f"/device/{sn}/pair/")).json()
    with psycopg.connect(database_url) as conn:
        left = conn.execute(
            "SELECT (SELECT count(*) FROM cluster.feeds WHERE id = %s),"
            " (SELECT count(*) FROM cluster.raw_points WHERE stream_id = %s)",
            (feed["id"], stream),
        ).fetchone()
    assert deleted == {"deleted": feed["id"], "homebase": sn, "unpaired": True}
    assert status["paired"] is False
    assert left == (0, 0)


async def test_pairing_without_the_accounts_setting_says_what_to_set_and_changes_nothing(
    platform: Platform, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sn = await add_homebase(platform.settings)
    # The cluster would pair the homebase but could not give it a broker account.
    mqtt = msgspec.structs.replace(platform.settings.mqtt, accounts_url="")
    without = msgspec.structs.replace(platform.settings, mqtt=mqtt)
    with pytest.raises(SystemExit) as exit_:
        await add_feed(without, platform.user_id, sn, title="No account", timezone="UTC")
    assert exit_.value.code == 1
    assert "EP_MQTT_ACCOUNTS_URL is not set" in capsys.readouterr().err
    # Neither a feed here nor a pairing at provisioning.
    with psycopg.connect(database_url) as conn:
        feeds = conn.execute(
            "SELECT count(*) FROM cluster.feeds WHERE homebase_sn = %s", (sn,)
        ).fetchone()
    assert feeds == (0,)
    auth = {"X-SvcClusterAuth": platform.settings.pairing.cluster_secret}
    async with http_client(base_url=platform.provisioning + "/api", headers=auth) as http:
        status = (await http.get(f"/device/{sn}/pair/")).json()
    assert status["paired"] is False
