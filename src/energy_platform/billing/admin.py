"""Admin commands of billing: a feed's tariffs from an instant on (``tariffs``), and the market
prices of a price area (``prices``), which dynamic tariffs follow.

They only change tables and queue work: the running engine reprices the affected buckets
(docs/billing.md#admin-commands).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import click
import msgspec

from energy_platform.billing import queries
from energy_platform.billing.contracts import (
    MAX_CONTRACT_BYTES,
    CatalogueEntry,
    catalogue,
    checked_contract,
    decode_contract,
)
from energy_platform.billing.holidays import public_holidays
from energy_platform.billing.price_files import FORMATS, MAX_FILE_BYTES, PER, parse_prices
from energy_platform.billing.tariffs import MEDIA, Tariff, tariff_terms, tariffs_of_feed
from energy_platform.billing.tariffs import set_tariff as store_tariff
from energy_platform.core.console import CommandGroup, emit, parse_instant, run_in_transaction
from energy_platform.core.errors import InvalidInput, NotFound
from energy_platform.core.inputs import checked_slug, checked_text, parse_id
from energy_platform.core.settings import Settings


class SlotPrice(msgspec.Struct):
    start: str
    """Inclusive."""
    end: str
    """Exclusive."""
    price: float
    """Per kWh in the cost streams' currency."""


async def _require_feed(conn: asyncpg.Connection, feed_id: int, given: str) -> None:
    if await conn.fetchval(queries.TARIFF_FEED, feed_id) is None:
        raise NotFound(f"no feed {given!r}")


@click.group("tariffs", cls=CommandGroup)
def tariffs() -> None:
    """Tariffs per feed and medium, flat or by local time of day."""


@tariffs.command("set")
@click.argument("feed_id")
@click.option("--medium", type=click.Choice(MEDIA), required=True)
@click.option("--from", "since", required=True, help="ISO 8601 instant (or 'now').")
@click.option(
    "--price", help="Flat price per kWh (power, heat; gas with --kwh-per-m3) or m³ (gas, water)."
)
@click.option(
    "--band",
    "bands",
    multiple=True,
    help="Time of use: [weekday/|weekend/]LOCAL_START=PRICE, e.g. --band 06:00=0.30 --band "
    "22:00=0.10, or --band weekday/07:00=0.30 --band weekday/23:00=0.20 --band "
    "weekend/00:00=0.20; a band without a day kind holds every day; bands wrap around midnight.",
)
@click.option("--none", "none", is_flag=True, help="No tariff from the instant on.")
@click.option(
    "--area",
    help="Follow this price area's prices (admin prices import): price = factor x area price "
    "+ band price; without --price or --band the bands are 0.",
)
@click.option("--factor", help="What the area's price is multiplied by; default 1.")
@click.option(
    "--vat",
    help="VAT in percent on every part of the price and on the standing charge "
    "(price = clamp((factor x area price + band price) x (1 + vat/100), floor, cap)); default 0.",
)
@click.option("--floor", "lowest", help="The lowest price after VAT (0: none paid when negative).")
@click.option("--cap", "highest", help="The highest price after VAT.")
@click.option(
    "--standing",
    help="A fixed charge per local day (or month: --standing-per) of the feed's time zone, "
    "before VAT, in the cost streams' currency; default 0.",
)
@click.option(
    "--standing-per",
    type=click.Choice(("day", "month")),
    default="day",
    show_default=True,
    help="month: once per local calendar month, a part of a month by its days covered.",
)
@click.option(
    "--holidays",
    "calendar",
    help="CC[-SUBDIVISION]: that country's public holidays count as weekend days (NL, DE-BY).",
)
@click.option(
    "--kwh-per-m3",
    "kwh_per_m3",
    help="Gas: kWh per m³ (calorific value x correction factor); prices are then per kWh.",
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
    vat: str | None,
    lowest: str | None,
    highest: str | None,
    standing: str | None,
    standing_per: str,
    calendar: str | None,
    kwh_per_m3: str | None,
) -> None:
    """Set the feed's tariff for a medium from an instant on; prints the feed's tariffs."""
    fid, instant = parse_id(feed_id, "feed"), parse_instant(since, "--from")
    terms = tariff_terms(
        medium,
        price=price,
        bands=bands,
        none=none,
        area=area,
        factor=factor,
        vat=vat,
        floor=lowest,
        cap=highest,
        standing=standing,
        standing_per=standing_per,
        calendar=calendar,
        kwh_per_m3=kwh_per_m3,
    )
    today = datetime.now(UTC).date()
    days = None if calendar is None else public_holidays(calendar, instant, today)

    async def work(conn: asyncpg.Connection) -> list[Tariff]:
        await _require_feed(conn, fid, feed_id)
        await store_tariff(conn, fid, medium, instant, terms, days)
        return await tariffs_of_feed(conn, fid)

    emit(run_in_transaction(settings.database, work))


