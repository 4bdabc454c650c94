"""A demo user's world for the page: one feed with a week of 5 s power on three phases, a meter
reader's export and a fixed price, made into consumption, cost and export by the engine; a system
stream and notifications; the data API on a free port. (The bill and price panels' feeds are
billing's: tests/integration/billing/conftest.py.)

Seeded with energy_platform.seeding (readings through ingest's store, then the engine's drain:
tests/support/page.py seeded), not through MQTT: these tests are about the page, and the points
must be at known times.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import asyncpg
import psycopg
import pytest_asyncio

from energy_platform import seeding
from energy_platform.billing.tariffs import set_tariff, tariff_terms
from energy_platform.core.settings import Settings
from tests.support.admin import run_admin
from tests.support.data import data_api
from tests.support.page import WEEK, ZONE, PageWorld, seeded

DAY = 86_400
SN = "DB00000000000016"
PRICE = 5.2  # CZK per kWh, the feed's fixed price
# The processed streams the tests chart, as the engine names them.
PROCESSED = {
    "energy": "Electricity, channel 1, total",
    "cost": "Electricity cost, channel 1, total",
    "export": "Electricity export, channel 1",
}


def load(rng: random.Random, share: float, times: range) -> list[tuple[int, float]]:
    """A household's daily curve (as the simulator's) times ``share``, in W: base load, morning
    and evening peaks, noise."""
    points = []
    for t in times:
        hour = t % DAY / 3600
        curve = (
            250
            + 900 * math.exp(-((hour - 7.5) ** 2) / 2)
            + 1600 * math.exp(-((hour - 19) ** 2) / 3)
        )
        points.append((t, round(share * (0.85 + 0.3 * rng.random()) * curve, 1)))
    return points


def solar(times: range) -> list[tuple[int, float]]:
    """What a PV plant feeds in, in W: up to 1.5 kW from 06:00 to 18:00 UTC, nothing at night."""
    return [
        (t, round(1500 * max(0.0, math.sin(math.pi * (t % DAY / 3600 - 6) / 12)), 1)) for t in times
    ]


async def _seed(conn: asyncpg.Connection, user: int, token: str, now: int) -> PageWorld:
    today = datetime.now(UTC)
    feed = await seeding.add_feed(
        conn,
        user,
        SN,
        title="Demo home",
        timezone=ZONE,
        start=today - timedelta(days=30),
        end=today + timedelta(days=335),
    )
    world = PageWorld("", str(user), token, str(feed), now)
    await set_tariff(conn, feed, "power", None, tariff_terms("power", price=PRICE), None)
    rng = random.Random(now)  # noqa: S311 - a sample, not a secret
    s: dict[str, int] = {}
    # L1: a week of 5 s points ending at `now`: 604,800 / 5 = 120,960 points, the first at
    # now - 604,795. L2 and L3: the last day (17,280 points each).
    for phase, span, share in ((1, WEEK, 0.45), (2, DAY, 0.35), (3, DAY, 0.20)):
        s[f"L{phase}"] = await seeding.raw_stream(conn, feed, 1, 1, device=3, idx=phase)
        await seeding.write_points(
            conn, s[f"L{phase}"], load(rng, share, range(now - span + 5, now + 1, 5))
        )
    # Fed in, read by a meter reader every 90 s for the week (the page draws it below 0).
    fed = await seeding.raw_stream(conn, feed, 1, 13, device=7)
    await seeding.write_points(conn, fed, solar(range(now - WEEK, now + 1, 90)))
    # The signal by the minute for a day.
    s["signal"] = await seeding.system_stream(conn, feed, 1, "medium:40", device=3)
    await seeding.write_points(
        conn,
        s["signal"],
        [(t, round(-60 - 20 * rng.random(), 1)) for t in range(now - DAY + 60, now + 1, 60)],
    )
    for title, content, age in (
        (
            "Phase L3 lost",
            "<p>The meter <b>C0FFEE0000000016</b> reports phase L3 without power.</p>",
            timedelta(hours=2),
        ),
        (
            "Unusual consumption",
            "<p>Yesterday used <b>31.2 kWh</b>, twice the usual.</p>",
            timedelta(days=1),
        ),
    ):
        notification = await conn.fetchval(
            "INSERT INTO cluster.notifications (user_id, feed_id, rule, subject, title, content,"
            " created_at) VALUES ($1, $2, 'power_change', $3, $3, $4, now() - $5::interval)"
            " RETURNING id",
            user,
            feed,
            title,
            content,
            age,
        )
        world.notifications.append(str(notification))
    world.streams = {key: str(stream) for key, stream in s.items()}
    return world


# Seeded once for the module (each has a database of its own): a week of points takes seconds
# to write.
@pytest_asyncio.fixture(scope="module")
async def page_data(database_url: str, settings: Settings) -> AsyncIterator[PageWorld]:
    # The user as `make run` creates the demo user: `admin users add` prints id and token.
    user = await run_admin(settings, "users", "add", "page-demo")
    # The start of the bucket the seeding runs in, where every stream's points end: the buckets
    # they fill have all closed, so the engine's drain makes every point the tests read.
    now = int(time.time()) // seeding.BUCKET * seeding.BUCKET
    world = await seeded(
        database_url, lambda conn: _seed(conn, int(user["id"]), user["token"], now)
    )
    conn = await asyncpg.connect(database_url)
    try:
        titles = await seeding.processed_streams(conn, int(world.feed))
    finally:
        await conn.close()
    world.streams |= {key: str(titles[title]) for key, title in PROCESSED.items()}
    yield world
    with psycopg.connect(database_url) as conn:
        conn.execute("DELETE FROM cluster.feeds WHERE id = %s", (world.feed,))
        conn.execute("DELETE FROM cluster.users WHERE id = %s", (world.user,))


@pytest_asyncio.fixture(scope="module")
async def page_world(page_data: PageWorld, settings: Settings) -> AsyncIterator[PageWorld]:
    async with data_api(settings) as url:
        page_data.url = url
        yield page_data
