"""Meter counters survive their faults (issue 48, docs/engine.md#registers-wh): a glitch is
skipped, a reset or a replacement adds 0 and counting goes on from the new reading, and the
owner hears of each once, however the readings arrive. Readings come through the HTTP import
or ingest's store; what counts is read back through the data API, the bill and the owner's
notifications."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from energy_platform.core.settings import Settings
from energy_platform.engine.service import METER_FAULTS
from tests.integration.billing.test_bills import bill, flat, line
from tests.support.admin import admin_refusal, run_admin
from tests.support.data import T0
from tests.support.engine import Feed, NewFeed, api_buckets, process
from tests.support.history import auth, points_json, send

IMPORT_REGISTER, GAS = 22, 7
METER, GAS_METER = 7, 5  # device IDs (docs/devices.md)
ENERGY = "Electricity, channel 0"
DAY = "2026-01-01"  # T0's UTC day

# 5 Wh a minute (300 W), and a reading of 0 at T0 + 120 between two true ones.
GLITCH = [
    (T0, 5_000_000.0),
    (T0 + 60, 5_000_005.0),
    (T0 + 120, 0.0),
    (T0 + 180, 5_000_010.0),
    (T0 + 240, 5_000_015.0),
]
FAULT_TITLES = {"Meter reading ignored", "Meter reset", "Meter jump ignored"}


async def register(feed: Feed) -> int:
    return await feed.raw_stream(channel=0, medium=IMPORT_REGISTER, device=METER)


async def priced_register(new_feed: NewFeed) -> tuple[Feed, int]:
    """A feed in UTC at a flat 0.30 a kWh, and its meter reader's import register."""
    feed = await new_feed("UTC")
    await flat(feed, "power", 0.30)
    return feed, await register(feed)


async def faults_told(api: httpx.AsyncClient, feed: Feed) -> list[dict[str, Any]]:
    """The owner's meter fault notifications, as the data API lists them."""
    owner = await feed.db.fetchval("SELECT owner_id FROM cluster.feeds WHERE id = $1", feed.id)
    answer = await api.get(f"/users/{owner}/notifications", headers=auth(feed))
    assert answer.status_code == 200, answer.text
    return [n for n in answer.json() if n["title"] in FAULT_TITLES]


async def assert_counted_and_told(
    api: httpx.AsyncClient, feed: Feed, wh: float, title: str, *phrases: str
) -> None:
    """The register's points add up to ``wh``, its day's bill says so, and the owner was told
    of one fault, titled ``title``, in words that hold each of ``phrases``."""
    assert sum((await feed.points(ENERGY)).values()) == pytest.approx(wh)
    assert line(await bill(api, feed, DAY, DAY), "power")["quantity"] == pytest.approx(wh / 1000)
    (told,) = await faults_told(api, feed)
    assert told["title"] == title
    for phrase in phrases:
        assert phrase in told["content"]


def counted(kind: str) -> float:
    """The operators' counter of meter faults of ``kind`` (this process runs the engine)."""
    value: float = METER_FAULTS.labels(kind)._value.get()
    return value


async def from_scratch(feed: Feed) -> None:
    """Recompute every processed point of the feed, as ``admin reprocess`` does."""
    await feed.db.execute("SELECT cluster.engine_reprocess($1, '-infinity', 'infinity')", feed.id)
    await process(feed.db)


