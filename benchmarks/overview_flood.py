"""One user flooding the overview (issue 59), for the data API benchmark's row `data endpoint
p99 while one user floods the overview`: a user of their own, with a feed of many channels
whose rollups are built, loops year overviews compared with last year from 12 connections
while wrk measures the data endpoint as another user. The overview holds at most its share of
the pool (docs/api.md#shares-of-costly-reads); the flooder's 429s are counted.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from types import TracebackType

import asyncpg
import httpx

from benchmarks.support import roll_up_queued
from energy_platform import seeding
from energy_platform.core.http.clients import http_client

TOKEN = "bench-flooder-token"
CONNECTIONS = 12
WEEK_OF_BUCKETS = 7 * 86_400 // 90


async def seed_flooder(url: str, channels: int, until: int) -> int:
    """The flooder's feed: ``channels`` channels, each a processed stream with the week of 90 s
    points before ``until`` (Unix seconds), rolled up as the engine rolls them up."""
    conn = await asyncpg.connect(url)
    try:
        flooder = await seeding.add_user(conn, "bench-flooder", token=TOKEN)
        feed = await seeding.add_feed(conn, flooder.id, "BE00000000000F10")
        streams = [
            await seeding.processed_stream(conn, feed, c, title=f"Flood {c}")
            for c in range(1, channels + 1)
        ]
        # In bulk on purpose: a flooder's streams of the benchmark's own, read, never processed.
        await conn.execute(
            "INSERT INTO cluster.processed_points (stream_id, ts, value)"
            " SELECT s, to_timestamp($1::bigint - 90 * i), round((random() * 50)::numeric, 3)"
            "   FROM unnest($2::bigint[]) s, generate_series(1, $3) i",
            until,
            streams,
            WEEK_OF_BUCKETS,
        )
        await conn.execute(
            "INSERT INTO cluster.rollup_work (stream_id, span)"
            " SELECT s, tstzrange(NULL, NULL) FROM unnest($1::bigint[]) s",
            streams,
        )
        await roll_up_queued(conn, 50)
    finally:
        await conn.close()
    return feed


class Flood:
    """While inside: ``CONNECTIONS`` loops of the flooder's year overview of ``feed`` (the year
    of ``day``, YYYY-MM-DD), in a thread of their own; ``answers`` counts their statuses."""

    def __init__(self, base: str, feed: int, day: str) -> None:
        self._path = f"/feeds/{feed}/overview?period=year&date={day}&compare=last_year"
        self._base = base
        self.answers: Counter[int] = Counter()
        self._stop = threading.Event()
        self._started = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    def __enter__(self) -> Flood:
        self._thread.start()
        self._started.wait(60)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(120)

    async def _run(self) -> None:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        limits = httpx.Limits(max_connections=CONNECTIONS)
        async with http_client(
            base_url=self._base, headers=headers, limits=limits, timeout=120
        ) as http:

            async def loop() -> None:
                while not self._stop.is_set():
                    answer = await http.get(self._path)
                    self.answers[answer.status_code] += 1
                    self._started.set()  # the flood is on once one answered

            await asyncio.gather(*(loop() for _ in range(CONNECTIONS)))
