"""Real-time rollups: answers per hour, day and month are the same read the moment points are
committed as read after the engine has recomputed its rollups (docs/engine.md#real-time-rollups).

"At once" means: for a raw stream, right after ingest's commit (the engine has done nothing);
for a processed stream, right after the engine wrote its 90 s points, before any rollup work was
taken (``drain(..., rollup_batches=0)``). Every test checks that the rollups really were not
there yet, so that the equality is not one of two empty answers.
"""

from datetime import UTC, date, datetime

import asyncpg
import httpx
import pytest

from energy_platform.engine.compaction import COMPACT_DAY
from energy_platform.engine.service import drain
from tests.support.engine import CURRENCY, ENGINE, Feed, NewFeed, process


def unix(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp())


# Europe/Prague leaves summer time on 2026-10-25 at 03:00 CEST: that local day runs from
# 2026-10-24T22:00Z to 2026-10-25T23:00Z, 25 hours. Its month, October, starts at
# 2026-09-30T22:00Z (local midnight, CEST).
DAY_START = unix("2026-10-24T22:00:00")
DAY_END = unix("2026-10-25T23:00:00")
OCTOBER = unix("2026-09-30T22:00:00")
RESOLUTIONS = ("hour", "day", "month")
READINGS = """
SELECT v.stream_id, v.{key}, v.total, v.points, v.value
  FROM cluster.{view} v WHERE v.feed_id = $1 ORDER BY 1, 2"""


async def buckets(
    api: httpx.AsyncClient, feed: Feed, stream_id: int, resolution: str
) -> list[list[float]]:
    answer = await api.get(
        f"/feeds/{feed.id}/streams/{stream_id}/data",
        params={"resolution": resolution, "limit": 1000},
        headers={"Authorization": f"Bearer {feed.owner_token}"},
    )
    assert answer.status_code == 200, answer.text
    result: list[list[float]] = answer.json()
    return result


async def everything(api: httpx.AsyncClient, feed: Feed, streams: list[int]) -> dict[str, object]:
    """Every answer a reader of rollups can get about the feed: the data endpoint per hour,
    day and month for each stream, and the analysts' hourly and daily views."""
    answers: dict[str, object] = {
        f"{stream}/{resolution}": await buckets(api, feed, stream, resolution)
        for stream in streams
        for resolution in RESOLUTIONS
    }
    for view, key in (("hourly_readings", "hour"), ("daily_readings", "local_day")):
        rows = await feed.db.fetch(READINGS.format(view=view, key=key), feed.id)
        answers[view] = [tuple(r) for r in rows]
    return answers


async def points_only(db: asyncpg.Connection) -> None:
    """The engine's 90 s processing, without taking any rollup work."""
    await drain(db, ENGINE, currency=CURRENCY, rollup_batches=0)


async def rollups_of(db: asyncpg.Connection, streams: list[int]) -> int:
    count: int = await db.fetchval(
        "SELECT count(*) FROM cluster.hourly_rollups WHERE stream_id = ANY($1::bigint[])",
        streams,
    )
    return count


async def compact_feed(db: asyncpg.Connection, feed: Feed, days: list[date]) -> int:
    """Move the given UTC days of every stream of the feed into the compact tier."""
    streams = [
        r["id"]
        for r in await db.fetch("SELECT id FROM cluster.streams WHERE feed_id = $1", feed.id)
    ]
    moved = 0
    for stream in streams:
        for day in days:
            moved += await db.fetchval(COMPACT_DAY, stream, day)
    return moved


