"""A household's year of points, seeded once per `make bench` for the benchmarks that read it.

The household's feed (Europe/Prague) has ten processed streams, each with a year of 90 s points:
channel 1's consumption total and its cost stream, its export and their credit stream, a heat
pump on channel 2 configured as a sub-meter with its cost, and four temperature sensors. Power is
on a dynamic tariff as contracts write it (a year of quarter-hour area prices plus bands by
kind of day, 21 % VAT on both, Czech public holidays as weekend days) with a monthly standing
charge, export on a fixed price; the cost and credit points are those prices applied to
every bucket. Beside it are a few hundred other households' feeds with the same bill streams and
tariffs but no points. The engine builds every rollup from nothing once the points are in and
analysed (on tables never analysed its plans took 90.1 s for the ten streams here, against
6.0 s analysed, 2026-11-27 at a load of about 3). How long the household takes to seed is not
what the benchmarks reading it measure.

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
from datetime import time as clock

import asyncpg
import msgspec
import psycopg

from benchmarks.data_api import TOKEN
from benchmarks.support import roll_up_queued, shared_database
from energy_platform import seeding
from energy_platform.billing.holidays import Holidays, public_holidays
from energy_platform.core.settings import Settings

# A year of local days in Europe/Prague: 2025-01-01T00:00+01:00 to 2026-01-01T00:00+01:00.
YEAR_FROM = 1_735_686_000
YEAR_TO = 1_767_222_000
BUCKETS = (YEAR_TO - YEAR_FROM) // 90  # 350,400 points per stream
AREA = "BENCH-1"
SLOT = 900  # the day-ahead market's quarter hours
STANDING = 13.5  # per local month before VAT, power
EVENING = clock(17)
LOW, HIGH = 0.12, 0.21  # per kWh before VAT, plus the area's price: high on weekday evenings
BANDS = (
    [clock(0), EVENING, clock(0)],
    [LOW, HIGH, LOW],
    ["weekday", "weekday", "weekend"],
)
FACTOR = 1.0
VAT = 21.0
HOLIDAYS = "CZ"
EXPORT_PRICE = 0.08
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
SELECT cluster.set_tariff($1, 'power', NULL, $2::time[], $3::float8[], $4, $5, $6, $7::text[],
                          $8, NULL, NULL, 'month', NULL, $9, $10::date[], $11::text[],
                          $12::int4range)"""
EXPORT_TARIFF = """
SELECT cluster.set_tariff($1, 'export', NULL, ARRAY['00:00'::time], ARRAY[$2::float8])"""
SUBMETER = "SELECT cluster.set_stream_config($1, NULL, 'Heat pump', 'power', 'Wh', true)"
# Each consumption bucket's cost as the power tariff prices it: the band of its local start time
# on its kind of local day (a weekday's evening is high; weekends and $9's holidays are low all
# day) plus the factor times its quarter hour's price ($4: the year's prices from YEAR_FROM on),
# with VAT, per kWh of its Wh.
COST_POINTS = """
INSERT INTO cluster.processed_points (stream_id, ts, value)
SELECT $1, p.ts,
       p.value / 1000 * cluster.tariff_price(
           $8::float8, ($4::float8[])[(extract(epoch FROM p.ts)::bigint - $3) / 900 + 1],
           CASE WHEN l.local::time >= $5::time AND extract(isodow FROM l.local) < 6
                     AND NOT l.local::date = ANY ($9::date[])
                THEN $7::float8 ELSE $6::float8 END,
           $10::float8, NULL, NULL)
  FROM cluster.processed_points p
 CROSS JOIN LATERAL (SELECT p.ts AT TIME ZONE 'Europe/Prague' AS local) l
 WHERE p.stream_id = $2"""
CREDIT_POINTS = """
INSERT INTO cluster.processed_points (stream_id, ts, value)
SELECT $1, p.ts, p.value / 1000 * $3::float8 FROM cluster.processed_points p
 WHERE p.stream_id = $2"""


def year_paths(feed: int, streams: list[int]) -> list[str]:
    """The year view's requests: each stream's 365 local days, ``resolution=day``."""
    year = f"resolution=day&time_from={YEAR_FROM}&time_to={YEAR_TO - 1}&limit=366"
    return [f"/feeds/{feed}/streams/{s}/data?{year}" for s in streams]


