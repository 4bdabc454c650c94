"""The compact horizon (docs/engine.md#compaction): the compact tier holds no point from a day
ago on, so a live read of a stream's points and the probe for its next point open no chunk of
cluster.point_days, however many chunks the compact tier has (issue 59: the one chunk a
homebase with its clock in 2000 made cost every other feed's compute 1.7 times its time)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from energy_platform.engine.processing import bucket_start
from tests.support.engine import NewFeed

Y2000 = 946_684_800  # 2000-01-01T00:00:00Z
# The compact tier's chunks.
COMPACT_CHUNKS = """
SELECT chunk_name FROM timescaledb_information.chunks
 WHERE hypertable_schema = 'cluster' AND hypertable_name = 'point_days'"""
# As the engine reads them: each stream's window a row of arrays, read LATERAL.
LIVE_READS = """
SELECT (SELECT count(*) FROM cluster.stream_points(w.id, w.f, w.t)) AS points,
       cluster.point_from(w.id, w.f) AS next
  FROM unnest($1::bigint[], $2::timestamptz[], $3::timestamptz[]) AS w (id, f, t)"""


def executed(node: dict[str, Any]) -> set[str]:
    """The relations (a hypertable's chunk append, a chunk, a table) a plan node's subtree
    scanned at least once."""
    found = set()
    if node.get("Relation Name") and node.get("Actual Loops", 0) > 0:
        found.add(node["Relation Name"])
    for child in node.get("Plans", []):
        found |= executed(child)
    return found


async def test_a_live_read_opens_no_chunk_of_the_compact_tier(new_feed: NewFeed) -> None:
    feed = await new_feed()
    clamp = await feed.raw_stream(channel=1, medium=1)
    # A day of 2000, compacted: the compact tier has a chunk.
    await feed.ingest(clamp, [(Y2000 + 60 * n, 1000.0) for n in range(10)])
    assert await feed.db.fetchval("SELECT cluster.compact_day($1, '2000-01-01')", clamp) == 10
    chunks = {r["chunk_name"] for r in await feed.db.fetch(COMPACT_CHUNKS)}
    assert chunks
    # Ten minutes of live points.
    now = bucket_start(datetime.now(UTC))
    live = int(now.timestamp()) - 600
    await feed.ingest(clamp, [(live + 5 * n, 1000.0) for n in range(120)])

    window = ([clamp], [now - timedelta(minutes=5)], [now])
    row = await feed.db.fetchrow(LIVE_READS, *window)
    assert row is not None
    assert row["points"] == 60
    # As the engine plans its statements (docs/engine.md#plans): a generic plan, whose chunks
    # are excluded as it runs, not while it is planned.
    async with feed.db.transaction():
        await feed.db.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        explained = await feed.db.fetchval("EXPLAIN (ANALYZE, FORMAT JSON) " + LIVE_READS, *window)
    scanned = executed(json.loads(explained)[0]["Plan"])
    assert "raw_points" in scanned or any(s.startswith("_hyper_") for s in scanned)
    assert not scanned & (chunks | {"point_days"}), scanned
    # The compacted day is still read where it lies.
    old = await feed.db.fetchval(
        "SELECT count(*) FROM cluster.stream_points($1, to_timestamp($2), to_timestamp($3))",
        clamp,
        Y2000,
        Y2000 + 3600,
    )
    assert old == 10
