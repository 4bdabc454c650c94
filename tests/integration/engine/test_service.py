"""The engine service: closed buckets are published within seconds, open ones never."""

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
from prometheus_client import REGISTRY

from energy_platform.core.settings import EngineSettings, Settings
from energy_platform.engine.rollups import rollup_batch
from energy_platform.engine.service import EngineService, drain
from tests.support.data import T0
from tests.support.engine import NewFeed, process
from tests.support.services import eventually, rounds_later, running


class FakeClock:
    """The engine's idea of now, moved by the test."""

    def __init__(self, unix: float) -> None:
        self.unix = unix

    def __call__(self) -> datetime:
        return datetime.fromtimestamp(self.unix, UTC)


def engine_rounds() -> float:
    """Processing rounds of the engines this process runs (engine/service.py's counter)."""
    return REGISTRY.get_sample_value("ep_engine_rounds_total") or 0.0


async def seconds_until(check: Callable[[], Awaitable[bool]]) -> float:
    """The seconds until ``check`` holds (polled as :func:`eventually` polls, every 50 ms)."""
    start = time.monotonic()
    await eventually(check, every=0.05)
    return time.monotonic() - start


async def test_a_closed_bucket_is_published_promptly_and_an_open_one_only_after_it_closes(
    new_feed: NewFeed, settings: Settings
) -> None:
    feed = await new_feed()
    clamp = await feed.raw_stream(channel=1, medium=1)
    clock = FakeClock(T0 + 150)  # bucket T0 is closed, bucket T0 + 90 is open
    await feed.ingest(clamp, [(T0 + s, 1000.0) for s in range(0, 151, 5)])
    engine = EngineService(
        settings.database, EngineSettings(poll_interval=0.2), currency="CZK", clock=clock
    )

    async def has(bucket: int) -> bool:
        return bucket in await feed.points("Electricity, channel 1")

    async with running(engine):
        lag = await seconds_until(lambda: has(T0))
        await rounds_later(engine_rounds, 5)  # five more rounds of the engine
        assert await feed.points("Electricity, channel 1") == {T0: pytest.approx(25.0)}

        # The open bucket's last samples arrive, then it closes.
        await feed.ingest(clamp, [(T0 + s, 1000.0) for s in range(155, 181, 5)])
        clock.unix = T0 + 180
        lag_after_close = await seconds_until(lambda: has(T0 + 90))

    assert lag < 15
    assert lag_after_close < 15
    assert await feed.points("Electricity, channel 1") == {
        T0: pytest.approx(25.0),
        T0 + 90: pytest.approx(25.0),
    }


async def test_two_engine_workers_share_the_work_without_conflicts(
    new_feed: NewFeed, database_url: str
) -> None:
    feeds = [await new_feed() for _ in range(12)]
    # The workers count every point they write, and the module's database holds what earlier
    # tests of this module left (the ingest tests' live data among it). On a clock a month
    # after T0, that work is either closed and taken now, or open for as long as the test
    # runs: the workers' count is this test's own.
    clock = FakeClock(T0 + 30 * 86_400)
    await drain(feeds[0].db, EngineSettings(), clock, currency="CZK")
    for n, feed in enumerate(feeds):
        clamp = await feed.raw_stream(channel=1, medium=1)
        await feed.ingest(clamp, [(T0 + s, 100.0 * (n + 1)) for s in range(0, 271, 5)])
    one_feed_per_batch = EngineSettings(batch_feeds=1, intake_batch=2)

    workers = [await asyncpg.connect(database_url) for _ in range(2)]
    try:
        drained = await asyncio.gather(
            *(drain(w, one_feed_per_batch, clock, currency="CZK") for w in workers)
        )
    finally:
        for w in workers:
            await w.close()
    await process(feeds[0].db)

    # 100·(n+1) W x 90 s = 2.5·(n+1) Wh in each of the three buckets of feed n.
    for n, feed in enumerate(feeds):
        expected = pytest.approx(2.5 * (n + 1))
        assert await feed.points("Electricity, channel 1") == {
            T0: expected,
            T0 + 90: expected,
            T0 + 180: expected,
        }
    assert sum(d.written for d in drained) == 36
    ids = [f.id for f in feeds]
    assert (
        await feeds[0].db.fetchval(
            "SELECT count(*) FROM cluster.engine_work WHERE feed_id = ANY($1)", ids
        )
        == 0
    )


