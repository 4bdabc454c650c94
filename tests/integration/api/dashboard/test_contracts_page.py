"""Which contract? on the page, in a real headless Chromium: a feed on a fixed price with a
daily charge and consumption in two months (the first ten days of each of the two before this
one, in the default period of the last 12 whole local months), and two contracts in the
catalogue (day and night with NL's holidays, and a dynamic one on a price area of its own). The
panel lists the current contract and the catalogue's, ranked, each total and difference as
`POST /feeds/{id}/what-if` answers them, a bar per month and contract, the market price
achieved, the note that load is not shifted; its table of months opens on a click.

Seeded with energy_platform.seeding, a clamp's readings made into points and money by the
engine's drain (tests/support/page.py seeded), as the money panels' feeds are
(tests/integration/billing/conftest.py): the points must be at known times.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import asyncpg
import psycopg
import pytest_asyncio
from selenium.webdriver.common.by import By

from energy_platform import seeding
from energy_platform.core.settings import Settings
from tests.support.browser import chromium
from tests.support.contracts import DAY_NIGHT
from tests.support.data import data_api
from tests.support.http import http_client
from tests.support.page import ZONE, open_feed, seeded, shown, sign_in, wait_until

# Where the panel's screenshot goes (not committed), as test_page.py's.
SCREENSHOTS = Path(
    os.environ.get(
        "EP_SCREENSHOT_DIR", Path(__file__).resolve().parents[4] / ".local" / "screenshots"
    )
)
PRICE = 0.30  # the current contract's price per kWh, what the engine charges the seeded power
STANDING = 0.45  # a day


@dataclass
class ContractsWorld:
    url: str
    user: str
    token: str
    feed: str
    names: dict[str, str]
    """Catalogue names of this test's contracts: ``day-night`` and ``dynamic``."""
    area: str
    months: list[str]
    """The seeded months, YYYY-MM."""


def month_starts(zone: str) -> list[datetime]:
    """The local starts of the month two before this one, the one before, and this one."""
    tz = ZoneInfo(zone)
    first = datetime.now(tz).date().replace(day=1)
    starts = []
    for back in (2, 1, 0):
        year, month = divmod(first.year * 12 + first.month - 1 - back, 12)
        starts.append(datetime(year, month + 1, 1, tzinfo=tz))
    return starts


def power_readings(stretches: list[tuple[int, int]]) -> list[tuple[int, float]]:
    """A clamp's power (W) every 5 minutes over each ``(start, end)``: 1.2 kW from 06:00 to
    22:00 UTC, 0.4 kW from 22:00 to 06:00, each switch read a second before it too, so that a
    bucket has 30 or 10 Wh (the one before a switch 0.11 Wh nearer the other)."""
    readings = []
    for start, end in stretches:
        for t in range(start, end + 1, 300):
            if t % 86_400 in (21_600, 79_200) and t > start:
                readings.append((t - 1, readings[-1][1]))
            readings.append((t, 1200.0 if 21_600 <= t % 86_400 < 79_200 else 400.0))
    return readings


async def _seed(conn: asyncpg.Connection, area: str) -> ContractsWorld:
    user = await seeding.add_user(conn, f"page-contracts-{area}")
    starts = month_starts(ZONE)
    begin, end = (int(s.timestamp()) for s in (starts[0], starts[-1]))
    feed = await seeding.add_feed(
        conn,
        user.id,
        "DB0000000000001D",
        title="Contract home",
        timezone=ZONE,
        start=starts[0].astimezone(UTC),
        end=starts[0].astimezone(UTC).replace(year=starts[0].year + 1),
    )
    # The first ten days of each of the two months before this one: 1.2 kW by day, 0.4 kW by
    # night, each bucket priced by the engine at the fixed price below. Ten days, not the whole
    # months: the engine's drain took 5 to 8 s more for two months of buckets.
    clamp = await seeding.raw_stream(conn, feed, 1, 1)
    firsts = [int(s.timestamp()) for s in starts[:2]]
    await seeding.write_points(conn, clamp, power_readings([(t, t + 10 * 86_400) for t in firsts]))
    await conn.execute(
        "SELECT cluster.set_tariff($1, 'power', '-infinity', ARRAY['00:00'::time],"
        " ARRAY[$2::float8], NULL, 1, $3)",
        feed,
        PRICE,
        STANDING,
    )
    # The area's hourly prices over the same months: cheap at night, dear by day.
    await conn.execute(
        "SELECT cluster.set_prices($1, array_agg(tstzrange(to_timestamp(s), to_timestamp(s + 3600),"
        " '[)') ORDER BY s), array_agg(CASE WHEN mod(s, 86400) BETWEEN 21600 AND 79199"
        " THEN 0.14 ELSE 0.06 END ORDER BY s)) FROM generate_series($2::bigint, $3::bigint - 3600,"
        " 3600) s",
        area,
        begin,
        end,
    )
    suffix = secrets.token_hex(3)
    names = {"day-night": f"page-day-night-{suffix}", "dynamic": f"page-dynamic-{suffix}"}
    contracts = {
        "day-night": DAY_NIGHT,
        "dynamic": {"area": area, "price": 0.12, "vat": 21, "standing": 5, "standing_per": "month"},
    }
    for key, name in names.items():
        await conn.execute(
            "INSERT INTO cluster.contracts (name, contract) VALUES ($1, $2::jsonb)",
            name,
            json.dumps(contracts[key]),
        )
    months = [s.strftime("%Y-%m") for s in starts[:2]]
    return ContractsWorld("", str(user.id), user.token, str(feed), names, area, months)


