"""A household's year of points, seeded once per `make bench` for the benchmarks that read it.

The household is ``seeding.household``'s, the tests' one factory, at the size of a year: its
feed (Europe/Prague) has ten processed streams, each with a year of 90 s points: channel 1's
consumption total and its cost stream, its export and their credit stream, a heat pump on
channel 2 configured as a sub-meter with its cost, and four temperature sensors. Power is on a
dynamic tariff (a year of quarter-hour area prices plus bands by kind of day, 21 % VAT on
both, Czech public holidays as weekend days) with a monthly standing charge, export on a fixed
price, set as ``admin tariffs set`` sets them (``seeding.household_tariffs``). Beside it are a
few hundred other households' feeds with the same meters, sub-meter and tariffs, each meter
having sent one reading. How long the household takes to seed is not what the benchmarks
reading it measure.

Its year is seeded with the factory's ``fast`` option: the processed points written at once and
priced by billing's pricing, rather than a year of readings through the store and the engine's
drain. Measured 2026-11-29 on 2 cores at a load of 5 to 7 (other sessions' tests): through the
drain, a month of the ten streams took 44 s (the drain 35 s of it), and the year did not end in
25 minutes (2.45 M readings stored in about 2.5 min, then 3.04 M of the 3.5 M processed points
made); with ``fast``, the household with its 200 neighbours took 66 s and 109 s in two runs
(the year's points 13 s, their money 33 s, the neighbours' tariffs 8 to 17 s), where the
hand-written seeding this replaced (processed points and their money by SQL of its own, bands
picked by hand, neighbours' streams without a reading) took 39.5 s and 41.8 s beside them.
The engine builds every rollup from nothing once the points are in and analysed (on tables
never analysed its plans took 90.1 s for the ten streams here, against 6.0 s analysed,
2026-11-27 at a load of about 3).

The year view (benchmarks/year_view.py) and the bill (benchmarks/bill.py) read the same rows:
within one `make bench` the first seeds them and the second starts from a copy
(support.shared_database).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import asyncpg
import msgspec
import psycopg

from benchmarks.data_api import TOKEN
from benchmarks.support import roll_up_queued, shared_database
from energy_platform import seeding
from energy_platform.core.settings import Settings

# A year of local days in Europe/Prague: 2025-01-01T00:00+01:00 to 2026-01-01T00:00+01:00.
YEAR_FROM = 1_735_686_000
YEAR_TO = 1_767_222_000
BUCKETS = (YEAR_TO - YEAR_FROM) // 90  # 350,400 points per stream
AREA = "BENCH-1"
POWER = seeding.household_tariffs(AREA)["power"]
STANDING = POWER.standing  # per local month before VAT, power
VAT = POWER.vat
SENSORS = 4  # temperature streams: ten streams in the year view with the bill's six
SIZE = seeding.Size(days=365, sensors=SENSORS)
SLOT = 900  # the day-ahead market's quarter hours
# The bill's streams as the engine makes them for a meter with import and export on channel 1
# and a clamp on channel 2: (channel, title, quantity, unit).
BILL_STREAMS = [
    (1, "Electricity, channel 1", "consumption", "Wh"),
    (1, "Electricity cost, channel 1", "cost", "EUR"),
    (1, "Electricity export, channel 1", "export", "Wh"),
    (1, "Electricity export credit, channel 1", "credit", "EUR"),
    (2, "Electricity, channel 2", "consumption", "Wh"),
    (2, "Electricity cost, channel 2", "cost", "EUR"),
]
# The year view's streams: the bill's six first.
TITLES = seeding.household_titles(SIZE)


def year_paths(feed: int, streams: list[int]) -> list[str]:
    """The year view's requests: each stream's 365 local days, ``resolution=day``."""
    year = f"resolution=day&time_from={YEAR_FROM}&time_to={YEAR_TO - 1}&limit=366"
    return [f"/feeds/{feed}/streams/{s}/data?{year}" for s in streams]


async def build_rollups(url: str) -> float:
    """Seconds the engine takes to roll the whole year of every stream up."""
    conn = await asyncpg.connect(url)
    try:
        started = time.perf_counter()
        await roll_up_queued(conn, 1)
        return time.perf_counter() - started
    finally:
        await conn.close()


class Seeded(msgspec.Struct, frozen=True):
    """The household's feed, its consumption and cost streams and its year view's streams."""

    feed: int
    consumption: int
    cost: int
    streams: list[int]
    seeded_s: float = 0.0
    """Seconds the seeding took (points and rollups queued)."""
    rollups_s: float = 0.0
    """Seconds the engine took to build every rollup from nothing."""

    def rollups(self) -> str:
        """How the rollups were built, for the benchmarks' descriptive lines."""
        rate = len(self.streams) * BUCKETS / self.rollups_s
        return (
            f"rollups built by the engine from nothing in {self.rollups_s:.1f} s"
            f" ({rate:,.0f} points/s)"
        )


async def seed(url: str, neighbours: int, *, fast: bool = True) -> Seeded:
    """The household with ``neighbours`` other feeds, its rollups queued (``fast``: the
    factory's fast option, else through the store and the engine's drain)."""
    conn = await asyncpg.connect(url)
    try:
        owner = await seeding.add_user(conn, "bench", token=TOKEN)
        home = await seeding.household(
            conn,
            YEAR_FROM,
            msgspec.structs.replace(SIZE, neighbours=neighbours),
            sn="BE00000000000003",
            owner=owner,
            area=AREA,
            rollups=False,
            fast=fast,
        )
    finally:
        await conn.close()
    streams = [home.streams[title] for title in TITLES]
    return Seeded(home.feed, streams[0], streams[1], streams)


# For the what-if benchmark's thousand feeds (benchmarks/what_if.py), which are not households:
# a year of the area's prices, and bill streams whose points and rollups it writes itself.


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
    """The bill's processed streams of ``feed`` (BILL_STREAMS), without readings."""
    return [
        await seeding.processed_stream(
            conn, feed, channel, title=title, quantity=quantity, unit=unit
        )
        for channel, title, quantity, unit in BILL_STREAMS
    ]


@contextmanager
def household(neighbours: int) -> Iterator[tuple[Settings, Seeded]]:
    """A database of its own with the household and ``neighbours`` other feeds, rollups built
    and analysed; seeded once per `make bench` run."""
    kind = f"household_{neighbours}"
    with shared_database(kind, lambda url: _seed_all(url, neighbours)) as (settings, info):
        yield settings, msgspec.convert(info, Seeded)


def _seed_all(url: str, neighbours: int) -> Seeded:
    started = time.perf_counter()
    seeded = asyncio.run(seed(url, neighbours))
    seeded_s = time.perf_counter() - started
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE")
    rollups_s = asyncio.run(build_rollups(url))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    return msgspec.structs.replace(seeded, seeded_s=seeded_s, rollups_s=rollups_s)
