"""The kind of a day (weekday, or weekend: Saturday, Sunday, a public holiday of the tariff's)
is one rule that every price reads: the engine's cost points, the price curve and the bill
agree to the cent, with holidays and without, in any time zone; and a bill whose consumption
has a bucket without its money says it is not complete, naming that bucket."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from energy_platform.core.settings import Settings
from tests.integration.billing.test_bills import HOUR, bill, line, power, prices
from tests.integration.billing.test_tariff_formula import instant, tariff
from tests.support.engine import Feed, NewFeed, process

# The contract: normal 07:00 to 23:00 on weekdays, low at night and all weekend.
DAY_NIGHT = (
    "--band",
    "weekday/07:00=0.30",
    "--band",
    "weekday/23:00=0.20",
    "--band",
    "weekend/00:00=0.20",
)


async def money_points(feed: Feed) -> dict[int, float]:
    """The feed's cost points: {unix time of the bucket: money}."""
    rows = await feed.db.fetch(
        "SELECT extract(epoch FROM p.ts)::bigint AS t, p.value FROM cluster.processed_points p"
        " JOIN cluster.streams s ON s.id = p.stream_id"
        " WHERE s.feed_id = $1 AND s.quantity = 'cost' ORDER BY p.ts",
        feed.id,
    )
    return {r["t"]: r["value"] for r in rows}


async def overview_day(api: httpx.AsyncClient, feed: Feed, day: str) -> dict[str, Any]:
    """The overview's figures of one local day so far."""
    answer = await api.get(
        f"/feeds/{feed.id}/overview",
        params={"period": "day", "date": day, "compare": "none"},
        headers={"Authorization": f"Bearer {feed.owner_token}"},
    )
    assert answer.status_code == 200, answer.text
    so_far: dict[str, Any] = answer.json()["so_far"]
    return so_far


def curve_price(curve: list[tuple[int, int, float]], t: int) -> float:
    (price,) = [p for start, end, p in curve if start <= t < end]
    return price


@pytest.mark.parametrize("holidays", [(), ("--holidays", "NL")], ids=["no-holidays", "NL"])
async def test_a_day_night_contract_prices_weekdays_and_weekends_alike_everywhere(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings, holidays: tuple[str, ...]
) -> None:
    feed = await new_feed("UTC")
    await tariff(settings, feed, "power", "2000-01-01T00:00:00Z", *DAY_NIGHT, *holidays)
    wednesday = instant("2026-11-18T12:00:00+00:00")
    saturday = instant("2026-11-21T12:00:00+00:00")
    christmas = instant("2025-12-25T12:00:00+00:00")  # a Thursday: a holiday in NL
    for start in (wednesday, wednesday + 11 * HOUR, saturday, christmas):
        await power(feed, 1, 1000.0, start, start + HOUR)
    await process(feed.db)

    # 1 kWh in each hour: Wednesday noon 0.30, Wednesday 23:00 0.20, Saturday noon 0.20, and
    # Christmas noon 0.20 where NL's holidays count, else 0.30 (a Thursday).
    christmas_price = 0.20 if holidays else 0.30
    expected = {
        wednesday: 0.30,
        wednesday + 11 * HOUR: 0.20,
        saturday: 0.20,
        christmas: christmas_price,
    }
    money = await money_points(feed)
    for start, price in expected.items():
        # 40 buckets of 25 Wh (1000 W x 90 s), each 0.025 kWh x price.
        hour = [money.get(k) for k in range(start, start + HOUR, 90)]
        assert hour == [pytest.approx(0.025 * price)] * 40, start
        day = datetime.fromtimestamp(start, UTC).date().isoformat()
        assert curve_price(await prices(api, feed, day, day), start) == pytest.approx(price)
    week = await bill(api, feed, "2026-11-18", "2026-11-21")
    assert week["complete"] is True
    assert line(week, "power")["quantity"] == pytest.approx(3.0)
    assert round(line(week, "power")["energy"], 2) == 0.70  # 0.30 + 0.20 + 0.20
    assert (
        round(line(await bill(api, feed, "2025-12-25", "2025-12-25"), "power")["energy"], 2)
        == christmas_price
    )
    # The overview's mean price, what a flat load pays, reads the same bands by the same rule:
    # Wednesday (7 h x 0.20 + 16 h x 0.30 + 1 h x 0.20) / 24 = 0.2667, Saturday 0.20, and
    # Christmas 0.20 or, as a Thursday, 0.2667.
    christmas_mean = 0.20 if holidays else 6.4 / 24
    for day, mean in (
        ("2026-11-18", 6.4 / 24),
        ("2026-11-21", 0.20),
        ("2025-12-25", christmas_mean),
    ):
        assert (await overview_day(api, feed, day))["market_average_price"] == pytest.approx(mean)


