"""Admin commands of the engine: tariffs from an instant on, market prices of an area,
reprocessing a feed, a compaction round now, and the feeds parked on bad data.

Tariffs, prices, reprocessing and a retry only change tables and queue work; the running
engine recomputes the affected buckets. ``compact`` does the work itself, as the engine's loop
would.
"""

from __future__ import annotations

import asyncio
import re
from collections import defaultdict
from datetime import datetime, time

import asyncpg
import click
import msgspec

from energy_platform.core import bounds
from energy_platform.core.console import CommandGroup, emit, parse_instant, run_in_transaction
from energy_platform.core.db.pool import create_pool
from energy_platform.core.errors import InvalidInput, NotFound
from energy_platform.core.inputs import checked_text, parse_id
from energy_platform.core.settings import CompactionSettings, Settings
from energy_platform.engine.compaction import CompactionResult, compact
from energy_platform.engine.parking import RETRY
from energy_platform.engine.prices import FORMATS, MAX_FILE_BYTES, PER, parse_prices

FEED_EXISTS = "SELECT 1 FROM cluster.feeds WHERE id = $1"
SET_TARIFF = "SELECT cluster.set_tariff($1, $2, $3, $4::time[], $5::float8[], $6, $7, $8)"
TARIFFS_OF_FEED = """
SELECT medium, lower(validity) AS valid_from, upper(validity) AS valid_to, area, factor,
       standing, to_char(starts, 'HH24:MI') AS starts, to_char(ends, 'HH24:MI') AS ends, price
  FROM cluster.tariffs t JOIN cluster.tariff_bands b ON b.tariff_id = t.id
 WHERE t.feed_id = $1
 ORDER BY medium, lower(validity) NULLS FIRST, starts"""
SET_PRICES = "SELECT cluster.set_prices($1, $2::tstzrange[], $3::float8[])"
AREA_EXISTS = "SELECT 1 FROM cluster.price_areas WHERE area = $1"
PRICES_OF_AREA = """
SELECT lower(slot) AS start, upper(slot) AS "end", price
  FROM cluster.prices
 WHERE area = $1 AND slot && tstzrange($2, $3, '[)')
 ORDER BY lower(slot)"""
REPROCESS = "SELECT cluster.engine_reprocess($1, $2, $3)"
# Per feed and stage: what waits for a repair (docs/operations.md#parked-feed).
PARKED = """
SELECT p.feed_id, t.title, p.stage, array_agg(DISTINCT p.channel ORDER BY p.channel) AS channels,
       array_agg(DISTINCT p.stream_id ORDER BY p.stream_id)
           FILTER (WHERE p.stream_id IS NOT NULL) AS streams,
       min(lower(p.span)) AS "from", max(upper(p.span)) AS "to",
       (array_agg(p.sqlstate ORDER BY p.parked_at DESC, p.id DESC))[1] AS sqlstate,
       (array_agg(p.error ORDER BY p.parked_at DESC, p.id DESC))[1] AS error,
       min(p.parked_at) AS since, max(p.retried_at) AS retried
  FROM cluster.parked_work p
  LEFT JOIN cluster.current_feed_titles t ON t.feed_id = p.feed_id
 GROUP BY p.feed_id, t.title, p.stage
 ORDER BY min(p.parked_at), p.feed_id, p.stage"""

TARIFF_MEDIA = ("power", "gas", "water", "export")
BAND = re.compile(r"^(?P<hour>[01]\d|2[0-3]):(?P<minute>[0-5]\d)=(?P<price>.+)$")


class Band(msgspec.Struct):
    starts: str
    """Local time of day, HH:MM (inclusive)."""
    ends: str
    """Local time of day, HH:MM (exclusive); 24:00 for the last band."""
    price: float
    """Per kWh (power) or m³ (gas, water), in the cost streams' currency."""


class SlotPrice(msgspec.Struct):
    start: str
    """Inclusive."""
    end: str
    """Exclusive."""
    price: float
    """Per kWh in the cost streams' currency."""


class Tariff(msgspec.Struct):
    medium: str
    valid_from: str | None
    valid_to: str | None
    area: str | None
    """A dynamic tariff's price area (null: the bands alone)."""
    factor: float
    """Price = factor x the area's price + the band's price."""
    standing: float
    """Charged once per local day whose start lies in the period (0: none)."""
    bands: list[Band]


def _price(text: str) -> float:
    try:
        price = float(text)
    except ValueError:
        raise InvalidInput(f"{text!r} is not a price") from None
    if price != price or price in (float("inf"), float("-inf")):
        raise InvalidInput(f"{text!r} is not a finite price")
    return price


def _amount(text: str, bound: bounds.Bound, option: str) -> float:
    """A price, factor or standing charge as given to ``option``, within its bound."""
    return bounds.check(bound, _price(text), option)


