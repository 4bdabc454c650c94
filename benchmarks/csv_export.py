"""The feed export (`GET /feeds/{id}/export`): one raw stream's year of 5 s points (6.3 M) as
CSV in one request over the real HTTP server, beside `COPY (SELECT ts, value FROM
cluster.stream_points(...)) TO STDOUT` of the same points in the same run, and the API process's
peak RSS growth while it answers.

The year is laid out as production keeps it: its last 7 days in the row tier, the rest in the
compact tier. Compacting 358 days of one stream takes about two minutes here (6.3 M points took
121 s at 52k points/s), more than a quick run may spend; so the engine's own compaction
encodes the year's first 7 days, and those compact rows are copied, shifted by whole weeks,
over the days between (`--compact-all` compacts every day instead).

    python -m benchmarks.csv_export [--full] [--runs N] [--compact-all]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg

from benchmarks.compact_tier import household
from benchmarks.data_api import TOKEN, start_servers, stop_servers
from benchmarks.support import bench_database, figure, report
from energy_platform import seeding
from energy_platform.core.http.clients import http_client
from energy_platform.core.settings import CompactionSettings, HttpSettings
from energy_platform.engine.compaction import compact
from tests.support.services import free_port

DAYS = 365
STEP = 5
POINTS = DAYS * 86_400 // STEP  # 6,307,200
ROW_TIER_DAYS = 7  # the compaction age: the newest week stays in rows
GOAL_RATIO = 0.5
GOAL_MB = 50.0
COPY_POINTS = "SELECT ts, value FROM cluster.stream_points($1, $2, $3)"
# The stream's points by the tiers' counts: reading them all (7.1 s here at a load of 3.5) is
# the export's work, and the export checks its lines.
POINTS_HELD = """
SELECT (SELECT coalesce(sum(points), 0) FROM cluster.point_days WHERE stream_id = $1)
       + (SELECT count(*) FROM cluster.raw_points WHERE stream_id = $1)"""
# The compacted first week, copied week by week over the days up to the row tier's.
REPEAT_WEEK = """
INSERT INTO cluster.point_days (stream_id, day, first_ts, last_ts, points, step_us, offsets_us,
                                vals, codec, scale, base, deltas, wide_at, wide)
SELECT d.stream_id, d.day + 7 * k, d.first_ts + make_interval(hours => 168 * k),
       d.last_ts + make_interval(hours => 168 * k), d.points, d.step_us, d.offsets_us, d.vals,
       d.codec, d.scale, d.base, d.deltas, d.wide_at, d.wide
  FROM cluster.point_days d
 CROSS JOIN generate_series(1, 60) k
 WHERE d.stream_id = $1 AND d.day + 7 * k < $2"""


async def seed(url: str, start: datetime, compact_all: bool) -> tuple[int, int, float]:
    """A Prague feed with one raw power stream holding a year of 5 s points from ``start``;
    (feed, stream, seconds the seeding took)."""
    began = time.perf_counter()
    rows_from = start + timedelta(days=DAYS - ROW_TIER_DAYS)
    conn = await asyncpg.connect(url)
    try:
        owner = await seeding.add_user(conn, "bench", token=TOKEN)
        feed = await seeding.add_feed(conn, owner.id, "BE00000000000009")
        stream = await seeding.raw_stream(conn, feed, 1, 1, device=1)
        # A household's base load, fridge and appliances at a meter's 0.1 W (benchmarks/
        # compact_tier.py): the compact tier's decimal codec, as real meters give it.
        weeks = range(0, DAYS, 7) if compact_all else (0, DAYS - ROW_TIER_DAYS)
        for n, first in enumerate(weeks):
            days = min(7, DAYS - first)
            points = household(n, start + timedelta(days=first), days, digits=1)
            await conn.copy_records_to_table(
                "raw_points",
                schema_name="cluster",
                records=[(stream, t, v) for t, v in points],
                columns=["stream_id", "ts", "value"],
            )
    finally:
        await conn.close()
    pool = await asyncpg.create_pool(url, min_size=1, max_size=2)
    try:
        result = await compact(pool, CompactionSettings(after_days=ROW_TIER_DAYS))
        if not compact_all:
            assert result.points == 7 * 86_400 // STEP, result
            await pool.execute(REPEAT_WEEK, stream, rows_from.date())
        await pool.execute("VACUUM ANALYZE cluster.point_days")
        await pool.execute("VACUUM ANALYZE cluster.raw_points")
        counted = await pool.fetchval(POINTS_HELD, stream)
        assert counted == POINTS, f"a year of 5 s points is {POINTS:,}, got {counted:,}"
    finally:
        await pool.close()
    return feed, stream, time.perf_counter() - began


def rss_kb(pid: int, field: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} for process {pid}")


class RssWatch:
    """The highest resident set size of process ``pid`` while it runs: the kernel's own peak
    (VmHWM, reset first through /proc/PID/clear_refs) and, besides, samples every 20 ms."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.before = rss_kb(pid)
        self.sampled = self.before
        self.reset = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> RssWatch:
        try:
            Path(f"/proc/{self.pid}/clear_refs").write_text("5")
            self.reset = True
        except OSError:
            pass  # not allowed here: the samples alone
        self.before = rss_kb(self.pid)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            self.sampled = max(self.sampled, rss_kb(self.pid))

    @property
    def growth_mb(self) -> float:
        peak = max(self.sampled, rss_kb(self.pid, "VmHWM") if self.reset else 0)
        return (peak - self.before) / 1024


