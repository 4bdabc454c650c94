"""History import over HTTP: points/s of ``POST /feeds/{id}/streams/{id}/data`` (JSON bodies
of 100,000 points, the most a request takes, one request after the other as a migration script
sends them), beside ``COPY`` of the same number of rows straight into the row tier
(``cluster.raw_points``) in the same run. The import does more than COPY: it parses and checks
the body, looks up each time's old value for the audit trail, queues the engine's work and
answers counts; goal: at least 0.3 of COPY's rate.

    .venv/bin/python -m benchmarks.import_history [--requests N] [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import time
from datetime import UTC, datetime

import asyncpg
import msgspec
import psycopg

from benchmarks.data_api import TOKEN, start_servers, stop_servers
from benchmarks.support import bench_database, figure, report
from energy_platform import seeding
from energy_platform.core.http.clients import http_client
from energy_platform.history.points import MAX_POINTS
from tests.support.services import free_port

ROW = "import: points/s over HTTP"
GOAL = 0.3
START = int(datetime(2025, 1, 1, tzinfo=UTC).timestamp())
STEP = 5  # seconds between points: a 5 s history, 100,000 points are 5.8 days


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=5, help="requests of 100,000 a round")
    parser.add_argument("--runs", type=int, default=3, help="counted rounds (after a warm-up)")
    parser.add_argument(
        "--full", action="store_true", help="the defaults, after a warm-up round of as many"
    )
    return parser.parse_args()


async def seed(url: str, streams: int) -> tuple[int, list[int]]:
    """A user with the benchmark's token, a feed, and a raw stream per request and round."""
    conn = await asyncpg.connect(url)
    try:
        owner = await seeding.add_user(conn, "bench", token=TOKEN)
        feed = await seeding.add_feed(conn, owner.id, "BE00000000000002")
        ids = await seeding.raw_streams(conn, feed, range(1, streams + 1), 1, device=3)
    finally:
        await conn.close()
    return feed, ids


def body(offset: int) -> bytes:
    """100,000 points of a 5 s power history, as JSON."""
    first = START + offset * MAX_POINTS * STEP
    return msgspec.json.encode(
        [(first + STEP * k, 230.0 + (k % 1000) / 10) for k in range(MAX_POINTS)]
    )


async def imports(base: str, feed: int, streams: list[int]) -> float:
    """Points/s of one request a stream, one after the other."""
    bodies = [body(n) for n in range(len(streams))]
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    async with http_client(base_url=base, headers=headers, timeout=120) as http:
        started = time.perf_counter()
        for stream, content in zip(streams, bodies, strict=True):
            answer = await http.post(f"/feeds/{feed}/streams/{stream}/data", content=content)
            assert answer.status_code == 200, answer.text[:200]
            assert answer.json()["inserted"] == MAX_POINTS, answer.text
        elapsed = time.perf_counter() - started
    return len(streams) * MAX_POINTS / elapsed


def copies(url: str, streams: list[int]) -> float:
    """Points/s of COPY of the same rows into cluster.raw_points, one COPY a stream."""
    rows = []
    for n, stream in enumerate(streams):
        first = START + n * MAX_POINTS * STEP
        text = io.StringIO()
        for k in range(MAX_POINTS):
            ts = datetime.fromtimestamp(first + STEP * k, UTC).isoformat()
            text.write(f"{stream}\t{ts}\t{230.0 + (k % 1000) / 10}\n")
        rows.append(text.getvalue())
    with psycopg.connect(url, autocommit=True) as conn:
        started = time.perf_counter()
        for data in rows:
            with conn.cursor().copy(
                "COPY cluster.raw_points (stream_id, ts, value) FROM STDIN"
            ) as copy:
                copy.write(data)
        elapsed = time.perf_counter() - started
    return len(streams) * MAX_POINTS / elapsed


def main() -> None:
    args = parse()
    # The warm-up's first request pays for the server's and the statements' first use; at quick
    # size it is that request (and one COPY) alone, at full a round as large as the others.
    sizes = [args.requests if args.full else 1] + [args.requests] * args.runs
    with bench_database() as settings:
        url = settings.database.url
        feed, streams = asyncio.run(seed(url, 2 * sum(sizes)))
        port = free_port()
        servers = start_servers(url, port, settings.http.server)
        http_rates: list[float] = []
        copy_rates: list[float] = []
        try:
            for n, size in enumerate(sizes):
                first = 2 * sum(sizes[:n])
                batch = streams[first : first + size]
                others = streams[first + size : first + 2 * size]
                rate = asyncio.run(imports(f"http://127.0.0.1:{port}", feed, batch))
                copied = copies(url, others)
                label = "warm-up" if n == 0 else f"round {n}"
                print(f"{label}: HTTP {rate:,.0f} points/s, COPY {copied:,.0f} points/s")
                if n:
                    http_rates.append(rate)
                    copy_rates.append(copied)
        finally:
            stop_servers(servers)
        print(
            f"import: {args.requests} requests of {MAX_POINTS:,} points a round, one after the"
            f" other, {args.runs} rounds after a warm-up of {sizes[0]}; COPY of as many rows"
        )
        ratio = sum(http_rates) / sum(copy_rates)
        report(
            [
                figure(
                    ROW,
                    "points/s",
                    http_rates,
                    "COPY into the row tier",
                    copy_rates,
                    goal=f"ratio >= {GOAL}",
                    goal_met=ratio >= GOAL,
                )
            ]
        )


if __name__ == "__main__":
    main()
