"""Dynamic tariffs: price = factor x the area's price of the bucket's slot + the band's price.
A new or corrected price reprices exactly the buckets it covers, for every feed on the area."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

import asyncpg
import httpx
import pytest

from tests.support.data import T0
from tests.support.engine import Feed, NewFeed, api_buckets, process

QUARTER = 900  # a 15-minute slot: ten buckets
WH_PER_BUCKET = 25.0  # 1000 W for 90 s
COST = "Electricity cost, channel 1"


def area() -> str:
    """An area of the test's own: areas are shared by every feed of the database."""
    return f"T-{secrets.token_hex(4)}"


def at(t: int) -> datetime:
    return datetime.fromtimestamp(t, UTC)


def slot(start: int, seconds: int = QUARTER) -> asyncpg.Range:
    return asyncpg.Range(
        datetime.fromtimestamp(start, UTC), datetime.fromtimestamp(start + seconds, UTC)
    )


async def set_prices(db: asyncpg.Connection, name: str, prices: dict[int, float]) -> int:
    """Prices per 15-minute slot starting at each key (Unix seconds), per kWh."""
    changed: int = await db.fetchval(
        "SELECT cluster.set_prices($1, $2::tstzrange[], $3::float8[])",
        name,
        [slot(t) for t in prices],
        list(prices.values()),
    )
    return changed


async def dynamic(
    feed: Feed, name: str, *, factor: float = 1.0, bands: dict[str, float] | None = None
) -> None:
    bands = bands or {"00:00": 0.0}
    await feed.db.execute(
        "SELECT cluster.set_tariff($1, 'power', '-infinity', $2::time[], $3::float8[], $4, $5)",
        feed.id,
        [datetime.strptime(b, "%H:%M").time() for b in bands],
        list(bands.values()),
        name,
        factor,
    )


async def steady(feed: Feed, start: int, end: int) -> None:
    """1000 W from ``start`` to ``end``: 25 Wh in each bucket."""
    clamp = await feed.raw_stream(channel=1, medium=1)
    await feed.ingest(clamp, [(t, 1000.0) for t in range(start, end + 1, 10)])


def priced(prices: dict[int, float], start: int, end: int) -> dict[int, float]:
    """Each bucket's cost at its slot's price: 0.025 kWh x price."""
    out = {}
    for t in range(start, end, 90):
        price = next(p for s, p in prices.items() if s <= t < s + QUARTER)
        out[t] = pytest.approx(WH_PER_BUCKET / 1000 * price)
    return out


async def test_quarter_hour_prices_price_their_ten_buckets_each(new_feed: NewFeed) -> None:
    feed, name = await new_feed("Europe/Prague"), area()
    prices = {T0: 0.10, T0 + 900: 0.20, T0 + 1800: -0.05, T0 + 2700: 0.40}
    await set_prices(feed.db, name, prices)
    await dynamic(feed, name)
    await steady(feed, T0, T0 + 3600)

    await process(feed.db)

    assert await feed.points(COST) == priced(prices, T0, T0 + 3600)


async def test_factor_and_bands_combine_as_the_formula_says(new_feed: NewFeed) -> None:
    feed, name = await new_feed("Europe/Prague"), area()
    # T0 is 01:00 in Prague: the 00:00 band (0.12) holds until 01:30, the 01:30 one (0.21) after.
    await set_prices(feed.db, name, {T0: 0.10, T0 + 900: 0.10, T0 + 1800: 0.30, T0 + 2700: 0.30})
    await dynamic(feed, name, factor=1.19, bands={"00:00": 0.12, "01:30": 0.21})
    await steady(feed, T0, T0 + 3600)

    await process(feed.db)

    expected = {}
    for k in range(40):
        price = 1.19 * (0.10 if k < 20 else 0.30) + (0.12 if k < 20 else 0.21)
        expected[T0 + 90 * k] = pytest.approx(0.025 * price)
    assert await feed.points(COST) == expected


async def test_a_bucket_without_a_price_has_no_cost_until_its_price_arrives(
    new_feed: NewFeed,
) -> None:
    feed, name = await new_feed("Europe/Prague"), area()
    first = {T0: 0.10, T0 + 900: 0.20}
    await set_prices(feed.db, name, first)
    await dynamic(feed, name)
    await steady(feed, T0, T0 + 3600)
    await process(feed.db)
    assert await feed.points(COST) == priced(first, T0, T0 + 1800)
    # The consumption is there all along: only its price is missing.
    assert len(await feed.points("Electricity, channel 1")) == 40

    later = {T0 + 1800: 0.30, T0 + 2700: 0.40}
    await set_prices(feed.db, name, later)
    await process(feed.db)

    assert await feed.points(COST) == priced({**first, **later}, T0, T0 + 3600)


