"""A household's money on the page (test_money_page.py): a user with three feeds, one on a
dynamic tariff of an area of its own (its month priced to the seeding, the rest of its today
and half of its tomorrow's quarter hours priced as a market), one on a fixed price, one without
a tariff; the data API on a free port.

Seeded with energy_platform.seeding, readings through ingest's store made into points and money
by the engine's drain (tests/support/page.py seeded), not through MQTT: the points must be at
known times. The billing tests' feeds of their own come from ``new_feed`` (tests/conftest.py).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import asyncpg
import psycopg
import pytest_asyncio

from energy_platform import seeding
from energy_platform.core.settings import Settings
from tests.support.data import data_api
from tests.support.page import (
    MONEY_ZONE,
    PRICE_PER_KWH,
    STANDING,
    ZONE,
    MoneyWorld,
    local_midnight,
    seeded,
)

MARKUP, FACTOR = 0.05, 1.19
"""The dynamic tariff's price: MARKUP a kWh plus FACTOR times the market's."""


def month_bucket(zone: str, now: int) -> int:
    """The first 90 s bucket of the local month holding ``now`` in ``zone``."""
    start = datetime.fromtimestamp(now, ZoneInfo(zone)).replace(
        day=1, hour=0, minute=0, second=0, microsecond=0
    )
    return -(-int(start.timestamp()) // 90) * 90


async def _seed_money(conn: asyncpg.Connection, area: str) -> MoneyWorld:
    now = int(time.time())
    user = await seeding.add_user(conn, f"page-money-{area}")
    start = datetime.now(UTC) - timedelta(days=40)
    feeds: dict[str, int] = {}
    zones = {"dynamic": MONEY_ZONE, "fixed": ZONE, "none": ZONE}
    for key, title, sn in (
        ("dynamic", "Market home", "DB0000000000001A"),
        ("fixed", "Flat home", "DB0000000000001B"),
        ("none", "No tariff", "DB0000000000001C"),
    ):
        feeds[key] = await seeding.add_feed(
            conn,
            user.id,
            sn,
            title=title,
            timezone=zones[key],
            start=start,
            end=start + timedelta(days=365),
        )
    # The dynamic feed: a clamp's 1 kW in the first hour of each local day of the month up to
    # the last bucket closed, a reading every 5 minutes (bridged: 25 Wh in each 90 s bucket).
    # An hour a day, not all day: the engine prices each bucket by the market's quarter hour,
    # and a month of whole days took its drain 5 to 6 s more per module.
    first, end = month_bucket(MONEY_ZONE, now), now // 90 * 90
    clamp = await seeding.raw_stream(conn, feeds["dynamic"], 1, 1)
    hours = [(day, min(day + 3600, end)) for day in range(first, end, 86_400)]  # no DST: UTC+14
    await seeding.write_points(
        conn, clamp, [(t, 1000.0) for a, b in hours for t in [*range(a, b, 300), b]]
    )
    # The fixed feed's supply metered twice, by a clamp and a meter reader, neither marked as
    # the main meter: its bill adds both and warns. 1 kWh each (40 kW for 90 s) in its month's
    # first bucket.
    bucket = month_bucket(ZONE, now)
    for channel, device, medium in ((1, 1, 1), (5, 7, 12)):
        meter = await seeding.raw_stream(conn, feeds["fixed"], channel, medium, device=device)
        await seeding.write_points(conn, meter, [(bucket, 40_000.0), (bucket + 90, 40_000.0)])
    # The market's quarter hours from the dynamic feed's month to the end of the one the seeding
    # runs in, at the price the tariff below makes 0.30 a kWh (every bucket of the month is
    # priced: none waits for a price); then of the rest of its today and the first half of its
    # tomorrow, 0.04 to 0.15: tomorrow's afternoon is not published yet. Whichever local day
    # the page opens on (the date may turn while the test runs), its curve has prices and a gap.
    priced = now // 900 * 900 + 900
    slots = [
        *range(first, priced, 900),
        *range(priced, local_midnight(MONEY_ZONE, now, 1) + 12 * 3600, 900),
    ]
    await conn.execute(
        "SELECT cluster.set_prices($1, array_agg(tstzrange(to_timestamp(s), to_timestamp(s + 900),"
        " '[)') ORDER BY s), array_agg(CASE WHEN s < $3 THEN $4 ELSE 0.04 + 0.01 * (s / 900 % 12)"
        " END::float8 ORDER BY s)) FROM unnest($2::bigint[]) s",
        area,
        slots,
        priced,
        (PRICE_PER_KWH - MARKUP) / FACTOR,
    )
    await conn.execute(
        "SELECT cluster.set_tariff($1, 'power', '-infinity', ARRAY['00:00'::time],"
        " ARRAY[$2::float8], $3, $4, $5)",
        feeds["dynamic"],
        MARKUP,
        area,
        FACTOR,
        STANDING,
    )
    await conn.execute(
        "SELECT cluster.set_tariff($1, 'power', '-infinity', ARRAY['00:00'::time],"
        " ARRAY[$2::float8])",
        feeds["fixed"],
        PRICE_PER_KWH,
    )
    return MoneyWorld(
        "", str(user.id), user.token, {k: str(v) for k, v in feeds.items()}, zones, area, now
    )


@pytest_asyncio.fixture(scope="module")
async def money_world(database_url: str, settings: Settings) -> AsyncIterator[MoneyWorld]:
    # The price table is the database's, shared by every test of this session: an area of its own.
    area = f"PAGE-{secrets.token_hex(3).upper()}"
    world = await seeded(database_url, lambda conn: _seed_money(conn, area))
    async with data_api(settings) as url:
        world.url = url
        yield world
    with psycopg.connect(database_url) as conn:
        conn.execute("DELETE FROM cluster.feeds WHERE id = ANY(%s)", (list(world.feeds.values()),))
        conn.execute("DELETE FROM cluster.price_areas WHERE area = %s", (area,))
        conn.execute("DELETE FROM cluster.users WHERE id = %s", (world.user,))