async def test_a_round_takes_one_rollup_batch_and_says_whether_more_wait(
    new_feed: NewFeed,
) -> None:
    # The service runs rounds of one rollup batch, so that a backlog of rollups never holds
    # back a closed bucket; a round that took a full batch starts the next one at once.
    feed = await new_feed()
    streams = [await feed.raw_stream(channel=c, medium=1) for c in (1, 2, 3)]
    # What the module's earlier tests left queued in its database goes first, in
    # batches of the usual size: the drain below, a stream a batch, would take it for a minute.
    await process(feed.db)
    await feed.db.executemany(
        "INSERT INTO cluster.rollup_work (stream_id, span, recorded_at)"
        " VALUES ($1, tstzrange(to_timestamp($2), to_timestamp($2 + 3600)), '2000-01-01')",
        [(s, T0) for s in streams],  # older than any other work: taken first
    )
    one_period = EngineSettings(rollup_delay=0, rollup_batch=1)

    async def queued() -> int:
        count = await feed.db.fetchval(
            "SELECT count(*) FROM cluster.rollup_work WHERE stream_id = ANY($1)", streams
        )
        return int(count)

    first = await drain(feed.db, one_period, currency="CZK", rollup_batches=1)
    assert first.rollups_left
    assert await queued() == 2
    rest = await drain(
        feed.db, one_period, currency="CZK"
    )  # every batch, as tests and benchmarks drain
    assert not rest.rollups_left
    assert await queued() == 0


async def test_a_backlog_is_worked_off_over_rounds_and_another_feeds_reading_is_taken_between(
    new_feed: NewFeed,
) -> None:
    # One homebase sends two days at once: processing them takes many transactions (max_span
    # of an hour each here). A round stops recomputing after round_s and says work is left;
    # the next round takes the other feed's new reading in and processes it, backlog or not.
    backlog, other = await new_feed(), await new_feed()
    await process(backlog.db)  # what earlier tests of this worker left queued
    clamp = await backlog.raw_stream(channel=1, medium=1)
    await backlog.ingest(clamp, [(T0 + s, 1000.0) for s in range(0, 2 * 86_400, 60)])
    hourly = EngineSettings(max_span=3600, batch_feeds=1)
    first = await drain(
        backlog.db, hourly, currency="CZK", rollup_batches=0, intake_batches=1, round_s=1e-6
    )
    assert first.work_left
    assert first.periods >= 1
    left = "SELECT count(*) FROM cluster.engine_work WHERE feed_id = $1"
    assert await backlog.db.fetchval(left, backlog.id) > 0

    reading = await other.raw_stream(channel=1, medium=1)
    await other.ingest(reading, [(T0 + s, 500.0) for s in range(0, 91, 5)])
    # The next rounds each take ingest's new ranges in first: the other feed's bucket is
    # processed while the backlog is still queued.
    while not await other.points("Electricity, channel 1"):
        done = await drain(
            other.db, hourly, currency="CZK", rollup_batches=0, intake_batches=1, round_s=1e-6
        )
        assert done.work_left
    assert await other.points("Electricity, channel 1") == {T0: pytest.approx(12.5)}
    assert await backlog.db.fetchval(left, backlog.id) > 0
    # Without a round's bound, a drain works everything off.
    assert not (await drain(backlog.db, hourly, currency="CZK", rollup_batches=0)).work_left
    assert await backlog.db.fetchval(left, backlog.id) == 0


