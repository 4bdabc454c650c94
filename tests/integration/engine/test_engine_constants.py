"""The engine's named numbers and expressions (sql/functions/20_engine.sql): Python and SQL agree
on the bucket, and the planner inlines every one of them, so that naming them costs the compute
statement nothing per row and leaves its plan as it was."""

from __future__ import annotations

import asyncpg

from energy_platform.engine.processing import BUCKET


async def test_python_and_sql_have_one_bucket(db: asyncpg.Connection) -> None:
    seconds = await db.fetchval("SELECT cluster.bucket_seconds()")

    assert BUCKET.total_seconds() == seconds
    assert await db.fetchval("SELECT cluster.bucket_width()") == BUCKET


async def test_a_gap_of_exactly_the_bridge_limit_is_bridged(db: asyncpg.Connection) -> None:
    limit = await db.fetchval("SELECT cluster.bridge_seconds()")

    assert await db.fetchval("SELECT cluster.bridged(0, $1)", float(limit))
    assert not await db.fetchval("SELECT cluster.bridged(0, $1)", limit + 0.001)
    assert await db.fetchval("SELECT cluster.bridge_limit() = make_interval(secs => $1)", limit)


async def test_a_validity_holds_for_the_buckets_whose_start_lies_in_it(
    db: asyncpg.Connection,
) -> None:
    row = await db.fetchrow(
        "SELECT * FROM cluster.validity_buckets("
        "tstzrange(to_timestamp(90 * 10 + 1), to_timestamp(90 * 12), '[)'))"
    )
    unbounded = await db.fetchrow("SELECT * FROM cluster.validity_buckets(tstzrange(NULL, NULL))")

    assert (row["kfrom"], row["kto"]) == (11, 12)
    assert (unbounded["kfrom"], unbounded["kto"]) == (-(2**63) + 1, 2**63 - 1)


# Every function called with columns, not constants: one the planner did not inline would show
# as a call in the plan (an IMMUTABLE one called with constants is folded either way).
EVERY_FUNCTION = """
EXPLAIN (VERBOSE, COSTS OFF)
WITH t AS MATERIALIZED (SELECT x::float8 AS x, x::float8 + 100 AS y
                          FROM generate_series(1, 3) x)
SELECT cluster.bucket_seconds() * x, time_bucket(cluster.bucket_width(), to_timestamp(x)),
       x <= cluster.bridge_seconds(),
       to_timestamp(y) - to_timestamp(x) <= cluster.bridge_limit(),
       cluster.bridged(x, y), cluster.bucket_of(x),
       cluster.segment_integral(x, 1, y, 2, x < y, x, y),
       cluster.segment_covered(x < y, x, y), k.kfrom, k.kto
  FROM t CROSS JOIN LATERAL
       cluster.validity_buckets(tstzrange(to_timestamp(x), to_timestamp(y))) k"""


async def test_the_planner_inlines_every_one(db: asyncpg.Connection) -> None:
    plan = "\n".join(row[0] for row in await db.fetch(EVERY_FUNCTION))

    assert "cluster." not in plan, plan
