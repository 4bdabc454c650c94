"""DSMR's M-Bus devices as a household has them (issue 58 item 7, issue 59 item 7): an idle slot
is no meter until it moves, and a device's type belongs to the feed it was seen for, so that a
homebase re-paired to another owner starts without the old owner's types. Sent over MQTT as a
homebase's meter reader sends them, read back through the bill and the data API."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from energy_platform.core.codec.format_v4 import HomebaseRecord
from tests.integration.devices.test_meter_codes import data, streams
from tests.integration.devices.test_meters_across_europe import (
    HOUR,
    PRAGUE,
    READER,
    SYSTEM_SOURCES,
    approx,
    homebase,
    hours_ago,
    raw_streams,
    send,
    totals,
)
from tests.support.admin import admin_refusal, run_admin
from tests.support.engine import process
from tests.support.http import http_client
from tests.support.platform import Platform, add_feed

GAS_EVERY = 300  # DSMR 5: an M-Bus reading every 5 minutes


async def test_an_idle_m_bus_slot_makes_no_total_and_no_warning_until_it_moves(
    platform: Platform, db: asyncpg.Connection
) -> None:
    # Fluvius multi-gas, as issue 58 and NOTES.md describe dsmr-reader's example: two gas
    # meters (type 3) on 24.2.3, the second idle at 0; and an empty slot as NOTES.md quotes
    # it, "0-3:24.2.1(700101010000W)(00000000)", no type.
    sn, secret, feed = await homebase(platform, db, gas=1.10)
    t0 = hours_ago(2)
    gas = {t0 + n * GAS_EVERY: 1_021.5 + n * 0.05 for n in range(4)}
    records = [
        HomebaseRecord(
            4, t, READER, 0, 0xF101,
            o={"0-1:24.1.0": 3, "0-1:24.2.3": v, "0-2:24.1.0": 3, "0-2:24.2.3": 0.0,
               "0-3:24.2.1": 0.0},
        )
        for t, v in gas.items()
    ]  # fmt: skip
    await send(platform, db, sn, secret, feed, records, 4 * 5)

    async with platform.client() as api:
        got = await totals(api, feed)
        bill = await api.get(f"/feeds/{feed}/bill", params=bill_dates(t0))
    assert await raw_streams(platform, feed) == {(1000, 7)}
    # 3 steps of 0.05 m³ on device 1; devices 2 and 3 have only read 0: no total.
    assert got == {"Gas, channel 1000": approx(0.15)}
    assert [(x["medium"], x["quantity"]) for x in bill.json()["lines"]] == [("gas", approx(0.15))]
    assert bill.json()["warnings"] == []
    sources = {r["source"] for r in await db.fetch(SYSTEM_SOURCES, feed)}
    assert {"obis:0-2:24.2.3", "obis:0-3:24.2.1"} <= sources

    # The second gas meter moves: from its first reading other than 0 it is a meter.
    later = t0 + HOUR
    moved = [
        HomebaseRecord(4, later + n * GAS_EVERY, READER, 0, 0xF101, o={"0-2:24.2.3": v})
        for n, v in enumerate((0.0, 2.25, 2.3, 2.375))
    ]
    await send(platform, db, sn, secret, feed, moved, 4)
    async with platform.client() as api:
        got = await totals(api, feed)
    # 2.25 -> 2.375: 0.125 m³ (the zeros before it count nothing).
    assert got == {"Gas, channel 1000": approx(0.15), "Gas, channel 2000": approx(0.125)}


def bill_dates(t0: int) -> dict[str, str]:
    """The bill's dates around ``t0`` (UTC dates, a day either side: any local date of it)."""
    day = datetime.fromtimestamp(t0, UTC).date()
    return {
        "from": (day - timedelta(days=1)).isoformat(),
        "to": (day + timedelta(days=1)).isoformat(),
    }


async def test_a_homebase_re_paired_to_another_owner_routes_m_bus_readings_without_the_old_types(
    platform: Platform, db: asyncpg.Connection
) -> None:
    sn, secret, feed = await homebase(platform, db)
    t0 = hours_ago(3)
    # The first owner's reader: M-Bus device 2 is a water meter (type 7).
    first = [
        HomebaseRecord(
            4, t0 + n * GAS_EVERY, READER, 0, 0xA001, o={"0-2:24.1.0": 7, "0-2:24.2.1": v}
        )
        for n, v in enumerate((50.0, 50.01))
    ]
    await send(platform, db, sn, secret, feed, first, 4)
    assert await raw_streams(platform, feed) == {(2000, 8)}

    # The feed is deleted; the homebase goes to another owner, whose reader sends device 2's
    # readings without a type.
    await run_admin(platform.settings, "feeds", "delete", str(feed))
    other = await run_admin(platform.settings, "users", "add", f"m-bus-{secrets.token_hex(3)}")
    added = await add_feed(platform.settings, other["id"], sn)
    new_feed = int(added["id"])
    auth = {"X-SvcClusterAuth": platform.settings.pairing.cluster_secret}
    async with http_client(base_url=platform.provisioning + "/api", headers=auth) as http:
        new_secret = bytes.fromhex((await http.get(f"/device/{sn}/secret/")).json()["secret"])
    assert (
        await db.fetchval("SELECT count(*) FROM cluster.mbus_devices WHERE homebase_sn = $1", sn)
        == 0
    )
    second = [
        HomebaseRecord(4, t0 + HOUR + n * GAS_EVERY, READER, 0, 0xA001, o={"0-2:24.2.1": v})
        for n, v in enumerate((812.5, 812.75))
    ]
    await send(platform, db, sn, new_secret, new_feed, second, 2)

    # Without a type it is gas (docs/devices.md#m-bus-devices), not the old owner's water.
    media = {
        (s["channel"], s["medium"]) for s in await streams_as(platform, other["token"], new_feed)
    }
    assert media == {(2000, 7)}


