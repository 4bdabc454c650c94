"""A poisoned feed is set aside, the rest go on (engine/parking.py, docs/engine.md#parked-feeds):
a value the engine's arithmetic cannot carry, written straight into the points tables, parks
its feed's processing or rollups; every other feed's points and rollups are computed; the owner
is told; an operator sees it in the gauge and `admin engine parked`, and `admin engine retry`
after a repair computes it and closes the notice."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg
import httpx
import msgspec
import pytest

from energy_platform.core.settings import Settings
from energy_platform.engine.parking import narrowed
from energy_platform.engine.service import drain
from energy_platform.engine.watch import engine_queues
from tests.support.admin import admin_refusal, run_admin
from tests.support.data import T0
from tests.support.engine import (
    CURRENCY,
    ENGINE,
    Feed,
    NewFeed,
    api_buckets,
    fail_processing,
    heal_processing,
    process,
    slow_processing,
)

# What an analyst might run, bypassing every entry's bound (so not seeding.write_points, whose
# store would take it too, but no decoder would): a point the integral overflows on
# (1e308 W x seconds > 1.8e308, the largest float8), with no queue entry of its own.
POISON = (
    "INSERT INTO cluster.raw_points (stream_id, ts, value) VALUES ($1, to_timestamp($2), 1e308)"
)
REPAIR = "DELETE FROM cluster.raw_points WHERE stream_id = $1 AND value = 1e308"
ENERGY = "Electricity, channel 1"


async def gauges(db: asyncpg.Connection) -> dict[str, float]:
    """The engine's watch as /metrics shows it: {gauge: value}."""
    return {family.name: family.samples[0].value for family in await engine_queues(db)}


async def notices(api: httpx.AsyncClient, feed: Feed) -> list[dict[str, object]]:
    owner = await feed.db.fetchval("SELECT owner_id FROM cluster.feeds WHERE id = $1", feed.id)
    answered = await api.get(
        f"/users/{owner}/notifications", headers={"Authorization": f"Bearer {feed.owner_token}"}
    )
    assert answered.status_code == 200, answered.text
    found: list[dict[str, object]] = answered.json()
    return found


async def is_open(feed: Feed) -> bool | None:
    """Whether the feed's parked notice is open (users are not shown this flag)."""
    found: bool | None = await feed.db.fetchval(
        "SELECT bool_or(open) FROM cluster.notifications"
        " WHERE feed_id = $1 AND rule = 'processing_parked'",
        feed.id,
    )
    return found


async def steady(feed: Feed, medium: int, value: float, poison: Sequence[int] = ()) -> int:
    """A stream on channel 1 with a point every 5 s over two buckets from T0, stored by ingest;
    the poisoned seconds written first, by SQL."""
    stream = await feed.raw_stream(channel=1, medium=medium)
    for second in poison:
        await feed.db.execute(POISON, stream, T0 + second)
    await feed.ingest(stream, [(T0 + s, value) for s in range(0, 181, 5)])
    return stream


async def test_a_poisoned_feed_is_parked_and_retried_while_the_others_are_processed(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings
) -> None:
    healthy, poisoned = await new_feed(), await new_feed()
    # A title the notice must escape (the time zone stays: nothing is queued by it).
    await poisoned.db.execute(
        "SELECT cluster.set_feed_config($1, NULL, 'Flat <2> & co', 'Europe/Prague')", poisoned.id
    )
    before = await gauges(healthy.db)
    await steady(healthy, 1, 1000.0)
    clamp = await steady(poisoned, 1, 1000.0, poison=[2])

    await process(healthy.db)  # no error escapes: the bad feed is set aside

    # 1000 W for a whole 90 s bucket = 1000 x 90 / 3600 = 25 Wh; the points reach T0 + 180.
    assert await healthy.points(ENERGY) == {T0: 25.0, T0 + 90: 25.0}
    # Its rollups too: the local hour from T0 (01:00 in Prague) holds both buckets, 50 Wh.
    energy = await healthy.stream_id(ENERGY)
    assert await api_buckets(api, healthy, energy, "hour") == [[T0, 50.0]]
    assert await poisoned.points(ENERGY) == {}

    # The operator sees it: the command lists the feed, its channel, the period holding the bad
    # row and the error; the gauge counts it.
    (listed,) = [
        p for p in await run_admin(settings, "engine", "parked") if p["feed"] == str(poisoned.id)
    ]
    assert listed["stage"] == "processing"
    assert listed["channels"] == [1]
    assert listed["sqlstate"] == "22003"
    assert "out of range" in listed["error"]
    assert listed["retried"] is None
    parked = await gauges(healthy.db)
    assert parked["ep_engine_parked_feeds"] == before["ep_engine_parked_feeds"] + 1
    assert parked["ep_engine_parked_oldest_age_seconds"] >= 0
    # The owner is told, once.
    (notice,) = [n for n in await notices(api, poisoned) if n["title"] == "Processing paused"]
    assert "<b>Flat &lt;2&gt; &amp; co</b>" in str(notice["content"])
    assert await is_open(poisoned)

    # Newer data of the parked feed waits, and it is no engine lag: work queued ten minutes ago
    # for the parked feed alone leaves the queue's age alone.
    await poisoned.ingest(clamp, [(T0 + 185, 1000.0)])
    await process(healthy.db)
    assert await poisoned.points(ENERGY) == {}
    await poisoned.db.execute(
        "UPDATE cluster.engine_work SET recorded_at = now() - interval '10 minutes'"
        " WHERE feed_id = $1",
        poisoned.id,
    )
    assert (await gauges(healthy.db))["ep_engine_oldest_unprocessed_age_seconds"] < 60
    assert len(await notices(api, poisoned)) == 1

    # Repaired by hand, then retried: the feed is processed and the notice closes.
    await poisoned.db.execute(REPAIR, clamp)
    released = await run_admin(settings, "engine", "retry", str(poisoned.id))
    assert released == {"feed": str(poisoned.id), "released": 1}
    await process(poisoned.db)
    # As the healthy feed's, and the bucket from T0 + 180 now has its 5 s to T0 + 185:
    # 1000 x 5 / 3600 = 1.389 Wh.
    assert await poisoned.points(ENERGY) == {
        T0: 25.0,
        T0 + 90: 25.0,
        T0 + 180: pytest.approx(1000 * 5 / 3600),
    }
    assert await is_open(poisoned) is False
    assert [
        p for p in await run_admin(settings, "engine", "parked") if p["feed"] == str(poisoned.id)
    ] == []
    assert (await gauges(healthy.db))["ep_engine_parked_feeds"] == before["ep_engine_parked_feeds"]

    # Nothing parked: a retry names the feed and fails.
    again = await admin_refusal(settings, "engine", "retry", str(poisoned.id))
    assert f"feed '{poisoned.id}' has nothing parked" in again


