"""When to run a load (`GET /feeds/{id}/plan`): the cheapest quarter hours of a window at the
household's all-in price or the market's, to the slot, across DST days of 92 and 100 quarter
hours, an area's switch from hourly to quarter-hour slots, prices not yet published, negative
prices; and the walls and refusals of every feed endpoint."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from energy_platform.core.settings import Settings
from tests.integration.billing.test_tariff_formula import instant, tariff
from tests.support.engine import Feed, NewFeed

QUARTER = 900


async def area_slots(feed: Feed, start: int, length: int, prices: list[float]) -> str:
    """An area of the test's own: ``prices`` in slots of ``length`` seconds from ``start``."""
    area = f"P-{secrets.token_hex(4)}"
    await set_slots(feed, area, start, length, prices)
    return area


async def set_slots(feed: Feed, area: str, start: int, length: int, prices: list[float]) -> None:
    slots = [
        (
            datetime.fromtimestamp(start + length * k, UTC),
            datetime.fromtimestamp(start + length * (k + 1), UTC),
        )
        for k in range(len(prices))
    ]
    await feed.db.execute(
        "SELECT cluster.set_prices($1, (SELECT array_agg(tstzrange(a, b, '[)'))"
        " FROM unnest($2::timestamptz[], $3::timestamptz[]) AS s (a, b)), $4::float8[])",
        area,
        [a for a, _ in slots],
        [b for _, b in slots],
        prices,
    )


async def plan(
    api: httpx.AsyncClient, feed: Feed, token: str | None = None, **params: object
) -> httpx.Response:
    return await api.get(
        f"/feeds/{feed.id}/plan",
        params={k: str(v) for k, v in params.items()},
        headers={"Authorization": f"Bearer {token or feed.owner_token}"},
    )


async def planned(api: httpx.AsyncClient, feed: Feed, **params: object) -> dict[str, Any]:
    answer = await plan(api, feed, **params)
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


async def market_feed(
    new_feed: NewFeed, settings: Settings, start: int, length: int, prices: list[float], *args: str
) -> Feed:
    """A feed in Amsterdam on a dynamic tariff of its own area: the market price alone, unless
    ``args`` adds bands, VAT and the rest."""
    feed = await new_feed("Europe/Amsterdam")
    area = await area_slots(feed, start, length, prices)
    await tariff(settings, feed, "power", "2025-01-01T00:00:00Z", "--area", area, *args)
    return feed


async def test_the_autumn_night_has_100_quarters_and_its_second_two_oclock_is_named_right(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings
) -> None:
    # Sunday 25 October 2026 in Amsterdam: 00:00+02:00 is 22:00 UTC the day before; the clocks
    # go back at 03:00+02:00 (01:00 UTC) to 02:00+01:00: 25 hours, 100 quarter hours.
    midnight = instant("2026-10-25T00:00:00+02:00")
    prices = [0.30] * 100
    # The cheapest hour is the repeated one, the second time: 02:00+01:00 to 03:00+01:00, which
    # is 01:00 to 02:00 UTC, the day's quarters 12 to 15 (3 hours of 4 quarters after midnight).
    prices[12:16] = [0.05, 0.05, 0.05, 0.05]
    prices[8:12] = [0.10] * 4  # the first 02:00 (+02:00): dearer
    feed = await market_feed(new_feed, settings, midnight, QUARTER, prices)

    answer = await planned(
        api,
        feed,
        duration="PT1H",
        power_kw=2,
        earliest="2026-10-25T00:00:00+02:00",
        deadline="2026-10-26T00:00:00+01:00",
    )

    assert answer["status"] == "ok"
    assert len(answer["slots"]) == 100
    assert answer["blocks"] == [
        {
            "start": "2026-10-25T02:00:00+01:00",
            "end": "2026-10-25T03:00:00+01:00",
            "start_utc": "2026-10-25T01:00:00Z",
            "end_utc": "2026-10-25T02:00:00Z",
            "kwh": pytest.approx(2.0),
            "cost": pytest.approx(2.0 * 0.05),
        }
    ]
    # Started at midnight: 2 kWh at 0.30. The dearest hour costs the same.
    assert answer["cost_if_started_now"] == pytest.approx(0.60)
    assert answer["saving"] == pytest.approx(0.60 - 0.10)
    assert answer["worst_cost"] == pytest.approx(0.60)
    # The next-best start apart from it: the first 02:00, +02:00 (00:00 UTC), at 0.10.
    assert answer["alternatives"][0] == {
        "start": "2026-10-25T02:00:00+02:00",
        "start_utc": "2026-10-25T00:00:00Z",
        "cost": pytest.approx(0.20),
    }


