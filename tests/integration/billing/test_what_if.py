"""What-if: the household's own buckets replayed through contracts month by month, the current
contract equal to the bill to the cent, other contracts against hand-computed figures (flat,
dynamic by quarter hours and hours, weekend and holiday bands, export with a floor), gaps shown
and never scaled, the ask checked, and the SQL function over several feeds in one statement."""

from __future__ import annotations

import json
import secrets
from datetime import UTC, datetime
from typing import Any

import asyncpg
import httpx
import pytest

from energy_platform.engine.service import drain
from tests.support.contracts import DAY_NIGHT
from tests.support.data import T0
from tests.support.engine import CURRENCY, ENGINE, Feed, NewFeed, process

DAY = 86_400
HOUR = 3600
MON = T0 + 4 * DAY  # 2026-01-05T00:00Z, a Monday
PRAGUE_MARCH_28 = 1_774_652_400  # 2026-03-28T00:00+01:00; clocks go forward on the 29th
PRAGUE_APRIL_1 = 1_774_994_400  # 2026-04-01T00:00+02:00
PRAGUE_APRIL_3 = PRAGUE_APRIL_1 + 2 * DAY
PRAGUE_OCTOBER_25 = 1_792_879_200  # 2026-10-25T00:00+02:00; clocks go back at 03:00
PRAGUE_OCTOBER_26 = PRAGUE_OCTOBER_25 + 25 * HOUR


def at(t: int) -> datetime:
    return datetime.fromtimestamp(t, UTC)


async def power(feed: Feed, watts: Any, start: int, end: int, medium: int = 12) -> None:
    """``watts(t)`` (or a constant) sampled every 30 s from ``start`` to ``end`` on channel 1."""
    stream = await feed.raw_stream(channel=1, medium=medium, device=7)
    shape = watts if callable(watts) else (lambda _t: watts)
    await feed.ingest(stream, [(t, float(shape(t))) for t in range(start, end + 1, 30)])


async def what_if(
    api: httpx.AsyncClient, feed: Feed, body: dict[str, Any], token: str | None = None
) -> httpx.Response:
    return await api.post(
        f"/feeds/{feed.id}/what-if",
        json=body,
        headers={"Authorization": f"Bearer {token or feed.owner_token}"},
    )


async def replayed(api: httpx.AsyncClient, feed: Feed, body: dict[str, Any]) -> dict[str, Any]:
    answer = await what_if(api, feed, body)
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


async def bill_total(api: httpx.AsyncClient, feed: Feed, start: str, end: str) -> float:
    answer = await api.get(
        f"/feeds/{feed.id}/bill",
        params={"from": start, "to": end},
        headers={"Authorization": f"Bearer {feed.owner_token}"},
    )
    assert answer.status_code == 200, answer.text
    total: float = answer.json()["total"]
    return total


async def set_prices(
    db: asyncpg.Connection, area: str, slots: list[tuple[int, int, float]]
) -> None:
    await db.execute(
        "SELECT cluster.set_prices($1, $2::tstzrange[], $3::float8[])",
        area,
        [asyncpg.Range(at(a), at(b)) for a, b, _ in slots],
        [p for _, _, p in slots],
    )


