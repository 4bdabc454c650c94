"""A meter counter's reading far from the rest of its history (issue 59): a homebase whose clock
fell back to 2000 after a power cut sends its register readings stamped 2000-01-01. Such a
reading is paired with its neighbours like any other, but across a gap longer than
EP_ENGINE_MAX_SPREAD nothing is spread, so the engine queues the buckets the reading can change
(its own day, its neighbours' buckets) and not the years between."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from energy_platform.engine.processing import MeterLimits, bucket_start, intake
from tests.support.engine import CURRENCY, ENGINE, NewFeed, process

Y2000 = 946_684_800  # 2000-01-01T00:00:00Z, a bucket start
DAY = 86_400
TITLE = "Electricity, channel 0"
# The engine's queued periods of a feed, as Unix seconds [from, to).
QUEUED = """
SELECT extract(epoch FROM lower(buckets))::bigint AS a,
       extract(epoch FROM upper(buckets))::bigint AS b
  FROM cluster.engine_work WHERE feed_id = $1 ORDER BY 1"""


async def take_in(db: asyncpg.Connection, feed_id: int) -> list[tuple[int, int]]:
    """Intake as the engine runs it, and the feed's queued periods before anyone claims them
    (inside this transaction)."""
    async with db.transaction():
        await intake(
            db,
            batch=ENGINE.intake_batch,
            currency=CURRENCY,
            work_mem=ENGINE.work_mem,
            limits=MeterLimits.of(ENGINE),
        )
        return [(r["a"], r["b"]) for r in await db.fetch(QUEUED, feed_id)]


async def test_a_register_reading_from_2000_queues_its_days_and_not_the_years_between(
    new_feed: NewFeed,
) -> None:
    feed = await new_feed()
    register = await feed.raw_stream(channel=0, medium=22)
    # Two hours of a register counting 10 Wh a minute, ending an hour ago; processed.
    end = int(bucket_start(datetime.now(UTC) - timedelta(hours=1)).timestamp())
    start = end - 7200
    history = [(start + 60 * n, 5_000_000.0 + 10 * n) for n in range(121)]
    await feed.ingest(register, history)
    await process(feed.db)
    before = await feed.points(TITLE)
    assert sum(before.values()) == pytest.approx(1200)

    # One batch: a reading stamped 2000-01-01 (the clock fell back) and one a minute after
    # the history's last, both of the meter's true register.
    last = history[-1][1]
    await feed.ingest(register, [(Y2000, last + 5), (end + 60, last + 10)])
    queued = await take_in(feed.db, feed.id)
    # The 2000 reading's own day (and its neighbours' buckets at the history's start), the new
    # reading's buckets: not the 26 years between.
    assert queued, "intake queued nothing"
    assert all(b - a <= DAY for a, b in queued), queued
    assert all((a >= Y2000 and b <= Y2000 + DAY) or a >= start - 180 for a, b in queued), queued

    await process(feed.db)
    after = await feed.points(TITLE)
    # No point in 2000 (a reading alone, its neighbour 26 years away: nothing spread), the
    # history as it was but for the first reading's bucket, where the step from the 2000
    # reading (down: a reset, counted 0) now lands, and the new minute's 10 Wh.
    assert not [t for t in after if t < start]
    assert {t: v for t, v in after.items() if start + 90 <= t < end} == pytest.approx(
        {t: v for t, v in before.items() if start + 90 <= t < end}
    )
    assert sum(after.values()) == pytest.approx(1210)
    assert not await feed.db.fetchval(
        "SELECT count(*) FROM cluster.engine_work WHERE feed_id = $1", feed.id
    )


async def test_a_gas_reading_from_2000_queues_its_days_and_not_the_years_between(
    new_feed: NewFeed,
) -> None:
    feed = await new_feed()
    gas = await feed.raw_stream(channel=1, medium=7)
    end = int(bucket_start(datetime.now(UTC) - timedelta(hours=1)).timestamp())
    start = end - 7200
    await feed.ingest(gas, [(start + 300 * n, 1000.0 + 0.01 * n) for n in range(25)])
    await process(feed.db)
    await feed.ingest(gas, [(Y2000, 1000.0), (end + 300, 1000.26)])
    queued = await take_in(feed.db, feed.id)
    assert queued, "intake queued nothing"
    assert all(b - a <= DAY for a, b in queued), queued
    await process(feed.db)
