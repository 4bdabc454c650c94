"""The analysts' range functions (cluster.raw_readings(time_from, time_to) and the others) give
exactly what their views give filtered on ts, both bounds inclusive, over both tiers. Each test
runs on a database of its own: compaction works on the whole database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg

from energy_platform import seeding
from energy_platform.core.settings import CompactionSettings
from energy_platform.engine.compaction import compact

VIEWS = ("raw_readings", "processed_readings", "system_readings", "readings")
PRAGUE_DST_END = datetime(2026, 10, 25, tzinfo=UTC)  # 03:00 CEST -> 02:00 CET: a 25-hour day


async def feed_with_streams(pool: asyncpg.Pool) -> tuple[int, int, int]:
    """A feed whose title changes at a noted instant, with a raw, a processed and a system
    stream."""
    async with pool.acquire() as conn:
        owner = await seeding.add_user(conn, "ranges")
        feed = await seeding.add_feed(conn, owner.id, "A0000000000000D1", title="Old")
        await conn.execute(
            "SELECT cluster.set_feed_config($1, '2026-10-25T01:00:00Z', 'New', 'Europe/Prague')",
            feed,
        )
        raw = await seeding.raw_stream(conn, feed, 1, 1, device=3)
        processed = await seeding.processed_stream(conn, feed, 1, title="Power", unit="W")
        system = await seeding.system_stream(conn, feed, 1, "medium:40", device=3)
    return raw, processed, system


async def test_the_range_functions_equal_their_views_filtered_on_time_over_both_tiers(
    pool: asyncpg.Pool,
) -> None:
    raw, processed, system = await feed_with_streams(pool)
    # A point every 15 minutes of each stream from 3 days before Prague's DST end to now:
    # the old days compacted, the last days rows.
    start = PRAGUE_DST_END - timedelta(days=3)
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    now -= timedelta(minutes=now.minute % 15)  # on the grid
    grid = range(int(start.timestamp()), int(now.timestamp()) + 1, 900)
    await seeding.write_points(pool, raw, [(t, t // 900 % 97) for t in grid])
    # Processed and system points straight into their tier, on purpose: the range functions
    # are compared with their views on points of known times and values, not on the engine's.
    await pool.execute(
        "INSERT INTO cluster.processed_points SELECT $1, t, 0.5 FROM"
        " generate_series($2::timestamptz, $3, interval '15 minutes') t",
        processed,
        start,
        now,
    )
    await pool.execute(
        "INSERT INTO cluster.system_points SELECT $1, t, -70 FROM"
        " generate_series($2::timestamptz, $3, interval '15 minutes') t",
        system,
        start,
        now,
    )
    await compact(pool, CompactionSettings(after_days=7))
    assert await pool.fetchval("SELECT count(*) FROM cluster.point_days") > 0
    assert await pool.fetchval("SELECT count(*) FROM cluster.raw_points") > 0

    recent = now - timedelta(days=2, minutes=15 * 7)  # on the grid, in the row tier
    ranges = {
        # Prague's local day of the DST end, 25 hours, from the compact tier: 101 points
        # (4 an hour and the one at each bound) of each stream.
        "DST day": ("2026-10-25T00:00:00+02:00", "2026-10-26T00:00:00+01:00", 101),
        # Across both tiers, bounds on points.
        "both tiers": (now - timedelta(days=40), now, None),
        # Bounds exactly at a point of the row tier, 8 quarter-hours apart: 9 points each.
        "bounds on points": (recent, recent + timedelta(hours=2), 9),
        # Bounds exactly at a compacted point; the same instant twice: that one point.
        "one instant": (PRAGUE_DST_END, PRAGUE_DST_END, 1),
        "nothing there": (datetime(2001, 1, 1, tzinfo=UTC), datetime(2001, 2, 1, tzinfo=UTC), 0),
        "reversed": (now, now - timedelta(days=10), 0),
        "all time": ("-infinity", "infinity", None),
    }
    async with pool.acquire() as conn:
        for label, (time_from, time_to, per_stream) in ranges.items():
            a, b = [
                await conn.fetchval("SELECT $1::text::timestamptz", str(t))
                for t in (time_from, time_to)
            ]
            for name in VIEWS:
                through_function = await conn.fetch(
                    f"SELECT * FROM cluster.{name}($1, $2) ORDER BY stream_id, ts",  # noqa: S608
                    a,
                    b,
                )
                through_view = await conn.fetch(
                    f"SELECT * FROM cluster.{name} WHERE ts >= $1 AND ts <= $2"  # noqa: S608
                    " ORDER BY stream_id, ts",
                    a,
                    b,
                )
                assert through_function == through_view, (label, name)
                streams = 3 if name == "readings" else 1
                if per_stream is not None:
                    assert len(through_function) == per_stream * streams, (label, name)
    # The DST day crosses the title change: each point has the title valid at its time.
    titles = await pool.fetch(
        "SELECT feed_title, count(*) FROM cluster.raw_readings($1, $2) GROUP BY 1 ORDER BY 1",
        datetime(2026, 10, 24, 22, tzinfo=UTC),
        datetime(2026, 10, 25, 23, tzinfo=UTC),
    )
    # 22:00Z to 01:00Z exclusive: 12 points Old; 01:00Z to 23:00Z inclusive: 89 New.
    assert [tuple(r) for r in titles] == [("New", 89), ("Old", 12)]


async def test_the_range_functions_have_their_views_names_and_columns(
    pool: asyncpg.Pool,
) -> None:
    async with pool.acquire() as conn:
        for name in VIEWS:
            view = await conn.prepare(f"SELECT * FROM cluster.{name}")  # noqa: S608
            function = await conn.prepare(f"SELECT * FROM cluster.{name}(now(), now())")  # noqa: S608
            assert [(a.name, a.type.name) for a in function.get_attributes()] == [
                (a.name, a.type.name) for a in view.get_attributes()
            ], name
