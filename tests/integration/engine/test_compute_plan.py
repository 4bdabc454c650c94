"""The compute statement's plan keeps its shape (docs/engine.md#the-statements-stages): the
buckets meet their stretches of configuration, span and price once, in a hash join on the
streams' keys over the materialised periods; never in a nested loop, which pairs every bucket
with every stretch (4 s for a batch of 1,000 channels when it happened)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from energy_platform.engine.processing import CLAIM, COMPUTE, INTAKE
from energy_platform.engine.service import drain
from tests.support.data import T0
from tests.support.engine import CURRENCY, ENGINE, Feed, NewFeed, process

IMPORT_POWER, IMPORT_REGISTER = 12, 22
METER = 7  # the homebase's meter reader
# The CTEs of cluster.bucket_energy that hold a row per stream and bucket.
BUCKET_ROWS = {"per_identity", "heads"}
# What the buckets are joined to: cluster.engine_periods and the stages under it.
STRETCHES = {"periods", "targets", "spans", "registers", "engine_periods"}

Plan = dict[str, Any]


def reads(node: Plan) -> set[str]:
    """The CTEs, tables and subqueries a plan node's subtree reads."""
    found = {node[k] for k in ("CTE Name", "Relation Name", "Alias") if k in node}
    for child in node.get("Plans", []):
        found |= reads(child)
    return found


def joins(node: Plan) -> list[tuple[Plan, set[str], set[str]]]:
    """Every join node with what its outer and inner sides read."""
    sides = [c for c in node.get("Plans", []) if c.get("Parent Relationship") in ("Outer", "Inner")]
    found = []
    if node["Node Type"] in ("Nested Loop", "Hash Join", "Merge Join") and len(sides) == 2:
        found.append((node, reads(sides[0]), reads(sides[1])))
    for child in node.get("Plans", []):
        found += joins(child)
    return found


async def compute_plan(feed: Feed, generic: bool, *periods: list[Any]) -> Plan:
    """COMPUTE's plan for ``periods``: the custom plan of those values, or the generic plan the
    engine runs (docs/engine.md#plans), shown by EXPLAIN EXECUTE of a prepared COMPUTE."""
    if not generic:
        explained = await feed.db.fetchval("EXPLAIN (FORMAT JSON) " + COMPUTE, *periods)
        return json.loads(explained)[0]["Plan"]  # type: ignore[no-any-return]
    # EXPLAIN EXECUTE takes no bind parameters: the server quotes the periods into it.
    explain = await feed.db.fetchval(
        "SELECT format('EXPLAIN (FORMAT JSON) EXECUTE compute_plan(%L, %L, %L, %L)',"
        " $1::bigint[], $2::integer[], $3::timestamptz[], $4::timestamptz[])",
        *periods,
    )
    await feed.db.execute("PREPARE compute_plan AS " + COMPUTE)
    try:
        async with feed.db.transaction():
            await feed.db.execute("SET LOCAL plan_cache_mode = force_generic_plan")
            explained = await feed.db.fetchval(explain)
    finally:
        await feed.db.execute("DEALLOCATE compute_plan")
    plan: Plan = json.loads(explained)[0]["Plan"]
    assert "$1" in json.dumps(plan)  # generic: the periods are parameters, not values
    return plan