async def test_a_rollup_batch_takes_every_queued_period_of_its_streams_at_once(
    new_feed: NewFeed,
) -> None:
    # A live stream queues a period with every batch of points; the delay is meant to let them
    # gather so that its hour is recomputed once. A batch of one stream takes all of them,
    # the one younger than the delay too, and leaves the other stream's work queued.
    feed = await new_feed()
    live, other = [await feed.raw_stream(channel=c, medium=1) for c in (1, 2)]
    await feed.db.executemany(
        "INSERT INTO cluster.rollup_work (stream_id, span, recorded_at)"
        " VALUES ($1, tstzrange(to_timestamp($2), to_timestamp($2 + 5)), $3)",
        [
            (live, T0, datetime(2000, 1, 1, tzinfo=UTC)),  # the oldest: its stream goes first
            (live, T0 + 5, datetime(2000, 1, 1, 0, 0, 5, tzinfo=UTC)),
            (other, T0, datetime(2000, 1, 1, 0, 0, 7, tzinfo=UTC)),
            (live, T0 + 10, datetime.now(UTC) + timedelta(hours=1)),  # not due on its own
        ],
    )
    rolled = await rollup_batch(feed.db, batch=1, delay=60, timeout_ms="0", park_after=3)
    left = await feed.db.fetch(
        "SELECT stream_id FROM cluster.rollup_work WHERE stream_id = ANY($1)", [live, other]
    )
    assert (rolled.streams, rolled.periods) == (1, 3)
    assert [r["stream_id"] for r in left] == [other]


async def test_committed_points_wake_the_engine_long_before_its_next_poll(
    new_feed: NewFeed, settings: Settings
) -> None:
    feed = await new_feed()
    clamp = await feed.raw_stream(channel=1, medium=1)
    # The engine's clock stands 1 s into a bucket long after T0: no bucket end wakes it, and it
    # polls only every 60 s. Only ingest's notification can start a round in time.
    clock = FakeClock(T0 + 90 * 1000 + 1)
    engine = EngineService(
        settings.database, EngineSettings(poll_interval=60.0), currency="CZK", clock=clock
    )

    async def has(bucket: int) -> bool:
        return bucket in await feed.points("Electricity, channel 1")

    async def listening() -> bool:
        found = await feed.db.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND query = 'LISTEN \"ep_engine_work\"'"
        )
        return bool(found)

    before = engine_rounds()
    async with running(engine):
        # It listens, and its round at start and the one its listener's first wake-up starts
        # (the worker clears its event before the listener has connected) are over: it waits
        # for its 60 s poll.
        await eventually(listening)
        await eventually(lambda: engine_rounds() >= before + 2)
        await feed.ingest(clamp, [(T0 + s, 1000.0) for s in range(0, 91, 5)])
        lag = await seconds_until(lambda: has(T0))

    # Notified at the commit: a round within about a second on a quiet machine, and well short
    # of the 60 s poll on a loaded one.
    assert lag < 20
    assert await feed.points("Electricity, channel 1") == {T0: pytest.approx(25.0)}


async def test_the_service_rolls_up_in_a_loop_of_its_own(
    new_feed: NewFeed, settings: Settings
) -> None:
    feed = await new_feed("UTC")
    clamp = await feed.raw_stream(channel=1, medium=1)
    clock = FakeClock(T0 + 90 * 1000 + 1)
    engine = EngineService(
        settings.database,
        EngineSettings(poll_interval=0.2, rollup_delay=0),
        currency="CZK",
        clock=clock,
    )

    async def rolled_up() -> bool:
        hours = await feed.db.fetchval(
            "SELECT count(*) FROM cluster.hourly_rollups WHERE stream_id = $1", clamp
        )
        return bool(hours)

    async with running(engine):
        await feed.ingest(clamp, [(T0 + s, 1000.0) for s in range(0, 91, 5)])
        await seconds_until(rolled_up)

    # 19 points of 1000 W in one hour: the raw stream's hour holds them all.
    assert await feed.db.fetchrow(
        "SELECT total, points FROM cluster.hourly_rollups WHERE stream_id = $1", clamp
    ) == (19_000.0, 19)