async def streams_as(platform: Platform, token: str, feed: int) -> list[dict[str, Any]]:
    """The feed's raw streams as the user of ``token`` lists them."""
    async with http_client(
        base_url=platform.api, headers={"Authorization": f"Bearer {token}"}
    ) as api:
        return await streams(api, feed, "raw")


async def test_dsmr_4_gas_of_23_00_to_midnight_is_billed_on_the_months_last_day(
    platform: Platform, db: asyncpg.Connection
) -> None:
    # dsmr_parser's TELEGRAM_V4_2: "0-1:24.1.0(003)" and the hourly capture
    # "0-1:24.2.1(161129200000W)(00981.443*m3)", sent at its capture time, a whole hour.
    sn, secret, feed = await homebase(platform, db, gas=1.10)
    this_month = datetime.now(PRAGUE).date().replace(day=1)
    month = (this_month - timedelta(days=1)).replace(day=1)  # last month: long closed
    last_day = this_month - timedelta(days=1)
    midnight = int(datetime(this_month.year, this_month.month, 1, tzinfo=PRAGUE).timestamp())
    gas = {midnight - 2 * HOUR: 981.443, midnight - HOUR: 981.5, midnight: 981.8,
           midnight + HOUR: 981.9}  # fmt: skip
    records = [
        HomebaseRecord(4, t, READER, 0, 0xD401, o={"0-1:24.1.0": 3, "0-1:24.2.1": v})
        for t, v in gas.items()
    ]
    await send(platform, db, sn, secret, feed, records, 4 * 2)

    async with platform.client() as api:
        (stream,) = [
            s for s in await streams(api, feed, "processed") if s["quantity"] == "consumption"
        ]
        hours = dict(await data(api, feed, stream["id"], resolution="hour"))
        before = await api.get(
            f"/feeds/{feed}/bill", params={"from": month.isoformat(), "to": last_day.isoformat()}
        )
        after = await api.get(
            f"/feeds/{feed}/bill",
            params={"from": this_month.isoformat(), "to": this_month.isoformat()},
        )
    # Each capture's rise in the hour before it: 22:00 0.057, 23:00 0.3 (981.8 - 981.5),
    # 00:00 0.1 m³.
    assert hours == {
        midnight - 2 * HOUR: approx(981.5 - 981.443),
        midnight - HOUR: approx(981.8 - 981.5),
        midnight: approx(981.9 - 981.8),
    }
    # The month's last day holds 22:00-24:00: 981.8 - 981.443 = 0.357 m³; the next month 0.1.
    assert [(x["medium"], x["quantity"]) for x in before.json()["lines"]] == [
        ("gas", approx(0.357))
    ]
    assert [(x["medium"], x["quantity"]) for x in after.json()["lines"]] == [("gas", approx(0.1))]


async def test_a_gj_heat_meter_with_unit_gj_bills_kwh(
    platform: Platform, db: asyncpg.Connection
) -> None:
    # A DSMR meter's M-Bus heat meter (type 4) writing GJ, as Warmtelink's do (NOTES.md,
    # checked 2026-11-28), sent hourly at its capture times as the reader reads them.
    sn, secret, feed = await homebase(platform, db, heat=0.12)
    t0 = hours_ago(5)
    heat = {t0: 12.345, t0 + HOUR: 12.355, t0 + 2 * HOUR: 12.37, t0 + 3 * HOUR: 12.38}
    records = [
        HomebaseRecord(4, t, READER, 0, 0x6A01, o={"0-1:24.1.0": 4, "0-1:24.2.1": v})
        for t, v in heat.items()
    ]
    await send(platform, db, sn, secret, feed, records, 4 * 2)
    stream = await db.fetchval(
        "SELECT id FROM cluster.streams WHERE feed_id = $1 AND type = 'processed'"
        " AND quantity = 'consumption'",
        feed,
    )
    since = datetime.fromtimestamp(t0 - HOUR, UTC).isoformat()
    refused = await admin_refusal(
        platform.settings, "streams", "configure", str(stream), "--from", since, "--unit", "MJ"
    )
    assert "may send kWh, MWh or GJ, not 'MJ'" in refused

    await run_admin(
        platform.settings, "streams", "configure", str(stream), "--from", since, "--unit", "GJ"
    )
    await process(db)

    async with platform.client() as api:
        got = await totals(api, feed)
        bill = await api.get(f"/feeds/{feed}/bill", params=bill_dates(t0))
    # 12.38 - 12.345 = 0.035 GJ x 277.78 kWh per GJ (1e9 J / 3.6e6 J) = 9.7222 kWh, not
    # 0.035 kWh; the stream still shows kWh.
    assert got == {"Heat, channel 1000": approx(0.035 * 1e9 / 3.6e6)}
    assert [(x["medium"], x["quantity"]) for x in bill.json()["lines"]] == [
        ("heat", approx(0.035 * 1e9 / 3.6e6))
    ]
    assert (
        await db.fetchval(
            "SELECT unit FROM cluster.stream_configs WHERE stream_id = $1 AND upper_inf(validity)",
            stream,
        )
        == "kWh"
    )
