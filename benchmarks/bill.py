"""The bill of one year: ``GET /feeds/{id}/bill`` over the 365 local days of 2025, p99 latency,
beside the p99 of the same feed's year view on the same server in the same run.

The household of benchmarks/household.py (seeded once per `make bench`, shared with the year
view): ten processed streams with a year of 90 s points each on a dynamic tariff with VAT,
bands by kind of day, public holidays and a monthly standing charge, export credit and a
sub-meter, beside a few hundred other households' feeds with the same meters, bill streams and
tariffs, each meter having sent one reading (the bill looks its streams, configurations and
tariffs up among theirs); every
rollup built before anything is asked.

"The year view" is benchmarks/year_view.py's figure, for this feed: its 10 streams' 365 local
days (``resolution=day``) asked as 10 parallel requests, wall time. A bill is one request. The
two alternate in chunks through the real HTTP server, so that the machine's noise falls on both
alike; each run's p99 of each is a figure, and the goal is the bill's at most twice the year
view's. One year-view request alone (the consumption stream's) is timed too and printed beside
them. Before timing, the benchmark checks the bill's answer (its energy is the cost stream's
days summed, its standing charge twelve months' worth, its VAT 21/121 of both) and that
computing it scanned no point chunk, only rollups.

    python -m benchmarks.bill [--runs N] [--requests N] [--neighbours N]
"""

from __future__ import annotations

import asyncio
import math
import statistics
from datetime import date

import asyncpg
import httpx
import msgspec

from benchmarks.data_api import TOKEN, start_servers, stop_servers, timed_requests
from benchmarks.household import BUCKETS, STANDING, VAT, YEAR_FROM, Seeded, household, year_paths
from benchmarks.support import household_arguments, report_against
from energy_platform.core.settings import HttpSettings
from tests.support.services import free_port

ROW = "bill: one year, p99"
GOAL = 2.0  # x the year view's p99, same run
FIRST, LAST = date(2025, 1, 1), date(2025, 12, 31)  # YEAR_FROM to YEAR_TO in Prague
DAYS = 365
CHUNK = 50  # requests of one kind before the other's
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
    """The bill is the cost stream's days summed plus twelve months of standing charges, VAT
    on both."""
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
    assert math.isclose(power["standing"], 12 * STANDING * (1 + VAT / 100), rel_tol=1e-9), bill
    paid = power["energy"] + power["standing"]
    assert math.isclose(power["vat"], paid * VAT / (100 + VAT), rel_tol=1e-9), bill
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
    with household(neighbours) as (settings, seeded):
        url = settings.database.url
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
        f" days), a dynamic power tariff with VAT, weekday and weekend bands, holidays and a"
        f" monthly standing charge, export credit, a sub-meter,"
        f" beside {neighbours:,} other feeds;"
        f" seeded in {seeded.seeded_s:.1f} s, {seeded.rollups()} (once a run);"
        f" the year's bill scanned point chunks {chunk_scans} times, the daily rollups"
        f" {rollup_scans} times"
    )
    for n, run in enumerate(done, 1):
        print(
            f"run {n}: {requests} of each, alternating by {CHUNK}; p50 / p99 ms: bill"
            f" {statistics.median(run.bills):.1f} / {p99(run.bills):.1f}, year view"
            f" {statistics.median(run.years):.1f} / {p99(run.years):.1f}, one year-view request"
            f" {statistics.median(run.singles):.1f} / {p99(run.singles):.1f} (bill / one request"
            f" at p99: {p99(run.bills) / p99(run.singles):.2f})"
        )
    against_the_year_view(ROW, [p99(run.bills) for run in done], [p99(r.years) for r in done], GOAL)


def against_the_year_view(row: str, p99s: list[float], years: list[float], goal: float) -> None:
    """Reports ``row``'s p99 of each run beside the year view's of the same runs (goal: at most
    ``goal`` times it)."""
    report_against(
        row, p99s, "year view p99 ms (10 streams x 365 days)", years, goal, "the year view"
    )


if __name__ == "__main__":
    args = household_arguments(__doc__.split("\n")[0])
    main(args.runs, args.requests, args.neighbours)
