"""The register is what is billed (issue 58 item 1): on a channel with a total or tariff
register, the channel's total (bill, data API's total stream) is the registers' rise whatever
power it also sends, per phase or in total; power fills only the latest buckets that no register
reading covers yet, until the next reading replaces it. Sent over MQTT as the readers send them,
read back through the bill and the data API."""

from __future__ import annotations

from datetime import datetime

import asyncpg
import pytest

from energy_platform.core.codec.format_v4 import HomebaseRecord
from tests.integration.devices.test_meters_across_europe import (
    HOUR,
    PRAGUE,
    READER,
    approx,
    homebase,
    hours_ago,
    read_back,
    send,
    totals,
)
from tests.support.platform import Platform

TELEGRAM = 10  # s between a HAN port's telegrams
TOTAL, EXPORT_TOTAL = "Electricity, channel 0, total", "Electricity export, channel 0, total"


def swedish(t: int, imported: float) -> HomebaseRecord:
    """A Swedish HAN port's telegram, its codes as NOTES.md (checked 2026-11-28) records them
    from dsmr-reader's Swedish Kamstrup example: 1.8.0 and 2.8.0, 1.7.0 and 2.7.0, and power per
    phase 21/41/61.7.0 import, 22/42/62.7.0 export; sent in Wh and W. L1 draws 1,400 W while
    solar on L2 feeds in 500 W. The meter nets the phases: its import register counts 900 W,
    its export register nothing."""
    return HomebaseRecord(
        4, t, READER, 0, 0x5E01,
        o={
            "1-0:1.8.0": imported, "1-0:2.8.0": 3_000.0,
            "1-0:1.7.0": 900.0, "1-0:2.7.0": 0.0,
            "1-0:21.7.0": 1400.0, "1-0:41.7.0": 0.0, "1-0:61.7.0": 0.0,
            "1-0:22.7.0": 0.0, "1-0:42.7.0": 500.0, "1-0:62.7.0": 0.0,
        },
    )  # fmt: skip


def telegrams(times: range, first: int, base: float) -> list[HomebaseRecord]:
    """Swedish telegrams at ``times``, the import register at ``base`` at ``first`` and rising
    900 W x 10 s = 2.5 Wh every 10 s (the meter counts on while no telegram is read)."""
    return [swedish(t, base + (t - first) / TELEGRAM * 2.5) for t in times]


async def nets_half_an_hour(platform: Platform, feed: int, t0: int) -> None:
    """Half an hour from ``t0`` of L1 drawing 1,400 W and L2 feeding in 500 W is billed as the
    meter nets it."""
    got, bill = await read_back(platform, feed, t0)
    # The meter counted 180 steps x 2.5 Wh = 450 Wh in and nothing out: billed 0.45 kWh in and
    # 0 out, not the phases' 1,400 W x 0.5 h = 700 Wh in and 500 W x 0.5 h = 250 Wh out.
    assert got[TOTAL] == approx(450.0)
    assert got[EXPORT_TOTAL] == approx(0.0)
    assert bill == {"power": approx(0.45), "export": approx(0.0)}
    # The phases are still what they measured, each a stream of its own.
    assert got["Electricity, channel 0, L1"] == approx(700.0)
    assert got["Electricity export, channel 0, L2"] == approx(250.0)
    # The overview's hours count what the bill counts.
    day = datetime.fromtimestamp(t0, PRAGUE).date().isoformat()
    async with platform.client() as api:
        overview = await api.get(
            f"/feeds/{feed}/overview", params={"period": "day", "date": day, "compare": "none"}
        )
    assert overview.status_code == 200, overview.text
    hours = [b for b in overview.json()["buckets"] if b]
    assert sum(b["consumption"].get("power", 0.0) for b in hours) == approx(0.45)


@pytest.mark.parametrize("glitch", [False, True], ids=["plain", "register read as 0 once"])
async def test_solar_on_one_phase_bills_what_the_meter_nets(
    platform: Platform, db: asyncpg.Connection, glitch: bool
) -> None:
    sn, secret, feed = await homebase(platform, db, power=0.30)
    t0 = hours_ago(2)
    records = telegrams(range(t0, t0 + 1800 + 1, TELEGRAM), t0, 6_543_210.0)  # 30 minutes
    if glitch:
        # A reader that reads the import register as 0 once (the glitch NOTES.md records of
        # real readers, checked 2026-11-27): the rules skip it in the channel's total too, now
        # that the register is the total beside its phases.
        records[90] = swedish(records[90].t, 0.0)
    await send(platform, db, sn, secret, feed, records, len(records) * 10)

    await nets_half_an_hour(platform, feed, t0)


