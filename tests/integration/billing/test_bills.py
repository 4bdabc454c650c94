"""The bill: per medium what was used and what it cost over local dates, export credit apart,
daily charges once per local day, sub-meters listed but not added, one supply metered twice
counted once when its main meter is marked and warned of when not, read through the data API
the way a dashboard asks for it."""

from __future__ import annotations

import secrets
import time
from datetime import UTC, date, datetime, timedelta
from typing import Any

import asyncpg
import httpx
import pytest

from energy_platform.core.settings import Settings
from tests.support.admin import admin_refusal, run_admin
from tests.support.data import T0
from tests.support.engine import Feed, NewFeed, api_buckets, process

DAY = 86_400
HOUR = 3600
# Local midnights in Prague: 2026-01-01T00:00+01:00 is T0 - 3600.
JAN_1 = T0 - HOUR


def at(t: int) -> datetime:
    return datetime.fromtimestamp(t, UTC)


async def power(feed: Feed, channel: int, watts: float, start: int, end: int) -> None:
    """``watts`` on ``channel`` from ``start`` to ``end``: watts / 40 Wh in each bucket."""
    clamp = await feed.raw_stream(channel=channel, medium=1)
    await feed.ingest(clamp, [(t, watts) for t in range(start, end + 1, 30)])


async def flat(
    feed: Feed, medium: str, price: float, standing: float = 0.0, since: str = ""
) -> None:
    await feed.db.execute(
        "SELECT cluster.set_tariff($1, $2, $3, ARRAY['00:00'::time], ARRAY[$4::float8],"
        " NULL, 1, $5)",
        feed.id,
        medium,
        datetime.fromisoformat(since) if since else None,
        price,
        standing,
    )


async def bill(api: httpx.AsyncClient, feed: Feed, start: str, end: str) -> dict[str, Any]:
    answer = await api.get(
        f"/feeds/{feed.id}/bill",
        params={"from": start, "to": end},
        headers={"Authorization": f"Bearer {feed.owner_token}"},
    )
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def line(answer: dict[str, Any], medium: str) -> dict[str, Any]:
    (found,) = [x for x in answer["lines"] if x["medium"] == medium]
    return found


async def day_sum(api: httpx.AsyncClient, feed: Feed, title: str, start: int, end: int) -> float:
    """The sum of a stream's `resolution=day` buckets starting in [start, end]."""
    days = await api_buckets(
        api, feed, await feed.stream_id(title), "day", time_from=start, time_to=end
    )
    return sum(value for _, value in days)


