"""Data API: the stream-data endpoint (newest 100 points of a random window of a random stream)
under wrk at 50 and 10 connections, beside an idle handler on the same server and the endpoint's
own statement straight from asyncpg; the same at 10 connections while another user floods the
overview (benchmarks/overview_flood.py); a dashboard (10 processed streams, one week of 90 s
points each, fetched as 10 parallel requests); one request of 100,000 points.

    python -m benchmarks.data_api [--full] [--runs N] [--server uvicorn|granian]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import asyncpg
import httpx
import msgspec

from benchmarks.overview_flood import Flood, seed_flooder
from benchmarks.support import bench_database, figure, report
from energy_platform import seeding
from energy_platform.api import queries
from energy_platform.core.http.clients import http_client
from energy_platform.core.settings import HttpSettings
from energy_platform.core.tokens import token_digest
from tests.support.services import free_port

T0 = 1_790_000_000
DAY = 86_400
STEP = 5
TOKEN = "bench-token"
CONNECTIONS = 50
FEW_CONNECTIONS = 10
WEEK_OF_BUCKETS = 7 * 86_400 // 90  # 6,720 processed points per dashboard stream
DASHBOARD_STREAMS = 10
BIG = 100_000
EARLIEST = -62_135_596_800
WRK_SCRIPT = """
math.randomseed(os.time())
request = function()
  local stream = math.random({first}, {last})
  local t = {t0} + math.random(0, {span})
  local path = "/feeds/{feed}/streams/" .. stream .. "/data?time_to=" .. t
  return wrk.format("GET", path, {{["Authorization"] = "Bearer {token}"}})
end
"""


async def seed(url: str, streams: int) -> tuple[int, int, int]:
    """A feed with ``streams`` raw streams of a day of 5 s points each: (feed, first, last id)."""
    conn = await asyncpg.connect(url)
    try:
        owner = await seeding.add_user(conn, "bench", token=TOKEN)
        feed = await seeding.add_feed(conn, owner.id, "BE00000000000001")
        ids = await seeding.raw_streams(conn, feed, range(1, streams + 1), 1, device=3)
        # In bulk, bypassing the store on purpose: a day of 5 s points of every stream made
        # server-side in seconds; what is timed is reading them.
        await conn.execute(
            "INSERT INTO cluster.raw_points (stream_id, ts, value)"
            " SELECT s, to_timestamp($1::bigint + $2::bigint * i), random() * 3000"
            "   FROM unnest($3::bigint[]) s, generate_series(0, $4) i",
            T0,
            STEP,
            ids,
            DAY // STEP - 1,
        )
        await conn.execute("ANALYZE cluster.raw_points")
    finally:
        await conn.close()
    return feed, min(ids), max(ids)


class Extras(msgspec.Struct, frozen=True):
    dashboard: list[int]
    """Processed streams with a week of 90 s points each, ending at T0."""
    big: int
    """A raw stream with more than 100,000 points at 5 s, ending at T0."""


async def seed_extras(url: str, feed: int) -> Extras:
    conn = await asyncpg.connect(url)
    try:
        dashboard = [
            await seeding.processed_stream(conn, feed, 100 + i, title=f"Dashboard {i}")
            for i in range(1, DASHBOARD_STREAMS + 1)
        ]
        # In bulk on purpose: streams of the benchmark's own, read, never processed.
        await conn.execute(
            "INSERT INTO cluster.processed_points (stream_id, ts, value)"
            " SELECT s, to_timestamp($1::bigint - 90 * i), round((random() * 50)::numeric, 3)"
            "   FROM unnest($2::bigint[]) s, generate_series(1, $3) i",
            T0,
            dashboard,
            WEEK_OF_BUCKETS,
        )
        big = await seeding.raw_stream(conn, feed, 1, 1, device=99)  # no seeded stream's device
        await conn.execute(
            "INSERT INTO cluster.raw_points (stream_id, ts, value)"
            " SELECT $1, to_timestamp($2::bigint - 5 * i), random() * 3000"
            "   FROM generate_series(1, $3) i",
            big,
            T0,
            BIG + 1000,
        )
        await conn.execute("ANALYZE cluster.raw_points")
        await conn.execute("ANALYZE cluster.processed_points")
    finally:
        await conn.close()
    return Extras(dashboard, big)


def wrk(
    url: str, script: str | None, seconds: int, connections: int = CONNECTIONS
) -> tuple[float, float, float]:
    """(requests/s, p50 ms, p99 ms) of one wrk run with ``connections`` connections."""
    command = ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency"]
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


async def asyncpg_rate(url: str, digest: bytes, feed: int, streams: range, seconds: float) -> float:
    """The endpoint's own prepared statement, as the API's pool runs it, straight from asyncpg."""
    workers = CONNECTIONS // 5
    pool = await asyncpg.create_pool(
        url,
        min_size=workers,
        max_size=workers,
        server_settings={"plan_cache_mode": "force_generic_plan"},
    )
    done = 0
    stop = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal done
        async with pool.acquire() as conn:
            statement = await conn.prepare(queries.STREAM_DATA)
            while time.perf_counter() < stop:
                t = T0 + random.randint(0, DAY)
                await statement.fetchrow(
                    digest, feed, random.choice(streams), EARLIEST, t, 100, False
                )
                done += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(workers)))
    elapsed = time.perf_counter() - started
    await pool.close()
    return done / elapsed


async def timed_requests(
    base: str, paths: list[str], rounds: int, *, body: bytes = b"[[", data: bytes | None = None
) -> list[float]:
    """Wall time (ms) of fetching ``paths`` in parallel, each round (POSTing ``data`` when
    given); every body is checked to start with ``body`` (points, unless told)."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    limits = httpx.Limits(max_connections=len(paths))
    times = []
    async with http_client(base_url=base, headers=headers, limits=limits, timeout=60) as http:
        for _ in range(rounds + 1):  # the first round opens the connections: not counted
            started = time.perf_counter()
            responses = await asyncio.gather(
                *(http.get(p) if data is None else http.post(p, content=data) for p in paths)
            )
            times.append((time.perf_counter() - started) * 1000)
            for r in responses:
                assert r.status_code == 200, r.text[:200]
                assert r.content.startswith(body), f"expected {body!r}: {r.text[:200]}"
    return times[1:]