@pytest.mark.parametrize("compacted", [False, True], ids=["row tier", "compact tier"])
async def test_a_backfilled_dst_day_reads_the_same_at_once_as_after_the_engine_caught_up(
    new_feed: NewFeed, api: httpx.AsyncClient, compacted: bool
) -> None:
    feed = await new_feed("Europe/Prague")
    clamp = await feed.raw_stream(channel=1, medium=1)
    thermometer = await feed.raw_stream(channel=2, medium=5)
    every_5_s = range(DAY_START, DAY_END + 1, 5)
    await feed.ingest(clamp, [(t, 1000.0) for t in every_5_s])
    # 20 and 22 °C in turn: every hour's and the day's mean is 21 °C (exact in binary).
    await feed.ingest(thermometer, [(t, 20.0 if t % 10 else 22.0) for t in every_5_s])

    # Raw streams, read the moment ingest committed: nothing was taken in by the engine yet.
    raw_at_once = await everything(api, feed, [clamp, thermometer])
    await points_only(feed.db)
    energy = await feed.stream_id("Electricity, channel 1")
    cost = await feed.stream_id("Electricity cost, channel 1")
    streams = [clamp, thermometer, energy]
    if compacted:
        # The local day spans the UTC days 24 and 25 October: both into the compact tier.
        assert await compact_feed(feed.db, feed, [date(2026, 10, 24), date(2026, 10, 25)]) > 0
        assert not await feed.db.fetchval(
            "SELECT count(*) FROM cluster.raw_points WHERE stream_id = ANY($1::bigint[])",
            [clamp, thermometer],
        )
    assert await rollups_of(feed.db, [*streams, cost]) == 0
    at_once = await everything(api, feed, streams)

    await process(feed.db)
    assert await rollups_of(feed.db, streams) > 0
    caught_up = await everything(api, feed, streams)

    assert at_once == caught_up
    assert {k: v for k, v in raw_at_once.items() if "/" in k} == {
        k: v for k, v in caught_up.items() if k.split("/")[0] in (str(clamp), str(thermometer))
    }
    # 1000 W for 25 h = 25,000 Wh in the one day starting at local midnight (22:00Z), 25 hours
    # of 1000 Wh (the two 02:00 hours apart), and the month of October holds that day alone.
    assert caught_up[f"{energy}/day"] == [[DAY_START, 25_000.0]]
    assert caught_up[f"{energy}/hour"] == [[DAY_START + 3600 * h, 1000.0] for h in range(25)]
    assert caught_up[f"{energy}/month"] == [[OCTOBER, 25_000.0]]
    # Raw means per local day: 1000 W and 21 °C; the last point (23:00Z) is the next day's
    # first, 22 °C. October's mean: 9001 points of 22 °C and 9000 of 20 °C.
    assert caught_up[f"{clamp}/day"] == [[DAY_START, 1000.0], [DAY_END, 1000.0]]
    assert caught_up[f"{thermometer}/day"] == [[DAY_START, 21.0], [DAY_END, 22.0]]
    assert caught_up[f"{thermometer}/month"] == [[OCTOBER, (9001 * 22.0 + 9000 * 20.0) / 18001]]
    assert len(caught_up[f"{thermometer}/hour"]) == 26  # type: ignore[arg-type]


async def test_a_late_point_into_a_rolled_up_day_changes_the_days_answer_at_once(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("UTC")
    t0 = unix("2026-10-20T00:00:00")
    clamp = await feed.raw_stream(channel=1, medium=1)
    # 1000 W every 60 s from 00:00 to 24:00: 1441 points.
    await feed.ingest(clamp, [(t, 1000.0) for t in range(t0, t0 + 86_400 + 1, 60)])
    await process(feed.db)
    energy = await feed.stream_id("Electricity, channel 1")
    assert await buckets(api, feed, energy, "day") == [[t0, 24_000.0]]
    assert await buckets(api, feed, clamp, "day") == [[t0, 1000.0], [t0 + 86_400, 1000.0]]

    # Late: 4000 W at 00:30:30, between the 1000 W points at 00:30 and 00:31.
    await feed.ingest(clamp, [(t0 + 1830, 4000.0)])

    # The raw day's mean at once: (1440 x 1000 + 4000) / 1441 points (the 24:00 point is the
    # next day's).
    assert await buckets(api, feed, clamp, "day") == [
        [t0, (1440 * 1000.0 + 4000.0) / 1441],
        [t0 + 86_400, 1000.0],
    ]
    # The processed day once its 90 s points are recomputed, before any rollup work is taken:
    # the point's two 30 s segments add (4000 - 1000) / 2 x 60 s = 90,000 Ws = 25 Wh.
    await points_only(feed.db)
    assert await feed.db.fetchval(
        "SELECT count(*) FROM cluster.rollup_work WHERE stream_id = $1", energy
    )
    assert await buckets(api, feed, energy, "day") == [[t0, 24_025.0]]
    assert await buckets(api, feed, energy, "month") == [[unix("2026-10-01T00:00:00"), 24_025.0]]
    (day,) = await feed.db.fetch(
        "SELECT local_day, value FROM cluster.daily_readings WHERE stream_id = $1", energy
    )
    assert (str(day["local_day"]), day["value"]) == ("2026-10-20", 24_025.0)

    await process(feed.db)
    assert await buckets(api, feed, energy, "day") == [[t0, 24_025.0]]


async def test_a_time_zone_change_moves_the_hours_at_once(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("UTC")
    t0 = unix("2026-10-20T00:00:00")
    clamp = await feed.raw_stream(channel=1, medium=1)
    await feed.ingest(clamp, [(t, 1000.0) for t in range(t0, t0 + 7200 + 1, 60)])
    await process(feed.db)
    energy = await feed.stream_id("Electricity, channel 1")

    # From then on Kolkata (+05:30): local hours start at :30 UTC.
    await feed.db.execute(
        "SELECT cluster.set_feed_config($1, '-infinity', 'Home', 'Asia/Kolkata')", feed.id
    )
    at_once = await buckets(api, feed, energy, "hour")
    await process(feed.db)

    # 00:00-02:00Z is 05:30-07:30 local: a half hour (500 Wh), a whole one, another half.
    assert at_once == [[t0 - 1800, 500.0], [t0 + 1800, 1000.0], [t0 + 5400, 500.0]]
    assert await buckets(api, feed, energy, "hour") == at_once
