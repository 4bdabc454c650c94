"""Answers per local hour, day and month (`resolution`), served from the engine's rollups."""

from datetime import UTC, datetime

import httpx
import pytest

from tests.support.engine import Feed, NewFeed, api_buckets, process


def unix(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp())


# Europe/Prague leaves summer time on 2026-10-25 at 03:00 CEST: that local day runs from
# 2026-10-24T22:00Z to 2026-10-25T23:00Z, 25 hours, and 02:00 comes twice.
DAY_START = unix("2026-10-24T22:00:00")
DAY_END = unix("2026-10-25T23:00:00")


async def steady_power(feed: Feed, start: int, end: int, step: int, watts: float) -> int:
    clamp = await feed.raw_stream(channel=1, medium=1)
    await feed.ingest(clamp, [(t, watts) for t in range(start, end + 1, step)])
    await process(feed.db)
    return clamp


async def test_a_25_hour_dst_day_of_1000_w_is_25000_wh_in_one_day_and_25_hours(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("Europe/Prague")
    await steady_power(feed, DAY_START, DAY_END, 60, 1000.0)
    energy = await feed.stream_id("Electricity, channel 1")

    day = await api_buckets(api, feed, energy, "day", time_from=DAY_START, time_to=DAY_END)
    hours = await api_buckets(api, feed, energy, "hour", time_from=DAY_START, time_to=DAY_END)

    # 1000 W for 25 h = 25,000 Wh, in the one bucket that starts at local midnight (22:00Z).
    assert day == [[DAY_START, pytest.approx(25_000.0)]]
    # 25 hours of 1000 Wh each, one an hour from 22:00Z on: the two 02:00 hours are apart.
    assert hours == [[DAY_START + 3600 * h, pytest.approx(1000.0)] for h in range(25)]


async def test_a_month_total_sums_its_days_and_starts_at_local_midnight_of_the_first(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("Europe/Prague")
    # February 2026 in Prague (CET, +01:00): 2026-01-31T23:00Z to 2026-02-28T23:00Z, 28 days.
    start, end = unix("2026-01-31T23:00:00"), unix("2026-02-28T23:00:00")
    await steady_power(feed, start, end, 300, 500.0)
    energy = await feed.stream_id("Electricity, channel 1")

    months = await api_buckets(api, feed, energy, "month")
    days = await api_buckets(api, feed, energy, "day", time_from=start, time_to=end)

    # 500 W x 24 h x 28 days = 336,000 Wh; no point lies in January or March.
    assert months == [[start, pytest.approx(336_000.0)]]
    # 500 W x 24 h = 12,000 Wh a day, 28 days from local midnight on.
    assert days == [[start + 86_400 * d, pytest.approx(12_000.0)] for d in range(28)]
    # Analysts get the same from the daily view: 28 local days of 12,000 Wh.
    by_day = await feed.db.fetch(
        "SELECT local_day, value FROM cluster.daily_readings WHERE stream_id = $1"
        " ORDER BY local_day",
        energy,
    )
    assert len(by_day) == 28
    assert str(by_day[0]["local_day"]) == "2026-02-01"
    assert sum(r["value"] for r in by_day) == pytest.approx(336_000.0)
    # limit keeps the newest buckets, oldest first.
    newest = await api_buckets(api, feed, energy, "day", limit=3)
    assert [t for t, _ in newest] == [start + 86_400 * d for d in (25, 26, 27)]


async def test_raw_and_temperature_streams_are_averaged_per_bucket(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("UTC")
    t0 = unix("2026-03-02T00:00:00")
    thermometer = await feed.raw_stream(channel=2, medium=5)
    # Every 60 s for two hours: 20 °C in the first hour, alternating 21/23 °C in the second.
    await feed.ingest(
        thermometer,
        [(t0 + s, 20.0 if s < 3600 else (21.0 if s % 120 else 23.0)) for s in range(0, 7200, 60)],
    )
    await process(feed.db)
    mean = await feed.stream_id("Temperature, channel 2")

    # Raw: the mean of the points, (60 x 20) / 60 and (30 x 21 + 30 x 23) / 60.
    assert await api_buckets(api, feed, thermometer, "hour") == [
        [t0, pytest.approx(20.0)],
        [t0 + 3600, pytest.approx(22.0)],
    ]
    # A day of raw points: (60 x 20 + 30 x 21 + 30 x 23) / 120 = 21 °C.
    assert await api_buckets(api, feed, thermometer, "day") == [[t0, pytest.approx(21.0)]]
    # Processed temperature is averaged too, never summed: the 90 s means lie between 20 and 23.
    (day,) = await api_buckets(api, feed, mean, "day")
    assert day[0] == t0
    assert 20.0 < day[1] < 23.0


async def test_a_late_point_and_a_tariff_change_recompute_the_hours(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("UTC")
    t0 = unix("2026-03-03T00:00:00")
    clamp = await steady_power(feed, t0, t0 + 7200, 60, 1000.0)
    await feed.db.execute(
        "SELECT cluster.set_tariff($1, 'power', '-infinity', ARRAY['00:00'::time], ARRAY[0.5])",
        feed.id,
    )
    await process(feed.db)
    energy = await feed.stream_id("Electricity, channel 1")
    cost = await feed.stream_id("Electricity cost, channel 1")
    # 1 kWh an hour at 0.5 a kWh.
    assert await api_buckets(api, feed, cost, "hour") == [
        [t0, pytest.approx(0.5)],
        [t0 + 3600, pytest.approx(0.5)],
    ]

    # Late: a 4000 W point at 00:30:30 between the 1000 W ones at 00:30 and 00:31. Its two
    # 30 s segments add (4000 - 1000) / 2 x 60 s = 90,000 Ws = 25 Wh to the first hour.
    await feed.ingest(clamp, [(t0 + 1830, 4000.0)])
    await feed.db.execute(
        "SELECT cluster.set_tariff($1, 'power', $2, ARRAY['00:00'::time], ARRAY[2.0])",
        feed.id,
        datetime.fromtimestamp(t0 + 3600, UTC),
    )
    await process(feed.db)

    assert await api_buckets(api, feed, energy, "hour") == [
        [t0, pytest.approx(1025.0)],
        [t0 + 3600, pytest.approx(1000.0)],
    ]
    # 1.025 kWh x 0.5, then 1 kWh at the new price of 2.0 from 01:00 on.
    assert await api_buckets(api, feed, cost, "hour") == [
        [t0, pytest.approx(0.5125)],
        [t0 + 3600, pytest.approx(2.0)],
    ]


async def test_a_half_hour_zone_gets_hours_from_its_own_half_hours(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("Asia/Kolkata")
    # Local midnight in Kolkata (+05:30) on 2026-03-04 is 2026-03-03T18:30Z.
    start = unix("2026-03-03T18:30:00")
    await steady_power(feed, start, start + 86_400, 60, 1000.0)
    energy = await feed.stream_id("Electricity, channel 1")

    hours = await api_buckets(api, feed, energy, "hour", time_from=start, time_to=start + 7200)
    day = await api_buckets(api, feed, energy, "day", time_from=start, time_to=start)

    # Hours start at :30 UTC, local :00; the day holds 24 x 1000 Wh.
    assert hours == [[start + 3600 * h, pytest.approx(1000.0)] for h in range(3)]
    assert day == [[start, pytest.approx(24_000.0)]]


async def test_a_move_to_a_zone_of_half_hours_keeps_the_hours_on_both_sides_whole(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    # docs/engine.md#rollups: from 01:00Z on the feed keeps Asia/Kolkata time (+05:30), whose
    # hours start at :30 UTC. The UTC hour before the change is read whole, not from 00:30 on.
    feed = await new_feed("UTC")
    t0 = unix("2026-03-05T00:00:00")
    clamp = await steady_power(feed, t0, t0 + 3 * 3600, 60, 1000.0)
    energy = await feed.stream_id("Electricity, channel 1")
    await feed.db.execute(
        "SELECT cluster.set_feed_config($1, $2, 'moved', 'Asia/Kolkata')",
        feed.id,
        datetime.fromtimestamp(t0 + 3600, UTC),
    )
    # The UTC hour; then Kolkata's hours from 00:30Z, of which the change holds the second
    # half, and from 01:30Z and 02:30Z, whose data ends at 03:00Z.
    hours = [
        [t0, pytest.approx(1000.0)],
        [t0 + 1800, pytest.approx(500.0)],
        [t0 + 5400, pytest.approx(1000.0)],
        [t0 + 9000, pytest.approx(500.0)],
    ]

    assert await api_buckets(api, feed, energy, "hour") == hours  # read before the engine
    await process(feed.db)
    assert await api_buckets(api, feed, energy, "hour") == hours  # materialised
    rows = await feed.db.fetch(
        "SELECT date_part('epoch', hour)::bigint AS hour, points FROM cluster.hourly_rollups"
        " WHERE stream_id = $1 ORDER BY hour",
        energy,
    )
    # 90 s buckets: 40 in a whole hour, 20 in each half.
    assert [(r["hour"], r["points"]) for r in rows] == [
        (t0, 40), (t0 + 1800, 20), (t0 + 5400, 40), (t0 + 9000, 20)
    ]  # fmt: skip

    # A late point in Kolkata's first hour recomputes it, and leaves the UTC hour whole.
    await feed.ingest(clamp, [(t0 + 3600 + 630, 4000.0)])
    assert (await api_buckets(api, feed, energy, "hour"))[0] == hours[0]
    await process(feed.db)
    answered = await api_buckets(api, feed, energy, "hour")
    assert answered[0] == hours[0]
    assert answered[1] == [t0 + 1800, pytest.approx(525.0)]  # (4000 - 1000) / 2 x 60 s


@pytest.mark.parametrize("resolution", ["week", "HOUR", "", "hours", "1"])
async def test_an_unknown_resolution_is_a_400_problem(
    new_feed: NewFeed, api: httpx.AsyncClient, resolution: str
) -> None:
    feed = await new_feed()
    clamp = await feed.raw_stream(channel=1, medium=1)

    answer = await api.get(
        f"/feeds/{feed.id}/streams/{clamp}/data",
        params={"resolution": resolution},
        headers={"Authorization": f"Bearer {feed.owner_token}"},
    )

    assert answer.status_code == 400
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert "resolution" in answer.text


async def test_hours_and_days_left_without_points_leave_the_rollups(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("UTC")
    t0 = unix("2026-03-04T00:00:00")
    await steady_power(feed, t0, t0 + 7200, 60, 1000.0)
    energy = await feed.stream_id("Electricity, channel 1")
    assert await api_buckets(api, feed, energy, "day") == [[t0, pytest.approx(2000.0)]]

    # No medium from 01:00 on: the second hour's processed points are deleted, and with them
    # its hourly rollup; the day is the first hour alone.
    await feed.db.execute(
        "SELECT cluster.set_stream_config($1, $2, 'Electricity, channel 1', NULL, 'Wh')",
        energy,
        datetime.fromtimestamp(t0 + 3600, UTC),
    )
    await process(feed.db)
    hours = await feed.db.fetch(
        "SELECT date_part('epoch', hour)::bigint AS hour FROM cluster.hourly_rollups"
        " WHERE stream_id = $1 ORDER BY hour",
        energy,
    )
    assert [h["hour"] for h in hours] == [t0]
    assert await api_buckets(api, feed, energy, "hour") == [[t0, pytest.approx(1000.0)]]
    assert await api_buckets(api, feed, energy, "day") == [[t0, pytest.approx(1000.0)]]

    # No medium at all: no hour and no day is left.
    await feed.db.execute(
        "SELECT cluster.set_stream_config($1, '-infinity', 'Electricity, channel 1', NULL, 'Wh')",
        energy,
    )
    await process(feed.db)
    left = await feed.db.fetchval(
        "SELECT (SELECT count(*) FROM cluster.hourly_rollups WHERE stream_id = $1)"
        " + (SELECT count(*) FROM cluster.daily_rollups WHERE stream_id = $1)",
        energy,
    )
    assert left == 0
    assert await api_buckets(api, feed, energy, "day") == []
