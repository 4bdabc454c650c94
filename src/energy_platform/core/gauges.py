"""What a scrape-time gauge is: a *watch*, one cheap statement whose result becomes gauges when
Prometheus scrapes ``/metrics`` (``core/http/watch.py`` runs them). Each domain keeps its own
watches beside its code (``engine/watch.py``, ``devices/ingest/watch.py``...); this module is
all they share, below every domain, like ``background``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from prometheus_client.core import GaugeMetricFamily

from energy_platform.core.db.pool import Connection

Watch = Callable[[Connection], Awaitable[Iterable[GaugeMetricFamily]]]
"""One statement's gauges, computed on a connection of the scraped service's pool."""


def gauge(name: str, documentation: str, value: float | None) -> GaugeMetricFamily:
    """A label-less gauge; ``None`` (nothing to measure, e.g. an empty queue's age) gives 0."""
    return GaugeMetricFamily(name, documentation, value=0.0 if value is None else float(value))