async def test_the_spring_night_has_92_quarters_and_three_oclock_follows_two(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings
) -> None:
    # Sunday 29 March 2026: 02:00+01:00 becomes 03:00+02:00 (01:00 UTC): 23 hours, 92 quarters.
    midnight = instant("2026-03-29T00:00:00+01:00")
    prices = [0.30] * 92
    prices[8] = 0.01  # the quarter 03:00+02:00, two hours after midnight: 01:00 UTC
    feed = await market_feed(new_feed, settings, midnight, QUARTER, prices)

    answer = await planned(
        api,
        feed,
        duration="PT15M",
        power_kw=4,
        earliest="2026-03-29T00:00:00+01:00",
        deadline="2026-03-30T00:00:00+02:00",
    )

    assert len(answer["slots"]) == 92
    (block,) = answer["blocks"]
    assert (block["start"], block["start_utc"]) == (
        "2026-03-29T03:00:00+02:00",
        "2026-03-29T01:00:00Z",
    )
    assert block["end"] == "2026-03-29T03:15:00+02:00"
    assert answer["cost"] == pytest.approx(1.0 * 0.01)  # 4 kW for a quarter: 1 kWh


async def test_hourly_slots_before_the_switch_and_quarters_after_price_each_quarter(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings
) -> None:
    # An area in hourly slots up to 12:00 UTC on 30 September 2025, quarter hours from then
    # on, as the day-ahead market switched on 1 October.
    switch = instant("2025-09-30T12:00:00+00:00")
    hours = [0.20, 0.08, 0.20, 0.20]  # 08:00 to 12:00 UTC; 09:00 is cheap
    feed = await market_feed(new_feed, settings, switch - 4 * 3600, 3600, hours)
    area = await feed.db.fetchval("SELECT area FROM cluster.tariffs WHERE feed_id = $1", feed.id)
    quarters = [0.20] * 8
    quarters[5] = 0.01  # 13:15 to 13:30 UTC: cheaper than any hour, but one quarter only
    await set_slots(feed, area, switch, QUARTER, quarters)

    window = {"earliest": "2025-09-30T08:00:00Z", "deadline": "2025-09-30T14:00:00Z"}
    hour = await planned(api, feed, duration="PT1H", power_kw=1, **window)
    quarter = await planned(api, feed, duration="PT15M", power_kw=1, **window)
    split = await planned(api, feed, duration="PT1H", power_kw=1, mode="split", **window)

    # Each hourly price holds for its four quarters, each quarter's after the switch for one.
    assert [s["price"] for s in hour["slots"]] == [
        pytest.approx(p) for p in [x for x in hours for _ in range(4)] + quarters
    ]
    # An hour: the cheap hourly slot (1 kWh at 0.08); a quarter: the cheap quarter (0.25 x 0.01).
    assert hour["blocks"][0]["start_utc"] == "2025-09-30T09:00:00Z"
    assert hour["cost"] == pytest.approx(0.08)
    assert quarter["blocks"][0]["start_utc"] == "2025-09-30T13:15:00Z"
    assert quarter["cost"] == pytest.approx(0.0025)
    # Split: the cheap quarter and three quarters of the cheap hour (0.0025 + 0.75 x 0.08).
    assert split["cost"] == pytest.approx(0.0025 + 0.06)
    assert [b["start_utc"] for b in split["blocks"]] == [
        "2025-09-30T09:00:00Z",
        "2025-09-30T13:15:00Z",
    ]


