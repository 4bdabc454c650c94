"""Undo is bounded like the writes it undoes (docs/api.md#undo, issue 59): over HTTP one undo
restores at most as many points as one import writes (413 naming the bound; the admin command
undoes bigger corrections), every value it puts back passes its stream's bound (400, nothing
changed), and each user's undos are rate-limited in the API process (429 with Retry-After)."""

from __future__ import annotations

import asyncpg
import httpx
import msgspec

from energy_platform.core.settings import HistorySettings, Settings
from energy_platform.history.points import MAX_POINTS
from tests.support.admin import admin_refusal, run_admin
from tests.support.data import T0, data_api
from tests.support.engine import Feed, NewFeed
from tests.support.history import points_json, points_of, remove, send, undo
from tests.support.http import http_client

JSON = "application/json"


async def corrections_of(feed_id: int, db: asyncpg.Connection) -> int:
    count: int = await db.fetchval(
        "SELECT count(*) FROM cluster.correction_log l JOIN cluster.streams s"
        " ON s.id = l.stream_id WHERE s.feed_id = $1",
        feed_id,
    )
    return count


async def power_feed(new_feed: NewFeed) -> tuple[Feed, int]:
    """A feed in UTC and a raw power stream of it."""
    feed = await new_feed("UTC")
    return feed, await feed.raw_stream(channel=1, medium=1)


async def test_an_undo_of_more_points_than_an_import_writes_is_413_and_the_operators(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings
) -> None:
    feed, stream = await power_feed(new_feed)
    # One point a second over 28 hours: one more than an import may write, removed at once
    # (a removal may take 1,000,000).
    count = MAX_POINTS + 1
    # Straight into the row tier, on purpose: the points are what an undo finds, not an
    # entry's; the store would queue the engine for them, and no engine runs here.
    await feed.db.execute(
        "INSERT INTO cluster.raw_points (stream_id, ts, value)"
        " SELECT $1, to_timestamp($2::int8 + k), 100.0 FROM generate_series(0, $3 - 1) k",
        stream,
        T0,
        count,
    )
    removed = await remove(api, feed, stream, T0, T0 + count)
    assert removed.json()["deleted"] == count, removed.text
    corrections = await corrections_of(feed.id, feed.db)

    refused = await undo(api, feed, removed.json()["correction"])

    assert refused.status_code == 413, refused.text
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert f"at most {MAX_POINTS:,}" in refused.json()["detail"]
    assert "admin corrections undo" in refused.json()["detail"]
    assert await points_of(feed.db, stream) == {}
    assert await corrections_of(feed.id, feed.db) == corrections
    # The operator's command has no such bound.
    done = await run_admin(settings, "corrections", "undo", removed.json()["correction"])
    assert done["restored"] == count
    assert len(await points_of(feed.db, stream)) == count


async def test_an_undo_that_would_put_back_a_value_out_of_bounds_is_400_and_changes_nothing(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings
) -> None:
    feed, stream = await power_feed(new_feed)
    # A power value stored before the bounds existed (over 1e10 W), then repaired by an import.
    await feed.db.execute(
        "INSERT INTO cluster.raw_points (stream_id, ts, value)"
        " VALUES ($1, to_timestamp($2), 1e300)",
        stream,
        T0,
    )
    repaired = await send(api, feed, stream, points_json([(T0, 1000.0), (T0 + 60, 0.0)]), JSON)
    assert repaired.json()["replaced"] == 1, repaired.text
    corrections = await corrections_of(feed.id, feed.db)

    refused = await undo(api, feed, repaired.json()["correction"])

    assert refused.status_code == 400, refused.text
    problem = refused.json()
    assert problem["type"] == "urn:energy-platform:problem:out-of-bounds"
    assert "1e+300 is out of bounds" in problem["detail"]
    assert "at most 1e10 W" in problem["detail"]
    assert await points_of(feed.db, stream) == {T0: 1000.0, T0 + 60: 0.0}
    assert await corrections_of(feed.id, feed.db) == corrections
    # The operator's undo passes the same bounds.
    by_operator = await admin_refusal(
        settings, "corrections", "undo", repaired.json()["correction"]
    )
    assert "out of bounds" in by_operator
    assert await points_of(feed.db, stream) == {T0: 1000.0, T0 + 60: 0.0}


async def test_undos_are_rate_limited_per_user(new_feed: NewFeed, settings: Settings) -> None:
    limited = msgspec.structs.replace(settings, history=HistorySettings(undos_per_minute=2))
    (first, stream), second = await power_feed(new_feed), await new_feed("UTC")
    async with data_api(limited) as url, http_client(base_url=url) as api:
        written = await send(api, first, stream, points_json([(T0, 1.0)]), JSON)
        correction = written.json()["correction"]
        assert (await undo(api, first, correction)).status_code == 200
        assert (await undo(api, first, correction)).status_code == 409  # its points moved on
        spent = await undo(api, first, correction)

        assert spent.status_code == 429, spent.text
        assert spent.headers["retry-after"] == "60"
        assert "EP_HISTORY_UNDOS_PER_MINUTE" in spent.json()["detail"]
        # Another user's share is their own.
        assert (await undo(api, second, "999999999")).status_code == 404
    # The refused undo changed nothing: the first undo's state holds.
    assert await points_of(first.db, stream) == {}