def _bands(
    price: str | None, bands: tuple[str, ...], none: bool, area: str | None
) -> list[tuple[time, float]]:
    if none and area is not None:
        raise InvalidInput("--none sets no tariff: it takes no --area")
    if area is not None and price is None and not bands:
        return [(time(0, 0), 0.0)]  # the area's prices alone
    if sum((price is not None, bool(bands), none)) != 1:
        raise InvalidInput("give exactly one of --price, --band (repeatable) or --none")
    if none:
        return []
    if price is not None:
        return [(time(0, 0), _amount(price, bounds.PRICE, "--price"))]
    parsed: dict[time, float] = {}
    for band in bands:
        match = BAND.match(band)
        if match is None:
            raise InvalidInput(f"{band!r}: a band looks like 06:00=0.25 (local start=price)")
        start = time(int(match["hour"]), int(match["minute"]))
        if start in parsed:
            raise InvalidInput(f"two bands start at {start:%H:%M}")
        parsed[start] = _amount(match["price"], bounds.PRICE, f"--band {start:%H:%M}")
    return sorted(parsed.items())


async def _tariffs(conn: asyncpg.Connection, feed_id: int) -> list[Tariff]:
    Period = tuple[str, datetime | None, datetime | None, str | None, float, float]
    grouped: dict[Period, list[Band]] = defaultdict(list)
    for row in await conn.fetch(TARIFFS_OF_FEED, feed_id):
        key = (
            row["medium"],
            row["valid_from"],
            row["valid_to"],
            row["area"],
            row["factor"],
            row["standing"],
        )
        grouped[key].append(Band(row["starts"], row["ends"], row["price"]))
    return [
        Tariff(medium, _iso(valid_from), _iso(valid_to), area, factor, standing, bands)
        for (medium, valid_from, valid_to, area, factor, standing), bands in grouped.items()
    ]


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


async def _require_feed(conn: asyncpg.Connection, feed_id: int, given: str) -> None:
    if await conn.fetchval(FEED_EXISTS, feed_id) is None:
        raise NotFound(f"no feed {given!r}")


@click.group("tariffs", cls=CommandGroup)
def tariffs() -> None:
    """Tariffs per feed and medium, flat or by local time of day."""


@tariffs.command("set")
@click.argument("feed_id")
@click.option("--medium", type=click.Choice(TARIFF_MEDIA), required=True)
@click.option("--from", "since", required=True, help="ISO 8601 instant (or 'now').")
@click.option("--price", help="Flat price per kWh (power) or m³ (gas, water).")
@click.option(
    "--band",
    "bands",
    multiple=True,
    help="Time of use: LOCAL_START=PRICE, e.g. --band 06:00=0.30 --band 22:00=0.10; "
    "bands wrap around midnight.",
)
@click.option("--none", "none", is_flag=True, help="No tariff from the instant on.")
@click.option(
    "--area",
    help="Follow this price area's prices (admin prices import): price = factor x area price "
    "+ band price; without --price or --band the bands are 0.",
)
@click.option("--factor", help="What the area's price is multiplied by (VAT: 1.19); default 1.")
@click.option(
    "--standing",
    help="A fixed charge per local day of the feed's time zone (a 23- or 25-hour day counts "
    "once), in the cost streams' currency; default 0.",
)
@click.pass_obj
def set_tariff(
    settings: Settings,
    feed_id: str,
    medium: str,
    since: str,
    price: str | None,
    bands: tuple[str, ...],
    none: bool,
    area: str | None,
    factor: str | None,
    standing: str | None,
) -> None:
    """Set the feed's tariff for a medium from an instant on; prints the feed's tariffs."""
    if factor is not None and area is None:
        raise InvalidInput("--factor multiplies an area's prices: give --area too")
    if standing is not None and none:
        raise InvalidInput("--none sets no tariff: it takes no --standing")
    fid, instant, parsed = (
        parse_id(feed_id, "feed"),
        parse_instant(since),
        _bands(price, bands, none, area),
    )
    multiplier = 1.0 if factor is None else _amount(factor, bounds.FACTOR, "--factor")
    daily = 0.0 if standing is None else _amount(standing, bounds.STANDING, "--standing")

    async def work(conn: asyncpg.Connection) -> list[Tariff]:
        await _require_feed(conn, fid, feed_id)
        starts = [start for start, _ in parsed] if parsed else None
        prices = [value for _, value in parsed] if parsed else None
        try:
            await conn.execute(
                SET_TARIFF, fid, medium, instant, starts, prices, area, multiplier, daily
            )
        except asyncpg.NoDataFoundError:  # the feed was checked above: it is the area
            raise NotFound(
                f"price area {area!r} has no prices: import them first (admin prices import)"
            ) from None
        return await _tariffs(conn, fid)

    emit(run_in_transaction(settings.database, work))


