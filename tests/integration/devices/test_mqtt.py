import os
import re
import time
from collections import defaultdict

import asyncpg

from energy_platform.core.codec import obis
from energy_platform.core.codec.format_v4 import RAW_MEDIA, HomebaseRecord
from energy_platform.devices.simulator.homebase import SimulatedHomebase
from tests.support.forwarder import NO_CUSTOMER
from tests.support.http import http_client
from tests.support.platform import Platform, paired_homebase, publish_as
from tests.support.services import eventually


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
        for code, v in r.o.items():
            known = obis.lookup(code)
            assert known is not None, code
            points[(r.ch, r.d, *known)].append([r.t, v])
    return points


async def test_a_simulated_homebase_comes_back_exactly_through_the_data_api(
    platform: Platform,
) -> None:
    sn, secret, feed = await paired_homebase(platform)
    homebase = SimulatedHomebase(sn, secret, seed=7)
    t0 = int(time.time()) - 300
    records = [r for t in range(t0, t0 + 30, 5) for r in homebase.records(t)]
    await publish_as(platform, sn, secret, homebase.encrypt(records))

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
        await publish_as(platform, sn, secret, payload)

        async def stored() -> bool:
            return bool(await conn.fetchval(count, int(feed or 0)))

        await eventually(stored)
        first = await conn.fetchval(count, int(feed or 0))
        await publish_as(platform, sn, secret, payload)
        marker = homebase.batch([int(time.time()) - 5])  # a later message: the resend came first
        await publish_as(platform, sn, secret, marker)

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
            "INSERT INTO forwarder.registrations (homebase_sn, customer_id) VALUES ($1, $2)",
            sn,
            NO_CUSTOMER,
        )
        # Nothing of this homebase has been routed yet, so ingest has no route of it cached:
        # its first message is routed by the registration (a route is cached from the first
        # message routed, docs/forwarder.md).
        homebase = SimulatedHomebase(sn, secret)
        await publish_as(
            platform,
            sn,
            secret,
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
    sn, secret, _ = await paired_homebase(platform)
    conn = await asyncpg.connect(database_url)
    query = "SELECT online FROM cluster.homebase_presence WHERE homebase_sn = $1"
    try:
        await publish_as(platform, sn, secret, b"online", kind="status", retain=True)

        async def online() -> bool:
            return await conn.fetchval(query, sn) is True

        await eventually(online)
        await publish_as(platform, sn, secret, b"offline", kind="status", retain=True)

        async def offline() -> bool:
            return await conn.fetchval(query, sn) is False

        await eventually(offline)
    finally:
        await publish_as(
            platform, sn, secret, b"", kind="status", retain=True
        )  # clear the retained state
        await conn.close()


def secret_requests(metrics: str) -> float:
    return sum(
        float(m["value"])
        for m in re.finditer(
            r"ep_http_requests_total\{[^}]*"
            r'path="/api/device/\{sn\}/secret"[^}]*\} (?P<value>\S+)',  # the route's template
            metrics,
        )
    )


async def test_garbage_from_one_homebase_costs_at_most_one_secret_request_a_minute(
    platform: Platform, database_url: str
) -> None:
    sn, secret, _ = await paired_homebase(platform)
    conn = await asyncpg.connect(database_url)
    try:
        await publish_as(platform, sn, secret, SimulatedHomebase(sn, secret).batch([1_790_000_000]))

        async def presence_seen() -> bool:
            query = "SELECT last_data_at FROM cluster.homebase_presence WHERE homebase_sn = $1"
            return await conn.fetchval(query, sn) is not None

        await eventually(presence_seen)  # its key is known now
        async with http_client() as http:
            before = secret_requests((await http.get(platform.api + "/metrics")).text)
            assert before >= 1  # ingest asked for the key of the batch above
            for _ in range(20):
                await publish_as(platform, sn, secret, b"\x01" + os.urandom(60))

            async def all_dead() -> bool:
                query = "SELECT count(*) FROM cluster.dead_letters WHERE sn = $1"
                return bool(await conn.fetchval(query, sn) == 20)

            await eventually(all_dead)
            after = secret_requests((await http.get(platform.api + "/metrics")).text)
    finally:
        await conn.close()
    assert after - before <= 1  # one refresh (the secret may have changed), then none
