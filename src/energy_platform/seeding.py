"""The one factory of the rows tests, benchmarks and scripts start from, and of the scratch
databases they write them into.

Users, feeds and their configurations are made by the admin commands' own statements
(``users/admin.py``, ``api/feeds_admin.py``), raw and system streams and their points by ingest's
(``devices/ingest/store.py``), so that a fixture's rows are the rows production writes, and a
change to those statements reaches every fixture at once. Processed streams are the engine's to
make; here they get the engine's shape and a configuration set by ``cluster.set_stream_config``,
as ``admin streams configure`` sets it.

A household (:func:`household`) is made as a cluster comes to hold one: its homebase's first
batch, the operator's sub-meter and tariffs (billing's ``set_tariff``, as ``admin tariffs set``
sets them), then its readings through the store, made into processed points, money and rollups
by the engine's own ``drain``; its size (days, sensors, neighbours) is the caller's.

Nothing in the package imports this module: it stands above the domains whose statements it
reuses, like ``services`` (tests/unit/test_layers.py). Every function takes the caller's
connection and leaves committing to it; each row with its configuration is written whole.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import random
import secrets
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import cast
from urllib.parse import urlsplit, urlunsplit
from zoneinfo import ZoneInfo

import asyncpg
import msgspec
import psycopg
from psycopg import sql

from energy_platform.api.feeds_admin import INSERT_FEED, INSERT_FIRST_FEED_CONFIG, SET_STREAM_CONFIG
from energy_platform.billing.holidays import public_holidays
from energy_platform.billing.queries import SET_PRICES
from energy_platform.billing.tariffs import Terms, set_tariff, tariff_terms
from energy_platform.core.codec.format_v4 import Series
from energy_platform.core.db.pool import Connection
from energy_platform.core.settings import BillingSettings, EngineSettings
from energy_platform.core.tokens import new_token, token_digest
from energy_platform.devices.ingest.routes import Route
from energy_platform.devices.ingest.store import Accepted, PointStore, cluster_key, cluster_streams
from energy_platform.engine.service import drain
from energy_platform.users.admin import INSERT_USER

# The engine makes a channel's processed streams in its intake statement, many at once; this
# is the one row of that statement.
INSERT_PROCESSED_STREAM = """
INSERT INTO cluster.streams (feed_id, type, channel, idx, register, combined, quantity)
VALUES ($1, 'processed', $2, $3, $4, $5, $6)
RETURNING id"""
# A feed's processed streams with their current titles.
FEED_STREAMS = """
SELECT s.id, c.title FROM cluster.streams s JOIN cluster.stream_configs c ON c.stream_id = s.id
 WHERE s.feed_id = $1 AND s.type = 'processed' AND upper_inf(c.validity)"""
# What a batch of a raw or system stream's points is sent as: its identity and its feed's homebase.
STREAM_SENDER = """
SELECT f.homebase_sn, s.feed_id, s.channel, s.device, s.medium, s.idx, s.source
  FROM cluster.streams s JOIN cluster.feeds f ON f.id = s.feed_id
 WHERE s.id = $1 AND s.type IN ('raw', 'system')"""
TERMINATE_SESSIONS = """
SELECT pg_terminate_backend(pid) FROM pg_stat_activity
 WHERE datname = %s AND pid <> pg_backend_pid()"""
SUBSCRIPTION = timedelta(days=365)
"""How long a feed's subscription runs unless told: ``admin feeds add``'s default."""


class User(msgspec.Struct, frozen=True):
    id: int
    token: str
    """Its bearer token; the database holds only its SHA-256."""


async def add_user(
    conn: Connection, name: str, *, token: str | None = None, admin: bool = False
) -> User:
    """A user of the data API as ``admin users add`` makes one; ``token`` when a test needs to
    know it in advance, else a new one."""
    token = token or new_token()
    user_id: int = await conn.fetchval(INSERT_USER, name, token_digest(token), admin)
    return User(user_id, token)


async def add_feed(
    conn: Connection,
    owner: int,
    sn: str,
    *,
    title: str = "Home",
    timezone: str = "Europe/Prague",
    start: datetime | None = None,
    end: datetime | None = None,
) -> int:
    """The feed of homebase ``sn`` with its first configuration, unbounded in time, as ``admin
    feeds add --no-pair`` makes it; subscribed from ``start`` (now) to ``end`` (a year on)."""
    start = start or datetime.now(UTC).replace(microsecond=0)
    end = end or start + SUBSCRIPTION
    async with conn.transaction():
        feed_id: int = await conn.fetchval(INSERT_FEED, owner, sn, start, end)
        await conn.execute(INSERT_FIRST_FEED_CONFIG, feed_id, title, timezone)
    return feed_id


async def raw_streams(
    conn: Connection,
    feed: int,
    channels: Iterable[int],
    medium: int,
    *,
    device: int = 1,
    idx: int | None = None,
) -> list[int]:
    """One raw stream of ``medium`` on each of ``channels``, in their order, as a device's first
    batch makes them (a stream that exists already is returned, not made again)."""
    return await _device_streams(
        conn, feed, [Series(channel, device, medium, idx, None, None) for channel in channels]
    )


async def raw_stream(
    conn: Connection,
    feed: int,
    channel: int,
    medium: int,
    *,
    device: int = 1,
    idx: int | None = None,
) -> int:
    """One raw stream of ``medium`` on ``channel``: :func:`raw_streams` of one channel."""
    (stream,) = await raw_streams(conn, feed, [channel], medium, device=device, idx=idx)
    return stream


async def system_stream(
    conn: Connection,
    feed: int,
    channel: int,
    source: str,
    *,
    device: int = 1,
    idx: int | None = None,
) -> int:
    """A system stream (``source`` such as ``medium:40``), as ingest makes one."""
    (stream,) = await _device_streams(
        conn, feed, [Series(channel, device, None, idx, source, None)]
    )
    return stream


async def processed_stream(
    conn: Connection,
    feed: int,
    channel: int,
    *,
    title: str,
    medium: str | None = "power",
    unit: str = "Wh",
    idx: int | None = None,
    register: int | None = None,
    combined: bool = False,
    quantity: str = "consumption",
) -> int:
    """A processed stream with one configuration from the beginning of time, as the engine
    makes them (docs/engine.md); its points are the caller's to write."""
    async with conn.transaction():
        stream: int = await conn.fetchval(
            INSERT_PROCESSED_STREAM, feed, channel, idx, register, combined, quantity
        )
        await conn.execute(
            SET_STREAM_CONFIG, stream, None, title, medium, unit, False, None, False, None
        )
    return stream


