"""Late points and configuration changes recompute exactly the buckets they affect."""

from datetime import UTC, datetime

import pytest

from energy_platform.core.settings import EngineSettings
from energy_platform.engine.processing import MeterLimits, intake
from tests.support.data import T0
from tests.support.engine import NewFeed, process

NOON = 1_767_268_800  # 2026-01-01T12:00:00Z, a bucket start


async def test_late_data_updates_a_bucket_that_was_already_processed(new_feed: NewFeed) -> None:
    feed = await new_feed()
    clamp = await feed.raw_stream(channel=1, medium=1)
    await feed.ingest(clamp, [(T0 + s, 1000.0) for s in range(0, 46, 5)])
    await process(feed.db)
    # Only [0, 45] is known: 45 s x 1000 W = 12.5 Wh.
    assert await feed.points("Electricity, channel 1") == {T0: pytest.approx(12.5)}

    # Hours later the rest of the bucket arrives, out of order, with a resent point.
    await feed.ingest(clamp, [(T0 + s, 1000.0) for s in (90, 70, 45, 50, 55, 60, 65, 75, 80, 85)])
    await process(feed.db)

    assert await feed.points("Electricity, channel 1") == {T0: pytest.approx(25.0)}


async def test_a_late_point_in_a_gap_changes_the_buckets_around_it(new_feed: NewFeed) -> None:
    feed = await new_feed()
    clamp = await feed.raw_stream(channel=1, medium=1)
    # 900 W at 0 and 400 s: a 400 s gap, nothing bridged, no points at all.
    await feed.ingest(clamp, [(T0, 900.0), (T0 + 400, 900.0)])
    await process(feed.db)
    assert await feed.points("Electricity, channel 1") == {}

    # A point at 200 s makes two bridged 200 s segments: 900 W over [0, 400].
    await feed.ingest(clamp, [(T0 + 200, 900.0)])
    await process(feed.db)

    # 900 W x 90 s = 22.5 Wh per full bucket; [360, 400]: 40 s = 10 Wh.
    assert await feed.points("Electricity, channel 1") == {
        T0: pytest.approx(22.5),
        T0 + 90: pytest.approx(22.5),
        T0 + 180: pytest.approx(22.5),
        T0 + 270: pytest.approx(22.5),
        T0 + 360: pytest.approx(10.0),
    }


async def test_a_configuration_set_to_null_at_noon_stops_points_from_noon(
    new_feed: NewFeed,
) -> None:
    feed = await new_feed()
    clamp = await feed.raw_stream(channel=1, medium=1)
    # 1000 W from 11:57 to 12:03:00.
    await feed.ingest(clamp, [(NOON + s, 1000.0) for s in range(-180, 181, 5)])
    await feed.db.execute(
        "SELECT cluster.set_tariff($1, 'power', '-infinity', ARRAY['00:00'::time], ARRAY[4.0])",
        feed.id,
    )
    await process(feed.db)
    energy = await feed.stream_id("Electricity, channel 1")
    before = {NOON + k * 90: pytest.approx(25.0) for k in (-2, -1, 0, 1)}
    assert await feed.points("Electricity, channel 1") == before

    noon = datetime.fromtimestamp(NOON, UTC)
    await feed.db.execute(
        "SELECT cluster.set_stream_config($1, $2, 'Electricity, channel 1', NULL, 'Wh')",
        energy,
        noon,
    )
    await process(feed.db)

    assert await feed.points("Electricity, channel 1") == {
        NOON - 180: pytest.approx(25.0),
        NOON - 90: pytest.approx(25.0),
    }
    # No consumption, no cost: 25 Wh x 4 per kWh = 0.1 before noon, nothing after.
    assert await feed.points("Electricity cost, channel 1") == {
        NOON - 180: pytest.approx(0.1),
        NOON - 90: pytest.approx(0.1),
    }

    # The owner turns it back on from 12:01:30: the later bucket comes back.
    await feed.db.execute(
        "SELECT cluster.set_stream_config($1, $2, 'Electricity, channel 1', 'power', 'Wh')",
        energy,
        datetime.fromtimestamp(NOON + 90, UTC),
    )
    await process(feed.db)
    assert set(await feed.points("Electricity, channel 1")) == {NOON - 180, NOON - 90, NOON + 90}


