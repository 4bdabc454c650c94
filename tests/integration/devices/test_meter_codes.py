"""OBIS codes as meters write them (issue 48 item 1), sent as a homebase's meter reader sends
them over MQTT, stored by the real ingest, processed by the engine and read back through the
data API as the feed's owner: DSMR's M-Bus gas and water meters each a channel of their own
(never added to each other or to the electricity), a Belgian ``24.2.3``, a reading whose type
came in an earlier message, and an SML reader's ``*255`` beside a past ``*101``."""

from __future__ import annotations

import time
from typing import Any

import asyncpg
import httpx
import pytest

from energy_platform.core.codec.format_v4 import HomebaseRecord
from energy_platform.devices.simulator.homebase import SimulatedHomebase
from tests.support.engine import process
from tests.support.platform import Platform, paired_homebase, publish_as
from tests.support.services import eventually

READER = 7  # device: the meter reader (docs/devices.md)
TELEGRAM, GAS_EVERY = 10, 300  # DSMR 5: a telegram every 10 s, the gas meter's value every 5 min
POINTS = """
SELECT (SELECT count(*) FROM cluster.raw_points p JOIN cluster.streams s ON s.id = p.stream_id
         WHERE s.feed_id = $1)
     + (SELECT count(*) FROM cluster.system_points p JOIN cluster.streams s ON s.id = p.stream_id
         WHERE s.feed_id = $1)"""


def start() -> int:
    """Twenty minutes of telegrams that closed an hour ago, on a 5-minute mark."""
    return (int(time.time()) - 3600) // GAS_EVERY * GAS_EVERY


async def send(
    platform: Platform,
    db: asyncpg.Connection,
    sn: str,
    secret: bytes,
    feed: int,
    records: list[HomebaseRecord],
    points: int | None = None,
) -> None:
    """``records`` as one message of homebase ``sn``, its ``points`` (default: one a reading)
    stored by ingest, and processed."""
    before = await db.fetchval(POINTS, feed)
    await publish_as(platform, sn, secret, SimulatedHomebase(sn, secret).encrypt(records))
    sent = before + (sum(len(r.o) for r in records) if points is None else points)

    async def stored() -> bool:
        return bool(await db.fetchval(POINTS, feed) == sent)

    await eventually(stored, within=30)
    await process(db)


async def streams(api: httpx.AsyncClient, feed: int, kind: str) -> list[dict[str, Any]]:
    answer = await api.get(f"/feeds/{feed}/streams", params={"type": kind})
    assert answer.status_code == 200, answer.text
    listed: list[dict[str, Any]] = answer.json()
    return listed


async def data(api: httpx.AsyncClient, feed: int, stream: str, **params: Any) -> list[Any]:
    answer = await api.get(
        f"/feeds/{feed}/streams/{stream}/data", params={"limit": 100_000, **params}
    )
    assert answer.status_code == 200, answer.text
    points: list[Any] = answer.json()
    return points


async def raw_by_channel(api: httpx.AsyncClient, feed: int) -> dict[tuple[int, int], list[Any]]:
    """{(channel, medium): [[t, v], ...]} of the feed's raw streams without an index."""
    return {
        (s["channel"], s["medium"]): await data(api, feed, s["id"])
        for s in await streams(api, feed, "raw")
        if s.get("index") is None
    }


async def totals(api: httpx.AsyncClient, feed: int) -> dict[str, float]:
    """Each consumption stream's sum over its local days, by title (no tariff: no cost)."""
    return {
        s["configs"][0]["title"]: sum(
            v for _, v in await data(api, feed, s["id"], resolution="day")
        )
        for s in await streams(api, feed, "processed")
        if s["quantity"] == "consumption"
    }


def approx(value: float) -> Any:
    """Differences of readings in the thousands: float rounding, nothing more."""
    return pytest.approx(value, rel=1e-9, abs=1e-9)


