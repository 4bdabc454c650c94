"""What-if (issue 61): two rows.

``what-if: a year, 4 contracts, p99``: ``POST /feeds/{id}/what-if`` over the 365 local days of
2025 with four contracts (flat; day and night by kind of day with Czech holidays; the area's
quarter hours plus a markup; the same with a floor and an export part) on the household of
benchmarks/household.py (shared with the bill and the year view), beside the p99 of the same
feed's year bill (``GET /feeds/{id}/bill``) in the same run, alternating in chunks through the
real HTTP server. Goal: at most 3 x the bill (the buckets are read once for all contracts).

``what-if: 1,000 feeds, one contract, a year``: one statement ``SELECT ... FROM feeds,
LATERAL cluster.what_if(...)`` over N feeds with a year of consumption each, beside the floor any
implementation must pay: one statement joining the same points to the same slot prices and
summing per feed and month. Goal: at most 2 x the floor. Before timing, both answers are
checked equal. Quick size: a point per hour per feed (8,760 a feed); --full: per quarter hour.
Their daily rollups are written by one statement from the points, as the engine would make them,
their quarter hours by the engine's own cluster.rollup_quarters (the engine's build of 1,000
years of rollups is not what this measures).

    python -m benchmarks.what_if [--runs N] [--requests N] [--neighbours N] [--feeds N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import time
from datetime import UTC, datetime

import asyncpg
import httpx
import msgspec

from benchmarks.bill import CHUNK, FIRST, LAST, p99
from benchmarks.data_api import TOKEN, served, timed_requests
from benchmarks.household import (
    AREA,
    YEAR_FROM,
    YEAR_TO,
    Seeded,
    household,
    household_streams,
    prices,
)
from benchmarks.support import report_against, shared_database
from energy_platform import seeding

ROW_YEAR = "what-if: a year, 4 contracts, p99"
ROW_FEEDS = "what-if: 1,000 feeds, one contract, a year"
YEAR_GOAL = 3.0  # x the bill's p99, same run
FEEDS_GOAL = 2.0  # x the floor statement, same run
MARKUP, VAT = 0.12, 21.0
CONTRACTS = [
    {"price": 0.28, "standing": 9.0, "standing_per": "month", "vat": VAT},
    {
        "bands": ["weekday/06:00=0.33", "weekday/22:00=0.19", "weekend/00:00=0.19"],
        "holidays": "CZ",
        "vat": VAT,
    },
    {"area": AREA, "price": MARKUP, "vat": VAT, "standing": 4.0, "standing_per": "month"},
    {"area": AREA, "price": MARKUP, "vat": VAT, "floor": 0, "export": {"area": AREA, "floor": 0}},
]
ONE_CONTRACT = {"area": AREA, "price": MARKUP, "vat": VAT}
ZONE = "Europe/Prague"
# The analysts' statement: the contract over every feed asked, month by month.
WHAT_IF_FEEDS = """
SELECT f.id, w.month, w.energy
  FROM cluster.feeds f, LATERAL cluster.what_if(f.id, $1::jsonb, $2, $3) w
 WHERE f.id = ANY ($4::bigint[])"""
# The floor: the same points joined to the same slots, priced as the contract prices them
# (area price plus markup, VAT), summed per feed and local month.
FLOOR = """
SELECT s.feed_id, date_trunc('month', p.ts AT TIME ZONE $5)::date AS month,
       sum(p.value / 1000 * (x.price + $6::float8) * (1 + $7::float8 / 100)) AS energy
  FROM cluster.streams s
  JOIN cluster.processed_points p ON p.stream_id = s.id AND p.ts >= $2 AND p.ts < $3
  JOIN cluster.prices x ON x.area = $4 AND x.slot @> p.ts
 WHERE s.id = ANY ($1::bigint[])
 GROUP BY 1, 2"""


class Feeds(msgspec.Struct, frozen=True):
    """The N feeds' ids and their consumption streams."""

    feeds: list[int]
    streams: list[int]
    seeded_s: float