@pytest_asyncio.fixture(scope="module")
async def contracts_world(database_url: str, settings: Settings) -> AsyncIterator[ContractsWorld]:
    # The price table and the catalogue are the database's, shared by every test of the session:
    # an area and contract names of this test's own.
    area = f"PAGE-{secrets.token_hex(3).upper()}"
    world = await seeded(database_url, lambda conn: _seed(conn, area))
    async with data_api(settings) as url:
        world.url = url
        yield world
    with psycopg.connect(database_url) as conn:
        conn.execute(
            "DELETE FROM cluster.contracts WHERE name = ANY(%s)", (list(world.names.values()),)
        )
        conn.execute("DELETE FROM cluster.feeds WHERE id = %s", (world.feed,))
        conn.execute("DELETE FROM cluster.price_areas WHERE area = %s", (area,))
        conn.execute("DELETE FROM cluster.users WHERE id = %s", (world.user,))


# Once the panel shows the feed's comparison: what it says, and what the page asked.
SHOWN = """(() => {
  const panel = document.querySelector('#contracts-panel');
  const asked = window.dashboard.whatIf;
  if (panel.dataset.feed !== arguments[0] || panel.dataset.state !== 'shown') return null;
  if (asked?.feed !== arguments[0]) return null;
  const text = (s) => document.querySelector(s).textContent;
  return {
    rows: [...document.querySelectorAll('#contracts-totals tr[data-contract]')]
      .map((tr) => [tr.dataset.contract, ...[...tr.cells].map((c) => c.textContent)]),
    bars: [...document.querySelectorAll('#contracts-bars .month')].map((m) => [m.dataset.month,
      [...m.querySelectorAll('.bar[data-contract]')].map((b) => b.dataset.contract)]),
    market: [...document.querySelectorAll('#contracts-market p')].map((p) => p.dataset.contract),
    summary: text('#contracts-summary'), note: text('#contracts-note'),
    status: text('#contracts-status'),
    table_hidden: document.querySelector('#contracts-table').hidden,
    asked: asked.asked, from: asked.answer.from, to: asked.answer.to,
  };
})()"""

TABLE = """(() => {
  const table = document.querySelector('#contracts-table');
  if (table.hidden || !table.getClientRects().length) return null;
  return [...table.querySelectorAll('tr[data-month]')].map((tr) => [tr.dataset.month,
    tr.dataset.contract, tr.cells[8].textContent]);
})()"""


def browse(world: ContractsWorld) -> tuple[dict[str, Any], list[list[str]]]:
    """Opens the feed, waits for Which contract?, then opens its table, then narrows the window
    to a phone's; what each showed."""
    with chromium() as driver:
        sign_in(driver, world.url, world.user, world.token, world.feed)
        open_feed(driver, world.feed)
        seen = wait_until(
            driver, SHOWN.replace("arguments[0]", f"'{world.feed}'"), "Which contract?"
        )
        driver.find_element(By.CSS_SELECTOR, "#contracts-panel button.toggle").click()
        table = wait_until(driver, TABLE, "the table of months")
        driver.execute_script("document.querySelector('#contracts-panel').scrollIntoView()")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(SCREENSHOTS / "contracts.png"))
        # A phone: the bars and the table scroll within the panel, the page only downwards.
        driver.set_window_size(360, 800)
        wait_until(driver, "document.documentElement.clientWidth <= 360", "a phone's width")
        seen["phone_width"] = driver.execute_script("return document.documentElement.scrollWidth")
    return seen, table