BANDS = st.lists(
    st.tuples(
        st.integers(0, 23), st.sampled_from([0, 15, 30, 45]), st.integers(-20, 60)
    ),  # local start hour, minute, price in cents
    min_size=1,
    max_size=3,
    unique_by=lambda band: (band[0], band[1]),
)
ZONES = st.sampled_from(
    ["UTC", "Europe/Amsterdam", "America/New_York", "Asia/Kolkata", "Pacific/Chatham"]
)


@hypothesis_settings(
    max_examples=5,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    deadline=None,
    # Each example is a feed through the engine: shrinking a failure could take minutes.
    phases=[Phase.explicit, Phase.generate],
)
@given(
    weekday=BANDS,
    weekend=BANDS,
    zone=ZONES,
    holidays=st.sampled_from([(), ("--holidays", "NL"), ("--holidays", "US")]),
    first=st.dates(date(2025, 3, 20), date(2026, 11, 20)),
    days=st.integers(1, 3),
)
async def test_every_bucket_costs_the_price_curves_price_times_its_energy(
    new_feed: NewFeed,
    api: httpx.AsyncClient,
    settings: Settings,
    weekday: list[tuple[int, int, int]],
    weekend: list[tuple[int, int, int]],
    zone: str,
    holidays: tuple[str, ...],
    first: date,
    days: int,
) -> None:
    feed = await new_feed(zone)
    bands = [
        f"{kind}/{h:02}:{m:02}={cents / 100}"
        for kind, kind_bands in (("weekday", weekday), ("weekend", weekend))
        for h, m, cents in kind_bands
    ]
    await tariff(
        settings,
        feed,
        "power",
        "2025-01-01T00:00:00Z",
        *[arg for band in bands for arg in ("--band", band)],
        *holidays,
    )
    # 1 kW from local noon of the first day to local noon `days` later: every band of every day
    # kind of those days, Christmas and the end of summer time among the dates drawn.
    start = int(datetime.combine(first, datetime.min.time(), ZoneInfo(zone)).timestamp())
    start += 12 * HOUR
    end = int((datetime.fromtimestamp(start, ZoneInfo(zone)) + timedelta(days=days)).timestamp())
    await power(feed, 1, 1000.0, start, end)
    await process(feed.db)

    money = await money_points(feed)
    curve = await prices(api, feed, first.isoformat(), (first + timedelta(days=days)).isoformat())
    buckets = range(start - start % 90 + 90, end - end % 90, 90)  # whole buckets of 25 Wh
    assert {k: money.get(k) for k in buckets} == {
        k: pytest.approx(0.025 * curve_price(curve, k)) for k in buckets
    }


async def test_a_bucket_of_consumption_without_its_cost_leaves_the_bill_incomplete(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings
) -> None:
    feed = await new_feed("Europe/Amsterdam")
    await tariff(settings, feed, "power", "2026-01-01T00:00:00Z", "--price", "0.25")
    wednesday = instant("2026-11-18T12:00:00+01:00")
    await power(feed, 1, 1000.0, wednesday, wednesday + HOUR)
    await process(feed.db)
    assert (await bill(api, feed, "2026-11-18", "2026-11-18"))["complete"] is True

    # Forced: the cost of the bucket at 12:30 is lost (as a missing price would leave it), and
    # the rollups of its hour are queued again, as any change of points queues them.
    lost = wednesday + 30 * 60
    cost_stream = await feed.db.fetchval(
        "DELETE FROM cluster.processed_points p USING cluster.streams s"
        " WHERE s.id = p.stream_id AND s.feed_id = $1 AND s.quantity = 'cost'"
        " AND p.ts = to_timestamp($2) RETURNING s.id",
        feed.id,
        lost,
    )
    await feed.db.execute(
        "INSERT INTO cluster.rollup_work (stream_id, span) VALUES ($1, tstzrange(to_timestamp($2),"
        " to_timestamp($2 + 90), '[)'))",
        cost_stream,
        lost,
    )

    answer: dict[str, Any] = await bill(api, feed, "2026-11-18", "2026-11-18")
    assert answer["complete"] is False
    # 39 of the 40 buckets priced: 39 x 0.025 kWh x 0.25.
    assert line(answer, "power")["energy"] == pytest.approx(39 * 0.025 * 0.25)
    (warning,) = answer["warnings"]
    assert "Electricity" in warning
    assert "2026-11-18T12:30:00+01:00" in warning
    await process(feed.db)  # the rollups taken again: still the bucket without its cost
    assert (await bill(api, feed, "2026-11-18", "2026-11-18"))["complete"] is False
