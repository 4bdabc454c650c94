"""The calendar's ends (core/bounds.py, docs/api.md#the-calendar): every date and instant a
household endpoint takes lies from 1970-01-01 to 9000-01-01, or the request is 400 problem JSON
naming the field, at once. Before, a bill or a price curve of 9999-12-31 or 0001-01-01 on a
feed with an open-ended tariff ran into the statement timeout, then 500 (issue 59). The same
range holds for the admin commands' dates, ``tariffs set --holidays --from`` included."""

from __future__ import annotations

import time
from collections.abc import Awaitable

import httpx
import pytest

from energy_platform.core.settings import Settings
from tests.support.admin import admin_refusal, run_admin
from tests.support.data import T0
from tests.support.engine import Feed, NewFeed
from tests.support.history import auth

# Unix seconds just outside the range: 1969-12-31T23:59:59Z, 9000-01-01T00:00:01Z; and the
# calendar's own ends, which were the costly ones.
BEFORE, AFTER = -1, 221_845_392_001
OUTSIDE_DATES = ("1969-12-31", "9000-01-02", "9999-12-31", "0001-01-01")
PROBLEM = "application/problem+json"
QUICK_S = 5.0
"""Far below the data API's statement timeout (60 s), which the old answers ran into."""


async def tariffed(new_feed: NewFeed) -> tuple[Feed, int]:
    """A feed on an open-ended tariff priced by a market area (the costly case), and a raw
    power stream of it."""
    feed = await new_feed("Europe/Prague")
    stream = await feed.raw_stream(channel=1, medium=1)
    area = f"CAL-{feed.id}"
    await feed.db.execute(
        "SELECT cluster.set_prices($1, ARRAY[tstzrange(to_timestamp($2), to_timestamp($2 + 900))],"
        " ARRAY[0.1::float8])",
        area,
        T0,
    )
    await feed.db.execute(
        "SELECT cluster.set_tariff($1, 'power', '-infinity', ARRAY['00:00'::time], ARRAY[0.05],"
        " $2, 1.19, 0.5)",
        feed.id,
        area,
    )
    return feed, stream


async def refused(request: Awaitable[httpx.Response], field: str) -> None:
    """``request`` answers 400 problem JSON naming ``field``, at once."""
    started = time.monotonic()
    answer = await request
    assert answer.status_code == 400, answer.text
    assert answer.headers["content-type"].startswith(PROBLEM)
    assert answer.json()["field"] == field, answer.json()
    assert time.monotonic() - started < QUICK_S


