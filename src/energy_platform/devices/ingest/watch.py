"""Scrape-time gauges of ingest (``core/gauges.py``): when a message was last stored and how
many homebases should be sending. The refusals are counted where they happen
(``ep_ingest_dropped_total{cause}``, drops.py)."""

from __future__ import annotations

from prometheus_client.core import GaugeMetricFamily

from energy_platform.core.db.pool import Connection
from energy_platform.core.gauges import gauge

# A homebase is this cluster's when it has a feed here or a forwarder customer registered it.
INGEST = """
SELECT extract(epoch FROM now() - (SELECT max(last_data_at) FROM cluster.homebase_presence))
           AS last_stored_age,
       (SELECT count(*) FROM (SELECT homebase_sn FROM cluster.feeds
                              UNION SELECT homebase_sn FROM forwarder.registrations) h) AS paired
"""


async def ingest_activity(conn: Connection) -> list[GaugeMetricFamily]:
    """Seconds since the last stored homebase message (left out before the first one) and
    the number of homebases paired with this cluster."""
    row = await conn.fetchrow(INGEST)
    assert row is not None  # noqa: S101 - a row of scalar subqueries is always answered
    families = [
        gauge("ep_homebases_paired", "Homebases with a feed or registration here", row["paired"])
    ]
    if row["last_stored_age"] is not None:
        families.append(
            gauge(
                "ep_ingest_last_stored_age_seconds",
                "Seconds since ingest last stored a homebase message",
                row["last_stored_age"],
            )
        )
    return families
