"""The overview of a year: ``GET /feeds/{id}/overview?period=year`` for 2025 (compared with the
year before, the default), p99 latency, beside the p99 of the same feed's year view on the same
server in the same run (issue 50: at most 1.5 times).

The household of benchmarks/household.py (seeded once per `make bench`, shared with the year
view and the bill): ten processed streams with a year of 90 s points each, a dynamic tariff with
a standing charge, export credit and a sub-meter, among a few hundred other feeds. The year view
is benchmarks/year_view.py's figure for this feed (10 streams' 365 days as 10 parallel requests);
an overview is one request. The two alternate in chunks, as the bill's benchmark alternates
them. Before timing, the benchmark checks the answer (its total is the year's bill, its 12 month
buckets the consumption stream's months) and that computing its buckets, baseload and mean
price scanned no point chunk, only rollups.

    python -m benchmarks.overview [--runs N] [--requests N] [--neighbours N]
"""

from __future__ import annotations

import asyncio
import math
import statistics

import asyncpg
import httpx
import msgspec

from benchmarks.bill import CHUNK, CHUNK_SCANS, FIRST, LAST, against_the_year_view, p99
from benchmarks.data_api import TOKEN, start_servers, stop_servers, timed_requests
from benchmarks.household import BUCKETS, YEAR_FROM, YEAR_TO, Seeded, household, year_paths
from benchmarks.support import household_arguments
from energy_platform.core.settings import HttpSettings
from tests.support.services import free_port

ROW = "overview: a year, p99"
GOAL = 1.5  # x the year view's p99, same run
# The overview's statements of rollups (sql/functions/96_billing_overview.sql) in one transaction.
ROLLUP_READS = """
SELECT (SELECT count(*) FROM cluster.feed_overview($1, $2, $3, 'month')),
       cluster.feed_baseload($1, $2, $3),
       cluster.feed_mean_price($1, to_timestamp($4), to_timestamp($5))"""


async def chunk_scans(url: str, seeded: Seeded) -> int:
    conn = await asyncpg.connect(url)
    try:
        async with conn.transaction():
            await conn.fetchrow(ROLLUP_READS, seeded.feed, FIRST, LAST, YEAR_FROM, YEAR_TO)
            scans: int = await conn.fetchval(CHUNK_SCANS)
    finally:
        await conn.close()
    return scans


def check(base: str, seeded: Seeded, path: str) -> None:
    """The overview's total is the year's bill; its months are the consumption's months."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    answer = httpx.get(base + path, headers=headers).json()
    bill = httpx.get(
        base + f"/feeds/{seeded.feed}/bill?from={FIRST}&to={LAST}", headers=headers
    ).json()
    assert math.isclose(answer["so_far"]["total"], bill["total"], rel_tol=1e-9), answer
    assert answer["projection"]["total"] is None, answer
    months = httpx.get(
        base + f"/feeds/{seeded.feed}/streams/{seeded.consumption}/data",
        params={"resolution": "month", "time_from": YEAR_FROM, "time_to": YEAR_TO - 1},
        headers=headers,
    ).json()
    assert len(answer["buckets"]) == len(months) == 12, answer["buckets"]
    for bucket, (start, wh) in zip(answer["buckets"], months, strict=True):
        assert bucket["start"] == start
        assert math.isclose(bucket["consumption"]["power"], wh / 1000, rel_tol=1e-9)
    assert answer["baseload_w"] is not None, answer


class Latencies(msgspec.Struct):
    """One run's times (ms): overviews and year views (10 parallel requests)."""

    overviews: list[float] = msgspec.field(default_factory=list)
    years: list[float] = msgspec.field(default_factory=list)


async def alternate(base: str, seeded: Seeded, path: str, requests: int) -> Latencies:
    year = year_paths(seeded.feed, seeded.streams)
    done = Latencies()
    while len(done.overviews) < requests:
        done.overviews += await timed_requests(base, [path], CHUNK, body=b'{"feed"')
        done.years += await timed_requests(base, year, CHUNK)
    return done


def main(runs: int, requests: int, neighbours: int) -> None:
    with household(neighbours) as (settings, seeded):
        url = settings.database.url
        scans = asyncio.run(chunk_scans(url, seeded))
        assert scans == 0, f"the year's overview scanned point chunks {scans} times"
        path = f"/feeds/{seeded.feed}/overview?period=year&date={FIRST}"
        port = free_port()
        servers = start_servers(url, port, HttpSettings().server)
        try:
            base = f"http://127.0.0.1:{port}"
            check(base, seeded, path)
            done = [asyncio.run(alternate(base, seeded, path, requests)) for _ in range(runs)]
        finally:
            stop_servers(servers)
    print(
        f"overview of a year: a household of {len(seeded.streams)} streams x {BUCKETS:,} points"
        f" of 90 s, beside {neighbours:,} other feeds, compared with the year before; its"
        f" rollup reads scanned point chunks {scans} times"
    )
    for n, run in enumerate(done, 1):
        print(
            f"run {n}: {requests} of each, alternating by {CHUNK}; p50 / p99 ms: overview"
            f" {statistics.median(run.overviews):.1f} / {p99(run.overviews):.1f}, year view"
            f" {statistics.median(run.years):.1f} / {p99(run.years):.1f}"
        )
    against_the_year_view(
        ROW, [p99(run.overviews) for run in done], [p99(run.years) for run in done], GOAL
    )


if __name__ == "__main__":
    args = household_arguments(__doc__.split("\n")[0])
    main(args.runs, args.requests, args.neighbours)