async def timed_statements(
    url: str, digest: bytes, feed: int, requests: list[tuple[int, int]], rounds: int
) -> list[float]:
    """The same requests' statements from asyncpg, one connection each, in parallel (ms)."""
    # The JSON answer ($7: not CSV), as the endpoint asks for it.
    calls = [(digest, feed, stream, EARLIEST, T0, limit, False) for stream, limit in requests]
    return await timed_queries(url, queries.STREAM_DATA, calls, rounds)


async def timed_queries(
    url: str, query: str, calls: Sequence[tuple[object, ...]], rounds: int
) -> list[float]:
    """``query`` with each of ``calls``' arguments, one connection each, in parallel (ms), as
    the API's pool runs it (generic plans)."""
    conns = [
        await asyncpg.connect(url, server_settings={"plan_cache_mode": "force_generic_plan"})
        for _ in calls
    ]
    times = []
    try:
        for _ in range(rounds + 1):
            started = time.perf_counter()
            await asyncio.gather(
                *(conn.fetchrow(query, *args) for conn, args in zip(conns, calls, strict=True))
            )
            times.append((time.perf_counter() - started) * 1000)
    finally:
        for conn in conns:
            await conn.close()
    return times[1:]


def start_servers(
    url: str, port: int, http_server: str, processes: int = 1
) -> list[subprocess.Popen[bytes]]:
    """``processes`` bench servers on ``port`` (SO_REUSEPORT when more than one), each with a
    pool of 10, as ``serve api`` started that many times runs (docs/scaling.md)."""
    env = {
        **os.environ,
        "EP_HTTP_SERVER": http_server,
        "EP_DATABASE_URL": url,
        "EP_HTTP_API_PORT": str(port),
        "EP_HTTP_REUSE_PORT": "true" if processes > 1 else "false",
        "EP_DATABASE_POOL_MAX": "10",
        "EP_LOG_LEVEL": "warning",
    }
    servers = [
        subprocess.Popen([sys.executable, "-m", "benchmarks.data_api_server"], env=env)
        for _ in range(processes)
    ]
    # A server imports the whole platform before it answers: 11 s at a load of 7, more than
    # 20 s at 16 to 18 on the shared 2 cores (2026-11-29).
    deadline = time.monotonic() + 60
    answered: set[int] = set()  # the pids that answered, each on a new connection
    while len(answered) < processes:
        try:
            answered.add(httpx.get(f"http://127.0.0.1:{port}/bench/pid", timeout=1).json())
        except httpx.TransportError:
            time.sleep(0.1)
        if time.monotonic() > deadline or any(s.poll() is not None for s in servers):
            stop_servers(servers)
            raise RuntimeError("the bench servers did not start")
    return servers


@contextmanager
def served(url: str) -> Iterator[str]:
    """One bench server on a free port for the block; its base URL."""
    port = free_port()
    servers = start_servers(url, port, HttpSettings().server)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_servers(servers)


def stop_servers(servers: list[subprocess.Popen[bytes]]) -> None:
    for server in servers:
        server.terminate()
    for server in servers:
        server.wait(10)


