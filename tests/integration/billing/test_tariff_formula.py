"""The tariff as contracts write it, set with `admin tariffs set` and read back through the bill
and the price curve: price = clamp((factor x area price + band price) x (1 + vat/100), floor,
cap), VAT on the standing charge too, bands by kind of day with public holidays as weekend
days, charges per month, gas priced per kWh, and heat billed like gas. Every expected figure
carries its arithmetic; the cents of a real bill are what a household would check."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

import asyncpg
import httpx
import pytest

from energy_platform.core.settings import Settings
from tests.integration.billing.test_bills import DAY, HOUR, JAN_1, bill, line, power, prices
from tests.support.admin import run_admin
from tests.support.engine import Feed, NewFeed, process

# Local midnight of 2 January 2026 in Berlin, Amsterdam and Prague (UTC+1).
JAN_2 = JAN_1 + DAY


def instant(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp())


async def area_prices(feed: Feed, start: int, hourly: list[float]) -> str:
    """An area of the test's own with one price a hour from ``start``."""
    area = f"F-{secrets.token_hex(4)}"
    slots = [
        asyncpg.Range(
            datetime.fromtimestamp(start + HOUR * h, UTC),
            datetime.fromtimestamp(start + HOUR * (h + 1), UTC),
        )
        for h in range(len(hourly))
    ]
    await feed.db.execute(
        "SELECT cluster.set_prices($1, $2::tstzrange[], $3::float8[])", area, slots, hourly
    )
    return area


async def tariff(settings: Settings, feed: Feed, medium: str, since: str, *args: str) -> Any:
    return await run_admin(
        settings, "tariffs", "set", str(feed.id), "--medium", medium, "--from", since, *args
    )


async def test_a_german_dynamic_contract_is_spot_plus_fees_with_19_percent_vat_on_all(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings
) -> None:
    feed = await new_feed("Europe/Berlin")
    # Spot 0.10 for three hours, then 0.20 for three, then 0.30 (net, per kWh).
    area = await area_prices(feed, JAN_2, [0.10] * 3 + [0.20] * 3 + [0.30] * 18)
    # Grid fees, levies and the supplier's margin 0.12 net; a base fee of 10.00 a month net.
    listed = await tariff(
        settings, feed, "power", "2025-12-01T00:00:00+01:00", "--area", area, "--price", "0.12",
        "--vat", "19", "--standing", "10", "--standing-per", "month",
    )  # fmt: skip
    await power(feed, 1, 1000.0, JAN_2, JAN_2 + 6 * HOUR)
    await process(feed.db)

    answer = await bill(api, feed, "2026-01-01", "2026-01-31")

    # (0.10 + 0.12) x 1.19 = 0.2618 and (0.20 + 0.12) x 1.19 = 0.3808 per kWh, 3 kWh each:
    # 0.7854 + 1.1424 = 1.9278. The base fee 10.00 x 1.19 = 11.90 for January, whole.
    energy, standing = 3 * 0.2618 + 3 * 0.3808, 11.90
    assert line(answer, "power") == {
        "medium": "power",
        "quantity": pytest.approx(6.0),
        "unit": "kWh",
        "energy": pytest.approx(energy),
        "standing": pytest.approx(standing),
        "total": pytest.approx(energy + standing),  # 13.83
        # 19/119 of what was paid: 0.3078 + 1.90 = 2.21.
        "vat": pytest.approx((energy + standing) * 19 / 119),
    }
    assert answer["complete"] is True
    assert round(answer["total"], 2) == 13.83
    assert round(answer["vat"], 2) == 2.21
    assert listed[0]["vat"] == 19.0
    assert listed[0]["standing_per"] == "month"
    curve = await prices(api, feed, "2026-01-02", "2026-01-02")
    assert curve[:4] == [
        (JAN_2, JAN_2 + HOUR, pytest.approx(0.2618)),
        (JAN_2 + HOUR, JAN_2 + 2 * HOUR, pytest.approx(0.2618)),
        (JAN_2 + 2 * HOUR, JAN_2 + 3 * HOUR, pytest.approx(0.2618)),
        (JAN_2 + 3 * HOUR, JAN_2 + 4 * HOUR, pytest.approx(0.3808)),
    ]


