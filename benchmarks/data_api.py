"""Data API throughput: the stream-data endpoint (newest 100 points of a random window of a random
stream) under wrk, beside an idle handler on the same server and the bare asyncpg query.

    python -m benchmarks.data_api [--full] [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import subprocess
import sys
import tempfile
import time

import asyncpg
import httpx
import psycopg

from benchmarks.support import bench_database, figure, report
from energy_platform.api.data import queries
from energy_platform.tokens import token_digest
from tests.support.services import free_port

T0 = 1_790_000_000
DAY = 86_400
STEP = 5
TOKEN = "bench-token"
CONNECTIONS = 50
WRK_SCRIPT = """
math.randomseed(os.time())
request = function()
  local stream = math.random({first}, {last})
  local t = {t0} + math.random(0, {span})
  local path = "/feeds/{feed}/streams/" .. stream .. "/data?time_to=" .. t
  return wrk.format("GET", path, {{["Authorization"] = "Bearer {token}"}})
end
"""


def seed(url: str, streams: int) -> tuple[int, int, int]:
    """A feed with ``streams`` raw streams of a day of 5 s points each: (feed, first, last id)."""
    with psycopg.connect(url) as conn:
        user = conn.execute(
            "INSERT INTO cluster.users (name, token_sha256) VALUES ('bench', %s) RETURNING id",
            (token_digest(TOKEN),),
        ).fetchone()
        assert user
        feed = conn.execute(
            "INSERT INTO cluster.feeds (owner_id, homebase_sn, subscription_from, subscription_to)"
            " VALUES (%s, 'BE00000000000001', now(), now() + interval '1 year') RETURNING id",
            (user[0],),
        ).fetchone()
        assert feed
        ids = [
            row[0]
            for row in conn.execute(
                "INSERT INTO cluster.streams (feed_id, type, channel, device, medium, idx)"
                " SELECT %s, 'raw', i, 3, 1, NULL FROM generate_series(1, %s) i RETURNING id",
                (feed[0], streams),
            ).fetchall()
        ]
        conn.execute(
            "INSERT INTO cluster.raw_points (stream_id, ts, value)"
            " SELECT s, to_timestamp(%s + %s * i), random() * 3000"
            "   FROM unnest(%s::bigint[]) s, generate_series(0, %s) i",
            (T0, STEP, ids, DAY // STEP - 1),
        )
        conn.execute("ANALYZE cluster.raw_points")
    return feed[0], min(ids), max(ids)


def wrk(url: str, script: str | None, seconds: int) -> tuple[float, float, float]:
    """(requests/s, p50 ms, p99 ms) of one wrk run with CONNECTIONS connections."""
    command = ["wrk", "-t2", f"-c{CONNECTIONS}", f"-d{seconds}s", "--latency"]
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as lua:
        if script:
            lua.write(script)
            lua.flush()
            command += ["-s", lua.name]
        out = subprocess.run([*command, url], capture_output=True, text=True, check=True).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    return rate, _latency(out, "50%"), _latency(out, "99%")


def _latency(out: str, label: str) -> float:
    value, unit = re.search(rf"{label}\s+([\d.]+)(us|ms|s)", out).groups()  # type: ignore[union-attr]
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


async def asyncpg_rate(url: str, first: int, last: int, seconds: float) -> float:
    """The endpoint's own prepared statement, CONNECTIONS at once, straight from asyncpg."""
    pool = await asyncpg.create_pool(url, min_size=CONNECTIONS // 5, max_size=CONNECTIONS // 5)
    done = 0
    stop = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal done
        async with pool.acquire() as conn:
            statement = await conn.prepare(queries.RAW_POINTS)
            while time.perf_counter() < stop:
                t = T0 + random.randint(0, DAY)
                await statement.fetchrow(random.randint(first, last), -62_135_596_800, t, 100)
                done += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONNECTIONS // 5)))
    elapsed = time.perf_counter() - started
    await pool.close()
    return done / elapsed


def main(full: bool, runs: int) -> None:
    streams, seconds = (1000, 10) if full else (50, 5)
    with bench_database() as settings:
        feed, first, last = seed(settings.database.url, streams)
        port = free_port()
        env = {
            **os.environ,
            "EP_DATABASE_URL": settings.database.url,
            "EP_HTTP_API_PORT": str(port),
            "EP_DATABASE_POOL_MAX": "10",
            "EP_LOG_LEVEL": "warning",
        }
        server = subprocess.Popen([sys.executable, "-m", "benchmarks.data_api_server"], env=env)
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 20
            while True:
                try:
                    if httpx.get(base + "/readyz", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("the bench server did not start")
                time.sleep(0.1)
            script = WRK_SCRIPT.format(
                first=first, last=last, t0=T0, span=DAY, feed=feed, token=TOKEN
            )
            sample = httpx.get(
                f"{base}/feeds/{feed}/streams/{first}/data?time_to={T0 + DAY}",
                headers={"Authorization": f"Bearer {TOKEN}"},
            ).json()
            assert len(sample) == 100, "the endpoint must return 100 points"
            wrk(base + "/bench/idle", None, 2)  # warm-up, not counted
            wrk(base + "/", script, 2)
            api, idle, direct, p50, p99 = [], [], [], [], []
            for _ in range(runs):
                rate, median, tail = wrk(base + "/", script, seconds)
                api.append(rate)
                p50.append(median)
                p99.append(tail)
                idle.append(wrk(base + "/bench/idle", None, seconds)[0])
                direct.append(
                    asyncio.run(asyncpg_rate(settings.database.url, first, last, seconds))
                )
        finally:
            server.terminate()
            server.wait(10)
    print(
        f"data API: {streams} streams x 1 day of 5 s points, {CONNECTIONS} connections, "
        f"{runs} runs of {seconds} s after a warm-up"
    )
    report(
        [
            figure("data endpoint req/s (100 points)", "req/s", api, "idle handler req/s", idle),
            figure("data endpoint req/s vs asyncpg", "req/s", api, "asyncpg queries/s", direct),
            figure("data endpoint p50 latency", "ms", p50, "p99 latency ms", p99),
        ]
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--full", action="store_true", help="1,000 streams, 10 s runs")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    main(args.full, args.runs)