async def _seed_feeds(url: str, count: int, step: int) -> Feeds:
    started = time.perf_counter()
    conn = await asyncpg.connect(url)
    try:
        slots, values = prices()
        await conn.execute(
            "SELECT cluster.set_prices($1, $2::tstzrange[], $3::float8[])", AREA, slots, values
        )
        owner = await seeding.add_user(conn, "market", token=TOKEN)
        feeds, streams = [], []
        for n in range(count):
            feed = await seeding.add_feed(conn, owner.id, f"AF{n:014X}", timezone=ZONE)
            feeds.append(feed)
            streams.append((await household_streams(conn, feed))[0])
        await conn.execute(
            "INSERT INTO cluster.processed_points (stream_id, ts, value)"
            " SELECT s, to_timestamp($1::bigint + $3 * i),"
            "        round((random() * 50 * $3 / 90)::numeric, 3)"
            "   FROM unnest($2::bigint[]) s, generate_series(0, ($4::bigint - $1) / $3 - 1) i",
            YEAR_FROM,
            streams,
            step,
            YEAR_TO,
        )
        # The daily rollups as the engine makes them: per stream and local day, sum and count.
        await conn.execute(
            "INSERT INTO cluster.daily_rollups (stream_id, day, start, timezone, total, points)"
            " SELECT stream_id, d, d::timestamp AT TIME ZONE $2, $2, sum(value), count(*)"
            "   FROM (SELECT stream_id, (ts AT TIME ZONE $2)::date AS d, value"
            "           FROM cluster.processed_points WHERE stream_id = ANY ($1::bigint[])) x"
            "  GROUP BY stream_id, d",
            streams,
            ZONE,
        )
        # And their quarter hours, by the engine's own function (each stream's whole history):
        # what what-if prices by.
        await conn.execute(
            "SELECT cluster.rollup_quarters($1::bigint[], $2::timestamptz[], $2::timestamptz[])",
            streams,
            [None] * len(streams),
        )
        await conn.execute("ANALYZE")
    finally:
        await conn.close()
    return Feeds(feeds, streams, time.perf_counter() - started)


async def timed_statements(url: str, market: Feeds, runs: int) -> tuple[list[float], list[float]]:
    """Each run: the what-if statement and the floor, each once, alternating (ms); their
    answers checked equal first."""
    conn = await asyncpg.connect(url)
    start, end = datetime.fromtimestamp(YEAR_FROM, UTC), datetime.fromtimestamp(YEAR_TO, UTC)
    what_if: tuple[str, tuple[object, ...]] = (
        WHAT_IF_FEEDS,
        (json.dumps(ONE_CONTRACT), FIRST, LAST, market.feeds),
    )
    floor: tuple[str, tuple[object, ...]] = (
        FLOOR,
        (market.streams, start, end, AREA, ZONE, MARKUP, VAT),
    )
    try:
        got = {
            (r["id"], r["month"]): r["energy"] for r in await conn.fetch(what_if[0], *what_if[1])
        }
        want = {
            (r["feed_id"], r["month"]): r["energy"] for r in await conn.fetch(floor[0], *floor[1])
        }
        assert got.keys() == want.keys(), (len(got), len(want))
        for key, energy in want.items():
            assert math.isclose(got[key], energy, rel_tol=1e-9), (key, got[key], energy)
        times: tuple[list[float], list[float]] = ([], [])
        for _ in range(runs):
            for kind, (statement, args) in enumerate((what_if, floor)):
                started = time.perf_counter()
                await conn.fetch(statement, *args)
                times[kind].append((time.perf_counter() - started) * 1000)
        return times
    finally:
        await conn.close()