@tariffs.command("list")
@click.argument("feed_id")
@click.pass_obj
def list_tariffs(settings: Settings, feed_id: str) -> None:
    """List the feed's tariff periods with their bands."""
    fid = parse_id(feed_id, "feed")

    async def work(conn: asyncpg.Connection) -> list[Tariff]:
        await _require_feed(conn, fid, feed_id)
        return await _tariffs(conn, fid)

    emit(run_in_transaction(settings.database, work))


@click.command("reprocess")
@click.argument("feed_id")
@click.option("--from", "since", required=True, help="ISO 8601 instant (inclusive).")
@click.option("--to", "until", default="now", help="ISO 8601 instant (exclusive); default now.")
@click.pass_obj
def reprocess(settings: Settings, feed_id: str, since: str, until: str) -> None:
    """Queue a feed's raw data in [--from, --to) for processing again."""
    fid, start, end = parse_id(feed_id, "feed"), parse_instant(since), parse_instant(until)
    if start >= end:
        raise InvalidInput("--from must be before --to")

    async def work(conn: asyncpg.Connection) -> dict[str, object]:
        await _require_feed(conn, fid, feed_id)
        streams = await conn.fetchval(REPROCESS, fid, start, end)
        return {
            "feed": str(fid),
            "from": start.isoformat(),
            "to": end.isoformat(),
            "streams": streams,
        }

    emit(run_in_transaction(settings.database, work))


class Compacted(msgspec.Struct, frozen=True):
    older_than_days: int
    """Whole UTC days that ended this many days ago or earlier were compacted."""
    days: int
    """Stream-days moved into the compact tier."""
    points: int
    """Points in the compact rows written."""
    chunks: int
    """Emptied row-tier chunks dropped."""
    busy: int
    """Emptied chunks another session held: dropped by a later round."""
    recoded: int
    """Compacted stream-days of an older codec encoded again."""


@click.command("compact")
@click.option(
    "--older-than",
    "older_than",
    type=int,
    help="Days (at least 2); default EP_COMPACTION_AFTER_DAYS.",
)
@click.pass_obj
def compact_now(settings: Settings, older_than: int | None) -> None:
    """Run one compaction round now (after a backfill, say); prints what it did."""
    days = settings.compaction.after_days if older_than is None else older_than
    if days == 0:
        raise InvalidInput(
            "compaction is off (EP_COMPACTION_AFTER_DAYS=0): give --older-than DAYS"
            if older_than is None
            else "--older-than must be at least 2"
        )
    try:  # the settings' own checks
        compaction = CompactionSettings(
            after_days=days, interval=settings.compaction.interval, page=settings.compaction.page
        )
    except ValueError:
        raise InvalidInput("--older-than must be at least 2") from None

    async def work() -> CompactionResult:
        pool = await create_pool(settings.database)
        try:
            return await compact(pool, compaction)
        finally:
            await pool.close()

    result = asyncio.run(work())
    emit(Compacted(older_than_days=days, **msgspec.structs.asdict(result)))


@click.group("prices", cls=CommandGroup)
def prices() -> None:
    """Market prices of a price area per slot, which dynamic tariffs follow."""


@prices.command("import")
@click.argument("area")
@click.option(
    "--file",
    "path",
    required=True,
    type=click.Path(dir_okay=False, allow_dash=True),
    help="CSV of start,price rows (ISO 8601 times with offsets) or an ENTSO-E day-ahead price "
    "document (XML, A44); - for stdin; at most 10 MB.",
)
@click.option(
    "--format",
    "kind",
    type=click.Choice(FORMATS),
    default="auto",
    show_default=True,
    help="auto: ENTSO-E when the file starts with <, else CSV.",
)
@click.option(
    "--per",
    type=click.Choice(list(PER)),
    help="What a CSV's prices are per (default kWh; MWh: divided by 1000). An ENTSO-E "
    "document's are per MWh, divided by 1000 without it; --per kWh is refused for one.",
)
@click.option(
    "--slot-minutes",
    type=click.IntRange(min=1),
    help="A CSV's last slot length; default the gap between the two rows before it.",
)
@click.pass_obj
def import_prices(
    settings: Settings,
    area: str,
    path: str,
    kind: str,
    per: str | None,
    slot_minutes: int | None,
) -> None:
    """Set an area's prices from a file, all or nothing; prints what changed."""
    checked_text(area, "area")
    slots = parse_prices(
        _read(path),
        kind=kind,
        per=per,
        slot_minutes=slot_minutes,
        currency=settings.engine.currency,
    )

    async def work(conn: asyncpg.Connection) -> dict[str, object]:
        ranges = [asyncpg.Range(s.start, s.end) for s in slots]
        try:
            changed = await conn.fetchval(SET_PRICES, area, ranges, [s.price for s in slots])
        except asyncpg.IntegrityConstraintViolationError as e:
            if e.table_name == "price_areas":
                raise InvalidInput(
                    f"price area {area!r}: a name is letters, digits, _ . - "
                    "(at most 32, starting with a letter or digit)"
                ) from None
            raise InvalidInput(f"price area {area!r}: prices refused: {e}") from None
        except asyncpg.DataError as e:
            raise InvalidInput(f"price area {area!r}: prices refused: {e}") from None
        return {
            "area": area,
            "slots": len(slots),
            "changed": changed,
            "from": slots[0].start.isoformat(),
            "to": slots[-1].end.isoformat(),
        }

    emit(run_in_transaction(settings.database, work))