async def processed_streams(conn: Connection, feed: int) -> dict[str, int]:
    """The feed's processed streams by their current title, as the engine and the operator
    named them."""
    return {r["title"]: r["id"] for r in await conn.fetch(FEED_STREAMS, feed)}


async def write_points(
    db: Connection | asyncpg.Pool, stream: int, points: Iterable[tuple[int, float]]
) -> int:
    """Store ``points`` (Unix seconds, value) of the raw or system stream ``stream`` as one
    device batch, through ingest's ``PointStore``: the engine's dirty ranges (the rollup queue
    for a system stream), the live log, a compacted day's thaw and the homebase's presence see
    them as they see a device's. On a connection, inside the caller's transaction if it has
    one. The number of points written."""
    times, values = [], []
    for t, v in points:
        times.append(t)
        values.append(v)
    if not times:
        return 0
    sender = await db.fetchrow(STREAM_SENDER, stream)
    if sender is None:
        raise ValueError(f"no raw or system stream {stream}")
    series = Series(
        sender["channel"],
        sender["device"],
        sender["medium"],
        sender["idx"],
        sender["source"],
        None,
        times,
        values,
    )
    pool = db if isinstance(db, asyncpg.Pool) else cast(asyncpg.Pool, _Lent(db))
    batch = Accepted(Route(sender["homebase_sn"], sender["feed_id"]), [series])
    return await PointStore(pool).write([batch])


