"""``/metrics`` with the gauges an operator alerts on that only the database knows.

A *watch* (``core/gauges.py``) is one cheap statement run when Prometheus scrapes (queue depths,
oldest ages, undelivered forwarder points, backup age): nothing polls the database between
scrapes, and a value is never older than the scrape. Each HTTP service runs the watches of its
domain on its own pool; ``ep_database_up`` says whether they could run (the same probe as
``/readyz``), and a watch that fails leaves its gauges out rather than reporting a stale value.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator, Sequence

import asyncpg
import structlog
from litestar import Controller, get
from litestar.datastructures import State
from litestar.response import Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from energy_platform.core.db.pool import PROBE_TIMEOUT
from energy_platform.core.gauges import Watch, gauge

log = structlog.get_logger()

WATCH_TIMEOUT = 5.0
"""Seconds every watch of one scrape gets together (Prometheus' default scrape timeout is 10)."""


class _Families(Collector):
    def __init__(self, families: Sequence[GaugeMetricFamily]) -> None:
        self._families = families

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield from self._families


async def watched(pool: asyncpg.Pool, watches: Sequence[Watch]) -> list[GaugeMetricFamily]:
    """Run ``watches`` on one connection; ``ep_database_up`` first, then their gauges."""
    families: list[GaugeMetricFamily] = []
    up = 0.0
    try:
        async with asyncio.timeout(WATCH_TIMEOUT), pool.acquire() as conn:
            await conn.fetchval("SELECT 1", timeout=PROBE_TIMEOUT)
            up = 1.0
            for watch in watches:
                try:
                    families.extend(await watch(conn))
                except asyncpg.PostgresError as e:
                    # One failing statement (a missing migration, say) must not hide the others.
                    log.warning("metrics watch failed", watch=watch.__name__, error=str(e))
    except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
        log.warning("metrics watches skipped", error=f"{type(e).__name__}: {e}")
    database = gauge("ep_database_up", "1 when the service's database answers (as /readyz)", up)
    return [database, *families]


def render(families: Sequence[GaugeMetricFamily]) -> bytes:
    """The process's registry (or the multiprocess one, as Litestar's controller does) and
    ``families``, in the Prometheus text format."""
    registry = REGISTRY
    if "PROMETHEUS_MULTIPROC_DIR" in os.environ or "prometheus_multiproc_dir" in os.environ:
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    extra = CollectorRegistry(auto_describe=False)
    extra.register(_Families(families))
    return generate_latest(registry) + generate_latest(extra)


def metrics_controller(watches: Sequence[Watch]) -> type[Controller]:
    """The ``/metrics`` controller of a service whose database gauges come from ``watches``."""

    class MetricsController(Controller):
        path = "/metrics"
        include_in_schema = False

        @get()
        async def metrics(self, state: State) -> Response[bytes]:
            families = await watched(state.db, watches)
            return Response(render(families), headers={"Content-Type": CONTENT_TYPE_LATEST})

    return MetricsController
