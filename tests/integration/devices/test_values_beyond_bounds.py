"""Values beyond their quantity's bound never enter (issue 46): a homebase that sends 1e308 W
over MQTT beside good records, and a CoAP meter that sends 1e308 Wh. Before the bounds, one such
point overflowed the engine's integral (SQLSTATE 22003) and no feed was processed any more; now
the bad record is a dead letter with its reason, the rest of its message is stored, and the
engine processes everyone: another homebase's points in the same seconds, and the sender's own
normal points, later ones included.

Through the real stack: ingest and the data API of tests/conftest.py's ``platform``, devices
publishing and posting as real ones do, the engine run until its queues are empty. Expected
values: a constant P watts sampled every 5 s over a 90 s bucket is P x 90 s / 3600 Wh; a
register read on the bucket's edges rose by the difference of the two readings."""

from __future__ import annotations

import re
import time
from typing import Any

import aiocoap
import asyncpg
import httpx
import msgspec

from energy_platform.core.codec.format_v4 import HomebaseRecord
from energy_platform.devices.simulator.homebase import SimulatedHomebase
from tests.support.coap import device, post
from tests.support.engine import process
from tests.support.http import http_client
from tests.support.platform import Platform, paired_homebase, publish_as
from tests.support.services import eventually

CLAMP, COAP_METER = 1, 9  # device IDs (docs/devices.md)
BUCKET = 90
RAW_POINTS = """
SELECT count(*) FROM cluster.raw_points p JOIN cluster.streams s ON s.id = p.stream_id
 WHERE s.feed_id = $1"""
DEAD_LETTERS = """
SELECT transport, cause, detail, payload FROM cluster.dead_letters WHERE sn = $1 ORDER BY id"""


def first_bucket() -> int:
    """A bucket start 15 minutes ago: its points and the next two buckets' are all past."""
    return (int(time.time()) - 900) // BUCKET * BUCKET


def watts(t: int, value: float) -> HomebaseRecord:
    """A 1-phase clamp's reading on channel 1 (medium 1, W)."""
    return HomebaseRecord(f=4, t=t, d=CLAMP, ch=1, uniq=0xC1, s={"1": value})


async def stored(db: asyncpg.Connection, feed: int, points: int) -> None:
    """Wait until ingest has stored ``points`` raw points of ``feed``."""

    async def done() -> bool:
        return bool(await db.fetchval(RAW_POINTS, feed) >= points)

    await eventually(done, within=30)
    assert await db.fetchval(RAW_POINTS, feed) == points


async def processed(api: httpx.AsyncClient, feed: int, title: str) -> dict[int, float]:
    """The 90 s points of the feed's processed stream ``title``, as its owner reads them."""
    listed = await api.get(f"/feeds/{feed}/streams", params={"type": "processed"})
    assert listed.status_code == 200, listed.text
    ids = {s["configs"][0]["title"]: s["id"] for s in listed.json()}
    answer = await api.get(f"/feeds/{feed}/streams/{ids[title]}/data")
    assert answer.status_code == 200, answer.text
    return {t: v for t, v in answer.json()}


def out_of_bounds(metrics: str) -> float:
    found = re.search(r'ep_ingest_dropped_total\{cause="out_of_bounds"\} (\S+)', metrics)
    return 0.0 if found is None else float(found.group(1))


async def dead_letters(db: asyncpg.Connection, sn: str, count: int) -> list[Any]:
    async def kept() -> bool:
        return bool(
            await db.fetchval("SELECT count(*) FROM cluster.dead_letters WHERE sn = $1", sn)
        )

    await eventually(kept, within=30)
    letters = await db.fetch(DEAD_LETTERS, sn)
    assert len(letters) == count
    return letters


