"""Scrape-time gauges of the engine's queues (``core/gauges.py``): how far behind processing
and the hourly rollups are, and which feeds are parked. One statement; the ages use the indexes
on ``recorded_at``."""

from __future__ import annotations

from prometheus_client.core import GaugeMetricFamily

from energy_platform.core.db.pool import Connection
from energy_platform.core.gauges import gauge

# Intake's queue is due at once; the engine's own work only once its last bucket has closed
# (a bucket still open waits for its end by design), so its age counts from then. A parked
# feed's work is not waiting for the engine but for an operator: the parked gauges count it,
# the queues' leave it out (engine/parking.py).
QUEUES = """
WITH parked AS (
    SELECT feed_id, stage, parked_at FROM cluster.parked_work WHERE retried_at IS NULL
)
SELECT (SELECT count(*) FROM cluster.dirty_ranges)
     + (SELECT count(*) FROM cluster.engine_work
         WHERE feed_id NOT IN (SELECT feed_id FROM parked WHERE stage = 'processing'))
           AS engine_depth,
       greatest(
           extract(epoch FROM now() - (SELECT min(recorded_at) FROM cluster.dirty_ranges)),
           extract(epoch FROM now() - (
               SELECT min(greatest(recorded_at, upper(buckets))) FROM cluster.engine_work
                WHERE upper(buckets) <= now()
                  AND feed_id NOT IN (SELECT feed_id FROM parked WHERE stage = 'processing'))))
           AS engine_age,
       (SELECT count(*) FROM cluster.rollup_work
         WHERE stream_id NOT IN (SELECT s.id FROM parked p
                                   JOIN cluster.streams s ON s.feed_id = p.feed_id
                                  WHERE p.stage = 'rollups')) AS rollup_depth,
       extract(epoch FROM now() - (
           SELECT min(recorded_at) FROM cluster.rollup_work
            WHERE stream_id NOT IN (SELECT s.id FROM parked p
                                      JOIN cluster.streams s ON s.feed_id = p.feed_id
                                     WHERE p.stage = 'rollups'))) AS rollup_age,
       (SELECT count(DISTINCT feed_id) FROM parked) AS parked_feeds,
       extract(epoch FROM now() - (SELECT min(parked_at) FROM parked)) AS parked_age
"""


async def engine_queues(conn: Connection) -> list[GaugeMetricFamily]:
    """Depth and oldest age of the processing and rollup queues (0 when empty), and the
    feeds parked out of them."""
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
        gauge(
            "ep_engine_parked_feeds",
            "Feeds whose processing or rollups failed on their data and wait for an operator"
            " (admin engine parked)",
            row["parked_feeds"],
        ),
        gauge(
            "ep_engine_parked_oldest_age_seconds",
            "Seconds since the longest-parked feed was parked (0: none)",
            row["parked_age"],
        ),
    ]