async def test_the_current_contract_equals_the_bill_to_the_cent_across_dst_and_a_vat_change(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("Europe/Prague")
    # Bands by time of day, a monthly charge, and 10 % VAT until April, 21 % from then on.
    for since, vat in ((None, 10.0), (at(PRAGUE_APRIL_1), 21.0)):
        await feed.db.execute(
            "SELECT cluster.set_tariff($1, 'power', $2, ARRAY['00:00'::time,"
            " '07:00'], ARRAY[0.17, 0.31], NULL, 1, 9.0, NULL, $3, NULL, NULL, 'month')",
            feed.id,
            since,
            vat,
        )
    # 300 W plus 100 W per hour of the day: the bands weigh differently every hour.
    await power(feed, lambda t: 300 + 100 * (t // HOUR % 24), PRAGUE_MARCH_28, PRAGUE_APRIL_3)
    await process(feed.db)

    answer = await replayed(api, feed, {"from": "2026-03-28", "to": "2026-04-02"})

    (current,) = answer["contracts"]
    assert current["name"] == "current"
    march, april = current["months"]
    assert [march["month"], april["month"]] == ["2026-03", "2026-04"]
    # Each month equals the bill of its days, and the whole the bill of the range, to the cent.
    assert round(march["total"], 2) == round(
        await bill_total(api, feed, "2026-03-28", "2026-03-31"), 2
    )
    assert round(april["total"], 2) == round(
        await bill_total(api, feed, "2026-04-01", "2026-04-02"), 2
    )
    assert round(current["total"], 2) == round(
        await bill_total(api, feed, "2026-03-28", "2026-04-02"), 2
    )
    # March 28 to 31 is 95 hours (the 29th lasts 23): its coverage is whole all the same.
    assert march["coverage"] == pytest.approx(1.0)
    assert march["standing"] == pytest.approx(4 / 31 * 9.0 * 1.10)
    assert april["standing"] == pytest.approx(2 / 30 * 9.0 * 1.21)
    assert current["difference"] == 0.0
    assert current["rank"] == 1
    assert "no shifting" in answer["note"]


async def test_a_flat_contract_is_kwh_times_price_plus_days_of_standing_with_vat(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("UTC")
    await power(feed, 1000.0, MON, MON + 2 * DAY)  # 48 kWh
    await process(feed.db)
    flat = {"price": 0.25, "standing": 0.5, "vat": 20}

    answer = await replayed(
        api, feed, {"from": "2026-01-05", "to": "2026-01-06", "contracts": [{"contract": flat}]}
    )

    current, contract = answer["contracts"]
    (month,) = contract["months"]
    # 48 kWh x 0.25 x 1.2 = 14.4; 2 days x 0.5 x 1.2 = 1.2; VAT 20/120 of both = 2.6.
    assert month["quantity"] == pytest.approx(48.0)
    assert month["energy"] == pytest.approx(14.4)
    assert month["standing"] == pytest.approx(1.2)
    assert month["vat"] == pytest.approx(2.6)
    assert month["total"] == pytest.approx(15.6)
    assert month["average_price"] == pytest.approx(0.30)
    assert month["complete"] is True
    # No tariff of its own: the current contract costs nothing, and is the cheapest.
    assert current["total"] == 0.0
    assert (current["rank"], contract["rank"]) == (1, 2)
    assert contract["difference"] == pytest.approx(15.6)
    assert "market_average_price" not in contract


async def test_a_dynamic_contract_prices_each_quarter_after_the_switch_and_each_hour_before(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed, area = await new_feed("UTC"), f"W-{secrets.token_hex(4)}"
    tue = MON + DAY
    # Monday's market in hours, Tuesday's in quarter hours but its last quarter not published.
    hours = [(MON + HOUR * h, MON + HOUR * (h + 1), 0.10 + 0.01 * h) for h in range(24)]
    quarters = [(tue + 900 * q, tue + 900 * (q + 1), 0.05 + 0.002 * q) for q in range(95)]
    await set_prices(feed.db, area, hours + quarters)
    # A load that changes every quarter hour, so that an hour's quarters weigh differently.
    await power(feed, lambda t: 200 + 300 * (t // 900 % 4), MON, tue + DAY)
    await process(feed.db)
    points = await feed.points("Electricity, channel 1")
    price = {a: p for a, b, p in hours + quarters for a in range(a, b, 900)}
    priced = [(t, wh) for t, wh in points.items() if MON <= t < tue + DAY]

    answer = await replayed(
        api,
        feed,
        {
            "from": "2026-01-05",
            "to": "2026-01-06",
            "contracts": [{"contract": {"area": area}}],
        },
    )

    (month,) = answer["contracts"][1]["months"]
    # Σ over each slot of its kWh x its price: 15-minute slots on Tuesday, hours on Monday; the
    # unpublished quarter's kWh counts in the quantity, not in the money.
    expected = sum(wh / 1000 * price[t // 900 * 900] for t, wh in priced if t // 900 * 900 in price)
    assert month["energy"] == pytest.approx(expected, rel=1e-9)
    assert month["quantity"] == pytest.approx(sum(wh for _, wh in priced) / 1000)
    assert month["complete"] is False
    # The market's time-weighted mean over the two days (Tuesday's last quarter unpriced).
    market = (sum(p * 3600 for _, _, p in hours) + sum(p * 900 for _, _, p in quarters)) / (
        24 * 3600 + 95 * 900
    )
    assert month["market_average_price"] == pytest.approx(market)
    achieved = expected / sum(wh / 1000 for t, wh in priced if t // 900 * 900 in price)
    assert month["load_shape_factor"] == pytest.approx(achieved / market)
    assert answer["contracts"][1]["market_average_price"] == pytest.approx(market)


@pytest.mark.parametrize(
    ("holidays", "expected"),
    # New Year's Day 2026 is a Thursday: a holiday in NL. A weekday is 16 h x 0.30 + 8 h x 0.20
    # = 6.4; a weekend day (or a holiday) 24 h x 0.10 = 2.4. Thu, Fri, Sat.
    [(None, 6.4 + 6.4 + 2.4), ("NL", 2.4 + 6.4 + 2.4)],
    ids=["no-holidays", "NL"],
)
async def test_weekend_and_holiday_bands_against_hand_computed_figures(
    new_feed: NewFeed, api: httpx.AsyncClient, holidays: str | None, expected: float
) -> None:
    feed = await new_feed("UTC")
    await power(feed, 1000.0, T0, T0 + 3 * DAY)
    await process(feed.db)
    contract: dict[str, Any] = {
        "bands": ["weekday/07:00=0.30", "weekday/23:00=0.20", "weekend/00:00=0.10"]
    }
    if holidays:
        contract["holidays"] = holidays

    answer = await replayed(
        api, feed, {"from": "2026-01-01", "to": "2026-01-03", "contracts": [{"contract": contract}]}
    )

    (month,) = answer["contracts"][1]["months"]
    assert month["quantity"] == pytest.approx(72.0)
    assert month["energy"] == pytest.approx(expected)


async def test_bands_on_the_day_clocks_go_back_price_each_quarter_by_its_local_start(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    # 2026-10-25 in Prague lasts 25 hours: 02:00 to 03:00 comes twice. A band starting at
    # 02:30 holds the second half of both of those hours, not everything after its first
    # 02:30: quarters starting before 02:30 are 00:00 to 02:15 (10) and the repeated 02:00 and
    # 02:15 (2); the other 88 are in the second band.
    feed = await new_feed("Europe/Prague")
    await power(feed, 1000.0, PRAGUE_OCTOBER_25, PRAGUE_OCTOBER_26)
    await process(feed.db)
    contract = {"bands": ["00:00=0.30", "02:30=0.10"]}

    answer = await replayed(
        api, feed, {"from": "2026-10-25", "to": "2026-10-25", "contracts": [{"contract": contract}]}
    )

    (month,) = answer["contracts"][1]["months"]
    assert month["quantity"] == pytest.approx(25.0)
    assert month["energy"] == pytest.approx(0.25 * (12 * 0.30 + 88 * 0.10))


async def test_quarters_the_engine_has_not_rolled_up_yet_are_read_from_the_points(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed, area = await new_feed("UTC"), f"P-{secrets.token_hex(4)}"
    await set_prices(
        feed.db, area, [(MON + 900 * q, MON + 900 * (q + 1), 0.01 * (q % 7)) for q in range(192)]
    )
    await power(feed, 1000.0, MON, MON + DAY)
    await process(feed.db)
    # Tuesday's points are made, but no rollup work is taken: its quarters are pending.
    await power(feed, lambda t: 500 + 500 * (t // 900 % 3), MON + DAY, MON + 2 * DAY)
    await drain(feed.db, ENGINE, currency=CURRENCY, rollup_batches=0)
    stream = await feed.stream_id("Electricity, channel 1")
    tuesday = at(MON + DAY).date()
    assert (
        await feed.db.fetchval(
            "SELECT count(*) FROM cluster.quarter_days WHERE stream_id = $1 AND day = $2",
            stream,
            tuesday,
        )
        == 0
    )
    body = {
        "from": "2026-01-05",
        "to": "2026-01-06",
        "contracts": [{"contract": {"area": area, "bands": ["00:00=0.02", "12:00=0.05"]}}],
    }

    pending = (await replayed(api, feed, body))["contracts"][1]
    await process(feed.db)
    rolled = (await replayed(api, feed, body))["contracts"][1]

    # Once the engine caught up, Tuesday has its row, and the answer did not move.
    assert (
        await feed.db.fetchval(
            "SELECT cardinality(array_remove(totals, NULL)) FROM cluster.quarter_days"
            " WHERE stream_id = $1 AND day = $2",
            stream,
            tuesday,
        )
        == 96
    )
    points = await feed.points("Electricity, channel 1")
    price = {MON + 900 * q: 0.01 * (q % 7) for q in range(192)}
    expected = sum(
        wh / 1000 * (price[t // 900 * 900] + (0.02 if t % DAY < 12 * HOUR else 0.05))
        for t, wh in points.items()
        if MON <= t < MON + 2 * DAY
    )
    assert pending["months"][0]["energy"] == pytest.approx(expected, rel=1e-9)
    assert rolled["months"][0]["energy"] == pytest.approx(expected, rel=1e-9)
    assert pending["months"][0]["quantity"] == rolled["months"][0]["quantity"]


async def test_export_credit_with_a_floor(new_feed: NewFeed, api: httpx.AsyncClient) -> None:
    """Monday's first hours are below the floor (each quarter priced, clamped); Tuesday's
    prices never are (priced by the day's sums, the clamp unable to hold)."""
    feed, area = await new_feed("UTC"), f"X-{secrets.token_hex(4)}"
    await set_prices(
        feed.db,
        area,
        [(MON + HOUR * h, MON + HOUR * (h + 1), -0.05 if h < 3 else 0.08) for h in range(48)],
    )
    for day in (MON, MON + DAY):
        await power(feed, 1000.0, day, day + 6 * HOUR)  # 6 kWh taken
        await power(feed, 2000.0, day, day + 6 * HOUR, medium=13)  # 12 kWh fed in
    await process(feed.db)
    contract = {"price": 0.30, "export": {"area": area, "floor": 0}}

    answer = await replayed(
        api, feed, {"from": "2026-01-05", "to": "2026-01-06", "contracts": [{"contract": contract}]}
    )

    (month,) = answer["contracts"][1]["months"]
    # 12 kWh x 0.30 = 3.6; fed in on Monday: 6 kWh in the negative hours at the floor (0),
    # 6 kWh x 0.08; on Tuesday 12 kWh x 0.08.
    assert month["export"] == pytest.approx(24.0)
    assert month["energy"] == pytest.approx(3.6)
    assert month["credit"] == pytest.approx(0.48 + 0.96)
    assert month["total"] == pytest.approx(3.6 - 0.48 - 0.96)


async def test_a_month_with_a_gap_shows_its_coverage_and_is_not_scaled(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("UTC")
    await power(feed, 1000.0, MON, MON + 2 * DAY)  # Monday and Tuesday; nothing after
    await process(feed.db)

    answer = await replayed(
        api,
        feed,
        {"from": "2026-01-05", "to": "2026-01-08", "contracts": [{"contract": {"price": 0.25}}]},
    )

    (month,) = answer["contracts"][1]["months"]
    assert month["coverage"] == pytest.approx(0.5)  # two days of four
    assert month["quantity"] == pytest.approx(48.0)
    assert month["energy"] == pytest.approx(48 * 0.25)  # as measured, not doubled


async def test_another_users_feed_is_a_404(new_feed: NewFeed, api: httpx.AsyncClient) -> None:
    mine, theirs = await new_feed("UTC"), await new_feed("UTC")
    for feed_id in (str(theirs.id), "999999999999"):
        answer = await api.post(
            f"/feeds/{feed_id}/what-if",
            json={},
            headers={"Authorization": f"Bearer {mine.owner_token}"},
        )
        assert answer.status_code == 404, answer.text


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"contracts": [{"contract": {"price": 0.3, "vat": -1}}]}, "$.contracts[0].contract.vat"),
        (
            {"contracts": [{"contract": {"price": 0.3, "colour": 1}}]},
            "$.contracts[0].contract.colour",
        ),
        (
            {"contracts": [{"name": "x"}, {"contract": {"export": {"price": "a"}}}]},
            "$.contracts[1].contract.export.price",
        ),
        (
            {"contracts": [{"contract": {"bands": ["weekday/07:00=0.3"]}}]},
            "$.contracts[0].contract.bands",
        ),
        ({"contracts": [{"contract": {"factor": 2}}]}, "$.contracts[0].contract.factor"),
        (
            {"contracts": [{"contract": {"price": 1, "holidays": "XX"}}]},
            "$.contracts[0].contract.holidays",
        ),
        ({"contracts": [{"name": "no such contract, surely"}]}, "$.contracts[0].name"),
        (
            {"contracts": [{"contract": {"price": 1, "export": {"area": "NO-SUCH-AREA"}}}]},
            "$.contracts[0].contract.export.area",
        ),
        ({"contracts": [{}]}, "$.contracts[0]"),
        ({"contracts": [{"contract": {"price": 0.3}}] * 11}, "$.contracts"),
        ({"from": "2026-01-01"}, "$.to"),
        ({"from": "2026-02-30", "to": "2026-03-01"}, "$.from"),
        ({"from": "2025-01-01", "to": "2026-01-02"}, "$.to"),
    ],
)
async def test_a_bad_ask_is_a_400_naming_its_field(
    new_feed: NewFeed, api: httpx.AsyncClient, body: dict[str, Any], field: str
) -> None:
    feed = await new_feed("UTC")

    answer = await what_if(api, feed, body)

    assert answer.status_code == 400, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert answer.json()["field"] == field


async def test_a_read_token_may_ask_and_a_catalogue_contract_is_asked_by_name(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed, name = await new_feed("UTC"), f"flat-{secrets.token_hex(3)}"
    await power(feed, 1000.0, MON, MON + DAY)
    await process(feed.db)
    await feed.db.execute(
        "INSERT INTO cluster.contracts (name, contract) VALUES ($1, $2::jsonb)",
        name,
        '{"price": 0.2}',
    )
    owner = await feed.db.fetchval("SELECT owner_id FROM cluster.feeds WHERE id = $1", feed.id)
    reader = secrets.token_urlsafe(16)
    await feed.db.execute(
        "INSERT INTO cluster.user_tokens (user_id, name, token_sha256, scope)"
        " VALUES ($1, 'reader', sha256($2::bytea), 'read')",
        owner,
        reader.encode(),
    )

    answer = await what_if(
        api, feed, {"from": "2026-01-05", "to": "2026-01-05", "contracts": [{"name": name}]}, reader
    )

    assert answer.status_code == 200, answer.text
    cheaper = answer.json()["contracts"][1]
    assert cheaper["name"] == name
    assert cheaper["total"] == pytest.approx(24 * 0.2)
    await feed.db.execute("DELETE FROM cluster.contracts WHERE name = $1", name)


async def test_the_sql_function_over_three_feeds_in_one_statement_equals_three_calls(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feeds = [await new_feed("Europe/Prague") for _ in range(3)]
    # Four days across the end of January: two months, each with a gap (40 days took 24 s).
    for n, feed in enumerate(feeds):
        await power(
            feed, lambda t, n=n: 400 + 200 * n + 100 * (t // HOUR % 3), T0 + 29 * DAY, T0 + 33 * DAY
        )
    await process(feeds[0].db)
    contract = {
        "bands": ["07:00=0.31", "22:00=0.18"],
        "standing": 6,
        "standing_per": "month",
        "vat": 21,
    }

    rows = await feeds[0].db.fetch(
        "SELECT f.id, w.* FROM cluster.feeds f,"
        " LATERAL cluster.what_if(f.id, $1::jsonb, '2026-01-01', '2026-02-28') w"
        " WHERE f.id = ANY ($2::bigint[]) ORDER BY f.id, w.month",
        json.dumps(contract),
        [f.id for f in feeds],
    )

    for feed in feeds:
        answer = await replayed(
            api,
            feed,
            {"from": "2026-01-01", "to": "2026-02-28", "contracts": [{"contract": contract}]},
        )
        months = answer["contracts"][1]["months"]
        mine = [r for r in rows if r["id"] == feed.id]
        assert [r["month"].strftime("%Y-%m") for r in mine] == [m["month"] for m in months]
        for row, month in zip(mine, months, strict=True):
            for key in ("quantity", "energy", "standing", "vat", "total", "coverage"):
                assert row[key] == pytest.approx(month[key], rel=1e-12), key


async def test_the_sql_function_over_dates_given_backwards_is_an_empty_set(
    new_feed: NewFeed,
) -> None:
    """The analysts' function takes any dates (HTTP bounds them to a year): `to` before
    `from` is no day, so no month, not an error and not a month of zeros."""
    feed = await new_feed("UTC")
    await power(feed, 1000.0, MON, MON + DAY)
    await process(feed.db)
    contract = json.dumps({"price": 0.25})

    backwards = await feed.db.fetch(
        "SELECT * FROM cluster.what_if($1, $2::jsonb, '2026-01-06', '2026-01-05')",
        feed.id,
        contract,
    )
    one_day = await feed.db.fetch(
        "SELECT * FROM cluster.what_if($1, $2::jsonb, '2026-01-05', '2026-01-05')",
        feed.id,
        contract,
    )

    assert backwards == []
    (month,) = one_day
    assert month["quantity"] == pytest.approx(24.0)
    assert month["energy"] == pytest.approx(24 * 0.25)


async def test_the_worked_example_of_billing_md(new_feed: NewFeed, api: httpx.AsyncClient) -> None:
    feed = await new_feed("UTC")
    await feed.db.execute(
        "SELECT cluster.set_tariff($1, 'power', NULL, ARRAY['00:00'::time], ARRAY[0.25], NULL, 1,"
        " 0.40, NULL, 21)",
        feed.id,
    )
    await power(feed, 1000.0, T0, T0 + 3 * DAY)  # 24 kWh a day, Thursday to Saturday
    await process(feed.db)

    answer = await replayed(
        api,
        feed,
        {"from": "2026-01-01", "to": "2026-01-03", "contracts": [{"contract": DAY_NIGHT}]},
    )

    current, contract = answer["contracts"]
    assert round(current["total"], 2) == 23.23  # 18.00 x 1.21 + 3 x 0.40 x 1.21
    assert round(current["total"], 2) == round(
        await bill_total(api, feed, "2026-01-01", "2026-01-03"), 2
    )
    assert round(current["months"][0]["vat"], 2) == 4.03
    assert round(contract["total"], 2) == 19.89  # 16.00 x 1.21 + 3/31 x 4.50 x 1.21
    assert round(contract["months"][0]["vat"], 2) == 3.45
    assert round(contract["difference"], 2) == -3.35
    assert (current["rank"], contract["rank"]) == (2, 1)
    assert round(contract["break_even"], 4) == 0.0384  # 3.3451 / (72 x 1.21)
    assert "break_even" not in current
