"""A demo user's world for the page: one feed with a week of 5 s power on three phases, its
processed consumption, cost and export, a system stream and notifications; the data API on a
free port. (The bill and price panels' feeds are billing's: tests/integration/billing/conftest.py.)

Seeded with energy_platform.seeding and SQL (as tests/support/data.py is), not through MQTT:
these tests are about the page, and the points must be at known times.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import asyncpg
import psycopg
import pytest_asyncio

from energy_platform import seeding
from energy_platform.core.settings import Settings
from tests.support.admin import run_admin
from tests.support.data import data_api
from tests.support.page import WEEK, ZONE, PageWorld

DAY = 86_400
SN = "DB00000000000016"


# Bypassing ingest's store on purpose: the processed streams below are curves of their own, not
# the engine's result from these phases, and points through the store would queue them for any
# engine that runs on the module's database (which would replace the curves). The rollups are
# made below as the engine would make them.
# A household's daily curve (as the simulator's) times a share: base load, morning and evening
# peaks, noise; every `step` seconds in [start, end]. Raw phases: W; consumption per 90 s: Wh.
CURVE = """
INSERT INTO {table} (stream_id, ts, value)
SELECT $1, to_timestamp(t), $2::float8 * (0.85 + 0.3 * random()) * (250
       + 900 * exp(-power(mod(t, 86400) / 3600.0 - 7.5, 2) / 2)
       + 1600 * exp(-power(mod(t, 86400) / 3600.0 - 19, 2) / 3))
  FROM generate_series($3::bigint, $4::bigint, $5::bigint) t"""
RAW_CURVE = CURVE.format(table="cluster.raw_points")
PROCESSED_CURVE = CURVE.format(table="cluster.processed_points")


async def _seed(conn: asyncpg.Connection, user: int, token: str) -> PageWorld:
    now = int(time.time()) // 5 * 5
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
    s: dict[str, int] = {}
    for phase in (1, 2, 3):
        s[f"L{phase}"] = await seeding.raw_stream(conn, feed, 1, 1, device=3, idx=phase)
    s["energy"] = await seeding.processed_stream(
        conn, feed, 1, title="Electricity, channel 1, total", combined=True
    )
    s["cost"] = await seeding.processed_stream(
        conn,
        feed,
        1,
        title="Electricity cost, channel 1, total",
        unit="CZK",
        combined=True,
        quantity="cost",
    )
    s["export"] = await seeding.processed_stream(
        conn,
        feed,
        1,
        title="Electricity export, channel 1, total",
        combined=True,
        quantity="export",
    )
    s["signal"] = await seeding.system_stream(conn, feed, 1, "medium:40", device=3)
    # L1: a week of 5 s points ending at `now`: 604,800 / 5 = 120,960 points, the first at
    # now - 604,795. L2 and L3: the last day (17,280 points each).
    for key, span, share in (("L1", WEEK, 0.45), ("L2", DAY, 0.35), ("L3", DAY, 0.20)):
        await conn.execute(RAW_CURVE, s[key], share, now - span + 5, now, 5)
    # Consumption per 90 s bucket (Wh: W x 90 s / 3600) and its cost at 5.2 CZK/kWh, a week.
    await conn.execute(
        PROCESSED_CURVE, s["energy"], 90 / 3600, (now - WEEK) // 90 * 90 + 90, now // 90 * 90, 90
    )
    await conn.execute(
        "INSERT INTO cluster.processed_points SELECT $1, ts, value / 1000 * 5.2"
        " FROM cluster.processed_points WHERE stream_id = $2",
        s["cost"],
        s["energy"],
    )
    # Fed in: a third of the consumption, bucket by bucket (the page draws it below 0).
    await conn.execute(
        "INSERT INTO cluster.processed_points SELECT $1, ts, value / 3"
        " FROM cluster.processed_points WHERE stream_id = $2",
        s["export"],
        s["energy"],
    )
    # The signal straight into its tier too, by the minute for a day, as the curves above.
    await conn.execute(
        "INSERT INTO cluster.system_points SELECT $1, to_timestamp(t), -60 - 20 * random()"
        " FROM generate_series($2::bigint, $3::bigint, 60) t",
        s["signal"],
        now - DAY + 60,
        now,
    )
    # The points were written directly, not by the engine: roll every stream up as it would.
    await conn.execute(
        "SELECT cluster.rollup_streams(array_agg(id), array_agg(NULL::timestamptz),"
        " array_agg(NULL::timestamptz)) FROM cluster.streams WHERE feed_id = $1",
        feed,
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
    conn = await asyncpg.connect(database_url)
    try:
        async with conn.transaction():
            world = await _seed(conn, int(user["id"]), user["token"])
    finally:
        await conn.close()
    yield world
    with psycopg.connect(database_url) as conn:
        conn.execute("DELETE FROM cluster.feeds WHERE id = %s", (world.feed,))
        conn.execute("DELETE FROM cluster.users WHERE id = %s", (world.user,))


@pytest_asyncio.fixture(scope="module")
async def page_world(page_data: PageWorld, settings: Settings) -> AsyncIterator[PageWorld]:
    async with data_api(settings) as url:
        page_data.url = url
        yield page_data