@pytest.mark.parametrize("generic", [False, True], ids=["custom", "generic"])
async def test_buckets_meet_their_periods_in_one_hash_join_over_the_materialised_periods(
    new_feed: NewFeed, generic: bool
) -> None:
    feed = await new_feed()
    power = await feed.raw_stream(channel=0, medium=IMPORT_POWER)
    meter = await feed.raw_stream(channel=0, medium=IMPORT_REGISTER, device=METER)
    await feed.db.execute(
        "SELECT cluster.set_tariff($1, 'power', '-infinity', ARRAY['06:00', '22:00']::time[],"
        " ARRAY[0.30, 0.10])",
        feed.id,
    )
    # An hour of power every 10 s, and the register every 15 minutes from its second quarter.
    await feed.ingest(power, [(T0 + 10 * i, 500.0) for i in range(360)])
    await feed.ingest(meter, [(T0 + 900 * i, 1000.0 + 125 * i) for i in range(1, 5)])
    await process(feed.db)  # the processed streams and their money streams exist

    hour = (datetime.fromtimestamp(T0, UTC), datetime.fromtimestamp(T0 + 3600, UTC))
    plan = await compute_plan(feed, generic, [feed.id], [0], [hour[0]], [hour[1]])

    meeting = [
        (node, outer, inner)
        for node, outer, inner in joins(plan)
        if (outer & BUCKET_ROWS and inner & STRETCHES)
        or (inner & BUCKET_ROWS and outer & STRETCHES)
    ]
    assert [node["Node Type"] for node, _, _ in meeting] == ["Hash Join"]
    ((node, _, _),) = meeting
    # The hashed side is the periods as computed once (a CTE), not a subquery planned anew.
    (hashed,) = [c for c in node["Plans"] if c["Parent Relationship"] == "Inner"]
    (scan,) = hashed["Plans"]
    assert (scan["Node Type"], scan.get("CTE Name")) == ("CTE Scan", "periods")


async def test_the_engine_plans_claim_and_compute_once_per_connection(new_feed: NewFeed) -> None:
    # docs/engine.md#plans: re-planned at every call, they cost a quiet round more than they run.
    feed = await new_feed()
    power = await feed.raw_stream(channel=0, medium=IMPORT_POWER)
    for hour in range(3):  # three rounds of the engine on one connection, the feed's own
        await feed.ingest(power, [(T0 + 3600 * hour + 10 * i, 500.0) for i in range(360)])
        await drain(feed.db, ENGINE, currency=CURRENCY)

    plans = {
        statement: (generic, custom)
        for statement, generic, custom in await feed.db.fetch(
            "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements"
        )
    }
    for statement in (CLAIM, COMPUTE):
        generic, custom = plans[statement]
        assert (custom, generic >= 3) == (0, True), plans[statement]
    assert plans[INTAKE][1] >= 3, plans[INTAKE]  # intake keeps its custom plans


def nodes(node: Plan) -> list[Plan]:
    """A plan node and every node under it."""
    return [node, *(n for child in node.get("Plans", []) for n in nodes(child))]


def windows(node: Plan) -> list[str]:
    """The outputs of the window aggregates under a node that pair a stream's points."""
    return [
        " ".join(n["Output"])
        for n in nodes(node)
        if n["Node Type"] == "WindowAgg" and any("lead(" in o for o in n["Output"])
    ]


async def test_the_fast_path_pairs_each_reading_with_the_next_only(new_feed: NewFeed) -> None:
    # docs/engine.md#throughput: a register is first computed with each reading's next one
    # alone (two leads, as before the rules of issue 48); the rules' neighbours (lag, the
    # second lead) are read only for a stream whose rise was not plausible somewhere.
    feed = await new_feed()
    meter = await feed.raw_stream(channel=0, medium=IMPORT_REGISTER, device=METER)
    await feed.ingest(meter, [(T0 + 900 * i, 1000.0 + 125 * i) for i in range(1, 5)])
    await process(feed.db)

    hour = (datetime.fromtimestamp(T0, UTC), datetime.fromtimestamp(T0 + 3600, UTC))
    plan = json.loads(
        await feed.db.fetchval(
            "EXPLAIN (VERBOSE, FORMAT JSON) SELECT * FROM cluster.bucket_energy($1, $2, $3, $4)",
            [feed.id],
            [0],
            [hour[0]],
            [hour[1]],
        )
    )[0]["Plan"]

    ctes = {n["Subplan Name"]: n for n in nodes(plan) if "Subplan Name" in n}
    (fast,) = windows(ctes["CTE plain"])
    assert "lag(" not in fast, fast
    assert ", 2)" not in fast, fast
    (judged,) = windows(ctes["CTE heads"])
    assert "lag(" in judged, judged
    assert ", 2)" in judged, judged
