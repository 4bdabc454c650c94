"""Work is queued per UTC day that holds written points (issue 59): one old timestamp in a
device's batch costs its own day, not the years between it and the rest of the batch."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from energy_platform.engine.processing import bucket_start
from tests.support.engine import NewFeed, process

Y2000 = 946_684_800  # 2000-01-01T00:00:00Z, a bucket start
TITLE = "Electricity, channel 1"

# Every compacted stream-day of the feed.
COMPACTED = """
SELECT d.stream_id, d.day FROM cluster.point_days d JOIN cluster.streams s ON s.id = d.stream_id
 WHERE s.feed_id = $1 ORDER BY 1, 2"""
COMPACT_DAY = "SELECT sum(cluster.compact_day(id, $2)) FROM cluster.streams WHERE feed_id = $1"
QUEUED = """
SELECT extract(epoch FROM ts_from)::bigint AS a, extract(epoch FROM ts_to)::bigint AS b
  FROM cluster.dirty_ranges WHERE stream_id = $1 ORDER BY ts_from"""


async def test_a_batch_from_2000_and_now_queues_two_days_and_thaws_none_between(
    new_feed: NewFeed,
) -> None:
    feed = await new_feed()
    clamp = await feed.raw_stream(channel=1, medium=1)
    # An hour of 1000 W from 06:00Z on three days of last month, processed, then compacted:
    # raw and processed streams alike.
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    days = [(today - timedelta(days=n)).date() for n in (40, 30, 20)]
    for day in days:
        six = int(datetime(day.year, day.month, day.day, 6, tzinfo=UTC).timestamp())
        await feed.ingest(clamp, [(six + s, 1000.0) for s in range(0, 3601, 60)])
    await process(feed.db)
    for day in days:
        assert await feed.db.fetchval(COMPACT_DAY, feed.id, day) > 0
    compacted = [tuple(r) for r in await feed.db.fetch(COMPACTED, feed.id)]
    energy = await feed.stream_id(TITLE)
    assert {(energy, day) for day in days} <= set(compacted)

    # One batch: a minute of 1000 W on 2000-01-01 (a homebase whose clock fell back) and a
    # minute of it in a bucket fifteen minutes ago.
    recent = int(bucket_start(datetime.now(UTC)).timestamp()) - 900
    await feed.ingest(
        clamp, [(Y2000, 1000.0), (Y2000 + 60, 1000.0), (recent, 1000.0), (recent + 60, 1000.0)]
    )
    # Two days queued, each from its first point to its last.
    assert [tuple(r) for r in await feed.db.fetch(QUEUED, clamp)] == [
        (Y2000, Y2000 + 60),
        (recent, recent + 60),
    ]

    await process(feed.db)
    # Both days processed: 1000 W for 60 s = 16.67 Wh in each first bucket.
    points = await feed.points(TITLE)
    assert points[Y2000] == pytest.approx(1000 * 60 / 3600)
    assert points[recent] == pytest.approx(1000 * 60 / 3600)
    # And no day between them left the compact tier.
    assert [tuple(r) for r in await feed.db.fetch(COMPACTED, feed.id)] == compacted
