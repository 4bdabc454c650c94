"""One fault policy (core/faults.py) in every loop: a fault of the world ends a round and the
next one retries; a data error is never retried as if the world had failed: the service fails,
and the lifecycle restarts it with backoff, counted in ``ep_service_restarts_total``."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from prometheus_client import REGISTRY

from energy_platform.core.background import Periodic
from energy_platform.core.lifecycle import run_services
from energy_platform.core.settings import DatabaseSettings, EngineSettings, Settings
from energy_platform.engine.service import EngineService
from tests.support.data import T0
from tests.support.engine import NewFeed
from tests.support.services import eventually

# Every processed point of feed {feed} fails its insert the way bad data would (SQLSTATE 22003).
DATA_ERROR_ON_PROCESSED = """
CREATE FUNCTION cluster.test_refuse_{feed}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM cluster.streams WHERE id = NEW.stream_id AND feed_id = {feed}) THEN
        RAISE EXCEPTION 'value out of range' USING ERRCODE = 'numeric_value_out_of_range';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER refuse_{feed} BEFORE INSERT ON cluster.processed_points
   FOR EACH ROW EXECUTE FUNCTION cluster.test_refuse_{feed}();
"""


async def test_a_fault_of_the_world_ends_only_its_round(database_url: str) -> None:
    rounds: list[str] = []

    async def work(pool: asyncpg.Pool, _: asyncio.Event) -> dict[str, int]:
        rounds.append("round")
        if len(rounds) == 1:
            # The server ends this connection, as a restart would.
            await pool.execute("SELECT pg_terminate_backend(pg_backend_pid())")
        return {}

    stop = asyncio.Event()
    loop = Periodic("test", DatabaseSettings(url=database_url), 0.05, work)
    task = asyncio.create_task(loop.run(stop))
    await eventually(lambda: len(rounds) >= 3, within=60)
    stop.set()
    await task  # no error: the terminated round was retried


async def test_a_data_error_fails_the_loop_instead_of_being_retried(database_url: str) -> None:
    rounds: list[str] = []

    async def work(pool: asyncpg.Pool, _: asyncio.Event) -> dict[str, int]:
        rounds.append("round")
        await pool.execute("SELECT 1 / 0")  # SQLSTATE 22012
        return {}

    loop = Periodic("test", DatabaseSettings(url=database_url), 0.05, work)
    with pytest.raises(asyncpg.DivisionByZeroError):
        await asyncio.wait_for(loop.run(asyncio.Event()), 60)
    assert rounds == ["round"]


async def test_the_engine_fails_on_a_data_error_and_is_restarted(
    new_feed: NewFeed, settings: Settings
) -> None:
    feed = await new_feed()
    clamp = await feed.raw_stream(channel=1, medium=1)
    await feed.ingest(clamp, [(T0 + s, 1000.0) for s in range(0, 181, 5)])
    # A test's own trigger on its own feed: format() of an integer id, not of input.
    await feed.db.execute(DATA_ERROR_ON_PROCESSED.format(feed=feed.id))
    before = REGISTRY.get_sample_value("ep_service_restarts_total", {"service": "engine"}) or 0
    engine = EngineService(settings.database, EngineSettings(poll_interval=0.1, currency="CZK"))
    try:
        # Directly: the error ends the service, it is not swallowed as a retry.
        with pytest.raises(ExceptionGroup) as failed:
            await asyncio.wait_for(engine.run(asyncio.Event()), 60)
        assert failed.group_contains(asyncpg.NumericValueOutOfRangeError)

        # Under the lifecycle: logged, counted and restarted (other services would go on).
        lifecycle = asyncio.create_task(run_services([engine], shutdown_timeout=2))
        await eventually(
            lambda: (
                (REGISTRY.get_sample_value("ep_service_restarts_total", {"service": "engine"}) or 0)
                > before
            ),
            within=60,
        )
    finally:
        await feed.db.execute(f"DROP TRIGGER refuse_{feed.id} ON cluster.processed_points")
        await feed.db.execute(f"DROP FUNCTION cluster.test_refuse_{feed.id}()")

    # With the cause gone, the restarted engine processes the points, and leaves no work behind
    # for the tests that share this database.
    async def processed() -> bool:
        waiting = await feed.db.fetchval(
            "SELECT (SELECT count(*) FROM cluster.engine_work WHERE feed_id = $1)"
            " + (SELECT count(*) FROM cluster.dirty_ranges d JOIN cluster.streams s"
            "    ON s.id = d.stream_id WHERE s.feed_id = $1)",
            feed.id,
        )
        return waiting == 0 and bool(await feed.points("Electricity, channel 1"))

    await eventually(processed, within=60)
    lifecycle.cancel()
    with pytest.raises(asyncio.CancelledError):
        await lifecycle
