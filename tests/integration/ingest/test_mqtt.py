import asyncio
import math
import re
import time
from collections import defaultdict

import asyncpg
import httpx
import msgspec

from energy_platform.devices.codec.envelope import derive_key, seal
from energy_platform.devices.codec.format_v4 import RAW_MEDIA, HomebaseRecord
from energy_platform.devices.ingest.service import broker_client
from energy_platform.devices.simulator import SimulatedHomebase, data_topic, status_topic
from tests.integration.ingest.conftest import Platform, paired_homebase
from tests.support.services import eventually


async def publish(platform: Platform, topic: str, payload: bytes, *, retain: bool = False) -> None:
    async with broker_client(platform.settings.mqtt, f"publisher-{time.monotonic_ns()}") as client:
        await client.publish(topic, payload, qos=1, retain=retain)


def expected_points(
    records: list[HomebaseRecord],
) -> dict[tuple[int, int, int, int | None], list[list[float]]]:
    points: dict[tuple[int, int, int, int | None], list[list[float]]] = defaultdict(list)
    for r in records:
        for key, value in r.s.items():
            values = value if isinstance(value, list) else [value]
            for i, v in enumerate(values, start=1):
                points[(r.ch, r.d, int(key), i if isinstance(value, list) else None)].append(
                    [r.t, v]
                )
    return points


async def test_a_simulated_homebase_comes_back_exactly_through_the_data_api(
    platform: Platform,
) -> None:
    sn, secret, feed = await paired_homebase(platform)
    homebase = SimulatedHomebase(sn, secret, seed=7)
    t0 = int(time.time()) - 300
    records = [r for t in range(t0, t0 + 30, 5) for r in homebase.records(t)]
    await publish(
        platform, data_topic(sn, platform.settings.mqtt.topic_prefix), homebase.encrypt(records)
    )

    expected = expected_points(records)
    raw_expected = sorted((k[0], k[1], k[2], v) for k, v in expected.items() if k[2] in RAW_MEDIA)
    async with platform.client() as api:

        async def raw_streams_complete() -> bool:
            streams = (await api.get(f"/feeds/{feed}/streams?type=raw")).json()
            return len(streams) == len(raw_expected)

        await eventually(raw_streams_complete)
        got = []
        for stream in (await api.get(f"/feeds/{feed}/streams?type=raw")).json():
            data = (await api.get(f"/feeds/{feed}/streams/{stream['id']}/data")).json()
            got.append((stream["channel"], stream["device"], stream["medium"], data))
        system = (await api.get(f"/feeds/{feed}/streams?type=system")).json()
        signal = (await api.get(f"/feeds/{feed}/streams/{system[0]['id']}/data")).json()

    assert sorted(got) == raw_expected
    assert [s["channel"] for s in system] == [1]
    assert signal == expected[(1, 3, 40, None)]


def dropped(metrics: str) -> dict[str, float]:
    return {
        m["cause"]: float(m["value"])
        for m in re.finditer(
            r'ep_ingest_dropped_total\{cause="(?P<cause>[a-z_]+)"\} (?P<value>\S+)', metrics
        )
    }


async def test_bad_input_is_dropped_counted_by_cause_and_the_consumer_carries_on(
    platform: Platform, database_url: str
) -> None:
    sn, secret, feed = await paired_homebase(platform)
    stranger, _, _ = await paired_homebase(platform, feed=False)
    aead = derive_key(secret)
    now = int(time.time())

    def sealed(value: object) -> bytes:
        return seal(aead, sn, msgspec.json.encode(value))

    def record(**fields: object) -> dict[str, object]:
        return {"f": 4, "t": now, "d": 1, "ch": 1, "uniq": 5, "s": {"1": 100}, **fields}

    bad = {
        "undecryptable": b"\x01" + bytes(40),
        "invalid_json": seal(aead, sn, b"[{not json"),
        "invalid_record": sealed([record(s={"1": "high"})]),
        "bad_timestamp": sealed([record(t=now + 3600), record(t=946_684_799)]),
        "unsupported_format": sealed([record(f=3)]),
    }
    missing_channel = record()
    del missing_channel["ch"]
    async with httpx.AsyncClient() as http:
        before = dropped((await http.get(platform.api + "/metrics")).text)
        for payload in bad.values():
            await publish(platform, data_topic(sn, platform.settings.mqtt.topic_prefix), payload)
        await publish(
            platform, data_topic(sn, platform.settings.mqtt.topic_prefix), sealed([missing_channel])
        )
        await publish(
            platform, data_topic(stranger, platform.settings.mqtt.topic_prefix), sealed([record()])
        )  # no feed here
        await publish(
            platform,
            data_topic(sn, platform.settings.mqtt.topic_prefix),
            sealed([record(s={"1": 1e400}), record(s={"1": 5.5})]),
        )

        async def good_one_stored() -> bool:
            async with platform.client() as api:
                streams = (await api.get(f"/feeds/{feed}/streams?type=raw")).json()
                if not streams:
                    return False
                data = (await api.get(f"/feeds/{feed}/streams/{streams[0]['id']}/data")).json()
                return bool(data)

        await eventually(good_one_stored)
        after = dropped((await http.get(platform.api + "/metrics")).text)

    def grew(cause: str) -> float:
        return after.get(cause, 0) - before.get(cause, 0)

    assert grew("undecryptable") == 1
    assert grew("invalid_json") == 1
    assert grew("invalid_record") == 3  # "high", the missing channel, 1e400
    assert grew("bad_timestamp") == 2
    assert grew("unsupported_format") == 1
    assert grew("unknown_sn") >= 1
    conn = await asyncpg.connect(database_url)
    try:
        values = await conn.fetch(
            "SELECT p.value FROM cluster.raw_points p JOIN cluster.streams s ON s.id = p.stream_id"
            " WHERE s.feed_id = $1",
            int(feed or 0),
        )
    finally:
        await conn.close()
    assert [r["value"] for r in values] == [5.5]
    assert all(math.isfinite(r["value"]) for r in values)


