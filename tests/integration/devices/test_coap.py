"""The CoAP data server over real UDP, with an aiocoap client, every code of the spec's table."""

import secrets
import time

import aiocoap
import asyncpg
import msgspec

from energy_platform.core.coap import JSON
from tests.support.coap import device, post, reading
from tests.support.platform import Platform, add_feed


async def test_data_posted_over_coap_is_stored_and_served(
    platform: Platform, coap: aiocoap.Context
) -> None:
    sn = await device(platform)
    t = int(time.time()) - 5
    payload = msgspec.json.encode({"f": 4, "t": t, "d": 9, "o": {"1.7.0": 1234.5, "1.8.0": 99.25}})
    assert await post(coap, platform, f"data/{sn}", payload) == aiocoap.CHANGED

    async with platform.client() as api:
        feeds = (await api.get(f"/users/{platform.user_id}/feeds")).json()
        feed = next(f["id"] for f in feeds if f["configs"][0]["title"] == "Meter")
        streams = {s["medium"]: s for s in (await api.get(f"/feeds/{feed}/streams")).json()}
        power = (await api.get(f"/feeds/{feed}/streams/{streams[12]['id']}/data")).json()
        energy = (await api.get(f"/feeds/{feed}/streams/{streams[22]['id']}/data")).json()
    assert (streams[12]["channel"], streams[12]["device"]) == (0, 9)
    assert power == [[t, 1234.5]]
    assert energy == [[t, 99.25]]


async def test_a_power_change_event_is_stored(
    platform: Platform, coap: aiocoap.Context, database_url: str
) -> None:
    sn = await device(platform)
    event = {"timestamp": int(time.time()), "event": "POWER_CHANGE", "phases": [True, False, True]}
    assert await post(coap, platform, f"events/{sn}", msgspec.json.encode(event)) == aiocoap.CHANGED
    conn = await asyncpg.connect(database_url)
    try:
        row = await conn.fetchrow(
            "SELECT event, phases, extract(epoch FROM ts)::bigint AS t"
            " FROM cluster.device_events WHERE device_sn = $1",
            sn,
        )
    finally:
        await conn.close()
    assert row is not None
    assert (row["event"], row["phases"], row["t"]) == (
        "POWER_CHANGE",
        [True, False, True],
        event["timestamp"],
    )


async def test_the_clock_answers_2_05_with_the_time(
    platform: Platform, coap: aiocoap.Context
) -> None:
    request = aiocoap.Message(
        code=aiocoap.GET, uri=f"coap://127.0.0.1:{platform.settings.devices.coap_port}/clock"
    )
    response = await coap.request(request).response
    assert response.code == aiocoap.CONTENT
    assert response.opt.content_format == JSON
    assert abs(msgspec.json.decode(response.payload)["time"] - time.time()) < 5


async def test_every_coap_error_code_of_the_spec(
    platform: Platform, coap: aiocoap.Context, database_url: str
) -> None:
    sn = await device(platform)
    elsewhere = await device(platform, here=False)
    no_feed = await device(platform, feed=False)
    unknown = secrets.token_hex(8).upper()
    good = reading(o={"1.7.0": 1})
    event = msgspec.json.encode(
        {"timestamp": int(time.time()), "event": "POWER_CHANGE", "phases": [True] * 3}
    )
    cases = [
        ("data/not-a-serial", good, JSON, aiocoap.BAD_REQUEST),
        (f"data/{sn.lower()}", good, JSON, aiocoap.BAD_REQUEST),
        (f"data/{sn}", good, None, aiocoap.BAD_REQUEST),
        (f"data/{sn}", None, JSON, aiocoap.BAD_REQUEST),
        (f"data/{sn}", b"{not json", JSON, aiocoap.BAD_REQUEST),
        (f"data/{sn}", reading(o={"1.7.0": 1}, ch=1), JSON, aiocoap.BAD_REQUEST),
        (f"data/{sn}", reading(s={"1": 1}), JSON, aiocoap.BAD_REQUEST),
        (f"data/{sn}", reading(o={"1.7.0": 1}, t=1), JSON, aiocoap.BAD_REQUEST),
        (f"data/{sn}", good, 0, aiocoap.BAD_OPTION),
        (f"data/{unknown}", good, JSON, aiocoap.NOT_FOUND),
        (f"data/{elsewhere}", good, JSON, aiocoap.numbers.codes.Code(4 << 5 | 5)),
        (f"data/{no_feed}", good, JSON, aiocoap.numbers.codes.Code(4 << 5 | 5)),
        (
            f"events/{sn}",
            msgspec.json.encode({"event": "REBOOT", "timestamp": 1}),
            JSON,
            aiocoap.BAD_REQUEST,
        ),
        (f"events/{sn}", event, None, aiocoap.BAD_REQUEST),
        (f"events/{unknown}", event, JSON, aiocoap.NOT_FOUND),
    ]
    results = [await post(coap, platform, path, payload, cf) for path, payload, cf, _ in cases]
    assert results == [expected for *_, expected in cases]

    conn = await asyncpg.connect(database_url)
    try:
        stored = await conn.fetchval(
            "SELECT (SELECT count(*) FROM cluster.device_events WHERE device_sn = ANY($1))"
            " + (SELECT count(*) FROM cluster.feeds f JOIN cluster.streams s ON s.feed_id = f.id"
            "    WHERE f.homebase_sn = ANY($1))",
            [sn, elsewhere, no_feed, unknown],
        )
    finally:
        await conn.close()
    assert stored == 0


async def test_a_record_with_properties_of_newer_firmware_is_stored(
    platform: Platform, coap: aiocoap.Context
) -> None:
    sn = await device(platform, feed=False)
    feed = (
        await add_feed(platform.settings, platform.user_id, sn, title="Newer meter", pair=False)
    )["id"]
    t = int(time.time()) - 5
    # "q" and "fw" are no property of format 4 today: a later firmware may add them.
    newer = {"f": 4, "t": t, "d": 9, "o": {"1.7.0": 640.5}, "q": 1, "fw": {"v": [7, 1]}}
    assert await post(coap, platform, f"data/{sn}", msgspec.json.encode(newer)) == aiocoap.CHANGED
    # An event with an added property is taken too.
    event = {"timestamp": t, "event": "POWER_CHANGE", "phases": [True, True, False], "q": 1}
    assert await post(coap, platform, f"events/{sn}", msgspec.json.encode(event)) == aiocoap.CHANGED

    async with platform.client() as api:
        (power,) = (await api.get(f"/feeds/{feed}/streams")).json()
        points = (await api.get(f"/feeds/{feed}/streams/{power['id']}/data")).json()
    assert points == [[t, 640.5]]


async def test_resource_discovery_lists_the_endpoint_s_resources(
    platform: Platform, coap: aiocoap.Context
) -> None:
    request = aiocoap.Message(
        code=aiocoap.GET,
        uri=f"coap://127.0.0.1:{platform.settings.devices.coap_port}/.well-known/core",
    )
    response = await coap.request(request).response

    assert response.code == aiocoap.CONTENT
    assert response.opt.content_format == 40  # application/link-format (RFC 6690)
    links = response.payload.decode()
    for path in ("</data>", "</events>", "</config>"):
        assert path in links
    assert "impl-info" not in links
