"""Admin commands of the engine: tariffs from an instant on, reprocessing a feed, and a
compaction round now.

Tariffs and reprocessing only change tables and queue work; the running engine recomputes the
affected buckets. ``compact`` does the work itself, as the engine's loop would.
"""

from __future__ import annotations

import asyncio
import re
from collections import defaultdict
from datetime import datetime, time

import asyncpg
import click
import msgspec

from energy_platform.core.console import CommandGroup, emit, parse_instant, run_in_transaction
from energy_platform.core.db.pool import create_pool
from energy_platform.core.errors import InvalidInput, NotFound
from energy_platform.core.inputs import parse_id
from energy_platform.core.settings import CompactionSettings, Settings
from energy_platform.engine.compaction import CompactionResult, compact

FEED_EXISTS = "SELECT 1 FROM cluster.feeds WHERE id = $1"
SET_TARIFF = "SELECT cluster.set_tariff($1, $2, $3, $4::time[], $5::float8[])"
TARIFFS_OF_FEED = """
SELECT medium, lower(validity) AS valid_from, upper(validity) AS valid_to,
       to_char(starts, 'HH24:MI') AS starts, to_char(ends, 'HH24:MI') AS ends, price
  FROM cluster.tariffs t JOIN cluster.tariff_bands b ON b.tariff_id = t.id
 WHERE t.feed_id = $1
 ORDER BY medium, lower(validity) NULLS FIRST, starts"""
REPROCESS = "SELECT cluster.engine_reprocess($1, $2, $3)"

TARIFF_MEDIA = ("power", "gas", "water", "export")
BAND = re.compile(r"^(?P<hour>[01]\d|2[0-3]):(?P<minute>[0-5]\d)=(?P<price>.+)$")


class Band(msgspec.Struct):
    starts: str
    """Local time of day, HH:MM (inclusive)."""
    ends: str
    """Local time of day, HH:MM (exclusive); 24:00 for the last band."""
    price: float
    """Per kWh (power) or m³ (gas, water), in the cost streams' currency."""


class Tariff(msgspec.Struct):
    medium: str
    valid_from: str | None
    valid_to: str | None
    bands: list[Band]


def _price(text: str) -> float:
    try:
        price = float(text)
    except ValueError:
        raise InvalidInput(f"{text!r} is not a price") from None
    if price != price or price in (float("inf"), float("-inf")):
        raise InvalidInput(f"{text!r} is not a finite price")
    return price


def _bands(price: str | None, bands: tuple[str, ...], none: bool) -> list[tuple[time, float]]:
    if sum((price is not None, bool(bands), none)) != 1:
        raise InvalidInput("give exactly one of --price, --band (repeatable) or --none")
    if none:
        return []
    if price is not None:
        return [(time(0, 0), _price(price))]
    parsed: dict[time, float] = {}
    for band in bands:
        match = BAND.match(band)
        if match is None:
            raise InvalidInput(f"{band!r}: a band looks like 06:00=0.25 (local start=price)")
        start = time(int(match["hour"]), int(match["minute"]))
        if start in parsed:
            raise InvalidInput(f"two bands start at {start:%H:%M}")
        parsed[start] = _price(match["price"])
    return sorted(parsed.items())


async def _tariffs(conn: asyncpg.Connection, feed_id: int) -> list[Tariff]:
    grouped: dict[tuple[str, datetime | None, datetime | None], list[Band]] = defaultdict(list)
    for row in await conn.fetch(TARIFFS_OF_FEED, feed_id):
        key = (row["medium"], row["valid_from"], row["valid_to"])
        grouped[key].append(Band(row["starts"], row["ends"], row["price"]))
    return [
        Tariff(medium, _iso(valid_from), _iso(valid_to), bands)
        for (medium, valid_from, valid_to), bands in grouped.items()
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
@click.pass_obj
def set_tariff(
    settings: Settings,
    feed_id: str,
    medium: str,
    since: str,
    price: str | None,
    bands: tuple[str, ...],
    none: bool,
) -> None:
    """Set the feed's tariff for a medium from an instant on; prints the feed's tariffs."""
    fid, instant, parsed = (
        parse_id(feed_id, "feed"),
        parse_instant(since),
        _bands(price, bands, none),
    )

    async def work(conn: asyncpg.Connection) -> list[Tariff]:
        await _require_feed(conn, fid, feed_id)
        starts = [start for start, _ in parsed] if parsed else None
        prices = [value for _, value in parsed] if parsed else None
        await conn.execute(SET_TARIFF, fid, medium, instant, starts, prices)
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


GROUPS: list[click.Command] = [tariffs, reprocess, compact_now]
