"""Meters across Europe (issue 58), each in the shape its readers write it, sent over MQTT as a
homebase's meter reader sends it, stored by the real ingest, processed by the engine and read
back through the bill and the data API as the feed's owner. Every telegram is written from a
public example, named where it is used: dsmr_parser's ``test/example_telegrams.py``, libsml's
dumps, amshan's test data, dsmr-reader's datalogger tests."""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import asyncpg
import httpx
import pytest

from energy_platform.core.codec.format_v4 import HomebaseRecord
from tests.integration.devices.test_meter_codes import data, send, streams
from tests.support.platform import Platform, paired_homebase

READER = 7  # device: the meter reader (docs/devices.md)
PRAGUE = ZoneInfo("Europe/Prague")  # the tests' feeds' time zone (tests/support/platform.py)
HOUR = 3600

DEAD_LETTERS = """
SELECT cause, detail, convert_from(payload, 'UTF8') AS payload
  FROM cluster.dead_letters WHERE sn = $1 ORDER BY id"""
SYSTEM_SOURCES = "SELECT source FROM cluster.streams WHERE feed_id = $1 AND type = 'system'"
FLAT_TARIFF = """
SELECT cluster.set_tariff($1, $2, NULL, ARRAY['00:00'::time], ARRAY[$3::float8])"""