async def test_which_contract_ranks_the_current_contract_against_the_catalogue(
    contracts_world: ContractsWorld,
) -> None:
    world = contracts_world
    seen, table = await asyncio.to_thread(browse, world)
    async with http_client(
        base_url=world.url, headers={"Authorization": f"Bearer {world.token}"}
    ) as http:
        response = await http.post(
            f"/feeds/{world.feed}/what-if",
            json={
                "from": seen["from"],
                "to": seen["to"],
                "contracts": [{"name": name} for name in seen["asked"]],
            },
        )
    assert response.status_code == 200, response.text
    answer = response.json()
    currency = answer["currency"]

    def money(value: float) -> str:
        return f"{shown(value)} {currency}"

    # The catalogue's contracts by name (the module's database's catalogue: others may be in it).
    assert set(world.names.values()) <= set(seen["asked"])
    # The default period: the last 12 whole local months, the seeded two among them.
    months = [m["month"] for m in answer["contracts"][0]["months"]]
    assert len(months) == 12
    assert months[-2:] == world.months
    assert seen["table_hidden"]  # read before the click
    assert seen["status"] == ""
    assert seen["phone_width"] <= 360

    # The current contract and each asked, ranked, with the endpoint's totals and differences.
    contracts = answer["contracts"]
    assert [c["name"] for c in contracts] == ["current", *seen["asked"]]
    expected = [
        [
            c["name"],
            f"{c['rank']}.",
            "Your contract" if c["name"] == "current" else c["name"],
            money(c["total"]),
            "yours"
            if c["name"] == "current"
            else f"{'+' if c['difference'] > 0.005 else ''}{money(c['difference'])}",
        ]
        for c in sorted(contracts, key=lambda c: c["rank"])
    ]
    assert [row[:5] for row in seen["rows"]] == expected
    # Twenty days of 1.2 kW by day and 0.4 kW by night at 0.30 (134.40), and a daily charge:
    # real money.
    current = contracts[0]
    assert current["total"] > 100
    assert [m["quantity"] > 0 for m in current["months"]].count(True) == 2

    # A bar per month and contract; the market price achieved for the dynamic contract only.
    assert seen["bars"] == [[m, [c["name"] for c in contracts]] for m in months]
    assert world.names["dynamic"] in seen["market"]
    assert world.names["day-night"] not in seen["market"]
    assert "no shifting" in seen["note"]
    assert answer["note"] in seen["note"]
    cheapest = min(contracts, key=lambda c: c["rank"])
    if cheapest["name"] == "current":
        assert "Your contract was the cheapest" in seen["summary"]
    else:
        assert (
            f"{cheapest['name']} would have cost {money(-cheapest['difference'])} less"
            in seen["summary"]
        )

    # The table: a row per month and contract, each total as the answer's.
    assert table == [
        [m["month"], c["name"], money(m["total"])]
        for k in range(len(months))
        for c in contracts
        for m in [c["months"][k]]
    ]


# Before the page's own scripts: the first what-if is refused as a busy server refuses it.
REFUSE_ONCE = """(() => {
  const real = window.fetch;
  let refused = false;
  window.fetch = (input, init) => {
    const url = String(input instanceof Request ? input.url : input);
    if (!refused && url.includes('/what-if')) {
      refused = true;
      return Promise.resolve(new Response(
        JSON.stringify({ status: 429, title: 'Too Many Requests', detail: 'busy' }),
        { status: 429,
          headers: { 'Content-Type': 'application/problem+json', 'Retry-After': '7' } }));
    }
    return real(input, init);
  };
})();"""

FAILED = """(() => {
  const panel = document.querySelector('#contracts-panel');
  const retry = document.querySelector('#contracts-retry');
  if (panel.dataset.state !== 'failed' || !retry.getClientRects().length) return null;
  return { status: document.querySelector('#contracts-status').textContent, hidden: panel.hidden };
})()"""


def refused_then_asked_again(world: ContractsWorld) -> tuple[dict[str, Any], dict[str, Any]]:
    with chromium() as driver:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": REFUSE_ONCE})
        sign_in(driver, world.url, world.user, world.token, world.feed)
        open_feed(driver, world.feed)
        failed = wait_until(driver, FAILED, "the refusal said in the panel")
        driver.find_element(By.ID, "contracts-retry").click()
        seen = wait_until(
            driver, SHOWN.replace("arguments[0]", f"'{world.feed}'"), "Which contract?"
        )
    return failed, seen


async def test_a_busy_server_is_said_in_the_panel_and_try_again_asks_again(
    contracts_world: ContractsWorld,
) -> None:
    failed, seen = await asyncio.to_thread(refused_then_asked_again, contracts_world)

    assert not failed["hidden"]
    assert failed["status"] == "The server is busy with other comparisons: try again in 7 s."
    assert [row[0] for row in seen["rows"]].count("current") == 1
    assert seen["status"] == ""
