"""The page live (issue 40): in Chromium, against the platform with ingest, it shows a value a
homebase published over MQTT after the page opened, in the stream's row and in the chart; it
reconnects when the server ends the stream and resumes after the last event, a point published
while it was offline arriving once; it stops and says so when its token is revoked; and its
Server-Sent Events parser and point merging (static/js/live.js, series.js) run in the browser
on cases a network may produce."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import msgspec
import pytest
from selenium.webdriver import Chrome as WebDriver

from energy_platform.core.settings import LiveSettings, Settings
from tests.support.browser import chromium
from tests.support.live import Home, stored
from tests.support.page import open_feed, sign_in, wait_until
from tests.support.platform import Platform, paired_homebase, platform_in_loop, platform_settings
from tests.support.platform import with_cluster as registered

MAX_STREAM_S = 2
"""The server ends every live stream after this many seconds: the page reconnects all along."""


@pytest.fixture(scope="module")
async def platform(settings: Settings, mqtt_url: str) -> AsyncIterator[Platform]:
    s = platform_settings(settings, mqtt_url)
    s = msgspec.structs.replace(s, live=LiveSettings(max_stream_s=MAX_STREAM_S))
    async with platform_in_loop(await registered(s)) as served:
        yield served


@pytest.fixture
async def home(platform: Platform, db: asyncpg.Connection) -> Home:
    """A paired homebase whose feed has its three raw power streams (a first point stored)."""
    sn, secret, feed = await paired_homebase(platform)
    assert feed is not None
    home = Home(platform, sn, secret, feed)
    t = int(time.time()) - 60
    await home.publish(t, (100.0, 100.0, 100.0))
    await stored(db, home, t)
    return home


@asynccontextmanager
async def browser() -> AsyncIterator[WebDriver]:
    """Chromium, every blocking call of it in a worker thread: the platform serves on this loop."""
    with contextlib.ExitStack() as stack:
        driver = await asyncio.to_thread(stack.enter_context, chromium())
        try:
            yield driver
        finally:
            await asyncio.to_thread(stack.close)


async def until(driver: WebDriver, script: str, what: str) -> Any:
    return await asyncio.to_thread(wait_until, driver, script, what)


async def open_live(driver: WebDriver, platform: Platform, home: Home) -> None:
    """Sign in, open the feed, wait for its chart and its live stream."""

    def go() -> None:
        sign_in(driver, platform.api, platform.user_id, platform.user_token, home.feed)
        open_feed(driver, home.feed)

    await asyncio.to_thread(go)
    await until(driver, "document.querySelector('#chart').dataset.state === 'drawn'", "the chart")
    await until(driver, "document.querySelector('#live').dataset.state === 'live'", "live")


def shown(value: str) -> str:
    """An expression: the stream row whose current value reads ``value``, or null."""
    return (
        "[...document.querySelectorAll('#streams td.now')]"
        f".find((cell) => cell.textContent === '{value}')?.dataset.stream ?? null"
    )


CHARTED = "JSON.parse(JSON.stringify(window.dashboard.plot.data))"


def assert_drawn_once(data: list[list[Any]], t: int, value: float) -> None:
    times = data[0]
    assert times == sorted(set(times)), "the chart's times repeat or go back"
    assert times.count(t) == 1
    assert data[1][times.index(t)] == value


async def test_the_page_shows_a_value_published_after_it_opened(
    platform: Platform, home: Home, db: asyncpg.Connection
) -> None:
    async with browser() as driver:
        await open_live(driver, platform, home)
        t = int(time.time()) - 2
        await home.publish(t, (1234.0, 1234.0, 1234.0))
        # The stream's row shows it as the current power, and the chart grew by it.
        await until(driver, shown("1,234 W"), "the published value in a stream's row")
        data = await until(
            driver,
            f"window.dashboard.plot.data[0].includes({t}) && {CHARTED}",
            "the published point in the chart",
        )
        cells = await asyncio.to_thread(
            driver.execute_script,
            "return [...document.querySelectorAll('#streams td.now')].map((c) => c.textContent)",
        )
    assert_drawn_once(data, t, 1234.0)
    assert cells.count("1,234 W") == 3  # each phase


async def test_after_the_server_ends_the_stream_the_page_resumes_after_its_last_event(
    platform: Platform, home: Home, db: asyncpg.Connection
) -> None:
    async with browser() as driver:
        await open_live(driver, platform, home)
        first = await until(driver, "window.dashboard.live.connections", "a connection")
        # The server ends the stream after MAX_STREAM_S; the page connects again.
        await until(
            driver,
            f"window.dashboard.live.connections > {first}"
            " && document.querySelector('#live').dataset.state === 'live'",
            "a reconnection",
        )
        t = int(time.time()) - 2
        await home.publish(t, (2345.0, 2345.0, 2345.0))
        await until(driver, shown("2,345 W"), "a point published after the reconnection")
        loads = await until(driver, "window.dashboard.last", "the chart")

        # Offline: the page cannot reconnect; a point is stored meanwhile.
        async def network(offline: bool) -> None:
            conditions = {
                "offline": offline,
                "latency": 0,
                "downloadThroughput": -1,
                "uploadThroughput": -1,
            }
            await asyncio.to_thread(driver.execute_cdp_cmd, "Network.enable", {})
            await asyncio.to_thread(
                driver.execute_cdp_cmd, "Network.emulateNetworkConditions", conditions
            )

        await network(offline=True)
        await until(
            driver,
            "document.querySelector('#live').dataset.state === 'reconnecting'",
            "the page reconnecting",
        )
        offline_id = await until(driver, "window.dashboard.live.lastId", "the last id")
        t2 = t + 1
        await home.publish(t2, (3456.0, 3456.0, 3456.0))
        await stored(db, home, t2)
        await network(offline=False)
        # Resumed after the last id: the point comes from the server's replay, not a re-read.
        await until(driver, shown("3,456 W"), "the point stored while the page was offline")
        data = await until(
            driver, f"window.dashboard.plot.data[0].includes({t2}) && {CHARTED}", "the chart"
        )
        after = await until(driver, "window.dashboard.last", "the chart")
        last_id = await until(driver, "window.dashboard.live.lastId", "the last id")
    assert_drawn_once(data, t, 2345.0)
    assert_drawn_once(data, t2, 3456.0)
    assert after["fetchMs"] == loads["fetchMs"]  # the chart was not read again
    assert int(last_id) > int(offline_id)


async def test_a_revoked_token_stops_the_page_and_it_says_so(
    platform: Platform, home: Home
) -> None:
    async with platform.client() as http:
        made = await http.post(
            f"/users/{platform.user_id}/tokens", json={"name": "wall-display", "scope": "read"}
        )
        assert made.status_code == 201, made.text
        wall = msgspec.structs.replace(platform, user_token=made.json()["token"])
        async with browser() as driver:
            await open_live(driver, wall, home)
            revoked = await http.delete(f"/users/{platform.user_id}/tokens/wall-display")
            assert revoked.status_code == 204
            # The server ends the stream; the reconnection is refused: no more attempts.
            said = await until(
                driver,
                "document.querySelector('#live').dataset.state === 'stopped'"
                " && document.querySelector('#live').textContent",
                "the page stopped",
            )
    assert "HTTP 401" in said


PARSE = """
const [done] = arguments;
const modules = [import('/static/js/live.js'), import('/static/js/series.js')];
Promise.all(modules).then(([live, series]) => {
  const run = (pieces) => {
    let state = live.START;
    const out = [];
    for (const piece of pieces) {
      const parsed = live.parse(state, piece);
      state = parsed.state;
      out.push(...parsed.messages);
    }
    return { out, rest: state.rest };
  };
  const text = 'id: 7\\n\\nid: 8\\nevent: points\\ndata: {"stream":"1",\\ndata: "points":[]}\\n\\n'
    + ': keepalive\\n\\n';
  const whole = run([text]);
  // Every split of the text in two, and one piece per character.
  const splits = [];
  for (let i = 0; i <= text.length; i++) splits.push(run([text.slice(0, i), text.slice(i)]));
  const chars = run([...text]);
  const crlf = run(['id: 9\\r', '\\nevent: reload\\r\\ndata: {}\\r\\n\\r', '\\n']);
  const cr = run(['data: a\\rdata: b\\r\\r']);
  const odd = run([
    'data\\n\\nid\\nevent: x\\n\\nretry: 5\\nfoo: bar\\ndata:  two spaces\\n\\n', 'data: cut',
  ]);
  const times = [10, 20, 30];
  const values = [1, 2, 3];
  series.merge(times, values, [[20, 5], [30, null], [25, 4], [40, 6], [40, 6], [5, 0]]);
  const kept = [[...times], [...values]];
  series.dropBefore(times, values, 20);
  done({
    whole, same: splits.every((s) => JSON.stringify(s) === JSON.stringify(whole)),
    chars: JSON.stringify(chars) === JSON.stringify(whole), crlf, cr, odd,
    merged: kept, dropped: [times, values],
    backoff: [0, 1, 3, 10].map((n) => [live.backoff(n, () => 0), live.backoff(n, () => 0.999999)]),
  });
}).catch((error) => done(String(error)));
"""


async def test_the_parser_reads_any_chunking_and_line_ending(platform: Platform) -> None:
    async with browser() as driver:
        await asyncio.to_thread(driver.get, platform.api + "/")
        seen = await asyncio.to_thread(driver.execute_async_script, PARSE)
    assert not isinstance(seen, str), seen
    # An id alone moves the last id; data lines join with \n; a comment is no event.
    assert seen["whole"] == {
        "out": [
            {"type": "id", "id": "7"},
            {
                "type": "event",
                "id": "8",
                "event": "points",
                "data": '{"stream":"1",\n"points":[]}',
            },
            {"type": "comment", "text": "keepalive"},
        ],
        "rest": "",
    }
    assert seen["same"]
    assert seen["chars"]
    # \r\n split between pieces is one line end, not two (which would dispatch early).
    assert seen["crlf"]["out"] == [{"type": "event", "id": "9", "event": "reload", "data": "{}"}]
    assert seen["cr"]["out"] == [{"type": "event", "id": "", "event": "message", "data": "a\nb"}]
    # A field without a colon has an empty value; unknown fields and retry are ignored; one
    # space after the colon goes; a line without its end waits for the next piece.
    assert seen["odd"] == {
        "out": [
            {"type": "event", "id": "", "event": "message", "data": ""},
            {"type": "id", "id": ""},
            {"type": "event", "id": "", "event": "message", "data": " two spaces"},
        ],
        "rest": "data: cut",
    }
    # Merged by time: a revision replaces, a null removes, new times go in order, once.
    assert seen["merged"] == [[5, 10, 20, 25, 40], [0, 1, 5, 4, 6]]
    assert seen["dropped"] == [[20, 25, 40], [5, 4, 6]]
    # Jittered between half and all of 1 s doubling, capped at a minute.
    assert seen["backoff"] == [[500, 1000], [1000, 2000], [4000, 8000], [30000, 60000]]