class _Lent:
    """One connection where ``PointStore`` takes a pool: the store's transaction is then the
    caller's savepoint, or its own when the caller has none."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    @asynccontextmanager
    async def acquire(self) -> AsyncIterator[Connection]:
        yield self._conn


async def _device_streams(conn: Connection, feed: int, series: list[Series]) -> list[int]:
    keys = [cluster_key(feed, s) for s in series]
    ids = await cluster_streams(conn, keys)
    return [ids[key] for key in keys]


def with_database(url: str, name: str) -> str:
    """``url`` with the database ``name``."""
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def create_empty_database(server: str) -> str:
    """A new database with nothing in it on ``server``; its URL (the caller migrates it)."""
    name = f"ep_scratch_{secrets.token_hex(4)}"
    with psycopg.connect(with_database(server, "postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return with_database(server, name)


def copy_database(url: str, copy: str | None = None) -> str:
    """A new database on ``url``'s server (named as ``copy``'s when given, else a new name)
    made as a copy of ``url``'s (``CREATE DATABASE ... TEMPLATE``: no statement of its rows
    runs again); its URL. A copy needs the
    source alone: its sessions (TimescaleDB's scheduler keeps one) are ended and new ones
    refused until the copy is made."""
    source = urlsplit(url).path.lstrip("/")
    name = urlsplit(copy).path.lstrip("/") if copy else f"ep_scratch_{secrets.token_hex(4)}"
    with psycopg.connect(with_database(url, "postgres"), autocommit=True) as conn:
        conn.execute(
            sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS false").format(sql.Identifier(source))
        )
        try:
            conn.execute(TERMINATE_SESSIONS, (source,))
            conn.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                    sql.Identifier(name), sql.Identifier(source)
                )
            )
        finally:
            conn.execute(
                sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS true").format(
                    sql.Identifier(source)
                )
            )
    return with_database(url, name)


def drop_database(url: str) -> None:
    """Drop the database of ``url``, closing whatever connections it still has."""
    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(with_database(url, "postgres"), autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


MARKET_SLOT = 900
"""A day-ahead market's quarter hour."""


def market_price(start: int, zone: ZoneInfo) -> float:
    """A made-up day-ahead price per kWh of the quarter hour starting at ``start`` (Unix
    seconds) in an area whose days are ``zone``'s, shaped as such prices are: a morning and a
    higher evening peak, cheap nights, a midday dip from solar that is deeper on weekends and
    in summer (below zero on a sunny weekend), and noise. The same quarter always gets the same
    price, whenever it is made: history and tomorrow come from one generator."""
    local = datetime.fromtimestamp(start, zone)
    hour = local.hour + local.minute / 60
    weekend = local.isoweekday() >= 6
    summer = 0.6 + 0.4 * math.cos(2 * math.pi * (local.timetuple().tm_yday - 172) / 365)
    noise = int.from_bytes(hashlib.sha256(str(start).encode()).digest()[:4], "big") / 2**32
    price = (
        0.085
        + 0.06 * math.exp(-(((hour - 19) / 1.6) ** 2))
        + 0.035 * math.exp(-(((hour - 8) / 1.3) ** 2)) * (0.5 if weekend else 1.0)
        - 0.075 * math.exp(-(((hour - 13) / 2.0) ** 2)) * summer * (1.3 if weekend else 1.0)
        - 0.02 * math.exp(-(((hour - 3.5) / 1.5) ** 2))
        + 0.03 * (noise - 0.5)
    )
    return round(price, 5)


async def set_market_prices(conn: Connection, area: str, first: int, end: int, zone: str) -> int:
    """The area's quarter hours from ``first`` to ``end`` (Unix seconds, ``first`` on a quarter),
    priced by :func:`market_price`, set as a price import sets them; how many."""
    starts = range(first, end, MARKET_SLOT)
    slots = [
        asyncpg.Range(datetime.fromtimestamp(t, UTC), datetime.fromtimestamp(t + MARKET_SLOT, UTC))
        for t in starts
    ]
    if slots:
        await conn.execute(
            SET_PRICES, area, slots, [market_price(t, ZoneInfo(zone)) for t in starts]
        )
    return len(slots)


DAY_AHEAD_HOUR = 13
"""The local hour the next day's prices appear, as the European day-ahead market publishes."""
LAST_PRICE = (
    "SELECT extract(epoch FROM max(upper(slot)))::bigint FROM cluster.prices WHERE area = $1"
)


def published_until(now: datetime) -> int:
    """Where a day-ahead market's prices end at ``now`` (aware, in the area's zone): the end
    of today, and of tomorrow from DAY_AHEAD_HOUR on (Unix seconds)."""
    days = 2 if now.hour >= DAY_AHEAD_HOUR else 1
    end = datetime.combine(now.date() + timedelta(days=days), datetime.min.time(), now.tzinfo)
    return int(end.timestamp())


async def publish_market(
    conn: Connection, area: str, zone: str, now: datetime, since: datetime
) -> int:
    """A made-up day-ahead market (:func:`market_price`) brought up to ``now``: its quarter
    hours from where the area's prices end (or ``since``) to :func:`published_until`; how many
    it set."""
    last = await conn.fetchval(LAST_PRICE, area) or int(since.timestamp())
    return await set_market_prices(conn, area, last, published_until(now), zone)


# ---- A household -----------------------------------------------------------------------------


class Meter(msgspec.Struct, frozen=True):
    """A raw stream of a household's homebase (medium IDs: docs/devices.md), and the quantity
    of the processed stream it counts in (docs/engine.md)."""

    channel: int
    medium: int
    device: int
    quantity: str = "consumption"


METERS = {
    # A meter reader on channel 1: power taken from the grid and fed into it (W).
    "import": Meter(1, 12, 7),
    "export": Meter(1, 13, 7, "export"),
    # A heat pump's clamp on channel 2 (W), behind the meter: a sub-meter.
    "clamp": Meter(2, 1, 1),
    # A gas meter's readings on channel 3 (m³), with Size.gas.
    "gas": Meter(3, 7, 5),
}
"""A household's meters by name; its temperature sensors (medium 5) are ``sensor 1``, ``sensor
2``... on channels 4, 5..."""
SENSOR_CHANNEL = 4
SUBMETER = "Heat pump"
"""The clamp's processed consumption, named by the operator and marked a sub-meter."""
BUCKET = 90
"""The engine's bucket, in seconds."""
DRAIN = EngineSettings(rollup_delay=0, max_span=7 * 86_400)
"""The engine as a seeding's drain runs it: rollups at once, not after live data's delay, and a
channel's backlog a week per transaction, not live data's 6 hours (a month of one meter's
readings every 5 minutes took the drain 2 to 3 s instead of 13, 2026-11-29, 2 cores at a load
of about 5)."""
# The engine's plans on raw points never analysed since they came: a month of a household's
# readings (ten streams) was not processed after 3 minutes; analysed, in 35 s (2026-11-29, 2
# cores at a load of about 7). Autovacuum analyses a cluster's tables as they grow; a seeded
# household's readings come at once.
ANALYZE_RAW = "ANALYZE cluster.raw_points"
ANALYZE_AFTER = 100_000
"""Readings written at once from which a household analyses them before the engine runs."""


class Size(msgspec.Struct, frozen=True):
    """How much of a household there is."""

    days: int = 1
    """Days of readings from the household's start."""
    step: int = 90
    """Seconds between two readings of a meter (at most 300: a gap the engine bridges)."""
    sensors: int = 0
    """Temperature sensors beside the meters."""
    gas: bool = False
    """A gas meter beside the power meters."""
    neighbours: int = 0
    """Other households' feeds of one owner, with the same meters and tariffs, each meter
    having sent one reading (its streams made, no energy)."""


class Household(msgspec.Struct, frozen=True):
    """A household as :func:`household` made it."""

    owner: User
    feed: int
    sn: str
    meters: dict[str, int]
    """Raw streams by meter name (METERS, ``sensor N``)."""
    streams: dict[str, int]
    """Processed streams by title, as the engine and the operator named them ("Electricity,
    channel 1", "Electricity cost, channel 1", "Heat pump", "Temperature, channel 4"...)."""
    start: int
    end: int
    """The span of the readings, Unix seconds (end exclusive)."""


def household_titles(size: Size) -> list[str]:
    """A household's processed streams as the engine and the operator name them: the bill's
    six (channel 1's consumption and cost, its export and credit, the heat pump and its cost),
    gas and its cost with ``size.gas``, then each sensor's temperature."""
    gas = ["Gas, channel 3", "Gas cost, channel 3"] if size.gas else []
    return [
        "Electricity, channel 1",
        "Electricity cost, channel 1",
        "Electricity export, channel 1",
        "Electricity export credit, channel 1",
        SUBMETER,
        "Electricity cost, channel 2",
        *gas,
        *(f"Temperature, channel {SENSOR_CHANNEL + k}" for k in range(size.sensors)),
    ]


def household_tariffs(area: str | None, *, gas: bool = False) -> dict[str, Terms]:
    """A household's tariffs, checked as ``admin tariffs set`` checks them: power by kind of
    day (0.12, 0.21 on weekday evenings from 17:00; Czech public holidays as weekend days)
    plus ``area``'s market price when given, 21 % VAT and 13.50 a month; export at 0.08; with
    ``gas``, gas at 1.20 per m³ (a tariff is a line of the bill: none without the meter)."""
    bands = ["weekday/00:00=0.12", "weekday/17:00=0.21", "weekend/00:00=0.12"]
    power = tariff_terms(
        "power", bands=bands, area=area, vat=21, standing=13.5, standing_per="month",
        calendar="CZ",
    )  # fmt: skip
    return {
        "power": power,
        "export": tariff_terms("export", price=0.08),
        **({"gas": tariff_terms("gas", price=1.20)} if gas else {}),
    }


def household_readings(
    meters: Iterable[str], start: int, size: Size
) -> dict[str, list[tuple[int, float]]]:
    """Each meter's readings every ``size.step`` s for ``size.days`` from ``start``: a load of
    200 to 1,000 W and a PV plant of up to 2.5 kW from 06:00 to 20:00 UTC at the meter (taken
    or fed in), a heat pump of 300 to 900 W, most at night, a gas counter rising 0.1 m³ an hour
    from 100 m³, and temperatures of 18 to 24 °C. The same arguments give the same readings."""
    rng = random.Random(start)  # noqa: S311 - a fixed sample, not a secret
    times = range(start, start + size.days * 86_400, size.step)
    hours = [t % 86_400 / 3600 for t in times]
    net = [
        rng.uniform(200.0, 1000.0) - 2500.0 * max(0.0, math.sin(math.pi * (h - 6) / 14))
        for h in hours
    ]
    curves: dict[str, list[float]] = {
        "import": [max(w, 0.0) for w in net],
        "export": [max(-w, 0.0) for w in net],
        "clamp": [600.0 + 300.0 * math.cos(math.pi * h / 12) for h in hours],
        "gas": [100.0 + (t - start) / 36_000 for t in times],
    }
    out = {}
    for meter in meters:
        if meter.startswith("sensor"):
            phase = int(meter.split()[1])
            values = [21.0 + 3.0 * math.sin(math.pi * (h - 4 - phase) / 12) for h in hours]
        else:
            values = curves[meter]
        out[meter] = [(t, round(v, 3)) for t, v in zip(times, values, strict=True)]
    return out


async def household(
    conn: Connection,
    start: int,
    size: Size | None = None,
    *,
    sn: str | None = None,
    owner: User | None = None,
    token: str | None = None,
    timezone: str = "Europe/Prague",
    subscription: tuple[datetime, datetime] | None = None,
    readings: Mapping[str, Iterable[tuple[int, float]]] | None = None,
    tariffs: Mapping[str, Terms] | None = None,
    area: str | None = None,
    engine: EngineSettings = DRAIN,
    currency: str = BillingSettings().currency,
    rollups: bool = True,
    fast: bool = False,
) -> Household:
    """A household from Unix second ``start`` on, processed by the engine, committed.

    Its homebase ``sn`` (a new one if None) of ``owner`` (a new user with ``token`` if None)
    sends a first reading from each of its meters (METERS; gas and sensors by ``size``); the
    engine makes their processed streams; the operator names the clamp's consumption "Heat
    pump" and marks it a sub-meter from the beginning of time, and sets ``tariffs`` (by
    medium; if None, :func:`household_tariffs` of ``area`` and ``size.gas``) as ``admin
    tariffs set`` does, the area priced by :func:`market_price` over the readings' days.
    Then the rest of the ``readings`` by meter name (if None, :func:`household_readings` of
    ``size``, one day by default) go through ingest's store and the engine drains everything
    (``engine``: its settings; ``currency``: its new cost streams'). ``size.neighbours``
    other feeds of one owner get the same meters, sub-meter and tariffs and one reading each.

    Without ``rollups`` the engine's rollups are left queued (a benchmark builds them itself,
    on analysed tables). ``fast`` is for a benchmark's year that times what reads it, not how
    it was made: the readings after the first batch are not stored; their processed points
    are written at once (:func:`_fast_points`), their money priced by billing's own pricing,
    and their rollups queued. A year of ten streams at 90 s takes the engine's drain over
    twenty times as long (figures in benchmarks/household.py).

    Commits as it goes (the engine's drain commits its batches): call it outside a
    transaction, on a connection of its own."""
    size = size or Size()
    names = [*(m for m in METERS if m != "gas" or size.gas), *_sensors(size)]
    given = (
        {k: sorted(v) for k, v in readings.items()}
        if readings is not None
        else household_readings(names, start, size)
    )
    end = max((t for points in given.values() for t, _ in points), default=start) + 1
    end = max(end, start + size.days * 86_400)
    terms = tariffs if tariffs is not None else household_tariffs(area, gas=size.gas)
    if area is not None:
        first = start // MARKET_SLOT * MARKET_SLOT
        await set_market_prices(conn, area, first, end, timezone)
    if owner is None:
        owner = await add_user(conn, f"household-{sn or secrets.token_hex(4)}", token=token)
    sn = sn or secrets.token_hex(8).upper()
    began = datetime.fromtimestamp(start, UTC)
    span = subscription or (began, max(began + SUBSCRIPTION, datetime.fromtimestamp(end, UTC)))
    firsts = {m: (given[m][0] if given.get(m) else (start, _FIRST[m[:6]])) for m in names}
    feed, meters = await _first_batch(conn, owner.id, sn, firsts, timezone, span)
    feeds = [feed]
    if size.neighbours:
        others = await add_user(conn, f"neighbours-of-{sn}")
        for n in range(size.neighbours):
            # Never the household's own: the first half of its serial number inverted.
            other = f"{int(sn[:8], 16) ^ 0xFFFFFFFF:08X}{n:08X}"
            feeds.append((await _first_batch(conn, others.id, other, firsts, timezone, span))[0])
    await drain(conn, engine, currency=currency)
    today = datetime.now(UTC).date()
    holidays = {
        medium: None if tariff.calendar is None else public_holidays(tariff.calendar, None, today)
        for medium, tariff in terms.items()
    }
    for f in feeds:
        streams = await processed_streams(conn, f)
        await conn.execute(
            SET_STREAM_CONFIG, streams[CLAMP], None, SUBMETER, "power", "Wh", True, None, False,
            None,
        )  # fmt: skip
        for medium, tariff in terms.items():
            await set_tariff(conn, f, medium, None, tariff, holidays[medium])
    rolled = None if rollups else 0
    if fast:
        # The tariffs queued the first batch's recomputation: settled first.
        await drain(conn, engine, currency=currency, rollup_batches=0)
        await _fast_points(conn, feed, {m: p[1:] for m, p in given.items()}, size.step)
    else:
        written = 0
        for meter, points in given.items():
            written += await write_points(conn, meters[meter], points[1:])
        if written >= ANALYZE_AFTER:
            await conn.execute(ANALYZE_RAW)
        await drain(conn, engine, currency=currency, rollup_batches=rolled)
    if fast and rollups:
        await drain(conn, engine, currency=currency)
    return Household(owner, feed, sn, meters, await processed_streams(conn, feed), start, end)


# Fast: a value stream's points priced into its money stream by billing's pricing and band
# rule (cluster.pricing, cluster.band_holds), as the engine's COMPUTE prices a bucket
# (sql/functions/25_engine_results.sql, engine_periods and engine_results): value x scale x the
# price of the band holding the bucket's local start on a local date of the band's kind. Each
# priced stretch is cut into its buckets (cluster.validity_buckets) and hash-joined to the
# points by bucket: a join on the stretch's range took minutes for a year of quarter hours.
FAST_MONEY = """
INSERT INTO cluster.processed_points (stream_id, ts, value)
SELECT p.money_id, x.ts, x.value * p.scale * p.price
  FROM cluster.streams s
  JOIN cluster.stream_configs c ON c.stream_id = s.id AND upper_inf(c.validity)
 CROSS JOIN LATERAL cluster.pricing(s.feed_id, s.channel, s.idx, s.register, s.combined,
                                    s.quantity, c.medium, tstzmultirange($2::tstzrange)) p
 CROSS JOIN LATERAL cluster.validity_buckets(p.valid * $2::tstzrange) k
 CROSS JOIN LATERAL generate_series(k.kfrom, k.kto - 1) b
 CROSS JOIN LATERAL (SELECT to_timestamp(cluster.bucket_seconds() * b) AS ts) t
 CROSS JOIN LATERAL (SELECT t.ts AT TIME ZONE p.timezone AS local) l
  JOIN cluster.processed_points x ON x.stream_id = s.id AND x.ts = t.ts
 WHERE s.id = $1 AND p.starts <= l.local::time AND l.local::time < p.ends
   AND cluster.band_holds(p.days, l.local::date, p.holidays)"""
# Fast: every span the points were written in queued for the engine's rollups, as the engine
# queues what it writes.
FAST_ROLLUPS = """
INSERT INTO cluster.rollup_work (stream_id, span)
SELECT s.id, $2::tstzrange FROM cluster.streams s WHERE s.feed_id = $1 AND s.type = 'processed'"""
PROCESSED_STREAM_OF = """
SELECT id FROM cluster.streams
 WHERE feed_id = $1 AND type = 'processed' AND channel = $2 AND quantity = $3 AND idx IS NULL
   AND NOT combined"""


async def _fast_points(
    conn: Connection, feed: int, readings: dict[str, list[tuple[int, float]]], step: int
) -> None:
    """The processed points of ``readings`` (every bucket's reading, 90 s apart) as the engine
    would make them from readings held for their bucket, not interpolated: power's W x 90 s
    in Wh, a gas counter's rise since the reading before, a temperature's value; their money
    priced by billing (FAST_MONEY), and their rollups queued. A bypass of the store and of
    the engine, for ``household(fast=True)`` alone."""
    if step != BUCKET:
        raise ValueError(f"fast points need a reading every {BUCKET} s, not {step} s")
    span = asyncpg.Range(
        datetime.fromtimestamp(min(p[0][0] for p in readings.values() if p), UTC),
        datetime.fromtimestamp(max(p[-1][0] for p in readings.values() if p) + BUCKET, UTC),
    )
    values = []
    for name, points in readings.items():
        meter = _meter(name)
        stream = await conn.fetchval(PROCESSED_STREAM_OF, feed, meter.channel, meter.quantity)
        if meter.medium == 7:  # a counter: its rise (the first reading's is the engine's)
            rows = [(t, b - a) for (_, a), (t, b) in itertools.pairwise(points)]
        elif meter.quantity == "mean":
            rows = points
        else:
            rows = [(t, w * BUCKET / 3600) for t, w in points]
        values.append(stream)
        await conn.copy_records_to_table(
            "processed_points",
            schema_name="cluster",
            columns=["stream_id", "ts", "value"],
            records=[(stream, datetime.fromtimestamp(t, UTC), v) for t, v in rows],
        )
    for stream in values:
        await conn.execute(FAST_MONEY, stream, span)
    await conn.execute(FAST_ROLLUPS, feed, span)


# A meter's first reading when the caller gives it none: W, m³ or °C.
_FIRST = {"import": 0.0, "export": 0.0, "clamp": 0.0, "gas": 100.0, "sensor": 20.0}
CLAMP = "Electricity, channel 2"
"""The clamp's processed consumption as the engine names it."""


def _meter(name: str) -> Meter:
    return METERS.get(name) or Meter(SENSOR_CHANNEL + int(name.split()[1]) - 1, 5, 1, "mean")


def _sensors(size: Size) -> list[str]:
    return [f"sensor {k}" for k in range(1, size.sensors + 1)]


async def _first_batch(
    conn: Connection,
    owner: int,
    sn: str,
    firsts: dict[str, tuple[int, float]],
    timezone: str,
    span: tuple[datetime, datetime],
) -> tuple[int, dict[str, int]]:
    """A feed and its homebase's first batch, one message through ingest's store, which makes
    the meters' raw streams: the reading ``firsts`` gives each meter."""
    feed = await add_feed(conn, owner, sn, timezone=timezone, start=span[0], end=span[1])
    series = {
        name: Series(meter.channel, meter.device, meter.medium, None, None, None, [t], [v])
        for name, (t, v) in firsts.items()
        for meter in [_meter(name)]
    }
    batch = Accepted(Route(sn, feed), list(series.values()))
    await PointStore(cast(asyncpg.Pool, _Lent(conn))).write([batch])
    streams = await _device_streams(conn, feed, list(series.values()))
    return feed, dict(zip(series, streams, strict=True))