async def test_a_stream_whose_hours_overflow_parks_its_feeds_rollups_alone(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings
) -> None:
    healthy, poisoned = await new_feed(), await new_feed()
    # Voltage (medium 2) is not processed, only rolled up: two values of 1e308 in one hour sum
    # past the largest float8.
    good = await steady(healthy, 2, 230.0)
    bad = await steady(poisoned, 2, 230.0, poison=[1, 2])

    await process(healthy.db)

    # Voltage is averaged per hour: 230 V.
    assert await api_buckets(api, healthy, good, "hour") == [[T0, 230.0]]
    (listed,) = [
        p for p in await run_admin(settings, "engine", "parked") if p["feed"] == str(poisoned.id)
    ]
    assert listed["stage"] == "rollups"
    assert listed["streams"] == [str(bad)]
    assert listed["sqlstate"] == "22003"
    assert await is_open(poisoned)

    await poisoned.db.execute(REPAIR, bad)
    await run_admin(settings, "engine", "retry", str(poisoned.id))
    await process(poisoned.db)

    # The 37 points of 230 V from T0 to T0 + 180.
    assert await api_buckets(api, poisoned, bad, "hour") == [[T0, 230.0]]
    hour = await poisoned.db.fetchrow(
        "SELECT total, points FROM cluster.hourly_rollups WHERE stream_id = $1", bad
    )
    assert hour is not None
    assert (hour["total"], hour["points"]) == (pytest.approx(230.0 * 37), 37)
    assert await is_open(poisoned) is False


async def test_several_poisoned_feeds_in_one_batch_are_all_parked_and_the_rest_committed(
    new_feed: NewFeed, settings: Settings
) -> None:
    feeds = [await new_feed() for _ in range(8)]
    bad = {feeds[1].id, feeds[2].id, feeds[6].id}
    for feed in feeds:
        await steady(feed, 1, 1000.0, poison=[2] if feed.id in bad else [])

    await process(feeds[0].db)

    for feed in feeds:
        expected = {} if feed.id in bad else {T0: 25.0, T0 + 90: 25.0}
        assert await feed.points(ENERGY) == expected
    listed = await run_admin(settings, "engine", "parked")
    assert {int(p["feed"]) for p in listed} >= bad
    for feed_id in bad:  # leave nothing parked for the tests that share this database
        await feeds[0].db.execute("DELETE FROM cluster.parked_work WHERE feed_id = $1", feed_id)
        await feeds[0].db.execute("DELETE FROM cluster.engine_work WHERE feed_id = $1", feed_id)


async def test_halving_finds_every_failing_feed_and_commits_every_other(
    db: asyncpg.Connection,
) -> None:
    feeds = list(range(1, 17))
    poisoned = {3, 4, 11}
    tried: list[Sequence[int]] = []
    await db.execute("CREATE TEMPORARY TABLE done (feed bigint)")

    async def attempt(chosen: Sequence[int]) -> int:
        tried.append(chosen)
        await db.execute("INSERT INTO done SELECT unnest($1::bigint[])", list(chosen))
        # Overflows (SQLSTATE 22003) when a poisoned feed is among the chosen.
        await db.execute(
            "SELECT CASE WHEN $1::bigint[] && $2::bigint[] THEN 1e308::float8 * 10 END",
            list(chosen),
            list(poisoned),
        )
        return len(chosen)

    async with db.transaction():
        result = await narrowed(db, feeds, attempt)

    assert {f.feed_id for f in result.failed} == poisoned
    assert {f.error.sqlstate for f in result.failed} == {"22003"}
    assert sum(result.done) == 13
    # Every good feed's work was kept, once; every poisoned one's rolled back.
    kept = [r["feed"] for r in await db.fetch("SELECT feed FROM done ORDER BY feed")]
    assert kept == sorted(set(feeds) - poisoned)
    # Halving: 16 -> 8 + 8 -> 4 + 4 (+ 4 + 4) ...: far fewer attempts than one per feed twice.
    assert len(tried) < 2 * len(feeds)
    await db.execute("DROP TABLE done")


