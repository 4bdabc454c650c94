"""One fault policy (core/faults.py) in every loop: a fault of the world ends a round and the
next one retries; a data error is never retried as if the world had failed: the service fails,
and the lifecycle restarts it with backoff, counted in ``ep_service_restarts_total``. The
engine's batches narrow a data error down to its feed and park that feed instead
(engine/parking.py): the engine goes on for every other feed, and is not restarted."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from prometheus_client import REGISTRY

from energy_platform.core.background import Periodic
from energy_platform.core.lifecycle import run_services
from energy_platform.core.settings import DatabaseSettings, EngineSettings, Settings
from energy_platform.engine.service import EngineService
from tests.support.admin import run_admin
from tests.support.data import T0
from tests.support.engine import NewFeed, fail_processing, heal_processing
from tests.support.services import eventually


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


async def test_a_data_error_in_one_feed_parks_it_and_the_engine_goes_on(
    new_feed: NewFeed, settings: Settings
) -> None:
    poisoned, healthy = await new_feed(), await new_feed()
    for feed in (poisoned, healthy):
        clamp = await feed.raw_stream(channel=1, medium=1)
        await feed.ingest(clamp, [(T0 + s, 1000.0) for s in range(0, 181, 5)])
    # Fails the way bad data would (SQLSTATE 22003).
    await fail_processing(poisoned.db, poisoned.id, "22003", "value out of range")
    before = REGISTRY.get_sample_value("ep_service_restarts_total", {"service": "engine"}) or 0
    engine = EngineService(settings.database, EngineSettings(poll_interval=0.1), currency="CZK")
    lifecycle = asyncio.create_task(run_services([engine], shutdown_timeout=2))
    try:
        await eventually(lambda: healthy.points("Electricity, channel 1"), within=60)
        await eventually(lambda: parked_feeds(poisoned.db, poisoned.id), within=60)
        assert not await poisoned.points("Electricity, channel 1")
        # Set aside, not failed: nothing escaped the engine's loop.
        assert not lifecycle.done()
        restarts = REGISTRY.get_sample_value("ep_service_restarts_total", {"service": "engine"})
        assert (restarts or 0) == before
    finally:
        await heal_processing(poisoned.db, poisoned.id)

    # With the cause gone, a retry puts the work back and the running engine processes it,
    # leaving no work behind for the tests that share this database.
    await run_admin(settings, "engine", "retry", str(poisoned.id))

    async def processed() -> bool:
        waiting = await poisoned.db.fetchval(
            "SELECT (SELECT count(*) FROM cluster.engine_work WHERE feed_id = $1)"
            " + (SELECT count(*) FROM cluster.parked_work WHERE feed_id = $1)",
            poisoned.id,
        )
        return waiting == 0 and bool(await poisoned.points("Electricity, channel 1"))

    await eventually(processed, within=60)
    lifecycle.cancel()
    with pytest.raises(asyncio.CancelledError):
        await lifecycle


async def parked_feeds(db: asyncpg.Connection, feed_id: int) -> bool:
    parked = await db.fetchval(
        "SELECT count(*) FROM cluster.parked_work WHERE feed_id = $1 AND retried_at IS NULL",
        feed_id,
    )
    return bool(parked)
