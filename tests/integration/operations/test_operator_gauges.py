"""What an operator alerts on, as Prometheus scrapes it: the data API's /metrics says how long
the oldest work of the engine's and the rollups' queues has waited, when ingest last stored a
message while homebases are paired, how old the last backup is, and whether the database
answers; the housekeeping loops count their rounds by outcome."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import msgspec
import pytest

from energy_platform.api import app as data
from energy_platform.core.background import Periodic
from energy_platform.core.http.server import HttpService
from energy_platform.core.settings import DatabaseSettings, Settings
from energy_platform.services import CLUSTER_WATCHES, build_services
from tests.support.http import http_client
from tests.support.scrape import promtool_problems, scrape, value
from tests.support.services import eventually, free_port, running


@pytest.fixture(scope="module")
async def api(settings: Settings) -> AsyncIterator[str]:
    url = f"http://127.0.0.1:{settings.http.api_port}"
    service = HttpService(
        "api",
        data.create_app(settings, watches=CLUSTER_WATCHES),
        "127.0.0.1",
        settings.http.api_port,
    )
    async with running(service, ready_urls=(url + "/healthz",)):
        yield url


async def test_queue_ages_count_from_the_oldest_waiting_work(
    api: str, db: asyncpg.Connection
) -> None:
    # A raw range recorded 5 minutes ago and a rollup period queued 11 minutes ago.
    await db.execute(
        "INSERT INTO cluster.dirty_ranges (stream_id, ts_from, ts_to, recorded_at)"
        " VALUES (-1, now(), now(), now() - interval '5 minutes')"
    )
    await db.execute(
        "INSERT INTO cluster.rollup_work (stream_id, span, recorded_at)"
        " VALUES (-1, tstzrange(now() - interval '1 hour', now()), now() - interval '11 minutes')"
    )
    try:
        samples = await scrape(api)
    finally:
        await db.execute("DELETE FROM cluster.dirty_ranges WHERE stream_id = -1")
        await db.execute("DELETE FROM cluster.rollup_work WHERE stream_id = -1")
    engine_age = value(samples, "ep_engine_oldest_unprocessed_age_seconds")
    assert engine_age is not None
    assert 300 <= engine_age < 360
    depth = value(samples, "ep_engine_queue_depth")
    assert depth is not None
    assert depth >= 1
    rollup_age = value(samples, "ep_rollups_oldest_queued_age_seconds")
    assert rollup_age is not None
    assert 660 <= rollup_age < 720
    assert value(samples, "ep_database_up") == 1

    # This test's work is gone (other tests of the module's database may have queued younger
    # periods of their own).
    samples = await scrape(api)
    after = value(samples, "ep_rollups_oldest_queued_age_seconds")
    assert after is not None
    assert after < 660


async def test_ingest_silence_and_paired_homebases(api: str, db: asyncpg.Connection) -> None:
    await db.execute(
        "INSERT INTO cluster.homebase_presence (homebase_sn, online, last_data_at)"
        " VALUES ('FFFFFFFFFFFF0031', true, now() - interval '1 minute')"
        " ON CONFLICT (homebase_sn) DO UPDATE SET last_data_at = EXCLUDED.last_data_at"
    )
    try:
        samples = await scrape(api)
    finally:
        await db.execute(
            "DELETE FROM cluster.homebase_presence WHERE homebase_sn = 'FFFFFFFFFFFF0031'"
        )
    paired = await db.fetchval(
        "SELECT count(*) FROM (SELECT homebase_sn FROM cluster.feeds"
        " UNION SELECT homebase_sn FROM forwarder.registrations) h"
    )
    assert value(samples, "ep_homebases_paired") == paired
    age = value(samples, "ep_ingest_last_stored_age_seconds")
    # Another test's homebase may have sent later; never longer ago than ours.
    assert age is not None
    assert 0 <= age < 70


async def test_backup_age_is_infinite_before_the_first_backup_then_counts(
    api: str, db: asyncpg.Connection
) -> None:
    assert await db.fetchval("SELECT count(*) FROM public.backups") == 0
    assert value(await scrape(api), "ep_backup_age_seconds") == float("inf")
    await db.execute(
        "INSERT INTO public.backups (stanza, label, kind, finished_at)"
        " VALUES ('test', '20261125-010000F', 'full', now() - interval '2 hours')"
    )
    try:
        age = value(await scrape(api), "ep_backup_age_seconds")
    finally:
        await db.execute("DELETE FROM public.backups WHERE stanza = 'test'")
    assert age is not None
    assert 7200 <= age < 7260


async def test_an_unreachable_database_reads_zero_and_leaves_the_gauges_out(
    settings: Settings,
) -> None:
    # Nothing listens on this port; the pool connects lazily, so the API starts all the same.
    away = DatabaseSettings(
        url=f"postgresql://postgres@127.0.0.1:{free_port()}/x", connect_timeout=1
    )
    port = free_port()
    app = data.create_app(msgspec.structs.replace(settings, database=away), CLUSTER_WATCHES)
    url = f"http://127.0.0.1:{port}"
    async with running(HttpService("api", app, "127.0.0.1", port), ready_urls=(url + "/healthz",)):
        samples = await scrape(url)
    assert value(samples, "ep_database_up") == 0
    assert value(samples, "ep_engine_oldest_unprocessed_age_seconds") is None
    assert value(samples, "ep_backup_age_seconds") is None


async def test_housekeeping_counts_rounds_by_outcome_and_consecutive_failures(
    settings: Settings, api: str
) -> None:
    failures, proceed = 3, asyncio.Event()
    calls = 0

    async def work(pool: asyncpg.Pool, stop: asyncio.Event) -> dict[str, int]:
        nonlocal calls
        calls += 1
        if calls <= failures:
            raise OSError("database away")  # a fault of the world: the loop goes on
        await proceed.wait()
        return {}

    loop = Periodic("test-loop", settings.database, 0.01, work)
    labels = {"loop": "test-loop"}
    async with running(loop):
        await eventually(lambda: calls > failures)
        samples = await scrape(api)
        assert value(samples, "ep_housekeeping_consecutive_failures", **labels) == 3
        assert value(samples, "ep_housekeeping_rounds_total", outcome="failed", **labels) == 3
        assert value(samples, "ep_housekeeping_last_success_timestamp_seconds", **labels) is None
        proceed.set()

        async def succeeded() -> bool:
            samples = await scrape(api)
            return value(samples, "ep_housekeeping_consecutive_failures", **labels) == 0

        await eventually(succeeded)
    samples = await scrape(api)
    assert await promtool_problems(api) == ""  # with the housekeeping families in it
    ok = value(samples, "ep_housekeeping_rounds_total", outcome="ok", **labels)
    assert ok is not None
    assert ok >= 1
    assert value(samples, "ep_housekeeping_last_success_timestamp_seconds", **labels)


async def test_engine_alone_serves_its_metrics_on_the_metrics_port(settings: Settings) -> None:
    port = free_port()
    s = msgspec.structs.replace(
        settings, http=msgspec.structs.replace(settings.http, metrics_port=port)
    )
    assert "metrics" not in [x.name for x in build_services(["api", "engine"], s)]
    (metrics,) = [x for x in build_services(["engine"], s) if x.name == "metrics"]
    url = f"http://127.0.0.1:{port}"
    async with running(metrics, ready_urls=(url + "/healthz",)):
        samples = await scrape(url)
        async with http_client() as http:
            assert (await http.get(url + "/readyz")).status_code == 200
    assert value(samples, "ep_database_up") == 1
