"""Scrape-time gauges of the forwarder (``core/gauges.py``): per customer, the points stored
for it and not yet delivered, and how long the oldest has waited; the customers parked.

Only the ``CUSTOMERS`` customers whose oldest undelivered point is oldest get a label set, so
the series stay bounded however many customers there are; ``ep_forwarder_customers_behind``
counts all of them. A point is undelivered while the customer's storage cursor (``seen``) does
not include it: the same test the delivery loop makes (sql/functions/30_forwarder.sql).
"""

from __future__ import annotations

from prometheus_client.core import GaugeMetricFamily

from energy_platform.core.db.pool import Connection
from energy_platform.core.gauges import gauge

CUSTOMERS = 20
"""Customers labelled at most: the worst ones."""

UNDELIVERED = """
WITH streams AS MATERIALIZED (
    SELECT * FROM forwarder.customer_streams(ARRAY(SELECT customer_id FROM forwarder.configs))
), owed AS (
    SELECT s.customer_id, count(*) AS points, min(p.received_at) AS oldest
      FROM streams s
      LEFT JOIN forwarder.delivery_state d ON d.customer_id = s.customer_id
     CROSS JOIN LATERAL (
         SELECT p.stored_by, p.received_at FROM forwarder.points p
          WHERE p.stream_id = s.stream_id
            AND p.stored_by >= coalesce(pg_snapshot_xmin(d.seen), '1'::xid8)
         OFFSET 0) p
     WHERE NOT coalesce(pg_visible_in_snapshot(p.stored_by, d.seen), false)
       AND s.period @> p.received_at
     GROUP BY s.customer_id
)
SELECT c.name, o.points, extract(epoch FROM now() - o.oldest) AS age,
       f.interval_minutes * 60 AS interval_seconds, count(*) OVER () AS behind
  FROM owed o
  JOIN forwarder.customers c ON c.id = o.customer_id
  JOIN forwarder.configs f ON f.customer_id = o.customer_id
 ORDER BY o.oldest
 LIMIT $1
"""


async def undelivered(conn: Connection) -> list[GaugeMetricFamily]:
    """Undelivered points and the oldest one's age per customer (worst ``CUSTOMERS`` only)."""
    rows = await conn.fetch(UNDELIVERED, CUSTOMERS)
    points = GaugeMetricFamily(
        "ep_forwarder_undelivered_points",
        "Points stored for the customer and not yet delivered",
        labels=["customer"],
    )
    age = GaugeMetricFamily(
        "ep_forwarder_undelivered_oldest_age_seconds",
        "Seconds since the customer's oldest undelivered point was stored",
        labels=["customer"],
    )
    interval = GaugeMetricFamily(
        "ep_forwarder_delivery_interval_seconds",
        "The customer's delivery interval: points normally wait up to this (and the settle time)",
        labels=["customer"],
    )
    for row in rows:
        points.add_metric([row["name"]], row["points"])
        age.add_metric([row["name"]], float(row["age"]))
        interval.add_metric([row["name"]], row["interval_seconds"])
    behind = gauge(
        "ep_forwarder_customers_behind",
        "Customers with at least one undelivered point",
        rows[0]["behind"] if rows else 0,
    )
    return [points, age, interval, behind]


PARKED = "SELECT count(*) FROM forwarder.parked_deliveries"


async def parked_customers(conn: Connection) -> list[GaugeMetricFamily]:
    """How many customers' deliveries are parked (``admin customers parked`` lists them)."""
    return [
        gauge(
            "ep_forwarder_customers_parked",
            "Customers whose deliveries are parked: their points failed on data",
            await conn.fetchval(PARKED),
        )
    ]
