"""The pictures of the page in docs/images/, made from a seeded feed: the overview of a year on a
desktop (overview-desktop.png, 1280 px wide) and of a month on a phone (overview-phone.png,
360 px wide), in Debian's headless Chromium. The feed is the benchmarks' household
(benchmarks/household.py: 2025 at 90 s, a dynamic tariff with a standing charge, export, a heat
pump as a sub-meter), seeded into a database of its own. It also prints how long the year's
overview took from the click to the drawn screen, five times: how "draws within 1 s on the local
stack" is measured (docs/dashboard.md#the-overview).

    scripts/local-stack.sh with .venv/bin/python scripts/screenshots.py
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

import psycopg
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # benchmarks/ and tests/support/ beside the package

from benchmarks.data_api import TOKEN, start_servers, stop_servers  # noqa: E402
from benchmarks.household import household  # noqa: E402
from energy_platform.core.settings import HttpSettings  # noqa: E402
from tests.support.browser import chromium  # noqa: E402
from tests.support.services import free_port, until  # noqa: E402

IMAGES = ROOT / "docs" / "images"
NEIGHBOURS = 200  # as `make bench` seeds the household: one database serves both
WAIT = 60  # seconds: a loaded 2-core machine


def wait_until(driver: WebDriver, script: str, what: str) -> Any:
    """A JavaScript expression's value once it is truthy."""
    return until(lambda: driver.execute_script(f"return {script}"), WAIT, what, 0.05)


DRAWN = "document.querySelector('#overview').dataset.state === 'drawn' && window.dashboard.overview"


def shown(driver: WebDriver, period: str, first: str) -> Any:
    """The overview once the page has drawn ``period`` from ``first``."""
    return wait_until(
        driver,
        f"{DRAWN} && window.dashboard.overview.answer.period === '{period}'"
        f" && window.dashboard.overview.answer.from === '{first}' && window.dashboard.overview",
        f"the {period} from {first}",
    )


def click(driver: WebDriver, selector: str) -> None:
    driver.find_element(By.CSS_SELECTOR, selector).click()


def pictures(base: str, user: int) -> list[float]:
    """Both pictures; the year's times from click to drawn (ms)."""
    times: list[float] = []
    with chromium() as driver:
        driver.set_window_size(1280, 1500)
        driver.get(base + "/")
        driver.find_element(By.ID, "user-id").send_keys(str(user))
        driver.find_element(By.ID, "token").send_keys(TOKEN)
        click(driver, "#sign-in button[type=submit]")
        wait_until(driver, DRAWN, "the first screen")
        click(driver, '[data-period="year"]')
        this_year = wait_until(
            driver,
            f"{DRAWN} && window.dashboard.overview.answer.period === 'year'"
            " && window.dashboard.overview",
            "this year",
        )
        click(driver, "#ov-back")
        for n in range(5):
            if n:
                click(driver, "#ov-forward")
                wait_until(
                    driver,
                    f"{DRAWN} && window.dashboard.overview.answer.from"
                    f" === '{this_year['answer']['from']}'",
                    "this year again",
                )
                click(driver, "#ov-back")
            times.append(shown(driver, "year", "2025-01-01")["totalMs"])
        driver.execute_script("window.scrollTo(0, 0)")
        driver.save_screenshot(str(IMAGES / "overview-desktop.png"))
        click(driver, '[data-period="month"]')
        shown(driver, "month", "2025-01-01")
        driver.set_window_size(360, 1400)
        driver.refresh()
        # A reload opens the feed on today's day: back to January 2025 on the phone.
        wait_until(driver, DRAWN, "the first screen on a phone")
        click(driver, '[data-period="year"]')
        wait_until(
            driver, f"{DRAWN} && window.dashboard.overview.answer.period === 'year'", "a year"
        )
        click(driver, "#ov-back")
        shown(driver, "year", "2025-01-01")
        click(driver, '[data-period="month"]')
        shown(driver, "month", "2025-01-01")
        driver.execute_script("window.scrollTo(0, 0)")
        driver.save_screenshot(str(IMAGES / "overview-phone.png"))
        wide = driver.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        if wide > 0:
            print(f"the page is {wide} px wider than the phone")
    return times


def main() -> None:
    with household(NEIGHBOURS) as (settings, seeded):
        url = settings.database.url
        with psycopg.connect(url) as conn:
            # The household's owner, as benchmarks/household.py names it.
            row = conn.execute("SELECT id FROM cluster.users WHERE name = 'bench'").fetchone()
        if row is None:
            raise SystemExit("the household has no user 'bench'")
        port = free_port()
        servers = start_servers(url, port, HttpSettings().server)
        try:
            times = pictures(f"http://127.0.0.1:{port}", row[0])
        finally:
            stop_servers(servers)
    print(
        f"the overview of a year (2025, {len(seeded.streams)} streams of 90 s points), from the"
        f" click to the drawn screen, 5 times: median {statistics.median(times):.0f} ms, max"
        f" {max(times):.0f} ms ({', '.join(f'{t:.0f}' for t in times)})"
    )
    print(f"written: {IMAGES / 'overview-desktop.png'}, {IMAGES / 'overview-phone.png'}")


if __name__ == "__main__":
    main()