async def export(base: str, path: str) -> tuple[float, int, int]:
    """(seconds, bytes, lines) of one export, read as a client reads a download."""
    lines = size = 0
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with http_client(base_url=base, headers=headers, timeout=600) as http:
        started = time.perf_counter()
        async with http.stream("GET", path) as answer:
            assert answer.status_code == 200, await answer.aread()
            async for chunk in answer.aiter_raw():
                size += len(chunk)
                lines += chunk.count(b"\n")
        return time.perf_counter() - started, size, lines


async def copy_out(url: str, stream: int, start: datetime) -> tuple[float, int]:
    """(seconds, bytes) of COPY of the same points to the client, as text."""
    conn = await asyncpg.connect(url)
    size = 0

    async def sink(data: bytes) -> None:
        nonlocal size
        size += len(data)

    try:
        started = time.perf_counter()
        await conn.copy_from_query(
            COPY_POINTS, stream, start, start + timedelta(days=DAYS), output=sink, timeout=600
        )
        return time.perf_counter() - started, size
    finally:
        await conn.close()


def main(runs: int, compact_all: bool) -> None:
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    start = today - timedelta(days=DAYS)
    rates: list[float] = []
    copies: list[float] = []
    growth: list[float] = []
    with bench_database() as settings:
        url = settings.database.url
        feed, stream, seeded = asyncio.run(seed(url, start, compact_all))
        port = free_port()
        servers = start_servers(url, port, HttpSettings().server)
        try:
            base = f"http://127.0.0.1:{port}"
            path = f"/feeds/{feed}/export?stream={stream}"
            day = int((start + timedelta(days=1)).timestamp())
            asyncio.run(export(base, f"{path}&time_from={day}&time_to={day + 86_400}"))  # warm
            pid = servers[0].pid
            for _ in range(runs):
                with RssWatch(pid) as watch:
                    seconds, size, lines = asyncio.run(export(base, path))
                assert lines == POINTS + 1, f"header and {POINTS:,} lines, got {lines:,}"
                rates.append(POINTS / seconds)
                growth.append(watch.growth_mb)
                copy_seconds, copy_size = asyncio.run(copy_out(url, stream, start))
                copies.append(POINTS / copy_seconds)
        finally:
            stop_servers(servers)
    layout = "every day compacted" if compact_all else "copies of the first week compacted"
    print(
        f"csv export: one raw stream, {POINTS:,} points of 5 s ({DAYS} days: the last"
        f" {ROW_TIER_DAYS} in rows, the rest compact, {layout}), seeded in {seeded:.0f} s;"
        f" {runs} runs after a warm-up, each the export over HTTP ({size / 1e6:,.0f} MB of CSV)"
        f" then COPY of the same points ({copy_size / 1e6:,.0f} MB of text); the API"
        " process's RSS sampled every 20 ms and its VmHWM"
    )
    ratio = statistics.median(rates) / statistics.median(copies)
    report(
        [
            figure(
                "csv export: one stream, a year of 5 s points",
                "points/s",
                rates,
                "COPY (...) TO STDOUT points/s",
                copies,
                goal=f"ratio >= {GOAL_RATIO}",
                goal_met=ratio >= GOAL_RATIO,
            ),
            figure(
                "csv export: API peak RSS growth",
                "MB",
                growth,
                "goal MB",
                [GOAL_MB],
                better="low",
                goal=f"<= {GOAL_MB:.0f} MB",
                goal_met=statistics.median(growth) <= GOAL_MB,
            ),
        ]
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--full", action="store_true", help="the same size (already a year)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--compact-all", action="store_true", help="compact all 358 days (about two minutes)"
    )
    args = parser.parse_args()
    main(args.runs, args.compact_all)