async def test_a_reader_away_for_30_minutes_loses_nothing_the_register_counted(
    platform: Platform, db: asyncpg.Connection
) -> None:
    sn, secret, feed = await homebase(platform, db, power=0.30)
    t0 = hours_ago(2)
    # 10 minutes of telegrams, 30 minutes of none (the reader away), 10 minutes more.
    before = telegrams(range(t0, t0 + 600 + 1, TELEGRAM), t0, 1_000_000.0)
    after = telegrams(range(t0 + 2400, t0 + 3000 + 1, TELEGRAM), t0, 1_000_000.0)
    await send(platform, db, sn, secret, feed, before + after, (len(before) + len(after)) * 10)

    got, bill = await read_back(platform, feed, t0)
    # 50 minutes at 900 W: 300 steps x 2.5 Wh = 750 Wh, the 30 minutes away spread over them
    # (the phases, bridged for 300 s at most, saw 20 minutes).
    assert got[TOTAL] == approx(750.0)
    assert bill == {"power": approx(0.75), "export": approx(0.0)}


async def test_power_fills_the_latest_minutes_until_the_next_register_reading(
    platform: Platform, db: asyncpg.Connection
) -> None:
    # Kamstrup's Norwegian HAN port (NOTES.md, from amshan's test data): 1-1:1.7.0 every 10 s,
    # the register 1-1:1.8.0 at each whole hour.
    sn, secret, feed = await homebase(platform, db, power=0.30)
    t0 = hours_ago(3)

    def power(times: range) -> list[HomebaseRecord]:
        return [HomebaseRecord(4, t, READER, 0, 0x4B02, o={"1-1:1.7.0": 900.0}) for t in times]

    def register(t: int, value: float) -> HomebaseRecord:
        return HomebaseRecord(4, t, READER, 0, 0x4B02, o={"1-1:1.8.0": value})

    first = [
        *power(range(t0, t0 + HOUR + 600 + 1, TELEGRAM)),
        register(t0, 2_000_000.0),
        register(t0 + HOUR, 2_001_000.0),
    ]
    await send(platform, db, sn, secret, feed, first, len(first))
    async with platform.client() as api:
        latest = (await totals(api, feed))["Electricity, channel 0"]
    # The hour's register rise, 1,000 Wh, and then 10 minutes no reading covers yet: the
    # power's 900 W x 600 s = 150 Wh.
    assert latest == approx(1000.0 + 150.0)

    second = [
        *power(range(t0 + HOUR + 610, t0 + 2 * HOUR + 1, TELEGRAM)),
        register(t0 + 2 * HOUR, 2_002_100.0),
    ]
    await send(platform, db, sn, secret, feed, second, len(second))
    got, bill = await read_back(platform, feed, t0)
    # The next reading's rise, 1,100 Wh, replaces the power's estimate of that hour (900 Wh):
    # 1,000 + 1,100 Wh.
    assert got["Electricity, channel 0"] == approx(2100.0)
    assert bill == {"power": approx(2.1)}


async def test_sml_registers_win_over_signed_power_and_its_phases(
    platform: Platform, db: asyncpg.Connection
) -> None:
    # An SML meter's codes as NOTES.md records them from libsml's dumps (ISKRA MT691 among
    # them): 1.8.0*255 and 2.8.0*255 (Wh), the signed sum 16.7.0*255 and the signed phases
    # 36/56/76.7.0*255 (W). L1 draws 1,400 W, L2 feeds in 500 W: the sum is
    # +900 W, and the meter's import register counts 900 W.
    sn, secret, feed = await homebase(platform, db, power=0.30)
    t0 = hours_ago(2)
    records = [
        HomebaseRecord(
            4, t, READER, 0, 0x1501,
            o={
                "1-0:1.8.0*255": 4_000_000.0 + (t - t0) / TELEGRAM * 2.5,
                "1-0:2.8.0*255": 12_000.0,
                "1-0:16.7.0*255": 900.0,
                "1-0:36.7.0*255": 1400.0, "1-0:56.7.0*255": -500.0, "1-0:76.7.0*255": 0.0,
            },
        )
        for t in range(t0, t0 + 1800 + 1, TELEGRAM)
    ]  # fmt: skip
    # Each signed code is two points (import and export): 2 registers + 4 x 2.
    await send(platform, db, sn, secret, feed, records, len(records) * 10)

    await nets_half_an_hour(platform, feed, t0)