async def test_a_homebase_sending_1e308_watts_loses_that_record_and_everyone_is_processed(
    platform: Platform, db: asyncpg.Connection
) -> None:
    sender, sender_secret, sender_feed = await paired_homebase(platform)
    other, other_secret, other_feed = await paired_homebase(platform)
    t0 = first_bucket()
    # The sender's first message: 1000 W every 5 s through the first bucket, but at t0 + 45
    # the 1e308 W, and at t0 + 50 a magnitude so small that a product underflows.
    good = [watts(t, 1000.0) for t in range(t0, t0 + BUCKET + 1, 5) if t not in (t0 + 45, t0 + 50)]
    bad = [watts(t0 + 45, 1e308), watts(t0 + 50, 5e-324)]
    records = [*good[:9], *bad, *good[9:]]
    async with http_client() as http:
        before = out_of_bounds((await http.get(platform.api + "/metrics")).text)
        await publish_as(
            platform,
            sender,
            sender_secret,
            SimulatedHomebase(sender, sender_secret).encrypt(records),
        )
        # Another homebase, 500 W in the same seconds, both buckets in one message.
        theirs = [watts(t, 500.0) for t in range(t0, t0 + 2 * BUCKET + 1, 5)]
        await publish_as(
            platform, other, other_secret, SimulatedHomebase(other, other_secret).encrypt(theirs)
        )
        # The sender goes on normally: 1000 W through the second bucket, in a later message.
        later = [watts(t, 1000.0) for t in range(t0 + BUCKET + 5, t0 + 2 * BUCKET + 1, 5)]
        await publish_as(
            platform, sender, sender_secret, SimulatedHomebase(sender, sender_secret).encrypt(later)
        )

        await stored(db, int(sender_feed or 0), len(good) + len(later))
        await stored(db, int(other_feed or 0), len(theirs))
        (letter,) = await dead_letters(db, sender, 1)
        after = out_of_bounds((await http.get(platform.api + "/metrics")).text)

    # Both bad records in one dead letter of their cause, as sent, each with its reason.
    assert (letter["transport"], letter["cause"]) == ("mqtt", "out_of_bounds")
    assert msgspec.json.decode(letter["payload"]) == msgspec.to_builtins(bad)
    assert (
        "record 9: medium 1: 1e+308 is out of bounds: power is at most 1e10 W" in letter["detail"]
    )
    assert "record 10: medium 1: 5e-324 is too small to compute with" in letter["detail"]
    assert after - before == 2

    await process(db)  # before the bounds: SQLSTATE 22003, and no feed processed again

    async with platform.client() as api:
        # 1000 W x 90 s / 3600 = 25 Wh a bucket; the gap of the refused points (t0 + 40 to
        # t0 + 55) is bridged by a line at 1000 W. 500 W: 12.5 Wh. The point at t0 + 180 is the
        # last one: its bucket has no segment and no point.
        assert await processed(api, int(sender_feed or 0), "Electricity, channel 1") == {
            t0: 25.0,
            t0 + BUCKET: 25.0,
        }
        assert await processed(api, int(other_feed or 0), "Electricity, channel 1") == {
            t0: 12.5,
            t0 + BUCKET: 12.5,
        }


async def test_a_coap_meter_sending_1e308_wh_is_refused_and_everyone_is_processed(
    platform: Platform, coap: aiocoap.Context, db: asyncpg.Connection
) -> None:
    meter = await device(platform)
    meter_feed: int = await db.fetchval(
        "SELECT id FROM cluster.feeds WHERE homebase_sn = $1", meter
    )
    other, other_secret, other_feed = await paired_homebase(platform)
    t0 = first_bucket()

    async def send(t: int, wh: float) -> aiocoap.numbers.codes.Code:
        record = {"f": 4, "t": t, "d": COAP_METER, "o": {"1.8.0": wh}}
        return await post(coap, platform, f"data/{meter}", msgspec.json.encode(record))

    # The register reads 1,000,000 Wh at t0 and rises by 1 Wh every 10 s; at t0 + 45 the meter
    # sends 1e308 Wh, which is refused (4.00), and then goes on as before.
    register = {t: 1_000_000.0 + (t - t0) / 10 for t in range(t0, t0 + 2 * BUCKET + 1, 10)}
    codes = [await send(t, wh) for t, wh in register.items() if t <= t0 + 40]
    refused = await send(t0 + 45, 1e308)
    codes += [await send(t, wh) for t, wh in register.items() if t > t0 + 40]
    theirs = [watts(t, 500.0) for t in range(t0, t0 + 2 * BUCKET + 1, 5)]
    await publish_as(
        platform, other, other_secret, SimulatedHomebase(other, other_secret).encrypt(theirs)
    )

    assert codes == [aiocoap.CHANGED] * len(register)
    assert refused == aiocoap.BAD_REQUEST
    await stored(db, meter_feed, len(register))
    await stored(db, int(other_feed or 0), len(theirs))
    (letter,) = await dead_letters(db, meter, 1)
    assert (letter["transport"], letter["cause"]) == ("coap", "out_of_bounds")
    assert "1e+308 is out of bounds: an energy register is at most 1e15 Wh" in letter["detail"]

    await process(db)

    async with platform.client() as api:
        # Each bucket: the rise between the readings on its edges, 9 x 1 Wh.
        assert await processed(api, meter_feed, "Electricity, channel 0") == {
            t0: 9.0,
            t0 + BUCKET: 9.0,
        }
        assert await processed(api, int(other_feed or 0), "Electricity, channel 1") == {
            t0: 12.5,
            t0 + BUCKET: 12.5,
        }
