"""The page's first screen is the overview (issue 50), in Chromium: its numbers are those of
``GET /feeds/{id}/overview``, every chart has its table behind a toggle, it fits a 360 px wide
phone, a point published live moves "now" and today's money, and a read token sees it all and
changes nothing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from energy_platform.core.settings import Settings
from tests.support.browser import chromium
from tests.support.engine import process
from tests.support.http import http_client
from tests.support.live import Home, stored
from tests.support.page import PageWorld, sign_in, wait_until
from tests.support.platform import Platform, paired_homebase, platform_in_loop, platform_settings
from tests.support.platform import with_cluster as registered

NOTHING = "\u2013"  # the page's dash for a figure it has not
DRAWN = "document.querySelector('#overview').dataset.state === 'drawn' && window.dashboard.overview"
# What the first screen shows, read from the page.
SHOWN = """
const text = (s) => document.querySelector(s)?.textContent ?? null;
return {
  total: text('#ov-total'), projection: text('#ov-projection'), now: text('#ov-now-power'),
  lines: [...document.querySelectorAll('#ov-lines tr')].map((r) => [r.dataset.line,
          ...[...r.cells].map((c) => c.textContent)]),
  baseload: text('#ov-baseload'), coverage: text('#ov-coverage'),
  // The table's rows with a cost: the buckets with data (others hold the compared period).
  rows: (() => {
    const rows = [...document.querySelectorAll('#ov-chart-table tr')]
      .map((r) => [...r.cells].map((c) => c.textContent));
    const cost = rows[0]?.findIndex((h) => h.startsWith('Cost')) ?? -1;
    return rows.slice(1).filter((r) => r[cost] !== '\u2013').length;
  })(),
  tableHidden: document.querySelector('#ov-chart-table').hidden,
  canvas: !!document.querySelector('#ov-chart canvas'),
  width: document.documentElement.scrollWidth,
};"""


def money(value: float, currency: str) -> str:
    """As the page writes money (bill.js): two decimals, thousands grouped, no sign for 0."""
    text = f"{value:,.2f}"
    return f"{'0.00' if text == '-0.00' else text} {currency}"


def open_feed(driver: WebDriver, url: str, user: str, token: str, feed: str) -> Any:
    sign_in(driver, url, user, token, feed)
    driver.find_element(By.CSS_SELECTOR, f'[data-feed="{feed}"]').click()
    return wait_until(driver, DRAWN, "the overview drawn")


async def api_overview(url: str, token: str, feed: str, **params: str) -> dict[str, Any]:
    async with http_client(base_url=url) as http:
        answer = await http.get(
            f"/feeds/{feed}/overview",
            params=params,
            headers={"Authorization": f"Bearer {token}"},
        )
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def assert_shows(seen: dict[str, Any], answer: dict[str, Any]) -> None:
    """The first screen's figures are the answer's."""
    currency = answer["currency"]
    assert seen["total"] == money(answer["so_far"]["total"], currency)
    lines = [[x["medium"], money(x["money"], currency)] for x in answer["so_far"]["lines"]]
    lines.append(["standing", money(answer["so_far"]["standing"], currency)])
    assert [row[0:1] + row[2:3] for row in seen["lines"]] == lines
    projection = answer["projection"]["total"]
    assert seen["projection"] == (NOTHING if projection is None else money(projection, currency))


async def test_the_first_screen_is_the_overview_and_fits_a_phone(page_world: PageWorld) -> None:
    def look() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        with chromium() as driver:
            drawn = open_feed(
                driver, page_world.url, page_world.user, page_world.token, page_world.feed
            )
            seen = driver.execute_script(SHOWN)
            driver.find_element(By.CSS_SELECTOR, "button[data-table=ov-chart-table]").click()
            table = driver.execute_script(SHOWN)
            driver.set_window_size(360, 800)
            phone = wait_until(
                driver,
                "document.documentElement.clientWidth <= 360 && window.dashboard.overview",
                "a phone's width",
            )
            assert phone
            driver.refresh()
            wait_until(driver, DRAWN, "the overview drawn on a phone")
            narrow = driver.execute_script(SHOWN)
        return drawn, seen, {"table": table, "narrow": narrow}

    drawn, seen, more = await asyncio.to_thread(look)
    answer = drawn["answer"]
    assert_shows(seen, answer)
    # The answer it drew is the API's (what depends on the clock aside: the market's mean over
    # the period so far is a time-weighted mean up to now, equal but for its last digits).
    again = await api_overview(page_world.url, page_world.token, page_world.feed)
    mean, mean_again = (
        answer["so_far"].pop("market_average_price"),
        again["so_far"].pop("market_average_price"),
    )
    assert mean_again == pytest.approx(mean, rel=1e-12)
    for key in ("so_far", "buckets", "meters", "compare", "from", "to", "baseload_w"):
        assert again[key] == answer[key], key
    assert answer["buckets"], "the demo feed has today's data"
    assert seen["canvas"]
    assert seen["tableHidden"]
    # The table behind the chart: a row with a cost per bucket with data.
    assert not more["table"]["tableHidden"]
    assert more["table"]["rows"] == len(answer["buckets"])
    # 360 px wide: drawn, nothing wider than the screen.
    assert more["narrow"]["canvas"]
    assert more["narrow"]["width"] <= 360
    print(
        f"overview of a day: read in {drawn['fetchMs']:.0f} ms, drawn in {drawn['drawMs']:.0f} ms"
    )


# --- live, and a read token ----------------------------------------------------------------------


@pytest.fixture(scope="module")
async def platform(settings: Settings, mqtt_url: str) -> AsyncIterator[Platform]:
    async with platform_in_loop(await registered(platform_settings(settings, mqtt_url))) as served:
        yield served


@pytest.fixture
async def home(platform: Platform, db: asyncpg.Connection) -> Home:
    """A paired homebase with a tariff, whose feed has today's first minutes processed."""
    sn, secret, feed = await paired_homebase(platform)
    assert feed is not None
    home = Home(platform, sn, secret, feed)
    await db.execute(
        "SELECT cluster.set_tariff($1, 'power', '-infinity', ARRAY['00:00'::time],"
        " ARRAY[0.25::float8])",
        int(feed),
    )
    start = int(time.time()) - 600
    await home.publish_many(list(range(start, start + 300, 10)), lambda _: 100.0)
    await stored(db, home, start + 290)
    await process(db)
    return home


