"""/schema works offline: a real Chromium renders the data API's operations from local assets."""

from __future__ import annotations

import asyncio
from pathlib import Path

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.support.browser import chromium
from tests.support.data import World


def render_schema_page(url: str, screenshot: Path) -> tuple[list[str], list[str]]:
    """The paths the rendered page lists, and every resource URL the page loaded."""
    with chromium() as browser:
        browser.get(url)
        WebDriverWait(browser, 30).until(
            lambda b: b.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")
        )
        paths = [
            element.get_attribute("data-path") or element.text
            for element in browser.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")
        ]
        loaded = browser.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)"
        )
        browser.save_screenshot(str(screenshot))
    return paths, list(loaded)


async def test_schema_page_lists_the_operations_from_assets_served_by_the_service(
    world: World, tmp_path: Path
) -> None:
    screenshot = tmp_path / "schema-offline.png"
    paths, loaded = await asyncio.to_thread(render_schema_page, world.url + "/schema", screenshot)

    assert "/feeds/{feed_id}/streams/{stream_id}/data" in paths
    assert "/users/{user_id}/notifications" in paths
    assert "/feeds/{feed_id}" in paths
    # Swagger UI's script, its styles and the favicon: all from this service, none from a CDN.
    assert any(url.endswith("/schema/assets/swagger-ui-bundle.js") for url in loaded)
    assert all(url.startswith(world.url + "/") for url in loaded), loaded
    assert screenshot.read_bytes().startswith(b"\x89PNG")