async def test_an_error_of_the_world_is_not_narrowed(db: asyncpg.Connection) -> None:
    tried: list[Sequence[int]] = []

    async def attempt(chosen: Sequence[int]) -> None:
        tried.append(chosen)
        await db.execute(
            "DO $$ BEGIN RAISE EXCEPTION 'busy' USING ERRCODE = 'serialization_failure'; END $$"
        )

    with pytest.raises(asyncpg.SerializationError):
        async with db.transaction():
            await narrowed(db, [1, 2, 3, 4], attempt)
    assert tried == [[1, 2, 3, 4]]


async def test_a_feed_whose_work_fails_alone_the_same_way_again_and_again_is_parked(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings
) -> None:
    healthy, poisoned = await new_feed(), await new_feed()
    await steady(healthy, 1, 1000.0)
    await steady(poisoned, 1, 1000.0)
    # SQLSTATE 54001, statement too complex: the work's own error, neither the data's class
    # nor the server's state.
    await fail_processing(poisoned.db, poisoned.id, "54001", "statement too complex")
    try:
        # Below the limit it is retried, not parked: its work stays queued, nobody is told.
        await drain(
            poisoned.db, msgspec.structs.replace(ENGINE, park_after=1_000_000), currency=CURRENCY
        )
        assert await healthy.points(ENERGY) == {T0: 25.0, T0 + 90: 25.0}
        assert await poisoned.points(ENERGY) == {}
        assert not await parked_rows(poisoned)
        assert await is_open(poisoned) is None
        assert await poisoned.db.fetchval(
            "SELECT count(*) FROM cluster.engine_work WHERE feed_id = $1", poisoned.id
        )
        # At EP_ENGINE_PARK_AFTER (3) failures in a row, parked like a data error: every
        # round fails it once at least, so three rounds reach it.
        for _ in range(3):
            await process(poisoned.db)
            if await parked_rows(poisoned):
                break
        (listed,) = [
            p
            for p in await run_admin(settings, "engine", "parked")
            if p["feed"] == str(poisoned.id)
        ]
        assert (listed["stage"], listed["sqlstate"]) == ("processing", "54001")
        (notice,) = [n for n in await notices(api, poisoned) if n["title"] == "Processing paused"]
        assert "statement too complex" in str(notice["content"])
        assert (await gauges(healthy.db))["ep_engine_parked_feeds"] >= 1
    finally:
        await heal_processing(poisoned.db, poisoned.id)

    # The cause gone, the retry command computes it and closes the notice.
    await run_admin(settings, "engine", "retry", str(poisoned.id))
    await process(poisoned.db)
    assert await poisoned.points(ENERGY) == {T0: 25.0, T0 + 90: 25.0}
    assert await is_open(poisoned) is False


async def parked_rows(feed: Feed) -> int:
    found: int = await feed.db.fetchval(
        "SELECT count(*) FROM cluster.parked_work WHERE feed_id = $1 AND retried_at IS NULL",
        feed.id,
    )
    return found


async def test_a_feed_whose_work_runs_past_the_statement_timeout_is_parked_alone(
    new_feed: NewFeed, settings: Settings
) -> None:
    healthy, slow = await new_feed(), await new_feed()
    await steady(healthy, 1, 1000.0)
    await steady(slow, 1, 1000.0)
    await slow_processing(slow.db, slow.id, 3.0)
    try:
        # EP_ENGINE_STATEMENT_TIMEOUT of 2 s, parked at the first such failure: the healthy
        # feed's work takes a fraction of it even on a loaded machine, the slow one's 3 s a point.
        hurried = msgspec.structs.replace(ENGINE, statement_timeout=2.0, park_after=1)
        await drain(slow.db, hurried, currency=CURRENCY)
        assert await healthy.points(ENERGY) == {T0: 25.0, T0 + 90: 25.0}
        assert await slow.points(ENERGY) == {}
        (listed,) = [
            p for p in await run_admin(settings, "engine", "parked") if p["feed"] == str(slow.id)
        ]
        assert (listed["stage"], listed["sqlstate"]) == ("processing", "57014")
    finally:
        await heal_processing(slow.db, slow.id)
    await run_admin(settings, "engine", "retry", str(slow.id))
    await process(slow.db)
    assert await slow.points(ENERGY) == {T0: 25.0, T0 + 90: 25.0}