async def test_a_deadline_past_the_published_prices_plans_within_them_and_says_so(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings
) -> None:
    start = instant("2026-11-20T00:00:00+01:00")
    feed = await market_feed(new_feed, settings, start, QUARTER, [0.2, 0.1, 0.3, 0.3] * 6)

    answer = await planned(
        api,
        feed,
        duration="PT30M",
        power_kw=1,
        earliest="2026-11-20T00:00:00+01:00",
        deadline="2026-11-20T12:00:00+01:00",
    )

    # Six hours published: the plan is made within them, and the answer says where they end.
    assert answer["status"] == "partial_prices"
    assert answer["prices_known_until"] == "2026-11-20T06:00:00+01:00"
    assert answer["blocks"][0]["start"] == "2026-11-20T00:00:00+01:00"
    assert answer["cost"] == pytest.approx(0.25 * 0.2 + 0.25 * 0.1)
    assert [s["price"] for s in answer["slots"][24:]] == [None] * 24
    # Without a deadline the window is what is published.
    assert (
        await planned(api, feed, duration="PT30M", power_kw=1, earliest="2026-11-20T00:00:00+01:00")
    )["deadline"] == ("2026-11-20T06:00:00+01:00")
    # A window shorter than the load: infeasible.
    short = await planned(
        api,
        feed,
        duration="PT2H",
        power_kw=1,
        earliest="2026-11-20T00:00:00+01:00",
        deadline="2026-11-20T01:00:00+01:00",
    )
    assert short["status"] == "infeasible"
    assert short["blocks"] == []
    assert short["cost"] is None


async def test_the_all_in_price_adds_weekend_bands_and_vat_where_the_market_price_does_not(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings
) -> None:
    # Friday 20 November 2026 from 22:00 to Saturday 02:00 (+01:00): the market is cheapest on
    # Friday 23:00 (0.05 against 0.10), but a weekday night band of 0.20 against the weekend's
    # 0.00 makes Saturday 00:00 the cheaper hour all in: (0.10 + 0.00) x 1.21 = 0.121 against
    # (0.05 + 0.20) x 1.21 = 0.3025.
    start = instant("2026-11-20T22:00:00+01:00")
    feed = await market_feed(
        new_feed,
        settings,
        start,
        3600,
        [0.10, 0.05, 0.10, 0.10],
        "--vat",
        "21",
        "--band",
        "weekday/00:00=0.20",
        "--band",
        "weekend/00:00=0.0",
    )
    window = {"earliest": "2026-11-20T22:00:00+01:00", "deadline": "2026-11-21T02:00:00+01:00"}

    all_in = await planned(api, feed, duration="PT1H", power_kw=1, **window)
    market = await planned(api, feed, duration="PT1H", power_kw=1, basis="market", **window)

    assert all_in["blocks"][0]["start"] == "2026-11-21T00:00:00+01:00"
    assert all_in["cost"] == pytest.approx(0.121)
    assert all_in["slots"][0]["price"] == pytest.approx((0.10 + 0.20) * 1.21)
    assert market["blocks"][0]["start"] == "2026-11-20T23:00:00+01:00"
    assert market["cost"] == pytest.approx(0.05)