async def test_prices_set_before_the_points_price_them_as_they_come(new_feed: NewFeed) -> None:
    feed, name = await new_feed("Europe/Prague"), area()
    # Tomorrow's prices come at 13:00 today, before tomorrow's points.
    prices = {T0 + 86_400 + 900 * q: 0.05 * (q + 1) for q in range(4)}
    await set_prices(feed.db, name, prices)
    await dynamic(feed, name)
    await process(feed.db)

    await steady(feed, T0 + 86_400, T0 + 86_400 + 3600)
    await process(feed.db)

    assert await feed.points(COST) == priced(prices, T0 + 86_400, T0 + 86_400 + 3600)


async def test_a_corrected_slot_reprices_its_buckets_and_its_day_and_nothing_else(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    name, other_area = area(), area()
    feeds = [await new_feed("Europe/Prague") for _ in range(3)]
    day = T0 + 82_800  # 2026-01-02 00:00 in Prague
    prices = {day + 900 * q: 0.10 for q in range(2 * 96)}
    await set_prices(feeds[0].db, name, prices)
    await set_prices(feeds[0].db, other_area, prices)
    for feed in feeds[:2]:
        await dynamic(feed, name)
    await dynamic(feeds[2], other_area)
    for feed in feeds:
        # Two local days: the corrected one and the next, which must not move.
        await steady(feed, day, day + 2 * 86_400)
    await process(feeds[0].db)
    before = [await feed.points(COST) for feed in feeds]
    days_before = [
        await api_buckets(api, f, await f.stream_id(COST), "day", time_from=day) for f in feeds
    ]

    # The 10:00 slot's price is corrected from 0.10 to 0.50.
    corrected = day + 10 * 3600
    assert await set_prices(feeds[0].db, name, {corrected: 0.50}) == 1
    queued = await feeds[0].db.fetch(
        "SELECT feed_id, lower(buckets) AS lo, upper(buckets) AS hi FROM cluster.engine_work"
        " WHERE feed_id = ANY($1::bigint[])",
        [f.id for f in feeds],
    )
    # Exactly its slot, for the two feeds on the area, nothing for the other.
    assert sorted((q["feed_id"], q["lo"], q["hi"]) for q in queued) == sorted(
        (f.id, at(corrected), at(corrected + QUARTER)) for f in feeds[:2]
    )
    await process(feeds[0].db)

    for n, feed in enumerate(feeds):
        after = await feed.points(COST)
        moved = {t for t in after if after[t] != before[n][t]}
        assert moved == (set(range(corrected, corrected + QUARTER, 90)) if n < 2 else set())
        assert all(after[t] == pytest.approx(0.025 * 0.50) for t in moved)
        days = await api_buckets(api, feed, await feed.stream_id(COST), "day", time_from=day)
        delta = 10 * 0.025 * (0.50 - 0.10) if n < 2 else 0.0
        assert [d[0] for d in days] == [d[0] for d in days_before[n]]
        assert days[0][1] == pytest.approx(days_before[n][0][1] + delta)
        assert days[1:] == days_before[n][1:]
    # Set again unchanged: nothing to reprice.
    assert await set_prices(feeds[0].db, name, {corrected: 0.50}) == 0


async def test_a_feed_moves_from_a_fixed_to_a_dynamic_tariff_mid_month(new_feed: NewFeed) -> None:
    feed, name = await new_feed("Europe/Prague"), area()
    await feed.db.execute(
        "SELECT cluster.set_tariff($1, 'power', '-infinity', ARRAY['00:00'::time], ARRAY[0.30])",
        feed.id,
    )
    prices = {T0 + 900 * q: 0.10 * (q + 1) for q in range(4)}
    await set_prices(feed.db, name, prices)
    await steady(feed, T0, T0 + 3600)
    await process(feed.db)
    assert await feed.points(COST) == {
        t: pytest.approx(0.025 * 0.30) for t in range(T0, T0 + 3600, 90)
    }

    # From the half hour on: the area's price plus 0.05.
    await feed.db.execute(
        "SELECT cluster.set_tariff($1, 'power', $2, ARRAY['00:00'::time], ARRAY[0.05], $3, 1.0)",
        feed.id,
        at(T0 + 1800),
        name,
    )
    await process(feed.db)

    expected = {
        t: pytest.approx(0.025 * (0.30 if t < T0 + 1800 else prices[t - (t - T0) % 900] + 0.05))
        for t in range(T0, T0 + 3600, 90)
    }
    assert await feed.points(COST) == expected


async def test_a_tariff_stored_before_prices_existed_keeps_its_meaning(new_feed: NewFeed) -> None:
    feed = await new_feed("Europe/Prague")
    # A tariff row as the engine stored them before migration 0018: no area, no factor.
    tariff = await feed.db.fetchval(
        "INSERT INTO cluster.tariffs (feed_id, medium, validity)"
        " VALUES ($1, 'power', '(,)') RETURNING id",
        feed.id,
    )
    await feed.db.execute(
        "INSERT INTO cluster.tariff_bands (tariff_id, starts, ends, price)"
        " VALUES ($1, '00:00', '24:00', 0.20)",
        tariff,
    )
    await steady(feed, T0, T0 + 900)
    await process(feed.db)

    assert await feed.points(COST) == {T0 + 90 * k: pytest.approx(0.025 * 0.20) for k in range(10)}


async def test_a_tariff_on_an_area_without_prices_is_refused(new_feed: NewFeed) -> None:
    feed, empty = await new_feed("Europe/Prague"), area()
    with pytest.raises(asyncpg.NoDataFoundError, match="has no prices"):
        await dynamic(feed, area())
    # An area made by a call that set no slot has no prices either.
    assert await set_prices(feed.db, empty, {}) == 0
    with pytest.raises(asyncpg.NoDataFoundError, match="has no prices"):
        await dynamic(feed, empty)


async def test_export_earns_a_credit_of_its_own_apart_from_the_cost(new_feed: NewFeed) -> None:
    feed, name = await new_feed("Europe/Prague"), area()
    taken = await feed.raw_stream(channel=1, medium=12, device=7)
    fed_in = await feed.raw_stream(channel=1, medium=13, device=7)
    times = range(T0, T0 + 1801, 10)
    await feed.ingest(taken, [(t, 1000.0) for t in times])  # 25 Wh a bucket
    await feed.ingest(fed_in, [(t, 3600.0) for t in times])  # 90 Wh a bucket
    prices = {T0: 0.04, T0 + 900: -0.02}  # a negative price: feeding in costs then
    await set_prices(feed.db, name, prices)
    await feed.db.execute(
        "SELECT cluster.set_tariff($1, 'power', '-infinity', ARRAY['00:00'::time], ARRAY[0.30])",
        feed.id,
    )
    await feed.db.execute(
        "SELECT cluster.set_tariff($1, 'export', '-infinity', ARRAY['00:00'::time], ARRAY[0.01],"
        " $2, 1.0)",
        feed.id,
        name,
    )

    await process(feed.db)

    buckets = range(T0, T0 + 1800, 90)
    assert await feed.points(COST) == {t: pytest.approx(0.025 * 0.30) for t in buckets}
    assert await feed.points("Electricity export credit, channel 1") == {
        t: pytest.approx(0.09 * (prices[t - (t - T0) % 900] + 0.01)) for t in buckets
    }
    # The export itself stays energy, never netted against the consumption.
    assert await feed.points("Electricity, channel 1") == {t: pytest.approx(25.0) for t in buckets}
    assert await feed.points("Electricity export, channel 1") == {
        t: pytest.approx(90.0) for t in buckets
    }


async def test_each_quarter_hour_of_a_utc_day_reads_the_slot_holding_its_start(
    db: asyncpg.Connection,
) -> None:
    """What-if's prices per UTC day (cluster.price_days): an hourly slot prices its four
    quarters, a later quarter-hour slot replaces one of them, a slot shorter than a quarter
    prices the quarter it starts, and a quarter no slot holds is null."""
    name, day = area(), datetime.fromtimestamp(T0, UTC).date()
    await db.fetchval(
        "SELECT cluster.set_prices($1, $2::tstzrange[], $3::float8[])",
        name,
        [slot(T0, 3600), slot(T0 + 3600, 450)],
        [0.20, 0.50],
    )
    await set_prices(db, name, {T0 + QUARTER: 0.30})
    row = await db.fetchrow(
        "SELECT prices, total, priced FROM cluster.price_days WHERE area = $1 AND day = $2",
        name,
        day,
    )
    assert row["prices"][:6] == [0.20, 0.30, 0.20, 0.20, 0.50, None]
    assert row["prices"][6:] == [None] * 90
    assert (round(row["total"], 9), row["priced"]) == (1.40, 5)
