"""The CoAP data server under hostile devices: the decoder's checks answer 4.00 (never 5.00)
and keep a dead letter, an oversized block-wise upload gets 4.13, a flooding device 4.29."""

import time
from collections.abc import AsyncIterator

import aiocoap
import asyncpg
import msgspec
import pytest

from energy_platform.core.settings import Settings
from tests.support.coap import device, post, reading
from tests.support.platform import Platform, platform_in_loop, platform_settings, with_cluster

TOO_LARGE = aiocoap.numbers.codes.Code(4 << 5 | 13)
TOO_MANY = aiocoap.numbers.codes.Code(4 << 5 | 29)


@pytest.fixture(scope="module")
async def platform(settings: Settings, mqtt_url: str) -> AsyncIterator[Platform]:
    """The shared platform with one request a minute after the burst: at the default of one a
    second, a loaded machine sending the burst slowly refilled the bucket and saw no 4.29."""
    s = platform_settings(settings, mqtt_url, coap_requests_per_minute=1)
    async with platform_in_loop(await with_cluster(s)) as platform:
        yield platform


async def test_hostile_records_get_4_00_and_become_dead_letters(
    platform: Platform, coap: aiocoap.Context, database_url: str
) -> None:
    sn = await device(platform)
    now = int(time.time())
    hostile = [
        # A code that cannot be read is its reading's fault (unreadable_code); over CoAP the
        # one request is still refused whole, so that the device hears of it at once.
        (reading(o={"1.7.0\u0000": 1}), "unreadable_code"),
        (reading(o={"9" * 5000: 1}), "unreadable_code"),
        (reading(o={"1.7.0": 1}, d=2**40), "invalid_record"),
        (reading(o={"1.7.0": 1}, t=now + 10**9), "bad_timestamp"),
        (b'{"f":4,"t":%d,"d":9,"o":{"1.7.0":Infinity}}' % now, "invalid_json"),
        (
            b'{"f":4,"t":%d,"d":9,"o":{"1.7.0":1},"x":' % now + b"[" * 3000 + b"]" * 3000 + b"}",
            "too_deep",  # an unknown property is ignored, but not nested without bound
        ),
        (b'{"f":4,"t":%d,"d":9,"o":{"\xff":1}}' % now, "not_utf8"),
        (msgspec.json.encode([{"f": 4}]), "invalid_record"),
    ]
    event = {"event": "POWER_CHANGE", "phases": [True, False, True]}
    events = [
        msgspec.json.encode({**event, "timestamp": now + 10**9}),
        msgspec.json.encode({**event, "timestamp": -(2**62)}),
    ]
    data_codes = [await post(coap, platform, f"data/{sn}", p) for p, _ in hostile]
    event_codes = [await post(coap, platform, f"events/{sn}", p) for p in events]

    conn = await asyncpg.connect(database_url)
    try:
        letters = await conn.fetch(
            "SELECT transport, topic, cause FROM cluster.dead_letters WHERE sn = $1 ORDER BY id",
            sn,
        )
    finally:
        await conn.close()
    assert data_codes == [aiocoap.BAD_REQUEST] * len(hostile)
    assert event_codes == [aiocoap.BAD_REQUEST] * len(events)
    assert [r["cause"] for r in letters] == [c for _, c in hostile] + ["bad_timestamp"] * 2
    assert {r["transport"] for r in letters} == {"coap"}
    assert letters[0]["topic"] == f"/data/{sn}"


async def test_a_block_wise_upload_over_the_cap_gets_4_13(
    platform: Platform, coap: aiocoap.Context
) -> None:
    sn = await device(platform)
    cap = platform.settings.devices.coap_max_body_bytes
    # aiocoap sends anything over 1 KiB block-wise; the server refuses once the cap is passed.
    huge = b'{"f":4,"t":1,"d":9,"o":{"1.7.0":1},"pad":"' + b"x" * cap + b'"}'
    assert await post(coap, platform, f"data/{sn}", huge) == TOO_LARGE
    fits = reading(o={f"1-0:{i}.7.0": float(i) for i in range(1, 60)})
    assert 1024 < len(fits) < cap
    assert await post(coap, platform, f"data/{sn}", fits) == aiocoap.CHANGED


async def test_a_device_sending_faster_than_its_limit_gets_4_29(
    platform: Platform, coap: aiocoap.Context
) -> None:
    sn = await device(platform)
    burst = platform.settings.devices.coap_burst
    codes = [
        await post(coap, platform, f"data/{sn}", reading(o={"1.7.0": i}, t=int(time.time()) - i))
        for i in range(burst + 5)
    ]
    other = await device(platform)
    assert codes[:burst] == [aiocoap.CHANGED] * burst
    assert TOO_MANY in codes[burst:]
    # The limit is per device: another one is not held back.
    assert await post(coap, platform, f"data/{other}", reading(o={"1.7.0": 1})) == aiocoap.CHANGED
