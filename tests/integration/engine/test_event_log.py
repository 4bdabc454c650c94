"""The devices' event log is bounded (issue 59): the power-change rule reads the events since its
last round plus the one before each, however long a device's history (before, lag() read the
whole history every round), and the retention rounds remove events older than
EP_NOTIFICATIONS_EVENTS_DAYS once the rule has read them. On a database of its own: the rule's
position and the retention are the whole database's."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import asyncpg

from energy_platform import seeding
from energy_platform.core.settings import NotificationsSettings, RetentionSettings
from energy_platform.engine.retention import enforce
from energy_platform.notifications.rules import POWER_CHANGE, evaluate

LONG = "C0DE0000000E0001"  # 100,000 events over its history
SHORT = "C0DE0000000E0002"  # 10
LATE = "C0DE0000000E0003"  # one old event stored after the rule's last round
HISTORY = 100_000
T0 = 1_767_225_600  # 2026-01-01T00:00:00Z
OLD = timedelta(days=100)
"""How long ago the history arrived: past the 90 days' retention."""

POSITION = "SELECT position FROM cluster.rule_positions WHERE rule = 'power_change'"
ADD_EVENTS = """
INSERT INTO cluster.device_events (device_sn, ts, event, phases, received_at)
SELECT $1, to_timestamp($2::int8 + 60 * k), 'POWER_CHANGE',
       ARRAY[true, k % 2 = 0, true], now() - $4::interval
  FROM generate_series(0, $3 - 1) k"""


def rows_read(plan: dict[str, Any], table: str) -> int:
    """The rows the plan's nodes over ``table`` read: those they returned and those their
    filters removed, over all their loops."""
    read = 0
    if plan.get("Relation Name") == table:
        per_loop = (
            plan["Actual Rows"]
            + plan.get("Rows Removed by Filter", 0)
            + plan.get("Rows Removed by Index Recheck", 0)
        )
        read += per_loop * plan["Actual Loops"]
    return read + sum(rows_read(child, table) for child in plan.get("Plans", []))


async def reads_of_a_round_after(conn: asyncpg.Connection, sn: str, start: int) -> int:
    """Three fresh events of ``sn`` from ``start`` on, then the power-change rule's statement:
    the rows it reads from the event log. All rolled back: the log and the rule's position stay
    as they were."""
    round_ = conn.transaction()
    await round_.start()
    try:
        # A minute old: older than the moment the rule leaves for the next round.
        await conn.execute(ADD_EVENTS, sn, start, 3, timedelta(minutes=1))
        explained = await conn.fetchval(f"EXPLAIN (ANALYZE, FORMAT JSON) {POWER_CHANGE}", None)
    finally:
        await round_.rollback()
    return rows_read(json.loads(explained)[0]["Plan"], "device_events")


async def test_the_rule_reads_only_new_events_and_retention_removes_the_old_ones(
    pool: asyncpg.Pool,
) -> None:
    async with pool.acquire() as conn:
        # Each device a feed's: a power change is compared with the event before it, and told.
        owner = await seeding.add_user(conn, "event-log")
        for sn in (LONG, SHORT):
            await seeding.add_feed(conn, owner.id, sn)
        await conn.execute(ADD_EVENTS, LONG, T0, HISTORY, OLD)
        await conn.execute(ADD_EVENTS, SHORT, T0, 10, OLD)
        # Rounds read them, 10,000 a round, and move the rule's position past them.
        last = await conn.fetchval("SELECT max(id) FROM cluster.device_events")
        for _ in range(HISTORY // 10_000 + 1):
            assert await evaluate(conn, NotificationsSettings()) == 0
        assert await conn.fetchval(POSITION) == last

        after_short = await reads_of_a_round_after(conn, SHORT, T0 + 60 * 10)
        after_long = await reads_of_a_round_after(conn, LONG, T0 + 60 * HISTORY)

        # The same work after 10 events of history as after 100,000: the three new events and
        # the one before each, 6 rows (lag() over the history read all 100,003 of them).
        assert after_long == after_short == 3 + 3

        # An old event the rule has not read yet is kept.
        await conn.execute(ADD_EVENTS, LATE, T0, 1, OLD)
    removed = await enforce(pool, RetentionSettings(), events_days=90)

    assert removed["device_events"] == HISTORY + 10
    left = await pool.fetch("SELECT device_sn FROM cluster.device_events")
    assert [r["device_sn"] for r in left] == [LATE]
