"""The live log's pruning narrows a failing round down to the stream (issue 59): one stream whose
old events cannot be removed keeps them, every other stream's go, and the round does not fail.
On a database of the test's own: a trigger there refuses deletes that other tests' pruning
would meet."""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import pytest_asyncio

from energy_platform.live.pruning import prune
from tests.support.databases import Databases

# Old events of streams 1, 2 and 3 (no foreign keys: the log outlives its streams), and a
# trigger of the test's own that refuses to delete stream 2's with SQLSTATE 54001.
SEED = """
INSERT INTO cluster.live_log (pos, logged_at, feed_id, stream_id, kind, times, vals)
SELECT n, now() - interval '1 hour', 1, s, 'points', '{1}', '{1}'
  FROM generate_series(1, 6) n, LATERAL (SELECT (n - 1) % 3 + 1 AS s) x;
CREATE FUNCTION cluster.test_refuse_prune() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.stream_id = 2 THEN
        RAISE EXCEPTION 'statement too complex' USING ERRCODE = '54001';
    END IF;
    RETURN OLD;
END $$;
CREATE TRIGGER refuse_prune BEFORE DELETE ON cluster.live_log
   FOR EACH ROW EXECUTE FUNCTION cluster.test_refuse_prune();
"""


@pytest_asyncio.fixture
async def pool(databases: Databases) -> AsyncIterator[asyncpg.Pool]:
    url = databases.take()
    try:
        async with asyncpg.create_pool(url, min_size=1, max_size=2) as p:
            yield p
    finally:
        databases.drop(url)


async def test_a_stream_whose_events_cannot_be_pruned_keeps_them_and_the_others_go(
    pool: asyncpg.Pool,
) -> None:
    await pool.execute(SEED)
    # Everything older than a minute: streams 1 and 3's four events go, stream 2's two stay.
    assert await prune(pool, 60.0) == 4
    left = await pool.fetch("SELECT stream_id, pos FROM cluster.live_log ORDER BY pos")
    assert [tuple(r) for r in left] == [(2, 2), (2, 5)]
    # The horizon passed what went: a replay from before it reloads.
    assert await pool.fetchval("SELECT pos FROM cluster.live_horizon") == 6
    # The next round tries it again, and goes on.
    assert await prune(pool, 60.0) == 0