async def test_a_glitch_to_0_is_skipped_and_its_owner_told_once(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed, meter = await priced_register(new_feed)
    glitches = counted("glitch")
    imported = await send(api, feed, meter, points_json(GLITCH), "application/json")
    assert imported.status_code == 200, imported.text

    await process(feed.db)

    # The 0 is skipped: 5 Wh from T0 + 60 to T0 + 180 (120 s) spread evenly, not 5,000 kWh
    # on the way back. Bucket 0: 5 Wh up to T0 + 60, then 30 s of 5 Wh / 120 s; bucket 1:
    # 90 s of it; bucket 2: the last 5 Wh.
    assert await feed.points(ENERGY) == {
        T0: pytest.approx(5.0 + 1.25),
        T0 + 90: pytest.approx(3.75),
        T0 + 180: pytest.approx(5.0),
    }
    energy = await feed.stream_id(ENERGY)
    assert await api_buckets(api, feed, energy, "hour") == [[T0, pytest.approx(15.0)]]
    used = line(await bill(api, feed, DAY, DAY), "power")
    assert (used["quantity"], used["energy"]) == (pytest.approx(0.015), pytest.approx(0.0045))
    (told,) = await faults_told(api, feed)
    assert told["title"] == "Meter reading ignored"
    assert "read 0 Wh at 2026-01-01 00:02 UTC" in told["content"]
    assert counted("glitch") == glitches + 1

    # Recomputed from scratch: the same points, and no second notification.
    before = await feed.points(ENERGY)
    await from_scratch(feed)
    assert await feed.points(ENERGY) == before
    assert len(await faults_told(api, feed)) == 1
    assert counted("glitch") == glitches + 1


async def test_a_replacement_starting_higher_adds_nothing_and_counts_on(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed, meter = await priced_register(new_feed)
    # The old meter read 1,150 Wh; the new one starts at 9,000,000 Wh a minute later: a rise
    # of 540 MW, far above EP_ENGINE_MAX_RATE_POWER (100 kW).
    readings = [
        (T0, 1_140.0),
        (T0 + 60, 1_150.0),
        (T0 + 120, 9_000_000.0),
        (T0 + 180, 9_000_010.0),
    ]
    await send(api, feed, meter, points_json(readings), "application/json")

    await process(feed.db)

    # 10 Wh before, 0 for the jump, 10 Wh after: 20 Wh, not 8,998,870.
    await assert_counted_and_told(
        api, feed, 20.0, "Meter jump ignored", "from 1150 Wh", "to 9000000 Wh"
    )


async def test_a_replacement_starting_lower_is_a_reset_once_the_drop_persists(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed, meter = await priced_register(new_feed)
    # The old meter read 5,000,010 Wh; the new one starts at 100 Wh.
    await feed.ingest(meter, [(T0, 5_000_000.0), (T0 + 60, 5_000_010.0), (T0 + 120, 100.0)])
    await process(feed.db)
    # The drop adds 0 either way, but it may still be a glitch: nobody is told yet.
    assert sum((await feed.points(ENERGY)).values()) == pytest.approx(10.0)
    assert await faults_told(api, feed) == []

    await feed.ingest(meter, [(T0 + 180, 110.0), (T0 + 240, 125.0)])
    await process(feed.db)

    # 10 Wh, 0 for the drop, then counting on from 100 Wh: 10 and 15 Wh.
    await assert_counted_and_told(api, feed, 35.0, "Meter reset", "went back from 5000010 Wh")


async def test_readings_arriving_late_and_out_of_order_count_as_in_order(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    in_order, shuffled = await new_feed("UTC"), await new_feed("UTC")
    readings = [(T0 + 30 * i, 2_000.0 + 2.5 * i) for i in range(40)]  # 300 W
    readings[7] = (readings[7][0], 0.0)  # a glitch
    readings[25] = (readings[25][0], 1.0)  # another
    readings[33:] = [(t, v - 2_000.0) for t, v in readings[33:]]  # a new meter, from 82.5 Wh
    await in_order.ingest(await register(in_order), readings)
    await process(in_order.db)
    batches = readings[:]
    random.Random(48).shuffle(batches)  # noqa: S311 - a fixed order, not a secret
    meter = await register(shuffled)
    for start in range(0, len(batches), 4):  # ten batches, each processed on arrival
        await shuffled.ingest(meter, batches[start : start + 4])
        await process(shuffled.db)

    expected = await in_order.points(ENERGY)
    # 39 steps of 2.5 Wh (a glitch's two become one of 5 Wh), but the drop to the new meter.
    assert sum(expected.values()) == pytest.approx(2.5 * 38)
    assert await shuffled.points(ENERGY) == pytest.approx(expected)
    faults = ["Meter reading ignored", "Meter reading ignored", "Meter reset"]
    assert sorted(n["title"] for n in await faults_told(api, in_order)) == faults
    # Out of order, the same three are told (an early batch may have shown a drop that a later
    # reading turned into a glitch: that was told too, when it was what the readings said).
    late = [n["title"] for n in await faults_told(api, shuffled)]
    assert all(late.count(title) >= faults.count(title) for title in faults)


async def test_a_gas_glitch_to_0_is_skipped(new_feed: NewFeed) -> None:
    feed = await new_feed("UTC")
    meter = await feed.raw_stream(channel=2, medium=GAS, device=GAS_METER)
    # DSMR gas every 5 minutes; one report of 0 between true ones.
    await feed.ingest(meter, [(T0, 2300.0), (T0 + 300, 0.0), (T0 + 600, 2300.01)])

    await process(feed.db)

    # 0.01 m³ at the reading after the glitch, not 2300 m³.
    assert await feed.points("Gas, channel 2") == {T0 + 540: pytest.approx(0.01)}


async def test_a_streams_own_max_rate_from_an_instant_judges_its_rises(
    new_feed: NewFeed, settings: Settings
) -> None:
    feed = await new_feed("UTC")
    meter = await register(feed)
    # A farm's meter: 150 kW (2,500 Wh a minute), above the 100 kW of EP_ENGINE_MAX_RATE_POWER.
    await feed.ingest(meter, [(T0 + 60 * i, 10_000.0 + 2_500.0 * i) for i in range(11)])
    await process(feed.db)
    assert sum((await feed.points(ENERGY)).values()) == 0.0

    energy = str(await feed.stream_id(ENERGY))
    cost = str(await feed.stream_id("Electricity cost, channel 0"))
    await run_admin(
        settings,
        "streams",
        "configure",
        energy,
        "--from",
        "2026-01-01T00:05:00Z",
        "--max-rate",
        "200000",
    )
    await process(feed.db)

    # A rise is judged by the limit at its later reading: those ending at 00:05 and after
    # count (six of 2,500 Wh), the earlier ones still do not.
    assert sum((await feed.points(ENERGY)).values()) == pytest.approx(2_500.0 * 6)
    refused = await admin_refusal(
        settings, "streams", "configure", cost, "--from", "now", "--max-rate", "200000"
    )
    assert "--max-rate" in refused
    refused = await admin_refusal(
        settings, "streams", "configure", energy, "--from", "now", "--max-rate", "-5"
    )
    assert "above 0" in refused


# cluster.bucket_energy over one channel's period [from, to): (bucket, register Wh) of its stream.
PERIOD_ENERGY = """
SELECT bucket, register_energy
  FROM cluster.bucket_energy(ARRAY[$1::bigint], ARRAY[0], ARRAY[$2::timestamptz],
                             ARRAY[$3::timestamptz])
 WHERE NOT combined ORDER BY bucket"""


async def test_a_glitch_just_before_a_period_still_decides_its_first_segment(
    new_feed: NewFeed,
) -> None:
    # The engine computes a long recomputation in pieces of EP_ENGINE_MAX_SPAN, so a piece can
    # start right after a glitch. Its stream's only fault is then among the neighbours read
    # before the piece (docs/engine.md#throughput: the fast path must leave it to the rules).
    feed, meter = await priced_register(new_feed)
    await feed.ingest(
        meter,
        [
            (T0, 1_000.0),
            (T0 + 60, 1_005.0),
            (T0 + 100, 1_003.0),
            (T0 + 200, 1_010.0),
            (T0 + 260, 1_015.0),
        ],
    )
    await process(feed.db)
    start, end = T0 + 180, T0 + 270

    rows = await feed.db.fetch(
        PERIOD_ENERGY, feed.id, datetime.fromtimestamp(start, UTC), datetime.fromtimestamp(end, UTC)
    )

    # 1,003 at T0 + 100 is a glitch: the line goes from 1,005 at T0 + 60 to 1,010 at T0 + 200,
    # of which 20 s of 140 lie in the piece (5 x 20 / 140 Wh), then 5 Wh to T0 + 260. From the
    # glitch it would have been 7 x 20 / 100 + 5 = 6.4 Wh.
    assert [(r["bucket"], r["register_energy"]) for r in rows] == [
        (start // 90, pytest.approx(5.0 * 20 / 140 + 5.0, rel=1e-12))
    ]
    assert sum((await feed.points(ENERGY)).values()) == pytest.approx(15.0)
