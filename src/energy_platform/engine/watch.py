"""Scrape-time gauges of the engine's queues (``core/gauges.py``): how far behind processing
and the hourly rollups are. One statement; the ages use the indexes on ``recorded_at``."""

from __future__ import annotations

from prometheus_client.core import GaugeMetricFamily

from energy_platform.core.db.pool import Connection
from energy_platform.core.gauges import gauge

# Intake's queue is due at once; the engine's own work only once its last bucket has closed
# (a bucket still open waits for its end by design), so its age counts from then.
QUEUES = """
SELECT (SELECT count(*) FROM cluster.dirty_ranges)
     + (SELECT count(*) FROM cluster.engine_work) AS engine_depth,
       greatest(
           extract(epoch FROM now() - (SELECT min(recorded_at) FROM cluster.dirty_ranges)),
           extract(epoch FROM now() - (SELECT min(greatest(recorded_at, upper(buckets)))
                                         FROM cluster.engine_work
                                        WHERE upper(buckets) <= now()))) AS engine_age,
       (SELECT count(*) FROM cluster.rollup_work) AS rollup_depth,
       extract(epoch FROM now() - (SELECT min(recorded_at) FROM cluster.rollup_work)) AS rollup_age
"""


async def engine_queues(conn: Connection) -> list[GaugeMetricFamily]:
    """Depth and oldest age of the processing and rollup queues (0 when empty)."""
    row = await conn.fetchrow(QUEUES)
    assert row is not None  # noqa: S101 - a row of scalar subqueries is always answered
    return [
        gauge(
            "ep_engine_queue_depth",
            "Ranges waiting for the engine (ingest's dirty ranges and the engine's own work)",
            row["engine_depth"],
        ),
        gauge(
            "ep_engine_oldest_unprocessed_age_seconds",
            "Seconds the oldest due range has waited for processing (0: none waiting)",
            row["engine_age"],
        ),
        gauge("ep_rollups_queue_depth", "Periods queued for hourly rollups", row["rollup_depth"]),
        gauge(
            "ep_rollups_oldest_queued_age_seconds",
            "Seconds the oldest period queued for rollups has waited (0: none)",
            row["rollup_age"],
        ),
    ]
