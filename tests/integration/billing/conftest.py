"""A household's money on the page (test_money_page.py): a user with three feeds, one on a
dynamic tariff of an area of its own (today's and half of tomorrow's quarter hours priced), one
on a fixed price, one without a tariff; the data API on a free port.

Seeded with energy_platform.seeding and SQL (as tests/support/data.py is), not through MQTT:
the points must be at known times. The billing tests' feeds of their own come from
``new_feed`` (tests/conftest.py).
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
    dynamic = feeds["dynamic"]
    energy = await seeding.processed_stream(
        conn, dynamic, 1, title="Electricity, channel 1, total", combined=True
    )
    cost = await seeding.processed_stream(
        conn,
        dynamic,
        1,
        title="Electricity cost, channel 1, total",
        unit="EUR",
        combined=True,
        quantity="cost",
    )
    # 1 kW from the local month's first bucket to now: 25 Wh per 90 s bucket, each with its
    # cost point (0.025 kWh x 0.30 = 0.0075), so that no bucket waits for a price.
    # Straight into processed points, on purpose: the month's money is the seeded 0.30 a kWh
    # whatever the area's prices (published for today and tomorrow only, which the engine
    # would price the month's first weeks by: none, and those buckets would wait).
    first, last = month_bucket(MONEY_ZONE, now), now // 90 * 90 - 90
    for stream, value in ((energy, 25.0), (cost, 25 / 1000 * PRICE_PER_KWH)):
        await conn.execute(
            "INSERT INTO cluster.processed_points SELECT $1, to_timestamp(t), $4::float8"
            " FROM generate_series($2::bigint, $3::bigint, 90) t",
            stream,
            first,
            last,
            value,
        )
    # The fixed feed's supply metered twice, by a clamp and a meter reader, neither marked as
    # the main meter: its bill adds both and warns. 1 kWh each in its month's first bucket,
    # with its cost (1 kWh x 0.30): a bucket without its money would leave the bill incomplete.
    meters = [
        await seeding.processed_stream(conn, feeds["fixed"], channel, title=title)
        for channel, title in ((1, "Clamp"), (5, "Meter reader"))
    ]
    costs = [
        await seeding.processed_stream(
            conn, feeds["fixed"], channel, title=f"{title} cost", unit="EUR", quantity="cost"
        )
        for channel, title in ((1, "Clamp"), (5, "Meter reader"))
    ]
    # Straight in too: one bucket of each at a known value, its money beside it.
    await conn.execute(
        "INSERT INTO cluster.processed_points SELECT m, to_timestamp($2), v"
        " FROM unnest($1::bigint[], $3::float8[]) AS x (m, v)",
        meters + costs,
        month_bucket(ZONE, now),
        [1000.0, 1000.0, PRICE_PER_KWH, PRICE_PER_KWH],
    )
    await conn.execute(
        "SELECT cluster.rollup_streams($1::bigint[], array_fill(NULL::timestamptz, ARRAY[6]),"
        " array_fill(NULL::timestamptz, ARRAY[6]))",
        [energy, cost, *meters, *costs],
    )
    # The market's quarter hours of the feed's today, and of the first half of its tomorrow:
    # tomorrow's afternoon is not published yet. Whichever local day the page opens on (the
    # date may turn while the test runs), its curve has prices and a gap.
    today = local_midnight(MONEY_ZONE, now)
    slots = [today + 900 * k for k in range(96 + 48)]
    await conn.execute(
        "SELECT cluster.set_prices($1, array_agg(tstzrange(to_timestamp(s), to_timestamp(s + 900),"
        " '[)') ORDER BY s), array_agg((0.04 + 0.01 * (s / 900 % 12))::float8 ORDER BY s))"
        " FROM unnest($2::bigint[]) s",
        area,
        slots,
    )
    await conn.execute(
        "SELECT cluster.set_tariff($1, 'power', '-infinity', ARRAY['00:00'::time],"
        " ARRAY[0.05], $2, 1.19, $3)",
        dynamic,
        area,
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