@tariffs.command("list")
@click.argument("feed_id")
@click.pass_obj
def list_tariffs(settings: Settings, feed_id: str) -> None:
    """List the feed's tariff periods with their bands."""
    fid = parse_id(feed_id, "feed")

    async def work(conn: asyncpg.Connection) -> list[Tariff]:
        await _require_feed(conn, fid, feed_id)
        return await tariffs_of_feed(conn, fid)

    emit(run_in_transaction(settings.database, work))


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
    # At most 31 days, as an import interval: a larger figure is a typo, never a price slot.
    type=click.IntRange(min=1, max=31 * 24 * 60),
    help="A CSV's slot length: a row's slot ends at the next row's start, at most this long "
    "after its own (beyond: no price). Default: the length of the area's slot it replaces, "
    "else the file's shortest gap between rows.",
)
@click.option(
    "--sequence",
    type=click.IntRange(min=1),
    help="An ENTSO-E document's classification sequence to take (DE-LU, AT: 1 SDAC, 2 EXAA); "
    "needed when the document holds several.",
)
@click.pass_obj
def import_prices(
    settings: Settings,
    area: str,
    path: str,
    kind: str,
    per: str | None,
    slot_minutes: int | None,
    sequence: int | None,
) -> None:
    """Set an area's prices from a file, all or nothing; prints what changed."""
    checked_text(area, "area")
    file = parse_prices(
        _read(path),
        kind=kind,
        per=per,
        slot_minutes=slot_minutes,
        currency=settings.billing.currency,
        sequence=sequence,
    )

    async def work(conn: asyncpg.Connection) -> dict[str, object]:
        slots = file.slots(await _replaced(conn, area, file.unsized()))
        ranges = [asyncpg.Range(s.start, s.end) for s in slots]
        try:
            changed = await conn.fetchval(
                queries.SET_PRICES, area, ranges, [s.price for s in slots]
            )
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
    start, end = parse_instant(since, "--from"), parse_instant(until, "--to")
    if start >= end:
        raise InvalidInput("--from must be before --to")

    async def work(conn: asyncpg.Connection) -> list[SlotPrice]:
        if await conn.fetchval(queries.AREA_EXISTS, area) is None:
            raise NotFound(f"no price area {area!r}")
        rows = await conn.fetch(queries.PRICES_OF_AREA, area, start, end)
        return [SlotPrice(r["start"].isoformat(), r["end"].isoformat(), r["price"]) for r in rows]

    emit(run_in_transaction(settings.database, work))


async def _replaced(
    conn: asyncpg.Connection, area: str, starts: list[datetime]
) -> dict[datetime, timedelta]:
    """The lengths of the area's stored slots that start at ``starts``, by their start."""
    if not starts:
        return {}
    await conn.execute(queries.LOCK_AREA, area)
    rows = await conn.fetch(queries.REPLACED_SLOTS, area, starts, starts[0], starts[-1])
    return {row["start"]: row["length"] for row in rows}


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


@click.group("contracts", cls=CommandGroup)
def contracts() -> None:
    """The cluster's catalogue of contracts, as a supplier publishes its offers."""


@contracts.command("add")
@click.argument("name")
@click.option(
    "--file",
    "path",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="The contract as JSON: the options of tariffs set as fields, and an export part "
    "(docs/billing.md#contracts).",
)
@click.pass_obj
def add_contract(settings: Settings, name: str, path: Path) -> None:
    """Add a contract to the catalogue (or replace the one of that name); prints the catalogue."""
    checked_slug(name, "NAME")
    if path.stat().st_size > MAX_CONTRACT_BYTES:
        raise InvalidInput(f"{path}: a contract is at most {MAX_CONTRACT_BYTES:,} bytes")
    contract = decode_contract(path.read_bytes())
    checked_contract(contract)

    async def work(conn: asyncpg.Connection) -> list[CatalogueEntry]:
        await conn.execute(queries.ADD_CONTRACT, name, msgspec.json.encode(contract).decode())
        return await catalogue(conn)

    emit(run_in_transaction(settings.database, work))


@contracts.command("list")
@click.pass_obj
def list_contracts(settings: Settings) -> None:
    """List the catalogue's contracts."""
    emit(run_in_transaction(settings.database, catalogue))


@contracts.command("remove")
@click.argument("name")
@click.pass_obj
def remove_contract(settings: Settings, name: str) -> None:
    """Remove a contract from the catalogue; prints the catalogue."""

    async def work(conn: asyncpg.Connection) -> list[CatalogueEntry]:
        if await conn.fetchval(queries.REMOVE_CONTRACT, name) is None:
            raise NotFound(f"no contract {name[:64]!r}")
        return await catalogue(conn)

    emit(run_in_transaction(settings.database, work))


GROUPS: list[click.Command] = [tariffs, prices, contracts]
