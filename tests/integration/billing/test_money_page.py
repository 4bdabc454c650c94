"""A feed's money on the page, in a real headless Chromium: this month's bill so far and
projected, and the price curve of today and tomorrow (a dynamic tariff's with a gap where
tomorrow's market prices are not published yet, a fixed price said to be one, no curve without a
tariff), each refreshed when another feed is opened.

What the page shows is checked against what the bill and price endpoints answer for the local
dates computed here from the same clock and zone. The answers are read before and after the
page: a local day may begin while the test runs, and the page's figures are then one or the
other.
"""

from __future__ import annotations

import asyncio
import calendar
import time
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from tests.support.browser import chromium
from tests.support.page import (
    MONEY_ZONE,
    PRICE_PER_KWH,
    STANDING,
    MoneyWorld,
    ask_plan,
    local_midnight,
    open_feed,
    shown,
    sign_in,
    wait_until,
)

MEDIA = {"power": "Electricity", "gas": "Gas", "water": "Water", "export": "Fed in"}

# Once the money panels show the feed's answers: what they say, and what the page fetched.
SHOWN = """(() => {
  const m = document.querySelector('#money');
  if (m.dataset.feed !== arguments[0] || m.dataset.state !== 'shown') return null;
  if (window.dashboard.money?.feed !== arguments[0]) return null;
  const text = (s) => document.querySelector(s).textContent;
  const prices = document.querySelector('#price-panel');
  return {
    dates: text('#bill-dates'), total: text('#bill-total'),
    projected: document.querySelector('#bill-projection').hidden ? null : text('#bill-projected'),
    lines: [...document.querySelectorAll('#bill-lines tr[data-line]')]
      .map((tr) => [...tr.cells].map((c) => c.textContent)),
    note: text('#bill-note'),
    warnings: document.querySelector('#bill-warnings').hidden ? null
      : [...document.querySelectorAll('#bill-warnings li')].map((li) => li.textContent),
    prices: { hidden: prices.hidden, state: prices.dataset.state, kind: text('#price-kind'),
              note: text('#price-note'), canvas: !!document.querySelector('#price-chart canvas') },
    money: window.dashboard.money,
  };
})()"""


def month_of(zone: str, t: int) -> tuple[str, str]:
    """The first and last local date of the month holding ``t`` in ``zone``."""
    day = datetime.fromtimestamp(t, ZoneInfo(zone)).date()
    last = calendar.monthrange(day.year, day.month)[1]
    return day.replace(day=1).isoformat(), day.replace(day=last).isoformat()


def as_page(answer: dict[str, Any]) -> dict[str, Any]:
    """What the bill panel shows of a /bill answer."""
    currency = answer["currency"]

    def money(value: float) -> str:
        return f"{shown(value)} {currency}"

    # A bill without lines shows no projection.
    projected = answer["projected_total"] if answer["lines"] else None
    return {
        "dates": f"{answer['from']} to {answer['to']}",
        "total": money(answer["total"]),
        "projected": None if projected is None else money(projected),
        "lines": [
            [
                MEDIA[line["medium"]],
                f"{shown(line['quantity'], 1 if line['unit'] == 'kWh' else 2)} {line['unit']}",
                f"{money(line['credit'])} earned" if "credit" in line else money(line["energy"]),
                money(line["standing"]),
                money(line["total"]),
            ]
            for line in answer["lines"]
        ],
    }


async def bills(http: httpx.AsyncClient, world: MoneyWorld) -> dict[str, dict[str, Any]]:
    """Each feed's /bill of its current local month, as of now."""
    now = int(time.time())
    answers: dict[str, dict[str, Any]] = {}
    for key, feed in world.feeds.items():
        first, last = month_of(world.zones[key], now)
        answer = await http.get(f"/feeds/{feed}/bill", params={"from": first, "to": last})
        assert answer.status_code == 200, answer.text
        answers[key] = answer.json()
    return answers


