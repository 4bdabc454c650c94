"""The bill of one year: ``GET /feeds/{id}/bill`` over the 365 local days of 2025, p99 latency,
beside the p99 of the same feed's year view on the same server in the same run.

The household's feed (Europe/Prague) has ten processed streams, each with a year of 90 s points
(benchmarks/year_view.py's seeding): channel 1's consumption total and its cost stream, its
export and their credit stream, a heat pump on channel 2 configured as a sub-meter with its
cost, and four temperature sensors. Power is on a dynamic tariff (two bands plus 1.19 x a year
of quarter-hour area prices) with a daily standing charge, export on a fixed price; the cost and
credit points are those prices applied to every bucket. Beside it are a few hundred other
households' feeds with the same bill streams and tariffs but no points (the bill looks its
streams, configurations and tariffs up among theirs). The engine builds every rollup from
nothing before anything is asked.

"The year view" is benchmarks/year_view.py's figure, for this feed: its 10 streams' 365 local
days (``resolution=day``) asked as 10 parallel requests, wall time. A bill is one request. The
two alternate in chunks through the real HTTP server, so that the machine's noise falls on both
alike; each run's p99 of each is a figure, and the goal is the bill's at most twice the year
view's. One year-view request alone (the consumption stream's) is timed too and printed beside
them. Before timing, the benchmark checks the bill's answer (its energy is the cost stream's
days summed, its standing charge 365 days' worth) and that computing it scanned no point
chunk, only rollups.

    python -m benchmarks.bill [--runs N] [--requests N] [--neighbours N]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import statistics
import time
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock

import asyncpg
import httpx
import msgspec
import psycopg

from benchmarks.data_api import TOKEN, start_servers, stop_servers, timed_requests
from benchmarks.support import bench_database, figure, report
from benchmarks.year_view import (
    BUCKETS,
    YEAR_FROM,
    YEAR_TO,
    build_rollups,
    queue_rollups,
    year_of_points,
    year_paths,
)
from energy_platform import seeding
from energy_platform.core.settings import HttpSettings
from tests.support.services import free_port

ROW = "bill: one year, p99"
GOAL = 2.0  # x the year view's p99, same run
FIRST, LAST = date(2025, 1, 1), date(2025, 12, 31)  # YEAR_FROM to YEAR_TO in Prague
DAYS = 365
AREA = "BENCH-1"
SLOT = 900  # the day-ahead market's quarter hours
STANDING = 0.45  # per local day, power
EVENING = clock(17)
BANDS = ([clock(0), EVENING], [0.12, 0.21])  # per kWh from local times, plus the area's
FACTOR = 1.19
EXPORT_PRICE = 0.08
CHUNK = 50  # requests of one kind before the other's
SENSORS = 4  # temperature streams: ten streams in the year view with the bill's six
BILL_STREAMS = [
    (1, "Electricity, channel 1", "consumption", "Wh"),
    (1, "Electricity cost, channel 1", "cost", "EUR"),
    (1, "Electricity export, channel 1", "export", "Wh"),
    (1, "Electricity export credit, channel 1", "credit", "EUR"),
    (2, "Electricity, channel 2", "consumption", "Wh"),
    (2, "Electricity cost, channel 2", "cost", "EUR"),
]
SET_PRICES = "SELECT cluster.set_prices($1, $2::tstzrange[], $3::float8[])"
POWER_TARIFF = """
SELECT cluster.set_tariff($1, 'power', NULL, $2::time[], $3::float8[], $4, $5, $6)"""
EXPORT_TARIFF = """
SELECT cluster.set_tariff($1, 'export', NULL, ARRAY['00:00'::time], ARRAY[$2::float8])"""
SUBMETER = "SELECT cluster.set_stream_config($1, NULL, 'Heat pump', 'power', 'Wh', true)"
# Each consumption bucket's cost as the power tariff prices it: the band of its local start time
# plus the factor times its quarter hour's price ($4: the year's prices from YEAR_FROM on), per
# kWh of its Wh.
COST_POINTS = """
INSERT INTO cluster.processed_points (stream_id, ts, value)
SELECT $1, p.ts,
       p.value / 1000 * (CASE WHEN (p.ts AT TIME ZONE 'Europe/Prague')::time >= $5::time
                              THEN $7::float8 ELSE $6::float8 END
                         + $8::float8 * ($4::float8[])[(extract(epoch FROM p.ts)::bigint - $3)
                                                       / 900 + 1])
  FROM cluster.processed_points p
 WHERE p.stream_id = $2"""
CREDIT_POINTS = """
INSERT INTO cluster.processed_points (stream_id, ts, value)
SELECT $1, p.ts, p.value / 1000 * $3::float8 FROM cluster.processed_points p
 WHERE p.stream_id = $2"""
# The bill of the year inside one transaction, then what that transaction scanned of the point
# hypertables' chunks and of the daily rollups (pg_stat_xact_*: this transaction's own counts).
BILL = "SELECT count(*) FROM cluster.feed_bill($1, $2, $3, now())"
CHUNK_SCANS = """
SELECT coalesce(sum(coalesce(t.seq_scan, 0) + coalesce(t.idx_scan, 0)), 0)::bigint
  FROM pg_stat_xact_user_tables t
  JOIN timescaledb_information.chunks c
    ON c.chunk_schema = t.schemaname AND c.chunk_name = t.relname
 WHERE c.hypertable_schema = 'cluster'
   AND c.hypertable_name IN ('raw_points', 'processed_points', 'system_points', 'points',
                             'point_days')"""
ROLLUP_SCANS = """
SELECT coalesce(sum(coalesce(seq_scan, 0) + coalesce(idx_scan, 0)), 0)::bigint
  FROM pg_stat_xact_user_tables WHERE schemaname = 'cluster' AND relname = 'daily_rollups'"""
A_DAY_OF_POINTS = """
SELECT count(*) FROM cluster.processed_points
 WHERE stream_id = $1 AND ts >= to_timestamp($2) AND ts < to_timestamp($2) + interval '1 day'"""


class Seeded(msgspec.Struct, frozen=True):
    """The household's feed, its consumption and cost streams and its year view's streams."""

    feed: int
    consumption: int
    cost: int
    streams: list[int]


def prices() -> tuple[list[asyncpg.Range[datetime]], list[float]]:
    """The area's quarter hours over the year and a price for each, per kWh."""
    rng = random.Random(2025)
    start = datetime.fromtimestamp(YEAR_FROM, UTC)
    slots = [
        asyncpg.Range(
            start + timedelta(seconds=SLOT * q), start + timedelta(seconds=SLOT * (q + 1))
        )
        for q in range((YEAR_TO - YEAR_FROM) // SLOT)
    ]
    return slots, [round(rng.uniform(-0.05, 0.40), 5) for _ in slots]


async def household_streams(conn: asyncpg.Connection, feed: int) -> list[int]:
    """A household's processed streams, as the engine makes them for a meter with import and
    export on channel 1 and a clamp on channel 2: consumption, cost, export, credit; the
    clamp's consumption and cost."""
    return [
        await seeding.processed_stream(
            conn, feed, channel, title=title, quantity=quantity, unit=unit
        )
        for channel, title, quantity, unit in BILL_STREAMS
    ]


async def tariffs(conn: asyncpg.Connection, feed: int) -> None:
    await conn.execute(POWER_TARIFF, feed, *BANDS, AREA, FACTOR, STANDING)
    await conn.execute(EXPORT_TARIFF, feed, EXPORT_PRICE)


async def seed(url: str, neighbours: int) -> Seeded:
    """The other households' feeds, then the household's with its tariffs, its sub-meter and a
    year of points on its ten streams."""
    conn = await asyncpg.connect(url)
    try:
        slots, values = prices()
        await conn.execute(SET_PRICES, AREA, slots, values)
        others = await seeding.add_user(conn, "neighbours")
        for n in range(neighbours):
            feed = await seeding.add_feed(conn, others.id, f"BF{n:014X}")
            await household_streams(conn, feed)
            await tariffs(conn, feed)
        owner = await seeding.add_user(conn, "bench", token=TOKEN)
        feed = await seeding.add_feed(conn, owner.id, "BE00000000000003")
        streams = await household_streams(conn, feed)
        used, cost, fed_in, credit, heat_pump, heat_pump_cost = streams
        sensors = [
            await seeding.processed_stream(
                conn,
                feed,
                channel,
                title=f"Temperature, channel {channel}",
                medium="temperature",
                unit="°C",
                quantity="mean",
            )
            for channel in range(3, 3 + SENSORS)
        ]
        await conn.execute(SUBMETER, heat_pump)
        await tariffs(conn, feed)
        await year_of_points(conn, [used, fed_in, heat_pump, *sensors])
        for source, money in ((used, cost), (heat_pump, heat_pump_cost)):
            await conn.execute(
                COST_POINTS, money, source, YEAR_FROM, values, EVENING, *BANDS[1], FACTOR
            )
        await conn.execute(CREDIT_POINTS, credit, fed_in, EXPORT_PRICE)
        await queue_rollups(conn, [cost, credit, heat_pump_cost])
        # Nothing else queued: the tariffs and the sub-meter found no raw data to recompute.
        assert await conn.fetchval("SELECT count(*) FROM cluster.engine_work") == 0
    finally:
        await conn.close()
    return Seeded(feed, used, cost, [*streams, *sensors])


def p99(times: list[float]) -> float:
    return statistics.quantiles(times, n=100, method="inclusive")[98]


async def scans(url: str, seeded: Seeded) -> tuple[int, int]:
    """(point chunk scans, daily rollup scans) of computing the year's bill, in one
    transaction; and, as a check of the check, the chunk scans of reading one day of points."""
    conn = await asyncpg.connect(url)
    try:
        async with conn.transaction():
            await conn.fetchval(BILL, seeded.feed, FIRST, LAST)
            chunks: int = await conn.fetchval(CHUNK_SCANS)
            rollups: int = await conn.fetchval(ROLLUP_SCANS)
        async with conn.transaction():
            await conn.fetchval(A_DAY_OF_POINTS, seeded.consumption, YEAR_FROM)
            assert await conn.fetchval(CHUNK_SCANS) > 0, "a point scan must be seen"
    finally:
        await conn.close()
    return chunks, rollups


def check(base: str, seeded: Seeded, bill_path: str) -> None:
    """The bill is the cost stream's days summed plus 365 days of standing charges."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    bill = httpx.get(base + bill_path, headers=headers).json()
    (cost_days,) = year_paths(seeded.feed, [seeded.cost])
    days = httpx.get(base + cost_days, headers=headers).json()
    assert len(days) == DAYS, len(days)
    power, export = bill["lines"]
    assert bill["complete"], bill
    assert bill["projected_total"] is None, bill
    assert [power["medium"], export["medium"]] == ["power", "export"], bill
    assert math.isclose(power["energy"], sum(v for _, v in days), rel_tol=1e-9), bill
    assert math.isclose(power["standing"], DAYS * STANDING, rel_tol=1e-9), bill
    assert [m["title"] for m in bill["submeters"]] == ["Heat pump"], bill


class Latencies(msgspec.Struct):
    """One run's times (ms): bills, year views (10 parallel requests), single requests."""

    bills: list[float] = msgspec.field(default_factory=list)
    years: list[float] = msgspec.field(default_factory=list)
    singles: list[float] = msgspec.field(default_factory=list)


async def alternate(base: str, seeded: Seeded, requests: int) -> Latencies:
    """``requests`` bills, year views and single year-view requests, one at a time, in
    alternating chunks."""
    bill = f"/feeds/{seeded.feed}/bill?from={FIRST}&to={LAST}"
    year = year_paths(seeded.feed, seeded.streams)
    done = Latencies()
    while len(done.bills) < requests:
        done.bills += await timed_requests(base, [bill], CHUNK, body=b'{"feed"')
        done.years += await timed_requests(base, year, CHUNK)
        done.singles += await timed_requests(base, year[:1], CHUNK)
    return done


def main(runs: int, requests: int, neighbours: int) -> None:
    with bench_database() as settings:
        url = settings.database.url
        started = time.perf_counter()
        seeded = asyncio.run(seed(url, neighbours))
        seeding_took = time.perf_counter() - started
        build = asyncio.run(build_rollups(url))
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")
        chunk_scans, rollup_scans = asyncio.run(scans(url, seeded))
        assert chunk_scans == 0, f"the year's bill scanned point chunks {chunk_scans} times"
        assert rollup_scans > 0, "the year's bill must read the daily rollups"
        port = free_port()
        servers = start_servers(url, port, HttpSettings().server)
        try:
            base = f"http://127.0.0.1:{port}"
            check(base, seeded, f"/feeds/{seeded.feed}/bill?from={FIRST}&to={LAST}")
            done = [asyncio.run(alternate(base, seeded, requests)) for _ in range(runs)]
        finally:
            stop_servers(servers)
    print(
        f"bill: a household of {len(seeded.streams)} streams x {BUCKETS:,} points of 90 s (365"
        f" days), a dynamic power tariff with a standing charge, export credit, a sub-meter,"
        f" beside {neighbours:,} other feeds;"
        f" seeded in {seeding_took:.1f} s, rollups built in {build:.1f} s; the year's bill"
        f" scanned point chunks {chunk_scans} times, the daily rollups {rollup_scans} times"
    )
    for n, run in enumerate(done, 1):
        print(
            f"run {n}: {requests} of each, alternating by {CHUNK}; p50 / p99 ms: bill"
            f" {statistics.median(run.bills):.1f} / {p99(run.bills):.1f}, year view"
            f" {statistics.median(run.years):.1f} / {p99(run.years):.1f}, one year-view request"
            f" {statistics.median(run.singles):.1f} / {p99(run.singles):.1f} (bill / one request"
            f" at p99: {p99(run.bills) / p99(run.singles):.2f})"
        )
    bills = [p99(run.bills) for run in done]
    years = [p99(run.years) for run in done]
    report(
        [
            figure(
                ROW,
                "ms",
                bills,
                "year view p99 ms (10 streams x 365 days)",
                years,
                goal=f"<= {GOAL:.0f}x the year view",
                goal_met=statistics.median(bills) <= GOAL * statistics.median(years),
            )
        ]
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--requests", type=int, default=400, help="of each kind, per run")
    parser.add_argument("--neighbours", type=int, default=200, help="other feeds, no points")
    parser.add_argument("--full", action="store_true", help="1,000 other feeds")
    args = parser.parse_args()
    main(args.runs, args.requests, 1_000 if args.full else args.neighbours)