def hours_ago(n: int) -> int:
    """The whole hour ``n`` hours before this one."""
    return (int(time.time()) // HOUR - n) * HOUR


async def homebase(
    platform: Platform, db: asyncpg.Connection, **prices: float
) -> tuple[str, bytes, int]:
    """A paired homebase with a feed, and a flat tariff per medium of ``prices``."""
    sn, secret, feed_id = await paired_homebase(platform)
    feed = int(str(feed_id))
    for medium, price in prices.items():
        await db.execute(FLAT_TARIFF, feed, medium, price)
    return sn, secret, feed


async def totals(api: httpx.AsyncClient, feed: int) -> dict[str, float]:
    """Each consumption and export stream's sum over its local days, by title."""
    return {
        s["configs"][0]["title"]: sum(
            v for _, v in await data(api, feed, s["id"], resolution="day")
        )
        for s in await streams(api, feed, "processed")
        if s["quantity"] in ("consumption", "export")
    }


async def billed(api: httpx.AsyncClient, feed: int, since: int) -> dict[str, float]:
    """The bill's quantity per medium (kWh, m³) from the local date of ``since`` to today."""
    first = datetime.fromtimestamp(since, PRAGUE).date() - timedelta(days=1)
    last = datetime.now(PRAGUE).date()
    answer = await api.get(
        f"/feeds/{feed}/bill", params={"from": first.isoformat(), "to": last.isoformat()}
    )
    assert answer.status_code == 200, answer.text
    return {line["medium"]: line["quantity"] for line in answer.json()["lines"]}


async def raw_streams(platform: Platform, feed: int) -> set[tuple[int, int]]:
    """The feed's raw streams as the data API lists them: {(channel, medium)}."""
    async with platform.client() as api:
        return {(s["channel"], s["medium"]) for s in await streams(api, feed, "raw")}


async def read_back(
    platform: Platform, feed: int, since: int
) -> tuple[dict[str, float], dict[str, float]]:
    """The feed's totals by title (:func:`totals`) and its bill from ``since`` (:func:`billed`),
    as its owner reads them."""
    async with platform.client() as api:
        return await totals(api, feed), await billed(api, feed, since)


def approx(value: float) -> Any:
    """Differences of readings in the thousands or millions: float rounding, nothing more."""
    return pytest.approx(value, rel=1e-9, abs=1e-9)


async def test_a_norwegian_kamstrup_bills_its_channel_1_register(
    platform: Platform, db: asyncpg.Connection
) -> None:
    # Kamstrup's Norwegian HAN port, as NOTES.md (checked 2026-11-28) records it from amshan's
    # test data: 1-1:1.7.0 (W) and a phase current 1-1:31.7.0 (A) every 10 s, the registers
    # 1-1:1.8.0 and 1-1:2.8.0 (Wh, as the reader sends them) at each whole hour. Value group
    # B = 1 is the meter's measurement channel: read like 1-0.
    sn, secret, feed = await homebase(platform, db, power=0.30)
    t0 = hours_ago(2)
    records = [
        HomebaseRecord(4, t, READER, 0, 0x4B01, o={"1-1:1.7.0": 900.0, "1-1:31.7.0": 3.9})
        for t in range(t0, t0 + HOUR + 1, 10)
    ]
    for t, imported in ((t0, 5_170_200.0), (t0 + HOUR, 5_171_200.0)):
        records.append(
            HomebaseRecord(
                4, t, READER, 0, 0x4B01, o={"1-1:1.8.0": imported, "1-1:2.8.0": 20_000.0}
            )
        )
    await send(platform, db, sn, secret, feed, records, 361 * 2 + 2 * 2)

    raw = await raw_streams(platform, feed)
    got, bill = await read_back(platform, feed, t0)
    assert {(0, 12), (0, 22), (0, 23)} <= raw
    # The register's rise over the hour: 5,171,200 - 5,170,200 = 1,000 Wh, spread over the
    # hour, not the power's 900 W x 1 h = 900 Wh; export 20,000 - 20,000 = 0.
    assert got == {
        "Electricity, channel 0": approx(1000.0),
        "Electricity export, channel 0": approx(0.0),
    }
    assert bill == {"power": approx(1.0), "export": approx(0.0)}  # kWh


async def test_dsmr_2_2_hourly_gas_is_its_m_bus_devices_register(
    platform: Platform, db: asyncpg.Connection
) -> None:
    # dsmr_parser's TELEGRAM_V2_2: "0-1:24.1.0(3)" and the hourly capture
    # "0-1:24.3.0(161107190000)(00)(60)(1)(0-1:24.2.1)(m3)" with its value "(00001.001)" on the
    # next line; the reader sends the value at the capture time (values here of our own).
    sn, secret, feed = await homebase(platform, db, gas=1.10)
    t0 = hours_ago(4)
    gas = {t0: 124.477, t0 + HOUR: 124.577, t0 + 2 * HOUR: 124.727}
    records = [
        HomebaseRecord(4, t, READER, 0, 0x2201, o={"0-1:24.1.0": 3, "0-1:24.3.0": v})
        for t, v in gas.items()
    ]
    await send(platform, db, sn, secret, feed, records, 3 * 2)

    raw = await raw_streams(platform, feed)
    got, bill = await read_back(platform, feed, t0)
    assert raw == {(1000, 7)}  # M-Bus device 1 of the reader on channel 0: gas
    assert got == {"Gas, channel 1000": approx(124.727 - 124.477)}  # 0.25 m³
    assert bill == {"gas": approx(0.25)}


async def test_letter_codes_and_dotted_forms_are_read_and_a_bad_code_costs_only_itself(
    platform: Platform, db: asyncpg.Connection
) -> None:
    # IEC 62056-21 (D0) readers print the serial number and the error register with letters,
    # as issue 58 quotes them ("0-0:C.1.0*255", "0-0:F.F.0*255"); SML readers print the
    # registers with six dotted groups ("1.0.1.8.0.255") or F after a dot ("1-0:2.8.0.255").
    # One reading of each record carries a code no form makes readable.
    sn, secret, feed = await homebase(platform, db, power=0.30)
    t0 = hours_ago(2)
    imported = {t0 + n * 60: 8_123_456.5 + n * 25.0 for n in range(61)}  # 25 Wh a minute
    records = [
        HomebaseRecord(
            4, t, READER, 1, 0x0D01,
            o={
                "0-0:C.1.0*255": 60_012_345.0,
                "0-0:F.F.0*255": 0.0,
                "1.0.1.8.0.255": v,
                "1-0:2.8.0.255": 40_000.0,
                "1-0:1.8.x": 1.0,
            },
        )
        for t, v in imported.items()
    ]  # fmt: skip
    await send(platform, db, sn, secret, feed, records, 61 * 4)

    raw = await raw_streams(platform, feed)
    got, bill = await read_back(platform, feed, t0)
    assert raw == {(1, 22), (1, 23)}
    system = {r["source"] for r in await db.fetch(SYSTEM_SOURCES, feed)}
    assert system == {"obis:0-0:96.1.0", "obis:0-0:97.97.0"}  # C = 96, F = 97
    # 60 minutes of 25 Wh: 1,500 Wh; export 0.
    assert got == {
        "Electricity, channel 1": approx(1500.0),
        "Electricity export, channel 1": approx(0.0),
    }
    assert bill == {"power": approx(1.5), "export": approx(0.0)}
    # The unreadable readings are one dead letter, holding those readings alone.
    (letter,) = await db.fetch(DEAD_LETTERS, sn)
    assert letter["cause"] == "unreadable_code"
    assert letter["detail"].startswith("record 0: OBIS code '1-0:1.8.x' is not A-B:C.D.E")
    assert '"o":{"1-0:1.8.x":1.0}' in letter["payload"]
    assert "1.0.1.8.0.255" not in letter["payload"]


async def test_sml_signed_power_is_import_and_export_and_15_7_0_is_not_counted(
    platform: Platform, db: asyncpg.Connection
) -> None:
    # German SML readers as NOTES.md (checked 2026-11-28) records them from libsml's dumps:
    # "1-0:16.7.0*255" (W, the signed sum of active power, negative while feeding in) and
    # "1-0:15.7.0*255" (its absolute value) every 10 s; a power-only reader, no register.
    sn, secret, feed = await homebase(platform, db)
    t0 = hours_ago(2)
    watts = {t: 1200.0 if t <= t0 + 600 else -600.0 for t in range(t0, t0 + 1201, 10)}
    records = [
        HomebaseRecord(4, t, READER, 2, 0x5301, o={"1-0:16.7.0*255": w, "1-0:15.7.0*255": abs(w)})
        for t, w in watts.items()
    ]
    await send(platform, db, sn, secret, feed, records, 121 * 3)

    raw = await raw_streams(platform, feed)
    async with platform.client() as api:
        got = await totals(api, feed)
    assert raw == {(2, 12), (2, 13)}
    system = {r["source"] for r in await db.fetch(SYSTEM_SOURCES, feed)}
    assert system == {"obis:1-0:15.7.0"}
    # Import: 1,200 W for 600 s = 200 Wh, and the 10 s from 1,200 W to 0 when the sign turns:
    # 600 W x 10 s = 1.6667 Wh. Export: 0 to 600 W in those 10 s (0.8333 Wh), then 600 W for
    # 590 s (98.3333 Wh). Never the absolute value's 15.7.0 as well.
    assert got == {
        "Electricity, channel 2": pytest.approx(200 + 1200 / 2 * 10 / 3600),
        "Electricity export, channel 2": pytest.approx(600 / 2 * 10 / 3600 + 600 * 590 / 3600),
    }