def browse(world: MoneyWorld) -> dict[str, Any]:
    """Opens the dynamic, the fixed and the untariffed feed in turn; what each showed."""
    seen: dict[str, Any] = {}
    with chromium() as driver:
        sign_in(driver, world.url, world.user, world.token, world.feeds["dynamic"])
        for key in ("dynamic", "fixed", "none"):
            feed = world.feeds[key]
            open_feed(driver, feed)
            seen[key] = wait_until(
                driver, SHOWN.replace("arguments[0]", f"'{feed}'"), f"the money of the {key} feed"
            )
    return seen


async def test_the_page_shows_this_months_bill_and_the_price_curve_of_today_and_tomorrow(
    money_world: MoneyWorld,
) -> None:
    world = money_world
    async with world.client() as http:
        before = await bills(http, world)
        seen = await asyncio.to_thread(browse, world)
        after = await bills(http, world)
        shown_prices = seen["dynamic"]["money"]["prices"]["answer"]
        prices = await http.get(
            f"/feeds/{world.feeds['dynamic']}/prices",
            params={"from": shown_prices["from"], "to": shown_prices["to"]},
        )
    assert prices.status_code == 200, prices.text

    # Each panel shows its feed's bill of the local month, formatted from the answer.
    for key, page in seen.items():
        view = {k: page[k] for k in ("dates", "total", "projected", "lines")}
        assert view in (as_page(before[key]), as_page(after[key])), key

    # The dynamic feed (UTC+14): its month, its days begun each charged once.
    dynamic = seen["dynamic"]
    bill = dynamic["money"]["bill"]
    now = dynamic["money"]["now"]
    local = datetime.fromtimestamp(now, ZoneInfo(MONEY_ZONE))
    assert (bill["from"], bill["to"]) == month_of(MONEY_ZONE, now)
    (power,) = bill["lines"]
    assert power["standing"] == pytest.approx(STANDING * local.day)
    # 0.0075 a bucket: 1 kW at 0.30 a kWh; nothing seeded before the month began.
    assert power["energy"] == pytest.approx(power["quantity"] * PRICE_PER_KWH)
    assert dynamic["total"] == f"{shown(power['energy'] + power['standing'])} {bill['currency']}"
    assert bill["complete"] is False
    assert "Not final" in dynamic["note"]
    # A projection from the days already over: none on the month's first day.
    assert (dynamic["projected"] is None) == (local.day == 1)

    # Its curve: the page's today and tomorrow in the feed's zone, drawn as the API answers.
    curve = dynamic["money"]["prices"]
    today = local.date().isoformat()
    assert (shown_prices["from"], shown_prices["to"]) == (
        today,
        (local.date() + timedelta(days=1)).isoformat(),
    )
    assert shown_prices == prices.json()
    stretches = shown_prices["prices"]
    assert stretches
    assert curve["range"] == [local_midnight(MONEY_ZONE, now), local_midnight(MONEY_ZONE, now, 2)]
    assert dynamic["prices"] == {
        "hidden": False,
        "state": "drawn",
        "kind": dynamic["prices"]["kind"],
        "note": dynamic["prices"]["note"],
        "canvas": True,
    }
    assert dynamic["prices"]["kind"].startswith("A dynamic tariff: the price follows the market")
    # Every stretch is a step, the last one ending at its own end; after it, up to the end of
    # tomorrow, nothing: the prices not published yet are a gap, not a price.
    values = [v for v in curve["values"] if v is not None]
    assert values == [s["price"] for s in stretches] + [stretches[-1]["price"]]
    assert curve["times"][-1] == stretches[-1]["end"]
    assert curve["range"][1] - curve["times"][-1] >= 12 * 3600  # tomorrow's afternoon at least
    assert "not all published yet" in dynamic["prices"]["note"]

    # A fixed tariff: a curve too, said to be one price.
    fixed = seen["fixed"]
    currency = fixed["money"]["bill"]["currency"]
    assert fixed["prices"]["state"] == "drawn"
    assert fixed["prices"]["kind"] == f"A fixed price: 0.3000 {currency}/kWh, all day."
    assert "gap" not in fixed["prices"]["note"]

    # Its supply metered twice, none marked main: the page shows the bill's warning.
    assert fixed["warnings"] == fixed["money"]["bill"]["warnings"]
    assert len(fixed["warnings"]) == 1
    assert fixed["warnings"][0].startswith("Electricity: the consumption of channels 1 and 5")
    assert dynamic["warnings"] is None

    # No tariff: no curve, and a bill of nothing.
    untariffed = seen["none"]
    assert untariffed["prices"]["hidden"] is True
    assert untariffed["prices"]["state"] == "none"
    assert untariffed["money"]["prices"]["answer"]["prices"] == []
    assert untariffed["total"] == f"0.00 {currency}"
    assert "Nothing metered or charged this month." in untariffed["note"]


