"""A demo user's world for the page: one feed with a week of 5 s power on three phases, its
processed consumption and cost, a system stream and notifications; the data API on a free port.

Seeded with SQL (as tests/integration/api/conftest.py does), not through MQTT: these tests are
about the page, and the points must be at known times.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator

import psycopg
import pytest
import pytest_asyncio

from energy_platform.api import app as data
from energy_platform.core.http.server import HttpService
from energy_platform.core.settings import Settings
from tests.support.admin import run_admin
from tests.support.page import WEEK, ZONE, PageWorld
from tests.support.services import free_port, running

DAY = 86_400
SN = "DB00000000000016"


# A household's daily curve (as the simulator's) times a share: base load, morning and evening
# peaks, noise; every `step` seconds in [start, end]. Raw phases: W; consumption per 90 s: Wh.
CURVE = """
INSERT INTO {table} (stream_id, ts, value)
SELECT %(stream)s, to_timestamp(t), %(share)s * (0.85 + 0.3 * random()) * (250
       + 900 * exp(-power(mod(t, 86400) / 3600.0 - 7.5, 2) / 2)
       + 1600 * exp(-power(mod(t, 86400) / 3600.0 - 19, 2) / 3))
  FROM generate_series(%(start)s::bigint, %(end)s::bigint, %(step)s) t"""
RAW_CURVE = CURVE.format(table="cluster.raw_points")
PROCESSED_CURVE = CURVE.format(table="cluster.processed_points")


def _stream(conn: psycopg.Connection, feed: str, columns: tuple[object, ...]) -> str:
    row = conn.execute(
        "INSERT INTO cluster.streams (feed_id, type, channel, device, medium, idx, combined,"
        " cost, source) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
        (feed, *columns),
    ).fetchone()
    assert row
    return str(row[0])


def _seed(conn: psycopg.Connection, user: str, token: str) -> PageWorld:
    now = int(time.time()) // 5 * 5
    row = conn.execute(
        "INSERT INTO cluster.feeds (owner_id, homebase_sn, subscription_from, subscription_to)"
        " VALUES (%s, %s, now() - interval '30 days', now() + interval '335 days') RETURNING id",
        (user, SN),
    ).fetchone()
    assert row
    feed = str(row[0])
    conn.execute(
        "INSERT INTO cluster.feed_configs (feed_id, title, timezone, validity)"
        " VALUES (%s, 'Demo home', %s, tstzrange(NULL, NULL))",
        (feed, ZONE),
    )
    world = PageWorld("", user, token, feed, now)
    s = world.streams
    # type, channel, device, medium, idx, combined, cost, source
    for phase in (1, 2, 3):
        s[f"L{phase}"] = _stream(conn, feed, ("raw", 1, 3, 1, phase, None, False, None))
    s["energy"] = _stream(conn, feed, ("processed", 1, None, None, None, True, False, None))
    s["cost"] = _stream(conn, feed, ("processed", 1, None, None, None, True, True, None))
    s["signal"] = _stream(conn, feed, ("system", 1, 3, None, None, None, False, "medium:40"))
    for key, title, unit in (
        ("energy", "Electricity, channel 1, total", "Wh"),
        ("cost", "Electricity cost, channel 1, total", "CZK"),
    ):
        conn.execute(
            "SELECT cluster.set_stream_config(%s, '-infinity', %s, 'power', %s)",
            (s[key], title, unit),
        )
    # L1: a week of 5 s points ending at `now`: 604,800 / 5 = 120,960 points, the first at
    # now - 604,795. L2 and L3: the last day (17,280 points each).
    for key, span, share in (("L1", WEEK, 0.45), ("L2", DAY, 0.35), ("L3", DAY, 0.20)):
        conn.execute(
            RAW_CURVE,
            {"stream": s[key], "share": share, "start": now - span + 5, "end": now, "step": 5},
        )
    # Consumption per 90 s bucket (Wh: W x 90 s / 3600) and its cost at 5.2 CZK/kWh, a week.
    conn.execute(
        PROCESSED_CURVE,
        {
            "stream": s["energy"],
            "share": 90 / 3600,
            "start": (now - WEEK) // 90 * 90 + 90,
            "end": now // 90 * 90,
            "step": 90,
        },
    )
    conn.execute(
        "INSERT INTO cluster.processed_points SELECT %s, ts, value / 1000 * 5.2"
        " FROM cluster.processed_points WHERE stream_id = %s",
        (s["cost"], s["energy"]),
    )
    conn.execute(
        "INSERT INTO cluster.system_points SELECT %s, to_timestamp(t), -60 - 20 * random()"
        " FROM generate_series(%s::bigint, %s::bigint, 60) t",
        (s["signal"], now - DAY + 60, now),
    )
    # The points were written directly, not by the engine: roll every stream up as it would.
    conn.execute(
        "SELECT cluster.rollup_streams(array_agg(id), array_agg(NULL::timestamptz),"
        " array_agg(NULL::timestamptz)) FROM cluster.streams WHERE feed_id = %s",
        (feed,),
    )
    for title, content, age in (
        (
            "Phase L3 lost",
            "<p>The meter <b>C0FFEE0000000016</b> reports phase L3 without power.</p>",
            "2 hours",
        ),
        ("Unusual consumption", "<p>Yesterday used <b>31.2 kWh</b>, twice the usual.</p>", "1 day"),
    ):
        row = conn.execute(
            "INSERT INTO cluster.notifications (user_id, feed_id, rule, subject, title, content,"
            " created_at) VALUES (%s, %s, 'power_change', %s, %s, %s, now() - %s::interval)"
            " RETURNING id",
            (user, feed, title, title, content, age),
        ).fetchone()
        assert row
        world.notifications.append(str(row[0]))
    return world


# Seeded once for the package: a week of points takes seconds to write.
@pytest.fixture(scope="package")
def page_data(database_url: str, settings: Settings) -> Iterator[PageWorld]:
    # The user as `make run` creates the demo user: `admin users add` prints id and token.
    user = run_admin(settings, "users", "add", "page-demo")
    with psycopg.connect(database_url) as conn:
        world = _seed(conn, user["id"], user["token"])
    yield world
    with psycopg.connect(database_url) as conn:
        conn.execute("DELETE FROM cluster.feeds WHERE id = %s", (world.feed,))
        conn.execute("DELETE FROM cluster.users WHERE id = %s", (world.user,))


@pytest_asyncio.fixture(scope="package")
async def page_world(page_data: PageWorld, settings: Settings) -> AsyncIterator[PageWorld]:
    port = free_port()
    service = HttpService("api", data.create_app(settings), "127.0.0.1", port)
    page_data.url = f"http://127.0.0.1:{port}"
    async with running(service, ready_urls=(page_data.url + "/healthz",)):
        yield page_data