async def test_a_dutch_dynamic_contract_is_spot_plus_energy_tax_plus_markup_with_21_percent(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings
) -> None:
    feed = await new_feed("Europe/Amsterdam")
    area = await area_prices(feed, JAN_2, [0.09] * 24)
    # Energy tax 0.10154 and the supplier's markup 0.02 per kWh; delivery costs 4.95 a month.
    await tariff(
        settings, feed, "power", "2025-12-01T00:00:00+01:00", "--area", area, "--price",
        "0.12154", "--vat", "21", "--standing", "4.95", "--standing-per", "month",
    )  # fmt: skip
    await power(feed, 1, 1000.0, JAN_2, JAN_2 + 4 * HOUR)
    await process(feed.db)

    answer = await bill(api, feed, "2026-01-01", "2026-01-31")

    # (0.09 + 0.10154 + 0.02) x 1.21 = 0.2559634 per kWh, 4 kWh: 1.0238536 (1.02); the
    # delivery costs 4.95 x 1.21 = 5.9895 (5.99); 7.01 in all, of which 21/121 is VAT: 1.22.
    power_line = line(answer, "power")
    assert power_line["energy"] == pytest.approx(4 * 0.2559634)
    assert power_line["standing"] == pytest.approx(5.9895)
    assert round(answer["total"], 2) == 7.01
    assert round(power_line["vat"], 2) == round(answer["vat"], 2) == 1.22


async def test_export_under_a_floor_earns_nothing_in_negative_hours_and_a_cap_holds_the_rest(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings
) -> None:
    eeg, capped = await new_feed("Europe/Berlin"), await new_feed("Europe/Berlin")
    # One area for both: -0.05, 0.08 and 0.25 in the first three hours, 0 after.
    area = await area_prices(eeg, JAN_2, [-0.05, 0.08, 0.25] + [0.0] * 21)
    since = "2026-01-01T00:00:00+01:00"
    # §51 EEG: the market price, but never below 0 (nothing paid in negative hours).
    await tariff(settings, eeg, "export", since, "--area", area, "--floor", "0")
    # An export price capped at 0.10.
    await tariff(settings, capped, "export", since, "--area", area, "--cap", "0.10")
    for feed in (eeg, capped):
        fed_in = await feed.raw_stream(channel=1, medium=13)
        await feed.ingest(fed_in, [(t, 1000.0) for t in range(JAN_2, JAN_2 + 3 * HOUR + 1, 30)])
    await process(eeg.db)

    # 1 kWh an hour: max(-0.05, 0) + 0.08 + 0.25 = 0.33; -0.05 + 0.08 + min(0.25, 0.10) = 0.13.
    for feed, credit in ((eeg, 0.33), (capped, 0.13)):
        answer = await bill(api, feed, "2026-01-02", "2026-01-02")
        assert line(answer, "export") == {
            "medium": "export",
            "quantity": pytest.approx(3.0),
            "unit": "kWh",
            "credit": pytest.approx(credit),
            "standing": 0.0,
            "total": pytest.approx(-credit),
            "vat": 0.0,
        }
    # The curve says so too: the negative slot under the floor is 0.
    curve = await prices(api, eeg, "2026-01-02", "2026-01-02", "export")
    assert [price for _, _, price in curve[:3]] == [0.0, pytest.approx(0.08), pytest.approx(0.25)]
    curve = await prices(api, capped, "2026-01-02", "2026-01-02", "export")
    assert [p for _, _, p in curve[:3]] == [pytest.approx(-0.05), pytest.approx(0.08), 0.10]