PLANNED = """(() => {
  const panel = document.querySelector('#plan-panel');
  if (panel.dataset.state !== 'shown' || !window.dashboard.plan) return null;
  return { answer: document.querySelector('#plan-answer').textContent,
           note: document.querySelector('#plan-note').textContent,
           marked: document.querySelector('#price-panel').dataset.plan,
           canvas: !!document.querySelector('#price-chart canvas'),
           plan: window.dashboard.plan };
})()"""


def plan_on_page(world: MoneyWorld) -> tuple[bool, dict[str, Any]]:
    """Opens the feed without a tariff (no panel), then the dynamic one, and asks when to run
    an hour at 2 kW; whether the first showed the panel, and what the second showed."""
    with chromium() as driver:
        sign_in(driver, world.url, world.user, world.token, world.feeds["none"])
        none = world.feeds["none"]
        open_feed(driver, none)
        wait_until(driver, SHOWN.replace("arguments[0]", f"'{none}'"), "the untariffed money")
        hidden: bool = driver.execute_script("return document.querySelector('#plan-panel').hidden")
        dynamic = world.feeds["dynamic"]
        open_feed(driver, dynamic)
        wait_until(driver, SHOWN.replace("arguments[0]", f"'{dynamic}'"), "the dynamic money")
        ask_plan(driver, "PT1H", "2")
        return hidden, wait_until(driver, PLANNED, "the plan")


async def test_the_page_plans_when_to_run_a_load_on_the_price_curve(
    money_world: MoneyWorld,
) -> None:
    world = money_world
    hidden, seen = await asyncio.to_thread(plan_on_page, world)
    plan = seen["plan"]
    async with world.client() as http:
        again = await http.get(
            f"/feeds/{world.feeds['dynamic']}/plan",
            params={"duration": "PT1H", "power_kw": "2", "earliest": plan["earliest"]},
        )
    assert again.status_code == 200, again.text

    # No prices, no panel; the dynamic feed's plan is the API's for the same window.
    assert hidden is True
    assert plan["blocks"] == again.json()["blocks"]
    assert plan["cost"] == pytest.approx(again.json()["cost"])
    (block,) = plan["blocks"]
    assert block["kwh"] == pytest.approx(2.0)
    # Said with its local start and end, its cost and the saving against starting now.
    currency = plan["currency"]
    assert f"at {block['start'][11:16]}, until {block['end'][11:16]}: " in seen["answer"]
    assert f"{shown(plan['cost'])} {currency}" in seen["answer"]
    if plan["saving"] > 0.005:
        assert f"{shown(plan['saving'])} {currency} less than starting now" in seen["answer"]
    # Tomorrow's afternoon is not published (the world's prices end at its noon): the window
    # ends where the prices do, and the page says so.
    assert plan["status"] == "ok"
    assert plan["deadline"] == plan["prices_known_until"]
    assert "Prices are known until tomorrow 12:00; the plan looks no further." in seen["note"]
    # And drawn: the price curve shaded where the plan runs.
    start = int(datetime.fromisoformat(block["start_utc"].replace("Z", "+00:00")).timestamp())
    assert seen["marked"] == f"{start}-{start + 3600}"
    assert seen["canvas"] is True