async def test_a_new_title_changes_no_point_and_queues_no_work(new_feed: NewFeed) -> None:
    feed = await new_feed()
    clamp = await feed.raw_stream(channel=1, medium=1)
    await feed.ingest(clamp, [(T0 + s, 1000.0) for s in range(0, 91, 5)])
    await process(feed.db)
    energy = await feed.stream_id("Electricity, channel 1")

    await feed.db.execute(
        "SELECT cluster.set_stream_config($1, $2, 'Kitchen', 'power', 'Wh')",
        energy,
        datetime.fromtimestamp(T0 + 45, UTC),
    )

    queued = await feed.db.fetchval(
        "SELECT count(*) FROM cluster.engine_work WHERE feed_id = $1", feed.id
    )
    assert queued == 0
    # The point is the bucket's; its title is the one valid at the bucket's start.
    assert await feed.points("Electricity, channel 1") == {T0: pytest.approx(25.0)}


async def test_a_channel_gaining_a_second_index_gets_a_combined_stream_with_history(
    new_feed: NewFeed,
) -> None:
    feed = await new_feed()
    first = await feed.raw_stream(channel=6, medium=12, idx=1, device=7)
    await feed.ingest(first, [(T0 + s, 1000.0) for s in range(0, 181, 5)])
    await process(feed.db)
    assert await feed.points("Electricity, channel 6, total") == {}

    second = await feed.raw_stream(channel=6, medium=12, idx=2, device=7)
    await feed.ingest(second, [(T0 + s, 2000.0) for s in range(90, 181, 5)])
    await process(feed.db)

    # The combined stream covers the first bucket too, where only L1 had data.
    assert await feed.points("Electricity, channel 6, total") == {
        T0: pytest.approx(25.0),
        T0 + 90: pytest.approx(75.0),
    }


async def test_a_backlog_of_days_is_taken_in_as_one_stretch_and_processed_whole(
    new_feed: NewFeed,
) -> None:
    # A homebase back after ten days offline sends them at once, a reading every 5 minutes
    # (bridged): ingest records a range per UTC day, 300 s apart from day to day.
    feed = await new_feed()
    clamp = await feed.raw_stream(channel=1, medium=1)
    days = 10
    await feed.ingest(clamp, [(T0 + s, 1200.0) for s in range(0, days * 86_400, 300)])
    assert (
        await feed.db.fetchval(
            "SELECT count(*) FROM cluster.dirty_ranges WHERE stream_id = $1", clamp
        )
        == days
    )

    await intake(
        feed.db,
        batch=1000,
        currency="EUR",
        work_mem="64MB",
        limits=MeterLimits.of(EngineSettings()),
    )

    # One stretch of the channel's buckets, from the first reading's to the last one's: the
    # days, 300 s apart, are taken in as one written period (the channel is new, so its whole
    # history is queued once more: the same stretch).
    queued = await feed.db.fetch(
        "SELECT DISTINCT lower(buckets) AS lo, upper(buckets) AS hi FROM cluster.engine_work"
        " WHERE feed_id = $1",
        feed.id,
    )
    last = T0 + days * 86_400 - 300
    assert [(int(q["lo"].timestamp()), int(q["hi"].timestamp())) for q in queued] == [
        (T0, last // 90 * 90 + 90)
    ]
    await process(feed.db)
    # 1200 W bridged throughout: 30 Wh in every bucket but the last reading's own.
    points = await feed.points("Electricity, channel 1")
    assert len(points) == (last - T0) // 90 + 1
    assert all(v == pytest.approx(30.0) for t, v in points.items() if t + 90 <= last)
