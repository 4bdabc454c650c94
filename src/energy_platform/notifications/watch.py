"""Scrape-time gauge of the notification rules (``core/gauges.py``): per rule, the feeds a data
error parked it for, which no round judges by it until an operator retries them."""

from __future__ import annotations

from prometheus_client.core import GaugeMetricFamily

from energy_platform.core.db.pool import Connection
from energy_platform.notifications.rules import RULES

PARKED = "SELECT rule, count(*) AS feeds FROM cluster.parked_notification_rules GROUP BY rule"


async def parked_rules(conn: Connection) -> list[GaugeMetricFamily]:
    """Feeds parked per rule, every rule present (0 when none; ``admin notifications parked``
    lists them)."""
    parked = {r["rule"]: r["feeds"] for r in await conn.fetch(PARKED)}
    family = GaugeMetricFamily(
        "ep_notifications_parked_feeds",
        "Feeds a notification rule is parked for: it failed on their data",
        labels=["rule"],
    )
    for rule in RULES:
        family.add_metric([rule], parked.get(rule, 0))
    return [family]
