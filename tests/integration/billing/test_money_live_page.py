"""The page, open on a feed of a market tariff in a real headless Chromium, redraws its price
curve when the live stream says tomorrow's prices are in (the ``prices`` event, issue 62): the
rest of tomorrow appears in the curve and the plan shown is asked again into it, without a
reload of the page.

The world is tests/integration/billing/conftest.py's (this module's own area): the feed's
today and the first half of its tomorrow priced, 0.04 to 0.15 a quarter hour.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

import asyncpg
from selenium.webdriver.remote.webdriver import WebDriver

from energy_platform.core.settings import Settings
from energy_platform.notifications.rules import evaluate
from tests.support import page
from tests.support.browser import chromium
from tests.support.page import MONEY_ZONE, MoneyWorld, local_midnight
from tests.support.services import eventually

# The money panels of the feed and its plan, once both are shown: what the curve drew.
SHOWN = """(() => {
  const m = window.dashboard.money;
  const panel = document.querySelector('#plan-panel');
  if (document.querySelector('#money').dataset.state !== 'shown' || m?.feed !== arguments[0]
      || panel.dataset.state !== 'shown' || !window.dashboard.plan) return null;
  return { note: document.querySelector('#price-note').textContent, times: m.prices.times,
           plan: window.dashboard.plan, live: document.querySelector('#live').dataset.state,
           same_page: window.samePage === true };
})()"""
CHEAP = 0.01
"""The area price of tomorrow's second half, below every seeded one (0.04 at least)."""


def open_and_plan(driver: WebDriver, world: MoneyWorld) -> dict[str, Any]:
    """Opens the dynamic feed, asks when to run an hour at 2 kW, and waits for the live stream;
    what the page shows then. The page is marked: a reload would lose the mark."""
    feed = world.feeds["dynamic"]
    page.sign_in(driver, world.url, world.user, world.token, feed)
    page.open_feed(driver, feed)
    page.ask_plan(driver, "PT1H", "2")
    shown = SHOWN.replace("arguments[0]", f"'{feed}'")
    page.wait_until(driver, f"{shown}?.live === 'live'", "the plan and the live stream")
    driver.execute_script("window.samePage = true")
    return page.wait_until(driver, shown, "the marked page")


async def tomorrow_completed(settings: Settings, world: MoneyWorld) -> int:
    """The second half of the feed's tomorrow priced (as an import sets prices), then a rules
    round that tells the owner; where that half begins."""
    noon = local_midnight(MONEY_ZONE, world.seeded_at, 1) + 12 * 3600
    end = local_midnight(MONEY_ZONE, world.seeded_at, 2)
    conn = await asyncpg.connect(settings.database.url)
    try:
        await conn.execute(
            "SELECT cluster.set_prices($1, array_agg(tstzrange(to_timestamp(s),"
            " to_timestamp(s + 900), '[)') ORDER BY s), array_agg($4::float8 ORDER BY s))"
            " FROM generate_series($2::bigint, $3::bigint - 900, 900) s",
            world.area,
            noon,
            end,
            CHEAP,
        )

        async def ran() -> bool:
            return await evaluate(conn, settings.notifications) is not None  # type: ignore[arg-type]

        await eventually(ran, within=30, what="a rules round of this test's own")
    finally:
        await conn.close()
    return noon


async def test_the_price_curve_and_the_plan_take_tomorrows_prices_when_they_come_live(
    money_world: MoneyWorld, settings: Settings
) -> None:
    world = money_world
    feed = world.feeds["dynamic"]
    end = local_midnight(MONEY_ZONE, world.seeded_at, 2)
    with chromium() as driver:
        before = await asyncio.to_thread(open_and_plan, driver, world)
        # Before: tomorrow's afternoon is a gap, and the plan stops where the prices do.
        assert "Tomorrow's market prices are not all published yet" in before["note"]
        assert max(before["times"]) < end
        noon = await tomorrow_completed(settings, world)
        assert datetime.fromisoformat(before["plan"]["blocks"][0]["start_utc"]).timestamp() < noon

        redrawn = f"""(() => {{
          const s = {SHOWN.replace("arguments[0]", f"'{feed}'")};
          return s && !s.note.includes('not all published')
            && s.plan.prices_known_until !== {before["plan"]["prices_known_until"]!r} ? s : null;
        }})()"""
        after = await asyncio.to_thread(page.wait_until, driver, redrawn, "tomorrow's prices drawn")

    # The same page, its curve to the end of tomorrow, and the plan's hour at the new cheap
    # price of tomorrow afternoon, which the plan before could not see.
    assert after["same_page"]
    assert max(after["times"]) == end
    (block,) = after["plan"]["blocks"]
    assert datetime.fromisoformat(block["start_utc"]).timestamp() >= noon
    assert after["plan"]["status"] == "ok"
