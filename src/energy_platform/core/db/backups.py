"""Scrape-time gauge of the last successful backup (``core/gauges.py``), from the rows that
deploy/pgbackrest/backup.sh adds to ``public.backups`` once pgBackRest has finished."""

from __future__ import annotations

import math

from prometheus_client.core import GaugeMetricFamily

from energy_platform.core.db.pool import Connection
from energy_platform.core.gauges import gauge

LAST = "SELECT extract(epoch FROM now() - max(finished_at)) FROM public.backups"


async def backup_age(conn: Connection) -> list[GaugeMetricFamily]:
    """Seconds since the last recorded backup; +Inf when none was ever made, so that an
    installation without backups alerts (EPBackupTooOld) instead of staying silent."""
    age = await conn.fetchval(LAST)
    value = math.inf if age is None else float(age)
    return [gauge("ep_backup_age_seconds", "Seconds since the last successful backup", value)]