class Load(msgspec.Struct):
    """One server setup's figures under wrk, a list of runs each."""

    rate: list[float] = msgspec.field(default_factory=list)
    p50: list[float] = msgspec.field(default_factory=list)
    p99: list[float] = msgspec.field(default_factory=list)
    idle: list[float] = msgspec.field(default_factory=list)
    idle_p50: list[float] = msgspec.field(default_factory=list)
    idle_p99: list[float] = msgspec.field(default_factory=list)
    few_p50: list[float] = msgspec.field(default_factory=list)
    few_p99: list[float] = msgspec.field(default_factory=list)
    idle_few_p99: list[float] = msgspec.field(default_factory=list)
    few_gc: list[float] = msgspec.field(default_factory=list)
    """The server's longest garbage-collection pause during each 10-connection run (ms)."""
    few_server_p99: list[float] = msgspec.field(default_factory=list)
    """The same runs' p99 by the server's own clock (ms)."""

    def measure(self, base: str, script: str, seconds: int, *, few: bool) -> None:
        """One run of the endpoint and the idle handler at 50 connections (and at 10)."""
        rate, median, tail = wrk(base + "/", script, seconds)
        self.rate.append(rate)
        self.p50.append(median)
        self.p99.append(tail)
        rate, median, tail = wrk(base + "/bench/idle", None, seconds)
        self.idle.append(rate)
        self.idle_p50.append(median)
        self.idle_p99.append(tail)
        if few:
            httpx.get(base + "/bench/gc")  # pauses and times from here on
            httpx.get(base + "/bench/latency")
            _, median, tail = wrk(base + "/", script, seconds, FEW_CONNECTIONS)
            self.few_gc.append(httpx.get(base + "/bench/gc").json()["longest_ms"])
            self.few_server_p99.append(httpx.get(base + "/bench/latency").json()["p99_ms"])
            self.few_p50.append(median)
            self.few_p99.append(tail)
            self.idle_few_p99.append(wrk(base + "/bench/idle", None, seconds, FEW_CONNECTIONS)[2])


def combined(idle: list[float], direct: list[float]) -> list[float]:
    """Per run, what the two cores can do for one request: the idle handler's cost (the HTTP
    server's) and the statement's (asyncpg and PostgreSQL's) one after the other."""
    return [1 / (1 / i + 1 / d) for i, d in zip(idle, direct, strict=True)]


def sizes(full: bool) -> tuple[int, int, int]:
    """(streams, seconds of a counted wrk run, seconds of a warm-up). A quick run of 3 s still
    times thousands of requests: 2,700 at 50 connections here at a load of 4, 27 past the p99."""
    return (1000, 10, 2) if full else (50, 3, 1)


def flood_channels(full: bool) -> int:
    """The flooder's channels: the most an overview reads (EP_API_OVERVIEW_MAX_CHANNELS), or a
    tenth of it quick."""
    return 1000 if full else 100