async def test_a_point_published_live_moves_now_and_today(
    platform: Platform, home: Home, db: asyncpg.Connection
) -> None:
    def opened(driver: WebDriver) -> Any:
        return open_feed(driver, platform.api, platform.user_id, platform.user_token, home.feed)

    with chromium() as driver:
        before = await asyncio.to_thread(opened, driver)
        await asyncio.to_thread(
            wait_until, driver, "document.querySelector('#live').dataset.state === 'live'", "live"
        )
        # 3 kW on phase 1 for five minutes, up to now: the engine's buckets reach the page live.
        start = int(time.time()) - 300
        await home.publish_many(list(range(start, start + 300, 10)), lambda _: 3000.0)
        await stored(db, home, start + 290)
        await process(db)
        answer = await api_overview(platform.api, platform.user_token, home.feed)
        assert answer["now"]["power_w"] > 2000  # a whole bucket at 3 kW is 3,000 W
        now = f"{answer['now']['power_w']:,.0f} W"
        seen = await asyncio.to_thread(
            wait_until,
            driver,
            f"document.querySelector('#ov-now-power').textContent === '{now}'"
            f" && document.querySelector('#ov-total').textContent"
            f" === '{money(answer['so_far']['total'], answer['currency'])}'"
            " && window.dashboard.overview",
            f"now at {now} and today's total",
        )
    old, new = before["answer"], seen["answer"]
    assert new["so_far"]["total"] > old["so_far"]["total"]
    assert new["so_far"]["lines"][0]["quantity"] > old["so_far"]["lines"][0]["quantity"]


async def test_a_read_token_sees_the_overview_and_changes_nothing(
    platform: Platform, home: Home
) -> None:
    async with http_client(
        base_url=platform.api, headers={"Authorization": f"Bearer {platform.user_token}"}
    ) as http:
        made = await http.post(
            f"/users/{platform.user_id}/tokens", json={"name": "overview-read", "scope": "read"}
        )
        assert made.status_code == 201, made.text
        token = made.json()["token"]
        try:

            def look() -> tuple[Any, list[str], dict[str, Any]]:
                with chromium() as driver:
                    driver.get(platform.api + "/")
                    # Every request the page makes, with its method.
                    driver.execute_script(
                        "const f = window.fetch; window.methods = [];"
                        " window.fetch = (u, o) => { window.methods.push((o?.method ?? 'GET')"
                        " + ' ' + new URL(u, location.origin).pathname); return f(u, o); };"
                    )
                    driver.find_element(By.ID, "user-id").send_keys(platform.user_id)
                    driver.find_element(By.ID, "token").send_keys(token)
                    driver.find_element(By.CSS_SELECTOR, "#sign-in button[type=submit]").click()
                    wait_until(
                        driver, f"document.querySelector('[data-feed=\"{home.feed}\"]')", "feeds"
                    )
                    driver.find_element(By.CSS_SELECTOR, f'[data-feed="{home.feed}"]').click()
                    drawn = wait_until(driver, DRAWN, "the overview drawn")
                    wait_until(
                        driver,
                        "document.querySelector('#chart').dataset.state !== 'loading'",
                        "the chart",
                    )
                    for period in ("week", "month", "year"):
                        driver.find_element(By.CSS_SELECTOR, f'[data-period="{period}"]').click()
                        wait_until(
                            driver,
                            f"{DRAWN} && window.dashboard.overview.answer.period === '{period}'",
                            f"the {period}",
                        )
                    seen = driver.execute_script(SHOWN)
                    return drawn, driver.execute_script("return window.methods"), seen

            drawn, methods, seen = await asyncio.to_thread(look)
            year = await api_overview(platform.api, token, home.feed, period="year")
        finally:
            await http.delete(f"/users/{platform.user_id}/tokens/overview-read")
    assert drawn["answer"]["so_far"]["lines"], "the read token sees the money"
    assert_shows(seen, year)
    assert methods
    # Only reads: GETs, and Which contract?'s what-if, a read that takes a body (docs/api.md).
    reads = [m for m in methods if m != f"POST /feeds/{home.feed}/what-if"]
    assert all(m.startswith("GET ") for m in reads), methods
    assert any(m.endswith("/overview") for m in methods)
