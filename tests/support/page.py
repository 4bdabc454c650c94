"""What the data API page's tests see: the demo user's world (seeded by
tests/integration/api/dashboard/conftest.py) and its time span; and how a test waits for the
page in the browser."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

import asyncpg
import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select

from energy_platform import seeding
from energy_platform.engine.service import drain
from tests.support.engine import CURRENCY
from tests.support.http import http_client
from tests.support.services import until

WEEK = 7 * 86_400
ZONE = "Europe/Prague"
WAIT = 30  # seconds; a week of points over a shared 2-core machine
# UTC+14 all year: its date differs from UTC's for 14 hours of every day, so a page that took
# today or this month from UTC (or from the browser's zone) would show the wrong ones.
MONEY_ZONE = "Pacific/Kiritimati"
STANDING = 0.45  # a day, in the engine's currency
PRICE_PER_KWH = 0.30  # the dynamic tariff's price up to the seeding, and the fixed tariff's


T = TypeVar("T")


@dataclass
class PageWorld:
    url: str
    user: str
    token: str
    feed: str
    now: int
    """The newest point of every stream, a multiple of 5 s."""
    streams: dict[str, str] = field(default_factory=dict)
    notifications: list[str] = field(default_factory=list)

    def client(self) -> httpx.AsyncClient:
        return http_client(base_url=self.url, headers={"Authorization": f"Bearer {self.token}"})


def wait_until(driver: WebDriver, script: str, what: str) -> Any:
    """Polls a JavaScript expression until it is truthy (:func:`until`); its value. A page that
    never shows it fails with what it shows instead and its console."""
    try:
        return until(lambda: driver.execute_script(f"return {script}"), WAIT, what, 0.05)
    except AssertionError as e:
        shown = driver.execute_script(
            "return [document.querySelector('#error')?.textContent,"
            " document.querySelector('#sign-in-error')?.textContent,"
            " document.querySelector('#chart-status')?.textContent]"
        )
        logs = [entry["message"] for entry in driver.get_log("browser")]
        raise AssertionError(f"{e}; the page shows {shown}; console: {logs}") from None


def open_feed(driver: WebDriver, feed: str) -> None:
    """Clicks the button of ``feed`` once it is shown (on a loaded machine it is in the page
    before it is laid out, and a click then is refused as 'not interactable')."""
    selector = f'[data-feed="{feed}"]'
    shown = f"document.querySelector('{selector}')?.getClientRects().length > 0"
    wait_until(driver, shown, f"the button of feed {feed}")
    driver.find_element(By.CSS_SELECTOR, selector).click()


def ask_plan(driver: WebDriver, duration: str, power_kw: str) -> None:
    """Asks the panel When to run it for a load of ``duration`` (an option's ISO 8601 value)
    at ``power_kw``, once the panel is shown."""
    # Shown and laid out (on a loaded machine a panel is unhidden before it has a box, and a
    # click then is refused as 'not interactable').
    laid_out = "document.querySelector('#plan-go')?.getClientRects().length > 0"
    wait_until(
        driver, f"!document.querySelector('#plan-panel').hidden && {laid_out}", "the plan panel"
    )
    Select(driver.find_element(By.ID, "plan-duration")).select_by_value(duration)
    power = driver.find_element(By.ID, "plan-power")
    power.clear()
    power.send_keys(power_kw)
    driver.find_element(By.ID, "plan-go").click()


def sign_in(driver: WebDriver, url: str, user: str, token: str, feed: str) -> None:
    """Signs in on the page at ``url`` and waits for the button of ``feed``."""
    driver.get(url + "/")
    ready = "!document.querySelector('#sign-in button[type=submit]').disabled"
    wait_until(driver, ready, "the page's script")
    driver.find_element(By.ID, "user-id").send_keys(user)
    driver.find_element(By.ID, "token").send_keys(token)
    driver.find_element(By.CSS_SELECTOR, "#sign-in button[type=submit]").click()
    wait_until(driver, f"document.querySelector('[data-feed=\"{feed}\"]')", "the feed")


@dataclass
class MoneyWorld:
    """A user with three feeds for the money panels: ``dynamic`` (a market tariff with a daily
    charge and consumption since its month began), ``fixed`` (one price) and ``none`` (no
    tariff); the price area the dynamic tariff follows (seeded by
    tests/integration/billing/conftest.py)."""

    url: str
    user: str
    token: str
    feeds: dict[str, str]
    zones: dict[str, str]
    area: str
    seeded_at: int
    """When the consumption and the prices were seeded: their dates are this instant's."""

    def client(self) -> httpx.AsyncClient:
        return http_client(base_url=self.url, headers={"Authorization": f"Bearer {self.token}"})


def local_midnight(zone: str, t: int, days: int = 0) -> int:
    """The start of the local date ``days`` after the one holding ``t`` in ``zone``."""
    tz = ZoneInfo(zone)
    date = datetime.fromtimestamp(t, tz).date() + timedelta(days=days)
    return int(datetime(date.year, date.month, date.day, tzinfo=tz).timestamp())


def shown(value: float, digits: int = 2) -> str:
    """``value`` as the page writes it (Intl.NumberFormat, 'en'): ICU rounds the number's
    shortest decimal form (its repr), half away from zero; thousands grouped; no sign on a
    value that rounds to 0."""
    rounded = Decimal(repr(value)).quantize(Decimal(1).scaleb(-digits), ROUND_HALF_UP)
    return f"{abs(rounded) if rounded == 0 else rounded:,.{digits}f}"


async def seeded(database_url: str, seed: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
    """What ``seed`` returns, run in one transaction on a connection of its own (a page test's
    world is whole or not there), then made into processed points, money and rollups by the
    engine's drain, as a cluster's engine makes them of what ingest stored."""
    conn = await asyncpg.connect(database_url)
    try:
        async with conn.transaction():
            world = await seed(conn)
        await drain(conn, seeding.DRAIN, currency=CURRENCY)
        return world
    finally:
        await conn.close()