def main(full: bool, runs: int, server_name: str) -> None:
    streams, seconds, warm = sizes(full)
    digest = token_digest(TOKEN)
    one, two, direct = Load(), Load(), []
    flooded: list[float] = []
    with bench_database() as settings:
        url = settings.database.url
        feed, first, last = asyncio.run(seed(url, streams))
        extras = asyncio.run(seed_extras(url, feed))
        flood_feed = asyncio.run(seed_flooder(url, flood_channels(full), T0))
        flood_day = time.strftime("%Y-%m-%d", time.gmtime(T0))
        script = WRK_SCRIPT.format(first=first, last=last, t0=T0, span=DAY, feed=feed, token=TOKEN)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        servers = start_servers(url, port, server_name, 2)
        try:
            wrk(base + "/", script, warm)  # warm-up, not counted
            for _ in range(runs):
                two.measure(base, script, seconds, few=False)
        finally:
            stop_servers(servers)
        servers = start_servers(url, port, server_name)
        try:
            sample = httpx.get(
                f"{base}/feeds/{feed}/streams/{first}/data?time_to={T0 + DAY}",
                headers={"Authorization": f"Bearer {TOKEN}"},
            ).json()
            assert len(sample) == 100, "the endpoint must return 100 points"
            wrk(base + "/bench/idle", None, warm)  # warm-up, not counted
            wrk(base + "/", script, warm)
            for _ in range(runs):
                one.measure(base, script, seconds, few=True)
                direct.append(
                    asyncio.run(asyncpg_rate(url, digest, feed, range(first, last + 1), seconds))
                )
                with Flood(base, flood_feed, flood_day) as flood:
                    # The flood's steady state, after a warm-up as the plain runs had: the
                    # flood starts while no one else is served, unrationed, and its reads in
                    # flight when others arrive finish so (docs/api.md#overview).
                    wrk(base + "/", script, warm, FEW_CONNECTIONS)
                    flooded.append(wrk(base + "/", script, seconds, FEW_CONNECTIONS)[2])
                print(f"overview flood's answers by status: {dict(flood.answers)}")
            week = f"time_from={T0 - 7 * 86_400}&time_to={T0}&limit={WEEK_OF_BUCKETS}"
            dashboard_paths = [f"/feeds/{feed}/streams/{s}/data?{week}" for s in extras.dashboard]
            rounds = 5 * runs
            dashboard = asyncio.run(timed_requests(base, dashboard_paths, rounds))
            dashboard_db = asyncio.run(
                timed_statements(
                    url, digest, feed, [(s, WEEK_OF_BUCKETS) for s in extras.dashboard], rounds
                )
            )
            big_path = f"/feeds/{feed}/streams/{extras.big}/data?limit={BIG}"
            big_body = httpx.get(
                base + big_path, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
            ).json()
            assert len(big_body) == BIG, "the endpoint must return 100,000 points"
            big = asyncio.run(timed_requests(base, [big_path], rounds))
            big_db = asyncio.run(timed_statements(url, digest, feed, [(extras.big, BIG)], rounds))
        finally:
            stop_servers(servers)
    print(
        f"data API on {server_name}: {streams} streams x 1 day of 5 s points, wrk at {CONNECTIONS} "
        f"and {FEW_CONNECTIONS} connections, {runs} runs of {seconds} s after a warm-up of"
        f" {warm} s, with 1"
        f" process and with 2 (SO_REUSEPORT, pool of 10 each); dashboard and 100,000-point"
        f" request: {rounds} rounds after one"
    )
    limit = combined(one.idle, direct)
    ratio = statistics.median(one.rate) / statistics.median(limit)
    few = statistics.median(one.few_p99)
    tail, median = statistics.median(one.p99), statistics.median(one.p50)
    report(
        [
            figure(
                "data endpoint req/s vs combined limit",
                "req/s",
                one.rate,
                "1/(1/idle + 1/asyncpg) req/s",
                limit,
                goal="ratio >= 0.8",
                goal_met=ratio >= 0.8,
            ),
            figure(
                "data endpoint req/s, 2 processes", "req/s", two.rate, "1 process req/s", one.rate
            ),
            figure("data endpoint req/s (100 points)", "req/s", one.rate, "idle handler", one.idle),
            figure(
                "data endpoint req/s vs asyncpg", "req/s", one.rate, "asyncpg queries/s", direct
            ),
            figure("idle handler req/s, 2 processes", "req/s", two.idle, "1 process", one.idle),
            figure(
                f"data endpoint p99 latency, {CONNECTIONS} connections",
                "ms",
                one.p99,
                "idle handler p99 ms",
                one.idle_p99,
                goal="<= 60 ms and <= 5 x p50",
                goal_met=tail <= 60 and tail <= 5 * median,
            ),
            figure(
                f"data endpoint p50 latency, {CONNECTIONS} connections",
                "ms",
                one.p50,
                "idle handler p50 ms",
                one.idle_p50,
            ),
            figure(
                f"data endpoint p99 latency, {CONNECTIONS} connections, 2 processes",
                "ms",
                two.p99,
                "1 process p99 ms",
                one.p99,
            ),
            figure(
                f"data endpoint p99 latency, {FEW_CONNECTIONS} connections",
                "ms",
                one.few_p99,
                "idle handler p99 ms",
                one.idle_few_p99,
                goal="<= 20 ms",
                goal_met=few <= 20,
            ),
            figure(
                "data endpoint p99 while one user floods the overview",
                "ms",
                flooded,
                f"data endpoint p99 @{FEW_CONNECTIONS} ms",
                one.few_p99,
                goal="ratio <= 2",
                goal_met=statistics.median(flooded) <= 2 * few,
            ),
            figure(
                f"data endpoint p99 latency, {FEW_CONNECTIONS} connections, server's own time",
                "ms",
                one.few_server_p99,
                "as wrk reports it ms",
                one.few_p99,
            ),
            figure(
                f"API process's longest GC pause, {FEW_CONNECTIONS} connections",
                "ms",
                one.few_gc,
                f"data endpoint p50 latency, {FEW_CONNECTIONS} connections ms",
                one.few_p50,
            ),
            figure(
                "dashboard: 10 x 1 week of 90 s points",
                "ms",
                dashboard,
                "same statements, asyncpg ms",
                dashboard_db,
            ),
            figure("one request of 100,000 points", "ms", big, "its statement, asyncpg ms", big_db),
        ]
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--full", action="store_true", help="1,000 streams, 10 s runs")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--server",
        choices=["uvicorn", "granian"],
        default=HttpSettings().server,
        help="HTTP server (EP_HTTP_SERVER); default: the platform's default",
    )
    args = parser.parse_args()
    main(args.full, args.runs, args.server)
