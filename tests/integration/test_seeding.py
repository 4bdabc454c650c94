"""The one household of tests and benchmarks (``seeding.household``): made by the engine from
readings stored as ingest stores them, its tariffs set as ``admin tariffs set`` sets them; and
its fast option, whose money is priced as the engine prices it."""

from __future__ import annotations

import math
import secrets
from datetime import UTC, datetime

import asyncpg

from energy_platform import seeding
from energy_platform.billing.tariffs import tariffs_of_feed
from tests.support.data import T0
from tests.support.engine import CURRENCY, ENGINE

# Consumption and its money, bucket by bucket: (stream title, value, money).
PRICED = """
SELECT extract(epoch FROM v.ts)::bigint AS t, v.value, m.value AS money
  FROM cluster.processed_points v
  JOIN cluster.processed_points m ON m.ts = v.ts
 WHERE v.stream_id = $1 AND m.stream_id = $2 ORDER BY v.ts"""
# What the engine has still to do for a feed: points to compute, rollups to build.
WORK_LEFT = """
SELECT (SELECT count(*) FROM cluster.engine_work WHERE feed_id = $1)
     + (SELECT count(*) FROM cluster.rollup_work w JOIN cluster.streams s ON s.id = w.stream_id
         WHERE s.feed_id = $1)"""


async def test_a_household_is_the_engines_from_its_readings(db: asyncpg.Connection) -> None:
    area = f"HH-{secrets.token_hex(3).upper()}"
    size = seeding.Size(days=1, sensors=1, gas=True, neighbours=2)
    home = await seeding.household(db, T0, size, area=area, engine=ENGINE, currency=CURRENCY)
    # The bill's six streams, gas and its cost, a temperature.
    assert sorted(home.streams) == sorted(seeding.household_titles(size))
    assert len(home.streams) == 9
    assert sorted(home.meters) == ["clamp", "export", "gas", "import", "sensor 1"]
    # A day of 90 s readings: every bucket but the last has its point (960 buckets).
    counts = dict(
        await db.fetch(
            "SELECT stream_id, count(*) FROM cluster.processed_points"
            " WHERE stream_id = ANY($1::bigint[]) GROUP BY 1",
            list(home.streams.values()),
        )
    )
    assert counts[home.streams["Electricity, channel 1"]] == 959
    assert counts[home.streams["Temperature, channel 4"]] == 959
    assert await db.fetchval(WORK_LEFT, home.feed) == 0
    submeter = await db.fetchval(
        "SELECT submeter FROM cluster.stream_configs WHERE stream_id = $1",
        home.streams[seeding.SUBMETER],
    )
    assert submeter is True
    tariffs = {t.medium: t for t in await tariffs_of_feed(db, home.feed)}
    assert sorted(tariffs) == ["export", "gas", "power"]
    assert tariffs["power"].area == area
    assert tariffs["power"].holidays == "CZ"
    neighbours = await db.fetchval(
        "SELECT count(*) FROM cluster.feeds WHERE owner_id ="
        " (SELECT id FROM cluster.users WHERE name = $1)",
        f"neighbours-of-{home.sn}",
    )
    assert neighbours == 2


async def test_the_fast_option_prices_every_bucket_as_the_engine_does(
    db: asyncpg.Connection,
) -> None:
    area = f"HH-{secrets.token_hex(3).upper()}"
    # A weekday (5 January 2026) and its evening band: the same readings, drained and fast.
    start = int(datetime(2026, 1, 5, 12, tzinfo=UTC).timestamp())
    size = seeding.Size(days=1)
    drained, fast = [
        await seeding.household(
            db, start, size, area=area, engine=ENGINE, currency=CURRENCY, fast=fast
        )
        for fast in (False, True)
    ]
    for value, money in (
        ("Electricity, channel 1", "Electricity cost, channel 1"),
        ("Electricity export, channel 1", "Electricity export credit, channel 1"),
        (seeding.SUBMETER, "Electricity cost, channel 2"),
    ):
        prices = [
            {r["t"]: r["money"] / r["value"] for r in rows if r["value"]}
            for rows in [
                await db.fetch(PRICED, home.streams[value], home.streams[money])
                for home in (drained, fast)
            ]
        ]
        both = prices[0].keys() & prices[1].keys()
        assert len(both) > 200, value
        for t in both:
            assert math.isclose(prices[1][t], prices[0][t], rel_tol=1e-9), (value, t)
    assert await db.fetchval(WORK_LEFT, fast.feed) == 0
