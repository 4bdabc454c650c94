"""A late point into a day already in the compact tier, through the real path: published over
MQTT, stored by ingest exactly once, served by the data API and re-processed by the engine."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg

from energy_platform.core.codec.format_v4 import HomebaseRecord
from energy_platform.devices.simulator.homebase import SimulatedHomebase
from tests.support.engine import process
from tests.support.platform import Platform, paired_homebase, publish_as
from tests.support.services import eventually

ROW_TIER_POINTS = """
SELECT count(*) FROM cluster.raw_points p JOIN cluster.streams s ON s.id = p.stream_id
 WHERE s.feed_id = $1"""
COMPACT_DAY = """
SELECT sum(cluster.compact_day(id, $2)) FROM cluster.streams WHERE feed_id = $1"""


def power(t: int, watts: float) -> HomebaseRecord:
    return HomebaseRecord(4, t, 3, 1, 0x1A01, {"1": watts})


async def test_a_late_point_in_a_compacted_day_is_stored_served_and_reprocessed(
    platform: Platform, db: asyncpg.Connection
) -> None:
    sn, secret, feed = await paired_homebase(platform)
    homebase = SimulatedHomebase(sn, secret)
    midnight = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    day = (midnight - timedelta(days=10)).date()
    t0 = int((midnight - timedelta(days=10, hours=-6)).timestamp())  # 06:00Z, a bucket start
    times = list(range(t0, t0 + 3600, 60))
    await publish_as(platform, sn, secret, homebase.encrypt([power(t, 1000.0) for t in times]))
    feed_id = int(str(feed))

    async def stored(count: int) -> None:
        async def done() -> bool:
            return bool(await db.fetchval(ROW_TIER_POINTS, feed_id) == count)

        await eventually(done, 60)

    await stored(len(times))
    await process(db)
    energy = await db.fetchval(
        "SELECT s.id FROM cluster.streams s WHERE s.feed_id = $1 AND s.type = 'processed'"
        " AND s.quantity <> 'cost'",
        feed_id,
    )
    raw = await db.fetchval(
        "SELECT id FROM cluster.streams WHERE feed_id = $1 AND type = 'raw'", feed_id
    )
    # The day goes into the compact tier (raw and processed streams alike).
    assert await db.fetchval(COMPACT_DAY, feed_id, day) > len(times)
    assert await db.fetchval(ROW_TIER_POINTS, feed_id) == 0

    async with platform.client() as api:

        async def data(stream: int) -> list[list[float]]:
            answer = await api.get(
                f"/feeds/{feed}/streams/{stream}/data",
                params={"time_from": t0, "time_to": t0 + 3600},
            )
            assert answer.status_code == 200, answer.text
            points: list[list[float]] = answer.json()
            return points

        assert await data(raw) == [[t, 1000.0] for t in times]
        bucket = (await data(energy))[0]
        assert bucket == [t0, 25.0]  # 1000 W for 90 s

        # A late point between the first two, and the first one again (a resend).
        late = [power(t0 + 30, 4000.0), power(t0, 1000.0)]
        await publish_as(platform, sn, secret, homebase.encrypt(late))
        await stored(len(times) + 1)
        # Stored once, next to the compacted points, which came back whole: the day is in the
        # row tier only now.
        assert await data(raw) == sorted([[t, 1000.0] for t in times] + [[t0 + 30, 4000.0]])
        assert (
            await db.fetchval(
                "SELECT count(*) FROM cluster.point_days WHERE stream_id = $1 AND day = $2",
                raw,
                day,
            )
            == 0
        )
        # Re-processed: the first bucket now holds the 4000 W peak.
        await process(db)
        first = (await data(energy))[0]
        assert first[0] == t0
        assert first[1] > 25.0
        # And compacted again, the answers stay the same.
        await db.fetchval(COMPACT_DAY, feed_id, day)
        assert await db.fetchval(ROW_TIER_POINTS, feed_id) == 0
        assert await data(raw) == sorted([[t, 1000.0] for t in times] + [[t0 + 30, 4000.0]])
        assert (await data(energy))[0] == first
