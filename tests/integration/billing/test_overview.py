"""The overview (``GET /feeds/{id}/overview``): for a period that is over its money is the bill
of the same days and its buckets are the rollups the data API answers per hour, day and month;
DST days have 23 and 25 hours; last year's 29 February compares with the 28th; a gap is missing
buckets and less coverage; the baseload is the night's; other users and bad parameters are
refused.

One household (``seeding.household``), seeded once for the module and processed by the engine: a
meter on channel 1 (import and export), a heat pump's clamp on channel 2 marked as a sub-meter,
a gas meter on channel 3, on a few days of 2023, 2024 and January 2026 in Europe/Prague.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise
from typing import Any
from zoneinfo import ZoneInfo

import asyncpg
import httpx
import psycopg
import pytest
import pytest_asyncio

from energy_platform import seeding
from energy_platform.billing.tariffs import tariff_terms
from energy_platform.core.settings import Settings
from tests.support.data import data_api
from tests.support.engine import CURRENCY, ENGINE, Feed, api_buckets
from tests.support.http import http_client

ZONE = ZoneInfo("Europe/Prague")
HOUR = 3600
STEP = 120  # s between power samples: bridged (<= 300 s), few points
PRICE, STANDING, CREDIT, GAS = 0.30, 0.45, 0.08, 1.20


def local(text: str) -> int:
    """Unix seconds of a Prague wall time."""
    return int(datetime.fromisoformat(text).replace(tzinfo=ZONE).timestamp())


def samples(start: int, end: int, watts: float) -> list[tuple[int, float]]:
    return [(t, watts) for t in range(start, end, STEP)]


@dataclass
class Served:
    """The module's household (``seeding.household``) as the data API serves it."""

    feed: Feed
    api: httpx.AsyncClient
    streams: dict[str, int]
    stranger: str  # another user's token


async def _seed(db: asyncpg.Connection, sn: str) -> tuple[Feed, str]:
    stranger = await seeding.add_user(db, f"overview-stranger-{sn}")
    # Whole days at 1 kW: a day of 2023, 29 February, both DST days of 2024. 5 January 2026:
    # a night at 150 W with one hour at 2 kW, then 1 kW; 6 January: 1 kW with nothing from
    # 10:00 to 16:00; 7 January: 1 kW, and 2 kW fed in from 11:00 to 13:00. The heat pump
    # behind the meter: 500 W for two hours.
    readings: dict[str, list[tuple[int, float]]] = {"import": [], "export": [], "clamp": []}
    for meter, start, end, watts in (
        ("import", "2023-02-28T00:00", "2023-03-01T00:00", 1000.0),
        ("import", "2024-02-29T00:00", "2024-03-01T00:00", 1000.0),
        ("import", "2024-03-31T00:00", "2024-04-01T00:00", 1000.0),
        ("import", "2024-10-27T00:00", "2024-10-28T00:00", 1000.0),
        ("import", "2026-01-05T00:00", "2026-01-05T02:00", 150.0),
        ("import", "2026-01-05T02:00", "2026-01-05T03:00", 2000.0),
        ("import", "2026-01-05T03:00", "2026-01-05T05:00", 150.0),
        ("import", "2026-01-05T05:00", "2026-01-06T10:00", 1000.0),
        ("import", "2026-01-06T16:00", "2026-01-08T00:00", 1000.0),
        ("export", "2026-01-07T11:00", "2026-01-07T13:00", 2000.0),
        ("clamp", "2026-01-05T08:00", "2026-01-05T10:02", 500.0),
    ):
        readings[meter] += samples(local(start), local(end), watts)
    # Gas: a reading every 5 minutes, 0.01 m³ apart, from 06:00 to 08:00.
    gas_start = local("2026-01-05T06:00:00")
    readings["gas"] = [(gas_start + 300 * k, 100.0 + 0.01 * k) for k in range(25)]
    # Flat prices from the beginning of time, the power's with a daily standing charge.
    tariffs = {
        "power": tariff_terms("power", price=PRICE, standing=STANDING),
        "export": tariff_terms("export", price=CREDIT),
        "gas": tariff_terms("gas", price=GAS),
    }
    home = await seeding.household(
        db,
        local("2023-02-28T00:00"),
        seeding.Size(days=0, gas=True),
        sn=sn,
        subscription=(datetime(2023, 1, 1, tzinfo=ZONE), datetime(2027, 1, 1, tzinfo=ZONE)),
        readings=readings,
        tariffs=tariffs,
        engine=ENGINE,
        currency=CURRENCY,
    )
    return Feed(db, home.feed, sn, home.owner.token), stranger.token