async def test_a_months_bill_is_its_cost_days_plus_its_daily_charges(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("Europe/Prague")
    await flat(feed, "power", 0.30, standing=0.45)
    await power(feed, 1, 1000.0, JAN_1 + 5 * HOUR, JAN_1 + 3 * DAY)
    await process(feed.db)

    answer = await bill(api, feed, "2026-01-01", "2026-01-31")

    cost = await day_sum(api, feed, "Electricity cost, channel 1", JAN_1, JAN_1 + 30 * DAY)
    used = await day_sum(api, feed, "Electricity, channel 1", JAN_1, JAN_1 + 30 * DAY)
    assert cost == pytest.approx(0.30 * used / 1000)
    assert used == pytest.approx(1000.0 * (3 * 24 - 5))  # Wh: 1 kW for 67 hours
    assert answer == {
        "feed": str(feed.id),
        "from": "2026-01-01",
        "to": "2026-01-31",
        "timezone": "Europe/Prague",
        "currency": "EUR",
        "complete": True,
        "total": pytest.approx(cost + 31 * 0.45),
        "projected_total": None,
        "lines": [
            {
                "medium": "power",
                "quantity": pytest.approx(used / 1000),
                "unit": "kWh",
                "energy": pytest.approx(cost),
                "standing": pytest.approx(31 * 0.45),
                "total": pytest.approx(cost + 31 * 0.45),
                "vat": 0.0,
            }
        ],
        "submeters": [],
        "vat": 0.0,
        "warnings": [],
    }
    # A day's bill is that day's bucket.
    second = await bill(api, feed, "2026-01-02", "2026-01-02")
    assert line(second, "power")["quantity"] == pytest.approx(24.0)
    assert line(second, "power")["energy"] == pytest.approx(24 * 0.30)


async def test_standing_charges_count_each_local_day_once_across_a_dst_change(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("Europe/Prague")
    await flat(feed, "gas", 1.5, standing=1.0)
    # From local midnight of the 15th; a change at noon counts from the next day on.
    await flat(feed, "gas", 1.5, standing=2.0, since="2026-03-15T00:00:00+01:00")
    await flat(feed, "gas", 1.5, standing=3.0, since="2026-03-29T12:00:00+02:00")

    answer = await bill(api, feed, "2026-03-01", "2026-03-31")

    # 29 March has 23 hours and counts once: 14 x 1 + 15 x 2 + 2 x 3.
    assert answer["complete"] is True
    assert answer["lines"] == [
        {
            "medium": "gas",
            "quantity": 0.0,
            "unit": "m³",
            "energy": 0.0,
            "standing": pytest.approx(50.0),
            "total": pytest.approx(50.0),
            "vat": 0.0,
        }
    ]
    assert answer["total"] == pytest.approx(50.0)
    # October's 25-hour day too: 31 days at 3.
    assert (await bill(api, feed, "2026-10-01", "2026-10-31"))["total"] == pytest.approx(93.0)


async def test_export_credit_is_billed_apart_from_the_import(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("Europe/Prague")
    taken = await feed.raw_stream(channel=1, medium=12, device=7)
    fed_in = await feed.raw_stream(channel=1, medium=13, device=7)
    times = range(JAN_1 + DAY, JAN_1 + DAY + 6 * HOUR + 1, 30)
    await feed.ingest(taken, [(t, 1000.0) for t in times])  # 6 kWh
    await feed.ingest(fed_in, [(t, 2000.0) for t in times])  # 12 kWh
    await flat(feed, "power", 0.30, standing=0.50)
    await flat(feed, "export", 0.08)
    await process(feed.db)

    answer = await bill(api, feed, "2026-01-02", "2026-01-02")

    assert line(answer, "power") == {
        "medium": "power",
        "quantity": pytest.approx(6.0),
        "unit": "kWh",
        "energy": pytest.approx(1.8),
        "standing": pytest.approx(0.5),
        "total": pytest.approx(2.3),
        "vat": 0.0,
    }
    assert line(answer, "export") == {
        "medium": "export",
        "quantity": pytest.approx(12.0),
        "unit": "kWh",
        "credit": pytest.approx(0.96),
        "standing": 0.0,
        "total": pytest.approx(-0.96),
        "vat": 0.0,
    }
    assert [x["medium"] for x in answer["lines"]] == ["power", "export"]
    assert answer["total"] == pytest.approx(2.3 - 0.96)


async def test_sub_meters_are_listed_but_not_added_to_the_total(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("Europe/Prague")
    await flat(feed, "power", 0.25)
    start = JAN_1 + DAY
    await power(feed, 1, 2000.0, start, start + 2 * HOUR)  # the main meter: 4 kWh
    await power(feed, 2, 500.0, start, start + 2 * HOUR)  # the heat pump behind it: 1 kWh
    await process(feed.db)
    heat_pump = await feed.stream_id("Electricity, channel 2")
    await feed.db.execute(
        "SELECT cluster.set_stream_config($1, '-infinity', 'Heat pump', 'power', 'Wh', true)",
        heat_pump,
    )
    await process(feed.db)

    answer = await bill(api, feed, "2026-01-02", "2026-01-02")

    assert answer["lines"] == [
        {
            "medium": "power",
            "quantity": pytest.approx(4.0),
            "unit": "kWh",
            "energy": pytest.approx(1.0),
            "standing": 0.0,
            "total": pytest.approx(1.0),
            "vat": 0.0,
        }
    ]
    assert answer["submeters"] == [
        {
            "stream": str(heat_pump),
            "title": "Heat pump",
            "medium": "power",
            "quantity": pytest.approx(1.0),
            "unit": "kWh",
            "energy": pytest.approx(0.25),
        }
    ]
    assert answer["total"] == pytest.approx(1.0)
    assert answer["warnings"] == []


async def test_a_meter_marked_a_sub_meter_during_a_day_counts_in_its_hours_as_in_its_bill(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("Europe/Prague")
    await flat(feed, "power", 0.25)
    start = JAN_1 + DAY
    await power(feed, 1, 2000.0, start, start + 2 * HOUR)  # 4 kWh
    await power(feed, 2, 500.0, start, start + 4 * HOUR)  # 2 kWh, from 00:00 to 04:00
    await process(feed.db)
    clamp = await feed.stream_id("Electricity, channel 2")
    # Marked a sub-meter from 02:00 on: the bill judges a day by its configuration at its
    # start, so 2 January still adds the clamp's whole day.
    await feed.db.execute(
        "SELECT cluster.set_stream_config($1, $2, 'Heat pump', 'power', 'Wh', true)",
        clamp,
        at(start + 2 * HOUR),
    )
    await process(feed.db)

    billed = await bill(api, feed, "2026-01-02", "2026-01-02")
    overview = await api.get(
        f"/feeds/{feed.id}/overview",
        params={"period": "day", "date": "2026-01-02", "compare": "none"},
        headers={"Authorization": f"Bearer {feed.owner_token}"},
    )

    assert line(billed, "power")["quantity"] == pytest.approx(6.0)
    assert overview.status_code == 200, overview.text
    hours = overview.json()["buckets"]
    # The day's hours add up to its bill: the clamp's hours after 02:00 count as its day does.
    assert sum(b["consumption"]["power"] for b in hours) == pytest.approx(6.0)
    assert sum(b["money"] for b in hours) == pytest.approx(billed["total"])
    assert overview.json()["so_far"]["total"] == pytest.approx(billed["total"])
    # The meters listed are as configured now: the clamp is the heat pump, a sub-meter.
    (listed,) = [m for m in overview.json()["meters"] if m["stream"] == str(clamp)]
    assert (listed["title"], listed["submeter"]) == ("Heat pump", True)


async def test_a_supply_metered_twice_is_warned_of_until_its_main_meter_is_marked(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings
) -> None:
    feed = await new_feed("Europe/Prague")
    await flat(feed, "power", 0.25)
    start = JAN_1 + DAY
    # The simulator's house: a P1 reader on the utility's meter (channel 5, import power) and
    # a clamp on the same supply (channel 1), each measuring 1 kW for an hour: 1 kWh.
    reader = await feed.raw_stream(channel=5, medium=12, device=3)
    await feed.ingest(reader, [(t, 1000.0) for t in range(start, start + HOUR + 1, 30)])
    await power(feed, 1, 1000.0, start, start + HOUR)
    await process(feed.db)
    meter = await feed.stream_id("Electricity, channel 5")
    clamp = await feed.stream_id("Electricity, channel 1")

    before = await bill(api, feed, "2026-01-02", "2026-01-02")

    # Both totals are added, as before: 2 kWh for the 1 used, and the bill says why.
    assert line(before, "power")["quantity"] == pytest.approx(2.0)
    assert before["submeters"] == []
    assert before["warnings"] == [
        f"Electricity: the consumption of channels 1 and 5 (streams {clamp} and {meter}) is"
        " added up, as none of them is marked as the main meter; if they meter the same"
        " supply, it is counted twice. Mark the utility's meter with `energy-platform admin"
        " streams configure STREAM --from 2026-01-02T00:00:00+01:00 --main` (STREAM:"
        f" {clamp} or {meter}), or a meter behind it with `--submeter`."
    ]

    marked = await run_admin(
        settings, "streams", "configure", str(meter), "--from", "2026-01-01T00:00:00Z", "--main"
    )
    after = await bill(api, feed, "2026-01-02", "2026-01-02")

    assert [(c["main"], c["submeter"], c["valid_from"]) for c in marked["configs"]] == [
        (False, False, None),
        (True, False, "2026-01-01T00:00:00+00:00"),
    ]
    assert after["lines"] == [
        {
            "medium": "power",
            "quantity": pytest.approx(1.0),
            "unit": "kWh",
            "energy": pytest.approx(0.25),
            "standing": 0.0,
            "total": pytest.approx(0.25),
            "vat": 0.0,
        }
    ]
    assert after["submeters"] == [
        {
            "stream": str(clamp),
            "title": "Electricity, channel 1",
            "medium": "power",
            "quantity": pytest.approx(1.0),
            "unit": "kWh",
            "energy": pytest.approx(0.25),
        }
    ]
    assert after["warnings"] == []
    # The overview's hours count what the bill counts: the main meter alone.
    overview = await api.get(
        f"/feeds/{feed.id}/overview",
        params={"period": "day", "date": "2026-01-02", "compare": "none"},
        headers={"Authorization": f"Bearer {feed.owner_token}"},
    )
    assert overview.status_code == 200, overview.text
    hours = [b for b in overview.json()["buckets"] if b]
    assert sum(b["consumption"].get("power", 0.0) for b in hours) == pytest.approx(1.0)
    assert overview.json()["baseload_w"] == pytest.approx(1000.0)  # one meter's night hour
    # A day the main meter sent nothing: the clamp stays a sub-meter, never billed in its place.
    await power(feed, 1, 1000.0, start + DAY, start + DAY + HOUR)
    await process(feed.db)
    silent = await bill(api, feed, "2026-01-03", "2026-01-03")
    assert line(silent, "power")["quantity"] == 0.0
    assert [(m["stream"], m["quantity"]) for m in silent["submeters"]] == [
        (str(clamp), pytest.approx(1.0))
    ]
    assert silent["warnings"] == []
    # The API's stream configs show it.
    streams = await api.get(
        f"/feeds/{feed.id}/streams", headers={"Authorization": f"Bearer {feed.owner_token}"}
    )
    (shown,) = [s for s in streams.json() if s["id"] == str(meter)]
    assert [c["main"] for c in shown["configs"]] == [False, True]
    # A main meter is a consumption total, never also a sub-meter.
    both = await admin_refusal(
        settings, "streams", "configure", str(clamp), "--from", "now", "--main", "--submeter"
    )
    assert "--main and --submeter" in both


async def test_the_overviews_power_now_counts_what_the_bill_counts(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings
) -> None:
    """The P1 reader and a clamp on the same supply, both sending now: both are added until
    the reader is marked as the main meter, then the reader alone (the main-meter rule)."""
    feed = await new_feed("UTC")
    now = int(time.time())
    reader = await feed.raw_stream(channel=5, medium=12, device=3)
    await feed.ingest(reader, [(t, 1000.0) for t in range(now - 600, now + 1, 30)])
    await power(feed, 1, 600.0, now - 600, now)
    await process(feed.db)
    meter = await feed.stream_id("Electricity, channel 5")
    clamp = await feed.stream_id("Electricity, channel 1")
    newest = {
        stream: await feed.db.fetchval(
            "SELECT value * 40 FROM cluster.processed_points WHERE stream_id = $1"
            " ORDER BY ts DESC LIMIT 1",
            stream,
        )
        for stream in (meter, clamp)
    }

    async def power_now() -> float:
        answer = await api.get(
            f"/feeds/{feed.id}/overview",
            headers={"Authorization": f"Bearer {feed.owner_token}"},
        )
        assert answer.status_code == 200, answer.text
        watts: float = answer.json()["now"]["power_w"]
        return watts

    both = await power_now()
    await run_admin(settings, "streams", "configure", str(meter), "--from", "now", "--main")
    main_alone = await power_now()

    assert newest[meter] > 0
    assert newest[clamp] > 0
    assert both == pytest.approx(newest[meter] + newest[clamp])
    assert main_alone == pytest.approx(newest[meter])


async def test_a_running_month_is_incomplete_and_projected_from_its_days_over(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("UTC")
    today: date = await feed.db.fetchval("SELECT (now() AT TIME ZONE 'UTC')::date")
    midnight = int(datetime(today.year, today.month, today.day, tzinfo=UTC).timestamp())
    await flat(feed, "power", 0.5, standing=1.0)
    await power(feed, 1, 1000.0, midnight - 2 * DAY, midnight - DAY)  # 24 kWh on the first day
    await process(feed.db)
    first, last = today - timedelta(days=2), today + timedelta(days=2)

    answer = await bill(api, feed, first.isoformat(), last.isoformat())

    # Three days have begun (their charges are in); two are over: 12 + 2 x 1 over two days,
    # scaled to five.
    assert answer["complete"] is False
    assert line(answer, "power")["energy"] == pytest.approx(12.0)
    assert answer["total"] == pytest.approx(12.0 + 3 * 1.0)
    assert answer["projected_total"] == pytest.approx((12.0 + 2.0) / 2 * 5)


async def test_a_day_with_a_missing_market_price_keeps_the_bill_incomplete(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed, area = await new_feed("Europe/Prague"), f"B-{secrets.token_hex(4)}"
    start = JAN_1 + DAY
    slots = [(start + 900 * q, start + 900 * (q + 1)) for q in range(96)]
    ranges = [asyncpg.Range(at(a), at(b)) for a, b in slots]
    await feed.db.execute(
        "SELECT cluster.set_prices($1, $2::tstzrange[], $3::float8[])",
        area,
        ranges[:4],
        [0.1] * 4,
    )
    await feed.db.execute(
        "SELECT cluster.set_tariff($1, 'power', '-infinity', ARRAY['00:00'::time], ARRAY[0.0],"
        " $2, 1.0)",
        feed.id,
        area,
    )
    await power(feed, 1, 1000.0, start, start + 2 * HOUR)
    await process(feed.db)

    before = await bill(api, feed, "2026-01-02", "2026-01-02")
    assert before["complete"] is False
    assert line(before, "power")["energy"] == pytest.approx(0.1)  # the first hour's kWh

    await feed.db.execute(
        "SELECT cluster.set_prices($1, $2::tstzrange[], $3::float8[])",
        area,
        ranges[4:],
        [0.2] * 92,
    )
    await process(feed.db)

    after = await bill(api, feed, "2026-01-02", "2026-01-02")
    assert after["complete"] is True
    assert line(after, "power")["energy"] == pytest.approx(0.1 + 0.2)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"from": "2026-01-01"}, "to"),
        ({"from": "2026-01-01", "to": "2026-13-01"}, "to"),
        ({"from": "2026-02-30", "to": "2026-03-01"}, "from"),
        ({"from": "20260101", "to": "2026-01-02"}, "from"),
        ({"from": "2026-01-05", "to": "2026-01-04"}, "from"),
        ({"from": "2025-01-01", "to": "2026-01-02"}, "to"),
    ],
)
async def test_each_bad_parameter_is_a_400_problem(
    new_feed: NewFeed, api: httpx.AsyncClient, params: dict[str, str], field: str
) -> None:
    feed = await new_feed("Europe/Prague")
    for path in ("bill", "prices"):
        answer = await api.get(
            f"/feeds/{feed.id}/{path}",
            params=params,
            headers={"Authorization": f"Bearer {feed.owner_token}"},
        )
        assert answer.status_code == 400, answer.text
        assert answer.headers["content-type"].startswith("application/problem+json")
        assert field in answer.text


async def test_the_price_curve_takes_a_month_at_most_and_a_tariffs_medium(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("Europe/Prague")
    auth = {"Authorization": f"Bearer {feed.owner_token}"}
    month = {"from": "2026-01-01", "to": "2026-01-31"}
    assert (await api.get(f"/feeds/{feed.id}/prices", params=month, headers=auth)).json()[
        "prices"
    ] == []
    longer = await api.get(
        f"/feeds/{feed.id}/prices", params={**month, "to": "2026-02-01"}, headers=auth
    )
    assert longer.status_code == 400, longer.text
    assert "at most 31 days" in longer.text
    temperature = await api.get(
        f"/feeds/{feed.id}/prices", params={**month, "medium": "temperature"}, headers=auth
    )
    assert temperature.status_code == 400, temperature.text


async def test_another_users_feed_is_a_404_and_a_year_is_allowed(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    mine, theirs = await new_feed("Europe/Prague"), await new_feed("Europe/Prague")
    await flat(theirs, "power", 0.3, standing=1.0)
    for feed_id in (str(theirs.id), "999999999999", "x"):
        answer = await api.get(
            f"/feeds/{feed_id}/bill",
            params={"from": "2026-01-01", "to": "2026-01-31"},
            headers={"Authorization": f"Bearer {mine.owner_token}"},
        )
        assert answer.status_code == 404, answer.text
    unknown = await api.get(
        f"/feeds/{mine.id}/bill",
        params={"from": "2026-01-01", "to": "2026-01-31"},
        headers={"Authorization": "Bearer nobody"},
    )
    assert unknown.status_code == 401
    # 366 days: the longest range (a leap year).
    year = await bill(api, mine, "2026-01-01", "2027-01-01")
    assert year["lines"] == []
    assert year["total"] == 0.0


async def prices(
    api: httpx.AsyncClient, feed: Feed, start: str, end: str, medium: str = "power"
) -> list[tuple[int, int, float]]:
    answer = await api.get(
        f"/feeds/{feed.id}/prices",
        params={"from": start, "to": end, "medium": medium},
        headers={"Authorization": f"Bearer {feed.owner_token}"},
    )
    assert answer.status_code == 200, answer.text
    return [(p["start"], p["end"], p["price"]) for p in answer.json()["prices"]]


async def test_a_time_of_use_tariff_answers_its_bands_as_local_stretches(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("Europe/Prague")
    await feed.db.execute(
        "SELECT cluster.set_tariff($1, 'power', '-infinity', ARRAY['06:00'::time, '22:00'],"
        " ARRAY[0.30, 0.10])",
        feed.id,
    )
    day = JAN_1 + DAY  # 2 January, local midnight

    assert await prices(api, feed, "2026-01-02", "2026-01-02") == [
        (day, day + 6 * HOUR, pytest.approx(0.10)),
        (day + 6 * HOUR, day + 22 * HOUR, pytest.approx(0.30)),
        (day + 22 * HOUR, day + DAY, pytest.approx(0.10)),
    ]
    assert await prices(api, feed, "2026-01-02", "2026-01-02", "gas") == []


async def test_a_dynamic_tariff_answers_each_quarter_hour_of_a_dst_day_and_gaps_where_unpriced(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed, area = await new_feed("Europe/Prague"), f"P-{secrets.token_hex(4)}"
    # 29 March 2026 in Prague lasts 23 hours: 92 quarter hours, priced 0.01 x their number.
    start = int(datetime.fromisoformat("2026-03-29T00:00:00+01:00").timestamp())
    quarters = [(start + 900 * q, start + 900 * (q + 1)) for q in range(92)]
    await feed.db.execute(
        "SELECT cluster.set_prices($1, $2::tstzrange[], $3::float8[])",
        area,
        [asyncpg.Range(at(a), at(b)) for a, b in quarters],
        [0.01 * q for q in range(92)],
    )
    await feed.db.execute(
        "SELECT cluster.set_tariff($1, 'power', '-infinity', ARRAY['00:00'::time], ARRAY[0.05],"
        " $2, 2.0)",
        feed.id,
        area,
    )

    curve = await prices(api, feed, "2026-03-29", "2026-03-30")

    # The 30th has no prices yet: a gap, not a price of 0.
    assert curve == [
        (a, b, pytest.approx(2 * 0.01 * q + 0.05)) for q, (a, b) in enumerate(quarters)
    ]
    assert quarters[-1][1] - quarters[0][0] == 23 * HOUR
