"""CSV out: the data endpoint's CSV and the feed export say what its JSON says, value for value,
on the days that daylight saving time makes 23 and 25 hours long."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import asyncpg
import httpx
import msgspec
import pytest

from energy_platform.api import export as csv_export
from tests.support.engine import Feed, NewFeed, process

PRAGUE = ZoneInfo("Europe/Prague")


def unix(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp())


# Europe/Prague leaves summer time on 2026-10-25 at 03:00 CEST: that local day runs from
# 2026-10-24T22:00Z to 2026-10-25T23:00Z, 25 hours, and 02:00 comes twice. It enters summer
# time on 2026-03-29 at 02:00 CET: that day runs from 2026-03-28T23:00Z to 22:00Z, 23 hours.
AUTUMN = (unix("2026-10-24T22:00:00"), unix("2026-10-25T23:00:00"))
SPRING = (unix("2026-03-28T23:00:00"), unix("2026-03-29T22:00:00"))
OCTOBER = unix("2026-09-30T22:00:00")  # local midnight of 2026-10-01 (CEST)


def number(value: float) -> str:
    """A value as the JSON body writes it (msgspec's text, which cluster.json_number matches
    to the character: tests/integration/api/test_json_numbers.py)."""
    return msgspec.json.encode(value).decode()


def rows_of(answer: httpx.Response) -> list[list[str]]:
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "text/csv; charset=utf-8"
    assert answer.text.endswith("\r\n")
    return list(csv.reader(io.StringIO(answer.text, newline="")))


async def metered(feed: Feed, start: int, end: int) -> dict[str, int]:
    """A clamp whose power changes every minute (so that sums and means have many digits),
    processed by the engine with a tariff: the raw clamp, its energy and its cost stream."""
    clamp = await feed.raw_stream(channel=1, medium=1)
    await feed.ingest(
        clamp, [(t, 800.0 + 37.3 * (t // 60 % 11)) for t in range(start, end + 1, 60)]
    )
    await feed.db.execute(
        "SELECT cluster.set_tariff($1, 'power', '-infinity', ARRAY['00:00'::time], ARRAY[0.217])",
        feed.id,
    )
    await process(feed.db)
    return {
        "clamp": clamp,
        "energy": await feed.stream_id("Electricity, channel 1"),
        "cost": await feed.stream_id("Electricity cost, channel 1"),
    }


async def json_answer(
    api: httpx.AsyncClient, feed: Feed, stream: int, resolution: str | None, **params: int
) -> list[list[float]]:
    query = {"limit": 100_000, **params, **({"resolution": resolution} if resolution else {})}
    answer = await api.get(
        f"/feeds/{feed.id}/streams/{stream}/data",
        params=query,
        headers={"Authorization": f"Bearer {feed.owner_token}"},
    )
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/json"
    points: list[list[float]] = answer.json()
    return points


async def export(
    api: httpx.AsyncClient, feed: Feed, streams: list[int], resolution: str, **params: int
) -> list[list[str]]:
    answer = await api.get(
        f"/feeds/{feed.id}/export",
        params=[("resolution", resolution), *(("stream", s) for s in streams), *params.items()],
        headers={"Authorization": f"Bearer {feed.owner_token}"},
    )
    return rows_of(answer)


@pytest.mark.parametrize("resolution", [None, "hour", "day", "month"])
async def test_the_data_endpoints_csv_is_its_json_value_for_value(
    new_feed: NewFeed, api: httpx.AsyncClient, resolution: str | None
) -> None:
    feed = await new_feed("Europe/Prague")
    streams = await metered(feed, AUTUMN[0] - 86_400, AUTUMN[1] + 86_400)
    window = {"time_from": OCTOBER, "time_to": AUTUMN[1] + 86_400}
    for name, stream in streams.items():
        expected = await json_answer(api, feed, stream, resolution, **window)
        query = {"limit": 100_000, **window, **({"resolution": resolution} if resolution else {})}
        answer = await api.get(
            f"/feeds/{feed.id}/streams/{stream}/data",
            params=query,
            headers={"Authorization": f"Bearer {feed.owner_token}", "Accept": "text/csv"},
        )
        header, *rows = rows_of(answer)
        assert header == ["time", "value"]
        assert rows == [[str(int(t)), number(v)] for t, v in expected], name
        assert rows, name  # something was compared
        assert answer.headers["vary"] == "Accept"


@pytest.mark.parametrize("resolution", ["points", "hour", "day", "month"])
async def test_the_export_across_the_25_hour_day_is_each_streams_json(
    new_feed: NewFeed, api: httpx.AsyncClient, resolution: str
) -> None:
    feed = await new_feed("Europe/Prague")
    streams = await metered(feed, AUTUMN[0] - 86_400, AUTUMN[1] + 86_400)
    # Months start at the first of October: from there, so that October is whole.
    window = {
        "time_from": OCTOBER if resolution == "month" else AUTUMN[0],
        "time_to": AUTUMN[1] - 1,
    }
    order = [streams["cost"], streams["clamp"], streams["energy"]]
    header, *rows = await export(api, feed, order, resolution, **window)

    assert header == [
        "time",
        "local_time",
        "Electricity cost, channel 1 (CZK)",
        "raw stream {}: channel 1, device 1, medium 1".format(streams["clamp"]),
        "Electricity, channel 1 (Wh)",
    ]
    answers = [
        await json_answer(api, feed, s, None if resolution == "points" else resolution, **window)
        for s in order
    ]
    # A line per time any stream has a value at, in order; each column says its JSON's values.
    times = sorted({int(t) for answer in answers for t, _ in answer})
    assert [int(r[0]) for r in rows] == times
    for column, answer in enumerate(answers, start=2):
        assert {int(r[0]): r[column] for r in rows if r[column]} == {
            int(t): number(v) for t, v in answer
        }
    # The local time of each line in the feed's zone, with the offset valid at it.
    assert [r[1] for r in rows] == [datetime.fromtimestamp(t, PRAGUE).isoformat() for t in times]
    if resolution == "hour":
        # 25 hours from local midnight, 22:00Z on; 02:00 twice, an hour apart, +02:00 then +01:00.
        assert times == [AUTUMN[0] + 3600 * h for h in range(25)]
        assert [r[1] for r in rows if "T02:" in r[1]] == [
            "2026-10-25T02:00:00+02:00",
            "2026-10-25T02:00:00+01:00",
        ]
    if resolution == "day":
        assert [r[1] for r in rows] == ["2026-10-25T00:00:00+02:00"]
    if resolution == "month":
        assert [r[1] for r in rows] == ["2026-10-01T00:00:00+02:00"]
    if resolution == "points":
        # The raw clamp's minutes and the processed 90 s buckets: where they differ, the others'
        # cells are empty.
        assert any(r[3] and not r[4] for r in rows)
        assert any(r[4] and not r[3] for r in rows)


async def test_the_export_of_the_23_hour_day_has_23_hourly_lines(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("Europe/Prague")
    streams = await metered(feed, SPRING[0], SPRING[1])
    header, *rows = await export(
        api, feed, [streams["energy"]], "hour", time_from=SPRING[0], time_to=SPRING[1] - 1
    )
    assert header == ["time", "local_time", "Electricity, channel 1 (Wh)"]
    # 00:00 and 01:00 CET, then 03:00 to 23:00 CEST: 2 + 21 hours.
    assert [r[0] for r in rows] == [str(SPRING[0] + 3600 * h) for h in range(23)]
    assert [r[1][11:] for r in rows[:3]] == ["00:00:00+01:00", "01:00:00+01:00", "03:00:00+02:00"]
    expected = await json_answer(
        api, feed, streams["energy"], "hour", time_from=SPRING[0], time_to=SPRING[1] - 1
    )
    assert [r[2] for r in rows] == [number(v) for _, v in expected]


async def test_a_week_of_5_s_points_is_one_export_read_from_both_tiers(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("UTC")
    start = unix("2026-05-04T00:00:00")
    week = 7 * 86_400 // 5  # 120,960 points
    stream = await feed.raw_stream(channel=4, medium=1)
    await feed.ingest(stream, [(start + 5 * i, round((i % 5000) / 10, 1)) for i in range(week)])
    # The first four days into the compact tier, as compaction moves each stream-day.
    for day in range(4):
        await feed.db.execute(
            "SELECT cluster.compact_day($1, $2::date)",
            stream,
            datetime.fromtimestamp(start + 86_400 * day, UTC).date(),
        )
    compact = await feed.db.fetchval(
        "SELECT sum(points) FROM cluster.point_days WHERE stream_id = $1", stream
    )
    assert compact == 4 * 17_280

    answer = await api.get(
        f"/feeds/{feed.id}/export",
        params={"stream": stream},
        headers={"Authorization": f"Bearer {feed.owner_token}"},
        timeout=60,
    )
    header, *rows = rows_of(answer)

    assert header == ["time", "local_time", f"raw stream {stream}: channel 4, device 1, medium 1"]
    assert len(rows) == week
    stored = await feed.db.fetch(
        "SELECT extract(epoch FROM ts)::bigint AS t, value"
        "  FROM cluster.stream_points($1, '-infinity', 'infinity') ORDER BY ts",
        stream,
    )
    assert [(int(r[0]), r[2]) for r in rows] == [(p["t"], number(p["value"])) for p in stored]
    assert rows[0][1] == "2026-05-04T00:00:00+00:00"
    # The newest 100,000 are the JSON's: the same numbers.
    newest = await json_answer(api, feed, stream, None)
    assert [[int(r[0]), r[2]] for r in rows[-100_000:]] == [[t, number(v)] for t, v in newest]


async def test_local_times_follow_the_feeds_zone_from_the_instant_it_changes(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("Europe/Prague")
    stream = await feed.raw_stream(channel=5, medium=5)
    t0 = unix("2026-07-01T10:00:00")
    await feed.ingest(stream, [(t0 + 60 * i, 20.5 + i) for i in range(4)])
    # From 10:02Z on the homebase is in New York (EDT, -04:00).
    await feed.db.execute(
        "SELECT cluster.set_feed_config($1, $2, 'Moved', 'America/New_York')",
        feed.id,
        datetime.fromtimestamp(t0 + 120, UTC),
    )
    rows = (await export(api, feed, [stream], "points"))[1:]
    assert rows == [
        [str(t0), "2026-07-01T12:00:00+02:00", "20.5"],
        [str(t0 + 60), "2026-07-01T12:01:00+02:00", "21.5"],
        [str(t0 + 120), "2026-07-01T06:02:00-04:00", "22.5"],
        [str(t0 + 180), "2026-07-01T06:03:00-04:00", "23.5"],
    ]


@pytest.mark.parametrize("resolution", ["hour", "day", "month"])
async def test_an_export_of_all_time_answers_buckets_the_engine_has_not_rolled_up(
    new_feed: NewFeed, api: httpx.AsyncClient, resolution: str
) -> None:
    feed = await new_feed("Europe/Prague")
    clamp = await feed.raw_stream(channel=1, medium=1)
    t0 = unix("2026-02-10T10:00:00")
    await feed.ingest(clamp, [(t0 + 60 * i, 1000.0 + i) for i in range(150)])
    # The whole stream queued for the engine (as a changed time zone queues it): its buckets
    # come from its points, over a range from year 1 to 9999 when the request names none.
    await feed.db.execute(
        "INSERT INTO cluster.rollup_work (stream_id, span) VALUES ($1, tstzrange(NULL, NULL))",
        clamp,
    )
    rows = (await export(api, feed, [clamp], resolution))[1:]
    expected = await json_answer(api, feed, clamp, resolution)
    assert expected  # answered from the queue: the engine never ran
    assert rows == [
        [str(int(t)), datetime.fromtimestamp(t, PRAGUE).isoformat(), number(v)] for t, v in expected
    ]


@pytest.mark.parametrize(
    ("statement", "streams"),
    [(csv_export.EXPORT_STREAM_POINTS, 1), (csv_export.EXPORT_POINTS, [1, 2])],
)
async def test_an_export_hands_out_each_day_before_it_reads_the_next(
    db: asyncpg.Connection, statement: str, streams: object
) -> None:
    # The plan's top is the walk of the days: no sort or aggregate over the whole range sits
    # above it, which would read a year before the first line left the database.
    prepared = await db.prepare(statement)
    extra = () if streams == 1 else (2,)
    plan = await prepared.explain(streams, AUTUMN[0], AUTUMN[1], None, None, *extra)
    assert plan[0]["Plan"]["Node Type"] == "Nested Loop", plan