async def year_of_points(conn: asyncpg.Connection, streams: list[int]) -> None:
    """A year of 90 s points (0 to 50 Wh each) on each of ``streams``, their whole span queued
    for the engine's rollups (:func:`build_rollups` builds them)."""
    await conn.execute(
        "INSERT INTO cluster.processed_points (stream_id, ts, value)"
        " SELECT s, to_timestamp($1::bigint + 90 * i), round((random() * 50)::numeric, 3)"
        "   FROM unnest($2::bigint[]) s, generate_series(0, $3) i",
        YEAR_FROM,
        streams,
        BUCKETS - 1,
    )
    await queue_rollups(conn, streams)


async def queue_rollups(conn: asyncpg.Connection, streams: list[int]) -> None:
    """All of ``streams``' hours and days queued for the engine, as new points queue theirs."""
    await conn.execute(
        "INSERT INTO cluster.rollup_work (stream_id, span)"
        " SELECT s, tstzrange(NULL, NULL) FROM unnest($1::bigint[]) s",
        streams,
    )


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


def holidays() -> Holidays:
    """The public holidays the power tariff counts as weekend days."""
    return public_holidays(HOLIDAYS, None, datetime.fromtimestamp(YEAR_FROM, UTC).date())


async def tariffs(conn: asyncpg.Connection, feed: int, days: Holidays) -> None:
    starts, band_prices, kinds = BANDS
    years = asyncpg.Range(days.first, days.last + 1)
    await conn.execute(
        POWER_TARIFF, feed, starts, band_prices, AREA, FACTOR, STANDING, kinds, VAT,
        HOLIDAYS, days.days, days.names, years,
    )  # fmt: skip
    await conn.execute(EXPORT_TARIFF, feed, EXPORT_PRICE)


async def neighbour_feeds(
    conn: asyncpg.Connection, owner: int, numbers: range, days: Holidays
) -> None:
    """Other households' feeds, numbered ``numbers``: bill streams and tariffs, no points."""
    for n in numbers:
        feed = await seeding.add_feed(conn, owner, f"BF{n:014X}")
        await household_streams(conn, feed)
        await tariffs(conn, feed, days)


async def cost_points(
    conn: asyncpg.Connection, source: int, money: int, values: list[float], days: Holidays
) -> None:
    """``source``'s consumption priced by the power tariff, as stream ``money``'s points."""
    await conn.execute(
        COST_POINTS, money, source, YEAR_FROM, values, EVENING, LOW, HIGH, FACTOR, days.days, VAT
    )


async def seed(url: str, neighbours: int) -> Seeded:
    """The other households' feeds, then the household's with its tariffs, its sub-meter and a
    year of points on its ten streams."""
    # Two connections, one a core: each keeps the database busy while the other waits.
    conns = [await asyncpg.connect(url) for _ in range(2)]
    conn = conns[0]
    try:
        slots, values = prices()
        await conn.execute(SET_PRICES, AREA, slots, values)
        days = holidays()
        others = await seeding.add_user(conn, "neighbours")
        await asyncio.gather(
            *(
                neighbour_feeds(c, others.id, range(k, neighbours, len(conns)), days)
                for k, c in enumerate(conns)
            )
        )
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
        await tariffs(conn, feed, days)
        measured = [used, fed_in, heat_pump, *sensors]
        await asyncio.gather(
            *(year_of_points(c, measured[k :: len(conns)]) for k, c in enumerate(conns))
        )
        await asyncio.gather(
            cost_points(conns[0], used, cost, values, days),
            cost_points(conns[1], heat_pump, heat_pump_cost, values, days),
        )
        await conn.execute(CREDIT_POINTS, credit, fed_in, EXPORT_PRICE)
        await queue_rollups(conn, [cost, credit, heat_pump_cost])
        # Nothing else queued: the tariffs and the sub-meter found no raw data to recompute.
        assert await conn.fetchval("SELECT count(*) FROM cluster.engine_work") == 0
    finally:
        for c in conns:
            await c.close()
    return Seeded(feed, used, cost, [*streams, *sensors])


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
