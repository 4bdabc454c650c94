"""The made-up day-ahead market of `make run`'s demo (seeding.publish_market): today's quarter
hours, tomorrow's from 13:00 local time on as a real market publishes them, 92 or 100 on a DST
day, each the same price whenever it is made."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import asyncpg

from energy_platform import seeding

ZONE = "Europe/Prague"
AREA_PRICES = """
SELECT extract(epoch FROM lower(slot))::bigint AS t, price FROM cluster.prices
 WHERE area = $1 ORDER BY lower(slot)"""


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(ZoneInfo(ZONE))


async def test_tomorrows_quarter_hours_appear_at_one_oclock_across_the_autumn_change(
    db: asyncpg.Connection,
) -> None:
    area = f"DEMO-{id(db) % 10_000}"
    since = at("2026-10-24T00:00:00+02:00")
    # Saturday 24 October at 12:59: Saturday's 96 quarters only.
    assert (
        await seeding.publish_market(db, area, ZONE, at("2026-10-24T12:59:00+02:00"), since) == 96
    )
    # At 13:00 Sunday's come, a day of 25 hours: 100 quarters; again, nothing more.
    assert (
        await seeding.publish_market(db, area, ZONE, at("2026-10-24T13:00:00+02:00"), since) == 100
    )
    assert await seeding.publish_market(db, area, ZONE, at("2026-10-24T18:00:00+02:00"), since) == 0
    rows = await db.fetch(AREA_PRICES, area)
    assert len(rows) == 196
    assert rows[-1]["t"] + 900 == int(at("2026-10-26T00:00:00+01:00").timestamp())
    # The generator's prices, whenever they are made: a market's day with its evening peak
    # dearer than its night, and each within what such a market pays.
    assert [r["price"] for r in rows] == [
        seeding.market_price(r["t"], ZoneInfo(ZONE)) for r in rows
    ]
    saturday = [r["price"] for r in rows[:96]]
    assert max(saturday[19 * 4 : 20 * 4]) > max(saturday[2 * 4 : 4 * 4])
    assert all(-0.1 < p < 0.3 for p in saturday)
