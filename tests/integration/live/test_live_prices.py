"""A feed on a market tariff followed live gets one ``prices`` event when a price import
completes its area's prices of its next local day and the notification rules tell its owner
(issue 62): not for half the day, not for a feed of another area, not again for a second import
of the day; resumed with ``Last-Event-ID`` like the streams' events, and left out by a ``type``
that does not name it (docs/api.md#live)."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from pathlib import Path

import httpx

from energy_platform.core.settings import Settings
from energy_platform.notifications.rules import evaluate
from tests.integration.billing.test_plan import area_slots
from tests.integration.billing.test_tariff_formula import tariff
from tests.integration.notifications.test_prices_published import ZONE, day_quarters
from tests.support.admin import run_admin
from tests.support.engine import Feed, NewFeed
from tests.support.live import LiveStream, SseEvent, live
from tests.support.services import eventually

QUARTER = 900


async def market_feed(new_feed: NewFeed, settings: Settings, today: date) -> tuple[Feed, str]:
    """A feed in Amsterdam on a market tariff of an area of its own, priced for all of today."""
    first, count = day_quarters(today)
    feed = await new_feed("Europe/Amsterdam")
    area = await area_slots(feed, first, QUARTER, [0.25] * count)
    await tariff(settings, feed, "power", "2025-01-01T00:00:00Z", "--area", area)
    return feed, area


async def price_import(
    settings: Settings, tmp_path: Path, area: str, day: date, part: float
) -> None:
    """The admin import of a price file: the first ``part`` of ``day``'s quarter hours."""
    start, quarters = day_quarters(day)
    path = tmp_path / f"{area}-{day}-{part}.csv"
    path.write_text(
        "".join(
            f"{datetime.fromtimestamp(start + QUARTER * k, ZONE).isoformat()},{0.1 + part / 10}\n"
            for k in range(int(quarters * part))
        )
    )
    await run_admin(settings, "prices", "import", area, "--file", str(path), "--per", "kWh")


async def rules_round(feed: Feed, settings: Settings) -> None:
    """One round of the rules, as the engine runs it (another process's round may hold the
    lock a moment: the next try runs it)."""

    async def ran() -> bool:
        return await evaluate(feed.db, settings.notifications) is not None  # type: ignore[arg-type]

    await eventually(ran, within=30, what="a rules round of this test's own")


async def imported_and_told(
    settings: Settings, tmp_path: Path, feed: Feed, area: str, day: date, part: float
) -> None:
    """A price import of ``part`` of ``day``, then a rules round."""
    await price_import(settings, tmp_path, area, day, part)
    await rules_round(feed, settings)


async def next_event(stream: LiveStream) -> tuple[SseEvent, int]:
    """The stream's next event and its id."""
    event = await stream.next()
    assert event is not None, "the stream ended"
    assert event.id is not None
    return event, int(event.id)


def told(feed: Feed, day: date) -> dict[str, str]:
    """A prices event's data: the feed and its local day whose prices are in."""
    return {"feed": str(feed.id), "day": day.isoformat()}


async def replayed_to(stream: LiveStream, position: int) -> list[SseEvent]:
    """The events a resumed stream sends until its id reaches ``position`` (a replay ends with
    the id of the log's end)."""
    await eventually(
        lambda: stream.last_id is not None and int(stream.last_id) >= position,
        within=30,
        what=f"the replay up to {position}",
    )
    return list(stream.events)


async def test_a_prices_event_comes_once_when_tomorrows_prices_are_told(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings, tmp_path: Path
) -> None:
    today = datetime.now(ZONE).date()
    if datetime.now(ZONE).hour == 23 and datetime.now(ZONE).minute >= 50:
        today += timedelta(days=1)  # the day turns while the test runs: test the next one
    tomorrow = today + timedelta(days=1)
    feed, area = await market_feed(new_feed, settings, today)
    other, other_area = await market_feed(new_feed, settings, today)
    url = str(api.base_url)

    async with (
        live(url, str(feed.id), feed.owner_token) as stream,
        live(url, str(other.id), other.owner_token) as other_stream,
    ):
        opened = await eventually(lambda: stream.last_id, within=30, what="the stream's id")
        # Half of tomorrow: no notice, no event. Then the rest: the first event of the stream
        # is the one prices event of tomorrow (the half day's round sent none before it).
        await imported_and_told(settings, tmp_path, feed, area, tomorrow, 0.5)
        await imported_and_told(settings, tmp_path, feed, area, tomorrow, 1.0)
        event, position = await next_event(stream)
        assert (event.event, event.data) == ("prices", told(feed, tomorrow))

        # The day imported again, and another round: nothing more. The other area's day
        # completed: the other feed's first event is its own, so the first area's sent it none.
        await imported_and_told(settings, tmp_path, feed, area, tomorrow, 1.0)
        await imported_and_told(settings, tmp_path, other, other_area, tomorrow, 1.0)
        marker, end = await next_event(other_stream)
        assert (marker.event, marker.data) == ("prices", told(other, tomorrow))
        assert position < end

    # Resumed from before it: the one event again, with its id, and nothing else up to the
    # other feed's event (after the second import's round). Resumed from it: nothing.
    async with live(url, str(feed.id), feed.owner_token, last_id=opened) as resumed:
        assert await replayed_to(resumed, end) == [event]
    async with live(url, str(feed.id), feed.owner_token, last_id=str(position)) as resumed:
        assert await replayed_to(resumed, end) == []
    # A client that asks for points alone is not sent it.
    async with live(url, str(feed.id), feed.owner_token, last_id=opened, type="points") as only:
        assert await replayed_to(only, end) == []