@pytest_asyncio.fixture(scope="module")
async def household(database_url: str, settings: Settings) -> AsyncIterator[Served]:
    sn = secrets.token_hex(8).upper()
    db = await asyncpg.connect(database_url)
    try:
        feed, stranger = await _seed(db, sn)
        streams = {
            key: await feed.stream_id(title)
            for key, title in (
                ("power", "Electricity, channel 1"),
                ("power cost", "Electricity cost, channel 1"),
                ("export", "Electricity export, channel 1"),
                ("export credit", "Electricity export credit, channel 1"),
                ("heat pump", "Heat pump"),
                ("gas", "Gas, channel 3"),
                ("gas cost", "Gas cost, channel 3"),
            )
        }
        async with data_api(settings) as url, http_client(base_url=url) as api:
            yield Served(feed, api, streams, stranger)
    finally:
        await db.close()
        with psycopg.connect(database_url) as conn:
            conn.execute("DELETE FROM cluster.feeds WHERE homebase_sn = %s", (sn,))
            conn.execute("DELETE FROM cluster.users WHERE name LIKE %s", (f"overview-%-{sn}",))


async def owner_get(home: Served, what: str, params: dict[str, str]) -> dict[str, Any]:
    """``GET /feeds/{id}/{what}`` as the feed's owner: the 200 answer's JSON."""
    answer = await home.api.get(
        f"/feeds/{home.feed.id}/{what}",
        params=params,
        headers={"Authorization": f"Bearer {home.feed.owner_token}"},
    )
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


async def overview(home: Served, **params: str) -> dict[str, Any]:
    return await owner_get(home, "overview", params)


async def bill(home: Served, start: str, end: str) -> dict[str, Any]:
    return await owner_get(home, "bill", {"from": start, "to": end})


