"""A household on a market tariff is told, once a day, when its area's prices of the next local
day are in: that day's cheapest 3 hours and its runs of negative prices, all in."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import asyncpg
import httpx

from energy_platform.core.settings import Settings
from energy_platform.notifications.rules import evaluate
from tests.integration.billing.test_plan import area_slots, set_slots
from tests.integration.billing.test_tariff_formula import tariff
from tests.support.engine import Feed, NewFeed

ZONE = ZoneInfo("Europe/Amsterdam")
QUARTER = 900


def day_quarters(day: date) -> tuple[int, int]:
    """A local day's first quarter (its midnight, Unix seconds) and its number of quarters."""
    start = datetime.combine(day, datetime.min.time(), ZONE)
    end = datetime.combine(day + timedelta(days=1), datetime.min.time(), ZONE)
    return int(start.timestamp()), int((end - start).total_seconds()) // QUARTER


async def told(api: httpx.AsyncClient, feed: Feed) -> list[dict[str, Any]]:
    """The owner's notifications of the rule, read through the API."""
    owner = await feed.db.fetchval("SELECT owner_id FROM cluster.feeds WHERE id = $1", feed.id)
    answer = await api.get(
        f"/users/{owner}/notifications", headers={"Authorization": f"Bearer {feed.owner_token}"}
    )
    assert answer.status_code == 200, answer.text
    return [n for n in answer.json() if n["title"] == "Tomorrow's prices are in"]


async def rules_round(db: asyncpg.Connection, settings: Settings) -> None:
    assert await evaluate(db, settings.notifications) == 0  # type: ignore[arg-type]


async def test_tomorrows_prices_are_told_once_with_the_cheapest_hours_and_negative_ones(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings
) -> None:
    today = datetime.now(ZONE).date()
    if datetime.now(ZONE).hour == 23 and datetime.now(ZONE).minute >= 50:
        today += timedelta(days=1)  # the day turns while the test runs: test the next one
    first, count = day_quarters(today)
    feed = await new_feed("Europe/Amsterdam")
    area = await area_slots(feed, first, QUARTER, [0.25] * count)
    await tariff(settings, feed, "power", "2025-01-01T00:00:00Z", "--area", area)

    # Today's prices alone: nothing to tell; nor with tomorrow's half published.
    await rules_round(feed.db, settings)
    assert await told(api, feed) == []
    tomorrow = today + timedelta(days=1)
    start, quarters = day_quarters(tomorrow)
    prices = [0.25] * quarters
    # 12:00 to 15:00 local at 0.02, and 13:00 to 13:30 below zero inside it: the cheapest
    # three hours are 12:00 to 15:00 (mean (10 x 0.02 + 2 x -0.05) / 12 = 0.0083).
    noon = (int(datetime.combine(tomorrow, datetime.min.time().replace(hour=12), ZONE)
                .timestamp()) - start) // QUARTER  # fmt: skip
    prices[noon : noon + 12] = [0.02] * 12
    prices[noon + 4 : noon + 6] = [-0.05, -0.05]
    await set_slots(feed, area, start, QUARTER, prices[: quarters // 2])
    await rules_round(feed.db, settings)
    assert await told(api, feed) == []

    await set_slots(feed, area, start, QUARTER, prices)
    await rules_round(feed.db, settings)
    (notice,) = await told(api, feed)
    assert f"The prices of {tomorrow.isoformat()}" in notice["content"]
    assert "The cheapest 3 hours: 12:00 to 15:00, at 0.0083 a kWh on average." in notice["content"]
    assert "Prices below zero: 13:00 to 13:30 (down to -0.0500)." in notice["content"]

    # Read or not, and whatever import comes again for the day: told once.
    await set_slots(feed, area, start, QUARTER, [p + 0.01 for p in prices])
    await rules_round(feed.db, settings)
    assert len(await told(api, feed)) == 1
    assert datetime.fromisoformat(notice["created_at"]) <= datetime.now(UTC)