async def test_weekend_bands_hold_on_saturdays_and_dutch_public_holidays_by_the_local_day(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings
) -> None:
    home, tokyo = await new_feed("Europe/Amsterdam"), await new_feed("Asia/Tokyo")
    # A Dutch meter's two registers: normal 07:00 to 23:00 on weekdays, low at night, all
    # weekend and on public holidays.
    bands = ("--band", "weekday/07:00=0.30", "--band", "weekday/23:00=0.20")
    for feed in (home, tokyo):
        listed = await tariff(
            settings, feed, "power", "2026-01-01T00:00:00Z", *bands,
            "--band", "weekend/00:00=0.20", "--holidays", "NL",
        )  # fmt: skip
    assert listed[0]["holidays"] == "NL"
    assert listed[0]["bands"][0] == {"starts": "00:00", "ends": "07:00", "price": 0.2,
                                     "days": "weekday"}  # fmt: skip
    saturday = instant("2026-04-25T00:00:00+02:00")
    kings_day, wednesday = saturday + 2 * DAY, saturday + 4 * DAY  # Monday 27, Wednesday 29
    for day in (saturday, kings_day, wednesday):
        await power(home, 1, 1000.0, day + 12 * HOUR, day + 13 * HOUR)
    # 07:00 on Saturday in Tokyo is 22:00 on Friday in UTC: the local day decides.
    tokyo_saturday = instant("2026-04-25T07:00:00+09:00")
    await power(tokyo, 1, 1000.0, tokyo_saturday, tokyo_saturday + HOUR)
    await process(home.db)

    # Noon: 0.20 on the Saturday and on King's Day (a Monday), 0.30 on the Wednesday.
    week = await bill(api, home, "2026-04-25", "2026-04-29")
    assert line(week, "power")["energy"] == pytest.approx(0.20 + 0.20 + 0.30)
    assert line(await bill(api, tokyo, "2026-04-25", "2026-04-25"), "power")[
        "energy"
    ] == pytest.approx(0.20)
    weekday = [(0, 7, 0.20), (7, 23, 0.30), (23, 24, 0.20)]
    assert await prices(api, home, "2026-04-25", "2026-04-29") == [
        (saturday, saturday + DAY, pytest.approx(0.20)),
        (saturday + DAY, saturday + 2 * DAY, pytest.approx(0.20)),
        (kings_day, kings_day + DAY, pytest.approx(0.20)),
        *[(d + a * HOUR, d + b * HOUR, pytest.approx(p))
          for d in (kings_day + DAY, wednesday) for a, b, p in weekday],
    ]  # fmt: skip
    # Across the change to summer time: Sunday 29 March has 23 hours, all weekend; Monday's
    # 07:00 is 05:00 UTC.
    sunday, monday = instant("2026-03-29T00:00:00+01:00"), instant("2026-03-30T00:00:00+02:00")
    assert monday - sunday == 23 * HOUR
    assert await prices(api, home, "2026-03-29", "2026-03-30") == [
        (sunday, monday, pytest.approx(0.20)),
        *[(monday + a * HOUR, monday + b * HOUR, pytest.approx(p)) for a, b, p in weekday],
    ]


async def test_a_monthly_charge_is_the_same_in_january_and_february_and_shared_by_days(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings
) -> None:
    feed = await new_feed("Europe/Prague")
    monthly = ("--standing-per", "month", "--price", "1.0")
    await tariff(settings, feed, "gas", "2025-12-01T00:00:00+01:00", "--standing", "12", *monthly)
    # A new period from 11 March: 31 a month.
    await tariff(settings, feed, "gas", "2026-03-11T00:00:00+01:00", "--standing", "31", *monthly)

    async def charged(start: str, end: str) -> float:
        standing: float = line(await bill(api, feed, start, end), "gas")["standing"]
        return standing

    assert await charged("2026-01-01", "2026-01-31") == pytest.approx(12.0)
    assert await charged("2026-02-01", "2026-02-28") == pytest.approx(12.0)
    assert await charged("2026-01-01", "2026-02-28") == pytest.approx(24.0)
    # 16 of January's 31 days and 14 of February's 28: 6.19 + 6.00.
    assert await charged("2026-01-16", "2026-02-14") == pytest.approx(12 * 16 / 31 + 12 * 14 / 28)
    # March: 10 days of the first period, 21 of the second: 3.87 + 21.00.
    assert await charged("2026-03-01", "2026-03-31") == pytest.approx(12 * 10 / 31 + 31 * 21 / 31)