@prices.command("list")
@click.argument("area")
@click.option("--from", "since", required=True, help="ISO 8601 instant (inclusive).")
@click.option("--to", "until", required=True, help="ISO 8601 instant (exclusive).")
@click.pass_obj
def list_prices(settings: Settings, area: str, since: str, until: str) -> None:
    """List the area's slots overlapping [--from, --to), in order."""
    checked_text(area, "area")
    start, end = parse_instant(since), parse_instant(until)
    if start >= end:
        raise InvalidInput("--from must be before --to")

    async def work(conn: asyncpg.Connection) -> list[SlotPrice]:
        if await conn.fetchval(AREA_EXISTS, area) is None:
            raise NotFound(f"no price area {area!r}")
        rows = await conn.fetch(PRICES_OF_AREA, area, start, end)
        return [SlotPrice(r["start"].isoformat(), r["end"].isoformat(), r["price"]) for r in rows]

    emit(run_in_transaction(settings.database, work))


def _read(path: str) -> str:
    try:
        with click.open_file(path, "rb") as file:
            # One byte past the limit tells a file at the limit from a larger one, without
            # reading all of a larger one.
            data: bytes = file.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise InvalidInput(f"{path}: {e.strerror or e}") from None
    if len(data) > MAX_FILE_BYTES:
        raise InvalidInput(f"{path}: over {MAX_FILE_BYTES:,} bytes, the limit of a price file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidInput(f"{path}: not UTF-8 text (byte {e.start})") from None


class Parked(msgspec.Struct, frozen=True):
    feed: str
    title: str | None
    """The feed's current title."""
    stage: str
    """processing (90 s buckets) or rollups (hours and days)."""
    channels: list[int]
    streams: list[str]
    """rollups: the streams whose hours failed."""
    from_: str | None = msgspec.field(name="from")
    """Start of the periods that failed: the bad rows are between from and to (null: the
    stream's first point)."""
    to: str | None
    """Their end (null: the stream's last point)."""
    sqlstate: str
    error: str
    """The latest error's message."""
    since: str
    """When the feed was first parked."""
    retried: str | None
    """When admin engine retry released it (null: still parked); the row goes once its work
    succeeds."""


@click.group("engine", cls=CommandGroup)
def engine() -> None:
    """Feeds whose work failed on their data: parked, and retried after a repair."""


@engine.command("parked")
@click.pass_obj
def list_parked(settings: Settings) -> None:
    """List the parked feeds: channels, the periods holding the bad rows, the error, since."""

    async def work(conn: asyncpg.Connection) -> list[Parked]:
        return [
            Parked(
                feed=str(r["feed_id"]),
                title=r["title"],
                stage=r["stage"],
                channels=list(r["channels"]),
                streams=[str(s) for s in r["streams"] or []],
                from_=_iso(r["from"]),
                to=_iso(r["to"]),
                sqlstate=r["sqlstate"],
                error=r["error"],
                since=r["since"].isoformat(),
                retried=_iso(r["retried"]),
            )
            for r in await conn.fetch(PARKED)
        ]

    emit(run_in_transaction(settings.database, work))


@engine.command("retry")
@click.argument("feed_id")
@click.pass_obj
def retry(settings: Settings, feed_id: str) -> None:
    """Put a parked feed's work back after its data was repaired; the engine takes it again."""
    fid = parse_id(feed_id, "feed")

    async def work(conn: asyncpg.Connection) -> dict[str, object]:
        released = await conn.fetchval(RETRY, fid)
        if not released:
            raise NotFound(f"feed {feed_id!r} has nothing parked")
        return {"feed": str(fid), "released": released}

    emit(run_in_transaction(settings.database, work))


GROUPS: list[click.Command] = [tariffs, prices, reprocess, compact_now, engine]