def as_overview_lines(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The bill's lines as the overview writes them: money first, export as minus its credit."""
    return [
        {
            "medium": line["medium"],
            "quantity": pytest.approx(line["quantity"]),
            "unit": line["unit"],
            "money": pytest.approx(line.get("energy", -line.get("credit", 0.0))),
        }
        for line in answer["lines"]
    ]


async def rollups(
    home: Served, key: str, resolution: str, start: int, end: int
) -> dict[int, float]:
    buckets = await api_buckets(
        home.api, home.feed, home.streams[key], resolution, time_from=start, time_to=end
    )
    return {int(t): v for t, v in buckets}


async def assert_agrees(home: Served, period: str, date: str, first: str, last: str) -> None:
    """The overview of a period that is over is its bill, and its buckets are the rollups."""
    answer = await overview(home, period=period, date=date, compare="none")
    billed = await bill(home, first, last)
    assert (answer["from"], answer["to"]) == (first, last)
    assert answer["so_far"]["total"] == pytest.approx(billed["total"])
    assert answer["so_far"]["lines"] == as_overview_lines(billed)
    assert answer["so_far"]["standing"] == pytest.approx(
        sum(x["standing"] for x in billed["lines"])
    )
    assert answer["projection"] == {"total": None}
    assert answer["compare"] is None
    resolution = {"day": "hour", "week": "day", "month": "day", "year": "month"}[period]
    start, end = local(f"{first}T00:00:00"), local(f"{last}T23:59:59")
    expected: dict[str, dict[int, float]] = {
        key: await rollups(home, key, resolution, start, end) for key in home.streams
    }
    buckets = {b["start"]: b for b in answer["buckets"]}
    # A bucket for each start any counted stream has, and only those.
    starts = set(expected["power"]) | set(expected["export"]) | set(expected["gas"])
    assert set(buckets) == starts
    for t, b in buckets.items():
        power = expected["power"].get(t)
        assert b["consumption"].get("power") == (
            None if power is None else pytest.approx(power / 1000)
        )
        gas = expected["gas"].get(t)
        assert b["consumption"].get("gas") == (None if gas is None else pytest.approx(gas))
        export = expected["export"].get(t)
        assert b["export"] == (None if export is None else pytest.approx(export / 1000))
        money = (
            expected["power cost"].get(t, 0.0)
            + expected["gas cost"].get(t, 0.0)
            - expected["export credit"].get(t, 0.0)
        )
        assert b["money"] == pytest.approx(money)
        heat = expected["heat pump"].get(t)
        assert b["meters"].get(str(home.streams["heat pump"])) == (
            None if heat is None else pytest.approx(heat / 1000)
        )
    # Money in buckets plus the fixed charges is the bill.
    assert sum(b["money"] for b in answer["buckets"]) + answer["so_far"][
        "standing"
    ] == pytest.approx(billed["total"])


async def test_a_closed_day_is_its_bill_and_its_hourly_rollups(household: Served) -> None:
    await assert_agrees(household, "day", "2026-01-05", "2026-01-05", "2026-01-05")
    answer = await overview(household, period="day", date="2026-01-05", compare="none")
    # The bill's lines (export's too: it has a tariff); the heat pump listed as a sub-meter.
    assert [line["medium"] for line in answer["so_far"]["lines"]] == ["power", "gas", "export"]
    assert len(answer["buckets"]) == 24
    assert answer["meters"] == [
        {"stream": str(household.streams[k]), "title": t, "medium": m, "submeter": s}
        for k, t, m, s in sorted(
            (
                ("power", "Electricity, channel 1", "power", False),
                ("export", "Electricity export, channel 1", "export", False),
                ("heat pump", "Heat pump", "power", True),
                ("gas", "Gas, channel 3", "gas", False),
            ),
            key=lambda x: household.streams[x[0]],
        )
    ]


async def test_a_closed_week_and_month_are_their_bills_and_their_days(household: Served) -> None:
    await assert_agrees(household, "week", "2026-01-07", "2026-01-05", "2026-01-11")
    await assert_agrees(household, "month", "2026-01-20", "2026-01-01", "2026-01-31")


async def test_a_closed_year_is_its_bill_and_its_months(household: Served) -> None:
    await assert_agrees(household, "year", "2024-06-01", "2024-01-01", "2024-12-31")
    answer = await overview(household, period="year", date="2024-06-01", compare="none")
    # Only February, March and October hold data: the other months are absent, not 0.
    months = [datetime.fromtimestamp(b["start"], ZONE).strftime("%m") for b in answer["buckets"]]
    assert months == ["02", "03", "10"]
    assert answer["so_far"]["standing"] == pytest.approx(366 * STANDING)


async def test_dst_days_have_23_and_25_hours(household: Served) -> None:
    spring = await overview(household, period="day", date="2024-03-31", compare="none")
    autumn = await overview(household, period="day", date="2024-10-27", compare="none")
    for answer, hours in ((spring, 23), (autumn, 25)):
        starts = [b["start"] for b in answer["buckets"]]
        assert len(starts) == hours
        assert [b - a for a, b in pairwise(starts)] == [HOUR] * (hours - 1)
        assert answer["coverage"] == pytest.approx(1.0, abs=0.01)
        # 1 kW all day: as many kWh as the day has hours.
        assert answer["so_far"]["lines"][0]["quantity"] == pytest.approx(hours, abs=0.1)
    await assert_agrees(household, "day", "2024-10-27", "2024-10-27", "2024-10-27")


async def test_last_year_of_29_february_is_the_28th(household: Served) -> None:
    leap = await overview(household, period="day", date="2024-02-29", compare="last_year")
    assert (leap["compare"]["from"], leap["compare"]["to"]) == ("2023-02-28", "2023-02-28")
    before = await bill(household, "2023-02-28", "2023-02-28")
    assert leap["compare"]["total"] == pytest.approx(before["total"])
    assert leap["compare"]["lines"] == as_overview_lines(before)
    assert len(leap["compare"]["buckets"]) == 24
    # February 2024 has 29 days, February 2023 28: each month whole.
    month = await overview(household, period="month", date="2024-02-29", compare="last_year")
    assert (month["from"], month["to"]) == ("2024-02-01", "2024-02-29")
    assert (month["compare"]["from"], month["compare"]["to"]) == ("2023-02-01", "2023-02-28")
    assert month["compare"]["total"] == pytest.approx(
        (await bill(household, "2023-02-01", "2023-02-28"))["total"]
    )
    assert month["compare"]["standing"] == pytest.approx(28 * STANDING)
    # previous: the day before.
    day = await overview(household, period="day", date="2024-03-01")
    assert (day["compare"]["from"], day["compare"]["to"]) == ("2024-02-29", "2024-02-29")
    assert day["compare"]["total"] == pytest.approx(leap["so_far"]["total"])


async def test_a_gap_is_missing_hours_and_less_coverage(household: Served) -> None:
    answer = await overview(household, period="day", date="2026-01-06", compare="none")
    hours = {datetime.fromtimestamp(b["start"], ZONE).hour for b in answer["buckets"]}
    # Nothing from 10:00 to 16:00: those six hours are absent, never 0.
    assert hours == set(range(24)) - set(range(10, 16))
    assert answer["coverage"] == pytest.approx(18 / 24, abs=0.005)
    full = await overview(household, period="day", date="2026-01-07", compare="none")
    assert full["coverage"] == pytest.approx(1.0, abs=0.005)


async def test_the_baseload_is_the_nights_low(household: Served) -> None:
    answer = await overview(household, period="day", date="2026-01-05", compare="none")
    # Night hours 150, 150, 2000, 150, 150 W: the 5th percentile is 150 W, the 2 kW hour and
    # the 1 kW day are not the always-on load.
    assert answer["baseload_w"] == pytest.approx(150.0, rel=0.02)
    # A night with the meter at 1 kW all through.
    assert (await overview(household, period="day", date="2026-01-07", compare="none"))[
        "baseload_w"
    ] == pytest.approx(1000.0, rel=0.02)
    empty = await overview(household, period="day", date="2025-07-01", compare="none")
    assert empty["baseload_w"] is None
    assert empty["buckets"] == []
    assert empty["coverage"] == 0.0


async def test_a_day_with_work_queued_answers_as_the_rollups_will(household: Served) -> None:
    before = await overview(household, period="day", date="2026-01-05", compare="none")
    # The engine's queue, written as the store writes it: the day's rollups are stale until
    # the engine recomputes them, and meanwhile are read from the points.
    day = (local("2026-01-05T00:00"), local("2026-01-06T00:00"))
    await household.feed.db.execute(
        "INSERT INTO cluster.rollup_work (stream_id, span)"
        " SELECT s, tstzrange(to_timestamp($2), to_timestamp($3)) FROM unnest($1::bigint[]) s",
        list(household.streams.values()),
        *day,
    )
    try:
        queued = await overview(household, period="day", date="2026-01-05", compare="none")
    finally:
        await household.feed.db.execute(
            "DELETE FROM cluster.rollup_work WHERE stream_id = ANY ($1::bigint[])",
            list(household.streams.values()),
        )

    assert queued["so_far"]["total"] == pytest.approx(before["so_far"]["total"])
    assert queued["baseload_w"] == pytest.approx(before["baseload_w"])
    assert queued["coverage"] == pytest.approx(before["coverage"])
    assert [b["start"] for b in queued["buckets"]] == [b["start"] for b in before["buckets"]]
    for now, then in zip(queued["buckets"], before["buckets"], strict=True):
        assert now["meters"] == pytest.approx(then["meters"])
        assert now["money"] == pytest.approx(then["money"])


async def test_nothing_measured_lately_leaves_now_unknown(household: Served) -> None:
    answer = await overview(household)
    assert answer["period"] == "day"
    assert answer["now"] == {"power_w": None, "export_w": None, "price": PRICE, "at": None}
    assert answer["timezone"] == "Europe/Prague"


@pytest.mark.parametrize(
    "params",
    [
        {"period": "fortnight"},
        {"date": "2026-02-30"},
        {"date": "26-01-01"},
        {"date": "0001-01-01"},
        {"compare": "tomorrow"},
    ],
)
async def test_bad_parameters_are_400(household: Served, params: dict[str, str]) -> None:
    answer = await household.api.get(
        f"/feeds/{household.feed.id}/overview",
        params=params,
        headers={"Authorization": f"Bearer {household.feed.owner_token}"},
    )
    assert answer.status_code == 400, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")


async def test_another_users_feed_is_404_and_no_token_401(household: Served) -> None:
    path = f"/feeds/{household.feed.id}/overview"
    stranger = await household.api.get(
        path, headers={"Authorization": f"Bearer {household.stranger}"}
    )
    assert stranger.status_code == 404
    assert (await household.api.get(path)).status_code == 401
    assert (
        await household.api.get(
            "/feeds/999999999/overview",
            headers={"Authorization": f"Bearer {household.feed.owner_token}"},
        )
    ).status_code == 404
