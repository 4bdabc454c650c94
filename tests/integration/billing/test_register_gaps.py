"""Gaps spread over their time (issue 48, docs/engine.md#registers-wh): a register's rise between
two readings is spread evenly over the time between them, so every band and every slot of a
dynamic tariff prices its own share, and a quarter hour stays on its day. Read back through the
data API and the bill."""

from __future__ import annotations

from datetime import datetime

import httpx
import pytest

from tests.integration.billing.test_bills import bill, line
from tests.integration.billing.test_market_prices import area, dynamic, set_prices
from tests.support.data import T0
from tests.support.engine import Feed, NewFeed, api_buckets, process

IMPORT_REGISTER, METER = 22, 7
ENERGY = "Electricity, channel 0"
HOUR, QUARTER = 3600, 900


async def register(feed: Feed) -> int:
    return await feed.raw_stream(channel=0, medium=IMPORT_REGISTER, device=METER)


async def test_a_6_hour_reader_outage_is_spread_over_its_buckets_and_priced_in_its_bands(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("UTC")
    # Night 0.10 until 06:00, day 0.30 after.
    await feed.db.execute(
        "SELECT cluster.set_tariff($1, 'power', '-infinity', $2::time[], ARRAY[0.10, 0.30])",
        feed.id,
        [datetime.strptime(b, "%H:%M").time() for b in ("00:00", "06:00")],
    )
    meter = await register(feed)
    # 1200 W (20 Wh a minute) from 00:00 to 00:10 and from 06:10 to 06:20; the reader is
    # silent in between, while the meter counts 3000 Wh (500 W for the 6 hours).
    before = [(T0 + 10 * i, 10_000.0 + 10 * i / 3) for i in range(61)]  # up to 10,200 Wh
    after = [(T0 + 22_200 + 10 * i, 13_200.0 + 10 * i / 3) for i in range(61)]
    await feed.ingest(meter, before + after)

    await process(feed.db)

    energy = await feed.stream_id(ENERGY)
    hours = dict(await api_buckets(api, feed, energy, "hour"))
    # 00:00: 200 Wh of line and 50 minutes of the spread 3000 Wh / 6 h; 01:00 to 05:00: 500 Wh
    # each; 06:00: 10 minutes of the spread, then 200 Wh of line.
    assert hours == {
        T0: pytest.approx(200.0 + 3000 * 50 / 360),
        **{T0 + HOUR * h: pytest.approx(500.0) for h in range(1, 6)},
        T0 + 6 * HOUR: pytest.approx(3000 * 10 / 360 + 200.0),
    }
    # A bucket of the outage holds 90 s of it, not the whole rise at 06:10.
    assert (await feed.points(ENERGY))[T0 + 3 * HOUR] == pytest.approx(3000 * 90 / 21_600)
    # Priced in its bands: 200 Wh + 2916.67 Wh at night, 83.33 Wh + 200 Wh by day.
    used = line(await bill(api, feed, "2026-01-01", "2026-01-01"), "power")
    night, day = 0.2 + 3.0 * 350 / 360, 3.0 * 10 / 360 + 0.2
    assert used["quantity"] == pytest.approx(3.4)
    assert used["energy"] == pytest.approx(night * 0.10 + day * 0.30)


async def test_a_portals_15_minute_readings_price_each_quarter_at_its_own_slot(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed, name = await new_feed("UTC"), area()
    # The last two hours of Jan 1: eight quarters at alternating 0.10 and 0.50 per kWh.
    first = T0 + 22 * HOUR
    prices = {first + QUARTER * q: (0.10, 0.50)[q % 2] for q in range(8)}
    await set_prices(feed.db, name, prices)
    await dynamic(feed, name)
    meter = await register(feed)
    # A portal's register readings at each quarter hour, 100 Wh a quarter, the last at
    # midnight: 23:45 to 24:00 is Jan 1's.
    await feed.ingest(meter, [(first + QUARTER * q, 5_000.0 + 100.0 * q) for q in range(9)])

    await process(feed.db)

    # Each quarter at its own price: 4 x 0.1 kWh x 0.10 + 4 x 0.1 kWh x 0.50 = 0.24 (spending
    # each quarter's rise at the next quarter's price gave 0.23).
    jan_1 = await bill(api, feed, "2026-01-01", "2026-01-01")
    assert line(jan_1, "power")["quantity"] == pytest.approx(0.8)
    assert line(jan_1, "power")["energy"] == pytest.approx(0.24)
    assert jan_1["total"] == pytest.approx(0.24)
    jan_2 = await bill(api, feed, "2026-01-02", "2026-01-02")
    assert [x["quantity"] for x in jan_2["lines"] if x["medium"] == "power"] in ([], [0.0])
    energy = await feed.stream_id(ENERGY)
    quarters = await api_buckets(api, feed, energy, "hour", time_from=first)
    assert quarters == [[first, pytest.approx(400.0)], [first + HOUR, pytest.approx(400.0)]]