def year_row(runs: int, requests: int, neighbours: int) -> None:
    body = msgspec.json.encode(
        {"from": str(FIRST), "to": str(LAST), "contracts": [{"contract": c} for c in CONTRACTS]}
    )
    with household(neighbours) as (settings, seeded), served(settings.database.url) as base:
        check(base, seeded, body)
        done = [asyncio.run(alternate(base, seeded, body, requests)) for _ in range(runs)]
    for n, (whats, bills) in enumerate(done, 1):
        print(
            f"run {n}: {requests} of each, alternating by {CHUNK}; p50 / p99 ms: what-if"
            f" {statistics.median(whats):.1f} / {p99(whats):.1f}, bill"
            f" {statistics.median(bills):.1f} / {p99(bills):.1f}"
        )
    whats, bills = [p99(w) for w, _ in done], [p99(b) for _, b in done]
    report_against(ROW_YEAR, whats, "bill p99 ms (a year)", bills, YEAR_GOAL, "the bill")


def check(base: str, seeded: Seeded, body: bytes) -> None:
    """The current contract's total is the year's bill to the cent; every contract has twelve
    months."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    bill = httpx.get(f"{base}/feeds/{seeded.feed}/bill?from={FIRST}&to={LAST}", headers=headers)
    answer = httpx.post(
        f"{base}/feeds/{seeded.feed}/what-if", content=body, headers=headers, timeout=60
    )
    assert answer.status_code == 200, answer.text[:300]
    contracts = answer.json()["contracts"]
    assert round(contracts[0]["total"], 2) == round(bill.json()["total"], 2), (
        contracts[0],
        bill.text,
    )
    assert [len(c["months"]) for c in contracts] == [12] * 5, contracts


async def alternate(
    base: str, seeded: Seeded, body: bytes, requests: int
) -> tuple[list[float], list[float]]:
    whats: list[float] = []
    bills: list[float] = []
    while len(whats) < requests:
        whats += await timed_requests(
            base, [f"/feeds/{seeded.feed}/what-if"], CHUNK, body=b'{"feed"', data=body
        )
        bills += await timed_requests(
            base, [f"/feeds/{seeded.feed}/bill?from={FIRST}&to={LAST}"], CHUNK, body=b'{"feed"'
        )
    return whats, bills


def feeds_row(runs: int, count: int, step: int) -> None:
    kind = f"what_if_feeds_{count}_{step}"
    with shared_database(kind, lambda url: _seed_feeds_sync(url, count, step)) as (settings, info):
        market = msgspec.convert(info, Feeds)
        whats, floors = asyncio.run(timed_statements(settings.database.url, market, runs))
    print(
        f"{count:,} feeds x a year of a point per {step} s ({(YEAR_TO - YEAR_FROM) // step:,} a"
        f" feed), seeded in {market.seeded_s:.1f} s; ms per run: what-if"
        f" {', '.join(f'{t:.0f}' for t in whats)}; floor {', '.join(f'{t:.0f}' for t in floors)}"
    )
    report_against(
        ROW_FEEDS,
        whats,
        "one statement over the same buckets and slots, ms",
        floors,
        FEEDS_GOAL,
        "the floor",
    )


def _seed_feeds_sync(url: str, count: int, step: int) -> Feeds:
    return asyncio.run(_seed_feeds(url, count, step))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--requests", type=int, default=200, help="of each kind, per run")
    parser.add_argument("--neighbours", type=int, default=200, help="other feeds, no points")
    parser.add_argument("--feeds", type=int, default=1_000)
    parser.add_argument("--full", action="store_true", help="a point per quarter hour")
    parser.add_argument("--rows", default="year,feeds", help="which rows: year, feeds or both")
    args = parser.parse_args()
    if "year" in args.rows:
        year_row(args.runs, args.requests, 1_000 if args.full else args.neighbours)
    if "feeds" in args.rows:
        feeds_row(args.runs, args.feeds, 900 if args.full else 3600)


if __name__ == "__main__":
    main()