async def test_dates_outside_the_calendar_are_400_naming_the_field_at_once(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed, _ = await tariffed(new_feed)
    for day in OUTSIDE_DATES:
        for path in ("bill", "prices"):
            for field, params in (
                ("from", {"from": day, "to": "2026-01-01"}),
                ("to", {"from": "2026-01-01", "to": day}),
                ("from", {"from": day, "to": day}),
            ):
                await refused(
                    api.get(f"/feeds/{feed.id}/{path}", params=params, headers=auth(feed)), field
                )
        overview = f"/feeds/{feed.id}/overview"
        await refused(api.get(overview, params={"date": day}, headers=auth(feed)), "date")


async def test_the_calendars_own_ends_are_answered_at_once(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed, _ = await tariffed(new_feed)
    for day in ("1970-01-01", "9000-01-01"):
        for path, params in (
            ("bill", {"from": day, "to": day}),
            ("prices", {"from": day, "to": day}),
            ("overview", {"date": day, "period": "year", "compare": "last_year"}),
        ):
            started = time.monotonic()
            answer = await api.get(f"/feeds/{feed.id}/{path}", params=params, headers=auth(feed))
            assert answer.status_code == 200, answer.text
            assert time.monotonic() - started < QUICK_S


async def test_instants_outside_the_calendar_are_400_naming_the_field_at_once(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed, stream = await tariffed(new_feed)
    data = f"/feeds/{feed.id}/streams/{stream}/data"
    owner = await feed.db.fetchval("SELECT owner_id FROM cluster.feeds WHERE id = $1", feed.id)
    for outside, since in ((BEFORE, "1969-12-31T23:59:59Z"), (AFTER, "9000-01-01T00:00:01Z")):
        for path, field, params in (
            (data, "time_from", {"time_from": outside, "time_to": T0}),
            (data, "time_to", {"time_from": 0, "time_to": outside}),
            (f"/feeds/{feed.id}/export", "time_from", {"time_from": outside}),
            (f"/feeds/{feed.id}/export", "time_to", {"time_to": outside}),
            (f"/feeds/{feed.id}/streams", "data_time_from", {"data_time_from": outside}),
            (f"/users/{owner}/notifications", "since", {"since": since}),
        ):
            await refused(api.get(path, params=params, headers=auth(feed)), field)
        removal = {"time_from": outside, "time_to": outside}
        await refused(api.delete(data, params=removal, headers=auth(feed)), "time_from")


async def test_an_import_outside_the_calendar_is_400_naming_the_point_and_writes_nothing(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed, stream = await tariffed(new_feed)
    data = f"/feeds/{feed.id}/streams/{stream}/data"
    for body, content_type, field in (
        (f"[[{T0}, 1], [{BEFORE}, 1]]", "application/json", "$[1][0]"),
        (f"[[{AFTER}, 1]]", "application/json", "$[0][0]"),
        (f"{T0},1\n1969-12-31T23:59:59Z,1\n", "text/csv", "line 2"),
        ("9000-01-01T00:00:01Z,1\n", "text/csv", "line 1"),
        ("0001-01-01T00:00:00+01:00,1\n", "text/csv", "line 1"),
        (f"{AFTER},1\n", "text/csv", "line 1"),
    ):
        headers = {**auth(feed), "Content-Type": content_type}
        await refused(api.post(data, content=body, headers=headers), field)
    assert (
        await feed.db.fetchval(
            "SELECT count(*) FROM cluster.raw_points WHERE stream_id = $1", stream
        )
        == 0
    )


def holiday_tariff(feed: Feed, since: str) -> tuple[str, ...]:
    """``tariffs set`` of weekday and weekend bands with the Dutch public holidays from
    ``since``."""
    bands = ("--band", "weekday/00:00=0.30", "--band", "weekend/00:00=0.20")
    return ("set", str(feed.id), "--medium", "power", "--from", since, *bands, "--holidays", "NL")


@pytest.mark.parametrize("since", ["0001-01-01T00:00:00Z", "1969-12-31T23:00:00Z", "9990-01-01"])
async def test_a_tariff_from_outside_the_calendar_is_refused_by_name(
    settings: Settings, new_feed: NewFeed, since: str
) -> None:
    feed = await new_feed()
    refusal = await admin_refusal(settings, "tariffs", *holiday_tariff(feed, since))
    assert "--from" in refusal, refusal
    assert "outside the calendar" in refusal, refusal
    assert "Traceback" not in refusal
    assert (
        await feed.db.fetchval("SELECT count(*) FROM cluster.tariffs WHERE feed_id = $1", feed.id)
        == 0
    )


async def test_a_tariff_from_the_far_future_computes_only_its_own_holidays(
    settings: Settings, new_feed: NewFeed
) -> None:
    feed = await new_feed()
    await run_admin(settings, "tariffs", *holiday_tariff(feed, "8999-06-01T00:00:00Z"))
    # From the tariff's own year to ten years on: not from 2000 (seven thousand years).
    years = await feed.db.fetchval(
        "SELECT holiday_years FROM cluster.tariffs WHERE feed_id = $1", feed.id
    )
    assert (years.lower, years.upper) == (8999, 9010)


async def test_a_reversed_window_is_400_while_the_streams_rollups_are_queued(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed, stream = await tariffed(new_feed)
    # Work queued for the engine: the buckets are computed at read time, over the window.
    await feed.db.execute(
        "INSERT INTO cluster.rollup_work (stream_id, span) VALUES ($1, tstzrange(NULL, NULL))",
        stream,
    )
    data = f"/feeds/{feed.id}/streams/{stream}/data"
    for resolution in ("hour", "day", "month"):
        params = {"time_from": T0 + 40 * 86_400, "time_to": T0, "resolution": resolution}
        await refused(api.get(data, params=params, headers=auth(feed)), "time_from")