async def test_gas_is_billed_per_kwh_at_the_factor_of_each_day_across_a_change_mid_month(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings
) -> None:
    feed = await new_feed("Europe/Prague")
    await tariff(
        settings, feed, "gas", "2026-01-01T00:00:00+01:00", "--price", "0.10", "--kwh-per-m3", "10"
    )
    # The supplier's calorific value for the second half of the month.
    await tariff(
        settings, feed, "gas", "2026-01-16T00:00:00+01:00", "--price", "0.10", "--kwh-per-m3", "11"
    )
    meter = await feed.raw_stream(channel=3, medium=7)
    tenth, twentieth = JAN_1 + 9 * DAY, JAN_1 + 19 * DAY
    await feed.ingest(meter, [(tenth + HOUR * h, 100.0 + h) for h in range(7)])  # 6 m³
    await feed.ingest(meter, [(twentieth + HOUR * h, 106.0 + 2 * h) for h in range(3)])  # 4 m³
    await process(feed.db)

    answer = await bill(api, feed, "2026-01-01", "2026-01-31")

    # 6 m³ x 10 + 4 m³ x 11 = 104 kWh, at 0.10 per kWh: 10.40.
    assert line(answer, "gas") == {
        "medium": "gas",
        "quantity": pytest.approx(10.0),
        "unit": "m³",
        "kwh": pytest.approx(104.0),
        "energy": pytest.approx(10.40),
        "standing": 0.0,
        "total": pytest.approx(10.40),
        "vat": 0.0,
    }


async def test_heat_meter_readings_are_processed_and_billed_like_gas_in_kwh(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings
) -> None:
    feed = await new_feed("Europe/Prague")
    await tariff(
        settings, feed, "heat", "2026-01-01T00:00:00+01:00", "--price", "0.12", "--vat", "7"
    )
    meter = await feed.raw_stream(channel=4, medium=9)
    await feed.ingest(meter, [(JAN_2, 500.0), (JAN_2 + HOUR, 510.0), (JAN_2 + 2 * HOUR, 530.0)])
    await process(feed.db)

    streams = await api.get(
        f"/feeds/{feed.id}/streams", headers={"Authorization": f"Bearer {feed.owner_token}"}
    )
    assert streams.status_code == 200, streams.text
    heat = [s for s in streams.json() if s["type"] == "processed" and s["channel"] == 4]
    assert {(s["quantity"], s["configs"][0]["medium"], s["configs"][0]["unit"]) for s in heat} == {
        ("consumption", "heat", "kWh"),
        ("cost", "heat", "CZK"),
    }
    answer = await bill(api, feed, "2026-01-02", "2026-01-02")
    # 30 kWh at 0.12 x 1.07 = 0.1284: 3.852, of which 7/107 is VAT: 0.252.
    assert answer["lines"] == [
        {
            "medium": "heat",
            "quantity": pytest.approx(30.0),
            "unit": "kWh",
            "energy": pytest.approx(3.852),
            "standing": 0.0,
            "total": pytest.approx(3.852),
            "vat": pytest.approx(0.252),
        }
    ]
    # The overview lists the heat meter and counts its kWh per hour, as the bill does.
    overview = await api.get(
        f"/feeds/{feed.id}/overview",
        params={"period": "day", "date": "2026-01-02", "compare": "none"},
        headers={"Authorization": f"Bearer {feed.owner_token}"},
    )
    assert overview.status_code == 200, overview.text
    assert "heat" in {m["medium"] for m in overview.json()["meters"]}
    hours = [b for b in overview.json()["buckets"] if b]
    assert sum(b["consumption"].get("heat", 0.0) for b in hours) == pytest.approx(30.0)
