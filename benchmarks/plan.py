"""When to run it: `GET /feeds/{id}/plan` for a 2-hour load over two days of quarter-hour prices
(192 quarters, all in: the area's price, day-kind bands, VAT) under wrk at 10 connections,
beside the data endpoint's p99 at 10 connections on the same server in the same run (goal: at
most 1x, issue 62).

    python -m benchmarks.plan [--full] [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
from datetime import UTC, datetime

import asyncpg
import httpx

from benchmarks.data_api import (
    DAY,
    FEW_CONNECTIONS,
    T0,
    TOKEN,
    WRK_SCRIPT,
    seed,
    sizes,
    start_servers,
    stop_servers,
    wrk,
)
from benchmarks.support import bench_database, figure, report
from tests.support.services import free_port

ROW = "plan: 2 days of quarter hours, p99"
GOAL = 1.0
QUARTERS = 192
START = (T0 - 2 * DAY) // 900 * 900  # whole quarters, before the data endpoint's seeded day
PLAN_SCRIPT = """
request = function()
  return wrk.format("GET", "{path}", {{["Authorization"] = "Bearer {token}"}})
end
"""


async def priced(url: str, feed: int) -> None:
    """The feed on a dynamic tariff as contracts write it: an area of quarter-hour prices over
    the two days, bands by kind of day, 21 % VAT."""
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(
            "SELECT cluster.set_prices('BENCH', array_agg(tstzrange(to_timestamp(s),"
            " to_timestamp(s + 900), '[)') ORDER BY s),"
            " array_agg((0.05 + 0.1 * sin(s / 7200.0))::float8 ORDER BY s))"
            " FROM generate_series($1::bigint, $1::bigint + 900 * ($2 - 1), 900) s",
            START,
            QUARTERS,
        )
        await conn.execute(
            "SELECT cluster.set_tariff($1, 'power', NULL, ARRAY['00:00', '07:00', '23:00',"
            " '00:00']::time[], ARRAY[0.08, 0.12, 0.08, 0.06], 'BENCH', 1, 0,"
            " ARRAY['weekday', 'weekday', 'weekday', 'weekend'], 21)",
            feed,
        )
    finally:
        await conn.close()


def main(full: bool, runs: int) -> None:
    streams, seconds, warm = sizes(full)
    plans: list[float] = []
    data: list[float] = []
    with bench_database() as settings:
        url = settings.database.url
        feed, first, last = asyncio.run(seed(url, streams))
        asyncio.run(priced(url, feed))
        earliest = datetime.fromtimestamp(START, UTC).isoformat()
        deadline = datetime.fromtimestamp(START + QUARTERS * 900, UTC).isoformat()
        path = (
            f"/feeds/{feed}/plan?duration=PT2H&power_kw=2&earliest={earliest}&deadline={deadline}"
        ).replace("+", "%2B")
        data_script = WRK_SCRIPT.format(
            first=first, last=last, t0=T0, span=DAY, feed=feed, token=TOKEN
        )
        plan_script = PLAN_SCRIPT.format(path=path, token=TOKEN)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        servers = start_servers(url, port, "uvicorn")
        try:
            sample = httpx.get(base + path, headers={"Authorization": f"Bearer {TOKEN}"}).json()
            assert sample["status"] == "ok", sample
            assert len(sample["slots"]) == QUARTERS, "the plan must see 192 quarters"
            wrk(base + "/", plan_script, warm)  # warm-up, not counted
            wrk(base + "/", data_script, warm)
            for _ in range(runs):
                plans.append(wrk(base + "/", plan_script, seconds, FEW_CONNECTIONS)[2])
                data.append(wrk(base + "/", data_script, seconds, FEW_CONNECTIONS)[2])
        finally:
            stop_servers(servers)
    ratio = statistics.median(plans) / statistics.median(data)
    report(
        [
            figure(
                ROW,
                "ms",
                plans,
                f"data endpoint p99 @{FEW_CONNECTIONS} ms",
                data,
                goal=f"<= {GOAL:g}x the data endpoint",
                goal_met=ratio <= GOAL,
            )
        ]
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    main(args.full, args.runs)