async def test_a_resent_message_changes_nothing(platform: Platform, database_url: str) -> None:
    sn, secret, feed = await paired_homebase(platform)
    homebase = SimulatedHomebase(sn, secret)
    payload = homebase.batch([int(time.time()) - 10])
    conn = await asyncpg.connect(database_url)
    count = (
        "SELECT count(*) FROM cluster.raw_points p JOIN cluster.streams s ON s.id = p.stream_id"
        " WHERE s.feed_id = $1"
    )
    try:
        await publish(platform, data_topic(sn, platform.settings.mqtt.topic_prefix), payload)

        async def stored() -> bool:
            return bool(await conn.fetchval(count, int(feed or 0)))

        await eventually(stored)
        first = await conn.fetchval(count, int(feed or 0))
        await publish(platform, data_topic(sn, platform.settings.mqtt.topic_prefix), payload)
        marker = homebase.batch([int(time.time()) - 5])  # a later message: the resend came first
        await publish(platform, data_topic(sn, platform.settings.mqtt.topic_prefix), marker)

        async def marker_stored() -> bool:
            return bool(await conn.fetchval(count, int(feed or 0)) > first)

        await eventually(marker_stored)
        final = await conn.fetchval(count, int(feed or 0))
    finally:
        await conn.close()
    assert final == 2 * first


async def test_a_registered_homebase_goes_to_the_forwarder_not_its_feed(
    platform: Platform, database_url: str
) -> None:
    sn, secret, feed = await paired_homebase(platform)
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute(
            "INSERT INTO forwarder.registrations (homebase_sn, customer_id) VALUES ($1, 1)", sn
        )
        await asyncio.sleep(0.3)  # the route cache of this test platform lives 0.2 s
        homebase = SimulatedHomebase(sn, secret)
        await publish(
            platform,
            data_topic(sn, platform.settings.mqtt.topic_prefix),
            homebase.batch([int(time.time()) - 10]),
        )

        async def forwarded() -> bool:
            return bool(
                await conn.fetchval(
                    "SELECT count(*) FROM forwarder.points p JOIN forwarder.streams s"
                    " ON s.id = p.stream_id WHERE s.homebase_sn = $1",
                    sn,
                )
            )

        await eventually(forwarded)
        in_feed = await conn.fetchval(
            "SELECT count(*) FROM cluster.streams WHERE feed_id = $1", int(feed or 0)
        )
    finally:
        await conn.close()
    assert in_feed == 0


async def test_presence_messages_set_the_homebase_online_state(
    platform: Platform, database_url: str
) -> None:
    sn, _, _ = await paired_homebase(platform)
    conn = await asyncpg.connect(database_url)
    query = "SELECT online FROM cluster.homebase_presence WHERE homebase_sn = $1"
    try:
        await publish(
            platform, status_topic(sn, platform.settings.mqtt.topic_prefix), b"online", retain=True
        )

        async def online() -> bool:
            return await conn.fetchval(query, sn) is True

        await eventually(online)
        await publish(
            platform, status_topic(sn, platform.settings.mqtt.topic_prefix), b"offline", retain=True
        )

        async def offline() -> bool:
            return await conn.fetchval(query, sn) is False

        await eventually(offline)
    finally:
        await publish(
            platform, status_topic(sn, platform.settings.mqtt.topic_prefix), b"", retain=True
        )  # clear the retained state
        await conn.close()
