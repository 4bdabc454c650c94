"""A real headless Chromium (Debian's package) driven through Selenium, for page tests."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

# The machine's network is closed: without these, Chromium keeps trying Google's hosts and
# component updates, which fail slowly and make runs flaky.
_FLAGS = (
    "--headless=new",
    "--no-sandbox",  # the suite runs as root in CI
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,900",
)


@contextmanager
def chromium() -> Iterator[webdriver.Chrome]:
    """A fresh browser with an empty profile; closed when the block ends."""
    with tempfile.TemporaryDirectory(prefix="ep-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in (*_FLAGS, f"--user-data-dir={Path(profile)}"):
            options.add_argument(flag)
        # An explicit driver path keeps Selenium Manager from looking for one on the network.
        driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
        try:
            yield driver
        finally:
            driver.quit()