async def test_split_with_a_price_limit_of_zero_runs_where_prices_are_negative(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings
) -> None:
    start = instant("2026-06-14T10:00:00+02:00")
    prices = [0.10, -0.02, -0.05, 0.10, -0.01, 0.10, 0.10, -0.03]
    feed = await market_feed(new_feed, settings, start, QUARTER, prices)
    window = {"earliest": "2026-06-14T10:00:00+02:00", "deadline": "2026-06-14T12:00:00+02:00"}

    # 4 kWh at 4 kW: four quarters' worth, and four quarters are negative.
    answer = await planned(api, feed, energy_kwh=4, power_kw=4, mode="split", max_price=0, **window)
    assert [s["kwh"] for s in answer["slots"]] == [0, 1, 1, 0, 1, 0, 0, 1]
    assert answer["cost"] == pytest.approx(-0.02 - 0.05 - 0.01 - 0.03)
    # 8 kWh asked: only the negative quarters run, 4 kWh of it.
    more = await planned(api, feed, energy_kwh=8, power_kw=4, mode="split", max_price=0, **window)
    assert (more["load_kwh"], more["planned_kwh"]) == (8.0, 4.0)
    # The coming windows of negative prices, each with its lowest.
    windows = await planned(api, feed, negative="true", **window)
    assert [(w["start"], w["end"], w["lowest_price"]) for w in windows["negative_windows"]] == [
        ("2026-06-14T10:15:00+02:00", "2026-06-14T10:45:00+02:00", -0.05),
        ("2026-06-14T11:00:00+02:00", "2026-06-14T11:15:00+02:00", -0.01),
        ("2026-06-14T11:45:00+02:00", "2026-06-14T12:00:00+02:00", -0.03),
    ]


async def test_a_profile_runs_in_order_in_one_block(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings
) -> None:
    start = instant("2026-06-15T10:00:00+02:00")
    feed = await market_feed(new_feed, settings, start, QUARTER, [0.3, 0.1, 0.2, 0.3, 0.3])
    # A washing machine: 2 kW heating, then 0.4 kW: 0.5 + 0.1 kWh. From 10:15: 0.05 + 0.02;
    # from 10:00: 0.15 + 0.01; from 10:30: 0.10 + 0.03.
    answer = await planned(
        api,
        feed,
        profile="2,0.4",
        earliest="2026-06-15T10:00:00+02:00",
        deadline="2026-06-15T11:15:00+02:00",
    )
    assert answer["blocks"][0]["start"] == "2026-06-15T10:15:00+02:00"
    assert answer["cost"] == pytest.approx(0.07)
    assert answer["cost_if_started_now"] == pytest.approx(0.16)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"duration": "PT7M", "power_kw": 1}, "duration"),
        ({"duration": "2 hours", "power_kw": 1}, "duration"),
        ({"duration": "PT1H"}, "power_kw"),
        ({"duration": "PT1H", "power_kw": -1}, "power_kw"),
        ({"duration": "PT1H", "power_kw": 1, "profile": "1,2"}, "duration"),
        ({"profile": "1,x"}, "profile"),
        ({"profile": ""}, "profile"),
        ({"profile": "0,0"}, "profile"),
        ({"profile": ",".join(["1"] * 193)}, "profile"),
        ({"profile": "1,2", "mode": "split"}, "mode"),
        ({"duration": "PT1H", "power_kw": 1, "max_blocks": 2}, "max_blocks"),
        ({"duration": "PT1H", "power_kw": 1, "earliest": "yesterday"}, "earliest"),
        (
            {
                "duration": "PT1H",
                "power_kw": 1,
                "earliest": "2026-06-15T10:00:00Z",
                "deadline": "2026-06-15T09:00:00Z",
            },
            "deadline",
        ),
        (
            {
                "duration": "PT1H",
                "power_kw": 1,
                "earliest": "2026-06-15T10:00:00Z",
                "deadline": "2026-06-25T09:00:00Z",
            },
            "deadline",
        ),
        ({"energy_kwh": 1000, "power_kw": 1}, "energy_kwh"),
    ],
)
async def test_a_bad_parameter_is_refused_naming_it(
    new_feed: NewFeed, api: httpx.AsyncClient, params: dict[str, object], field: str
) -> None:
    feed = await new_feed("Europe/Amsterdam")
    answer = await plan(api, feed, **params)
    assert answer.status_code == 400, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert field in answer.text


async def test_another_households_plan_is_not_found(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings
) -> None:
    ours = await market_feed(new_feed, settings, instant("2026-06-15T10:00:00Z"), QUARTER, [0.1])
    theirs = await new_feed("Europe/Amsterdam")
    answer = await plan(api, ours, token=theirs.owner_token, duration="PT15M", power_kw=1)
    assert answer.status_code == 404
    assert (await plan(api, ours, duration="PT15M", power_kw=1)).status_code == 200