async def test_a_dsmr_telegram_keeps_its_gas_and_water_meters_apart(
    platform: Platform, db: asyncpg.Connection
) -> None:
    sn, secret, feed_id = await paired_homebase(platform)
    feed = int(str(feed_id))
    t0 = start()
    times = range(t0, t0 + 1200 + 1, TELEGRAM)
    # Every telegram: power (W), both tariff registers (Wh, as the platform takes them) and the
    # types of the two M-Bus devices; every 5 minutes the gas (m³) and water (m³) readings.
    records, gas, water = [], {}, {}
    for n, t in enumerate(times):
        codes = {
            "1-0:1.7.0": 1800.0,
            "1-0:1.8.1": 1_000_000.0,
            "1-0:1.8.2": 2_000_000.0 + n * 5.0,  # 1800 W for 10 s: 5 Wh a telegram
            "0-1:24.1.0": 3,
            "0-2:24.1.0": 7,
        }
        if (t - t0) % GAS_EVERY == 0:
            gas[t] = 2300.125 + (t - t0) / GAS_EVERY * 0.05
            water[t] = 120.5 + (t - t0) / GAS_EVERY * 0.002
            codes |= {"0-1:24.2.1": gas[t], "0-2:24.2.1": water[t]}
        records.append(HomebaseRecord(4, t, READER, 0, 0x7A01, o=codes))
    await send(platform, db, sn, secret, feed, records)

    async with platform.client() as api:
        raw = await raw_by_channel(api, feed)
        system = {(s["channel"]) for s in await streams(api, feed, "system")}
        got = await totals(api, feed)
    # The M-Bus devices of the reader on channel 0: gas on channel 1000, water on 2000, each
    # a raw stream of its medium; their types are kept as system streams beside them.
    assert sorted(raw) == [(0, 12), (1000, 7), (2000, 8)]
    assert raw[(1000, 7)] == [[t, v] for t, v in gas.items()]
    assert raw[(2000, 8)] == [[t, v] for t, v in water.items()]
    assert system == {1000, 2000}
    assert got == {
        "Electricity, channel 0": 1800 * 1200 / 3600,  # 1.7.0: 600 Wh (the register's span
        # is its tariffs' streams and their total; the unindexed stream is the power's)
        "Electricity, channel 0, tariff 1": 0.0,
        "Electricity, channel 0, tariff 2": 120 * 5.0,
        "Electricity, channel 0, total": 120 * 5.0,
        # 5 steps of 0.05 m³ and of 0.002 m³: never added to each other or to the Wh.
        "Gas, channel 1000": approx(4 * 0.05),
        "Water, channel 2000": approx(4 * 0.002),
    }

    # A later telegram without the types: its water reading is what the device was last seen
    # as (cluster.mbus_devices, kept across messages, workers and restarts), not gas.
    later = t0 + 1500
    await send(
        platform, db, sn, secret, feed,
        [HomebaseRecord(4, later, READER, 0, 0x7A01, o={"0-2:24.2.1": 120.512})],
    )  # fmt: skip
    async with platform.client() as api:
        raw = await raw_by_channel(api, feed)
        got = await totals(api, feed)
    assert sorted(raw) == [(0, 12), (1000, 7), (2000, 8)]
    assert raw[(2000, 8)][-1] == [later, 120.512]
    assert got["Water, channel 2000"] == approx(0.012)
    assert got["Gas, channel 1000"] == approx(0.2)


async def test_a_belgian_gas_reading_without_a_type_is_gas_on_its_own_channel(
    platform: Platform, db: asyncpg.Connection
) -> None:
    sn, secret, feed_id = await paired_homebase(platform)
    feed = int(str(feed_id))
    t0 = start()
    # A Belgian meter on channel 3 writes 24.2.3; this reader never sends the device's type.
    gas = {t0 + n * GAS_EVERY: 815.5 + n * 0.125 for n in range(4)}
    records = [
        HomebaseRecord(4, t, READER, 3, 0x7A02, o={"0-1:24.2.3": v, "1-0:1.7.0": 900.0})
        for t, v in gas.items()
    ]
    await send(platform, db, sn, secret, feed, records)

    async with platform.client() as api:
        raw = await raw_by_channel(api, feed)
        got = await totals(api, feed)
    assert sorted(raw) == [(3, 12), (1003, 7)]
    assert raw[(1003, 7)] == [[t, v] for t, v in gas.items()]
    assert got["Gas, channel 1003"] == approx(3 * 0.125)
    assert set(got) == {"Electricity, channel 3", "Gas, channel 1003"}


async def test_an_sml_reader_counts_star_255_and_never_a_past_billing_period(
    platform: Platform, db: asyncpg.Connection
) -> None:
    sn, secret, feed_id = await paired_homebase(platform)
    feed = int(str(feed_id))
    t0 = start()
    # A German SML reader: the current register as *255 every 10 s, and beside it the reading
    # at the end of the last billing period (*101), which does not move.
    current = {t0 + n * TELEGRAM: 8_123_456.5 + n * 2.5 for n in range(61)}
    records = [
        HomebaseRecord(
            4, t, READER, 1, 0x7A03, o={"1-0:1.8.0*255": v, "1-0:1.8.0*101": 7_000_000.0}
        )
        for t, v in current.items()
    ]
    await send(platform, db, sn, secret, feed, records)

    async with platform.client() as api:
        raw = await raw_by_channel(api, feed)
        (past,) = await streams(api, feed, "system")
        past_points = await data(api, feed, past["id"])
        got = await totals(api, feed)
    assert raw == {(1, 22): [[t, v] for t, v in current.items()]}
    assert past_points == [[t, 7_000_000.0] for t in current]
    # 60 steps of 2.5 Wh: the register's rise, not the past value's 7 MWh nor their sum.
    assert got == {"Electricity, channel 1": approx(150.0)}
