"""Tariffs: what a feed pays per kWh or m³ of a medium from an instant on, as bands by local
time of day and kind of day, optionally following a price area's market prices, with VAT, a
floor and a cap (price = clamp((factor x area price + band price) x (1 + vat/100), floor,
cap)), and a standing charge per local day or month (docs/billing.md#tariffs).

Here: the bands as an operator writes them, checked against their bounds (core/bounds.py), a
feed's tariffs as stored (``cluster.tariffs``, ``cluster.tariff_bands``), and setting one
(:func:`set_tariff`: ``cluster.set_tariff``, sql/functions/19_billing_tariffs_and_prices.sql),
which ``admin tariffs set`` and the seeded households (``seeding.household``) both call."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime, time
from typing import TypeVar

import asyncpg
import msgspec

from energy_platform.billing import queries
from energy_platform.billing.holidays import Holidays
from energy_platform.core import bounds
from energy_platform.core.db.pool import Connection
from energy_platform.core.errors import InvalidInput, NotFound

T = TypeVar("T")

MEDIA = ("power", "gas", "water", "heat", "export")
DAY_KINDS = ("weekday", "weekend")
BAND = re.compile(
    r"^(?:(?P<days>weekday|weekend)/)?(?P<hour>[01]\d|2[0-3]):(?P<minute>[0-5]\d)=(?P<price>.+)$"
)


class Band(msgspec.Struct, omit_defaults=True):
    starts: str
    """Local time of day, HH:MM (inclusive)."""
    ends: str
    """Local time of day, HH:MM (exclusive); 24:00 for the last band."""
    price: float
    """Per kWh (power, heat, gas with kwh_per_m3) or m³ (gas, water), before VAT, in the cost
    streams' currency."""
    days: str | msgspec.UnsetType = msgspec.UNSET
    """weekday or weekend (Saturday, Sunday and the tariff's holidays); absent: every day."""


class Tariff(msgspec.Struct, omit_defaults=True):
    """A tariff period as listed. A setting left at its default (no VAT, floor, cap, holidays
    or kWh per m³; charges per day) is absent."""

    medium: str
    valid_from: str | None
    valid_to: str | None
    area: str | None
    """A dynamic tariff's price area (null: the bands alone)."""
    factor: float
    """What the area's price is multiplied by."""
    standing: float
    """Charged once per local day or month (standing_per) in the period, before VAT (0: none)."""
    bands: list[Band]
    vat: float | msgspec.UnsetType = msgspec.UNSET
    """Percent: price = clamp((factor x area price + band price) x (1 + vat/100), floor, cap)."""
    floor: float | msgspec.UnsetType = msgspec.UNSET
    """The lowest price after VAT."""
    cap: float | msgspec.UnsetType = msgspec.UNSET
    """The highest price after VAT."""
    standing_per: str | msgspec.UnsetType = msgspec.UNSET
    """month: the standing charge is per local month."""
    holidays: str | msgspec.UnsetType = msgspec.UNSET
    """Whose public holidays count as weekend days (NL, DE-BY)."""
    holiday_years: list[int] | msgspec.UnsetType = msgspec.UNSET
    """The first and last local year whose holidays are stored with the tariff."""
    kwh_per_m3: float | msgspec.UnsetType = msgspec.UNSET
    """Gas: kWh per m³; the prices are then per kWh."""


Given = str | float | None
"""A term as given: a command line's text, a JSON number, or nothing."""


def option(term: str) -> str:
    """The admin command's name of a term: ``--vat``, ``--kwh-per-m3``."""
    return "--" + term.replace("_", "-")


class Terms(msgspec.Struct, frozen=True):
    """A tariff's terms, checked: what ``cluster.set_tariff`` takes besides the feed, the
    medium and the instant. The one check of ``admin tariffs set`` and of a contract as
    data (issue 61)."""

    bands: list[tuple[str, time, float]]
    """(day kind, local start, price), sorted; none: no tariff."""
    area: str | None
    factor: float
    standing: float
    standing_per: str
    vat: float
    floor: float | None
    cap: float | None
    calendar: str | None
    kwh_per_m3: float | None


def _price(text: str | float, name: str) -> float:
    if isinstance(text, str):
        try:
            price = float(text)
        except ValueError:
            raise InvalidInput(f"{text!r} is not a price", field=name) from None
    else:
        price = float(text)
    if price != price or price in (float("inf"), float("-inf")):
        raise InvalidInput(f"{text!r} is not a finite price", field=name)
    return price


def amount(text: str | float, bound: bounds.Bound, option: str) -> float:
    """A price, factor or standing charge as given to ``option``, within its bound."""
    return bounds.check(bound, _price(text, option), option)


def positive(text: str | float, bound: bounds.Bound, option: str, zero: bool = False) -> float:
    """A VAT rate (``zero``: 0 allowed) or a kWh per m³ given to ``option``, within its bound."""
    value = amount(text, bound, option)
    if value < 0 or (value == 0 and not zero):
        raise InvalidInput(
            f"{option}: {text!r} must be {'at least 0' if zero else 'above 0'}", field=option
        )
    return value


def parse_bands(
    price: Given,
    bands: Sequence[str],
    none: bool,
    area: str | None,
    name: Callable[[str], str] = option,
) -> list[tuple[str, time, float]]:
    """The bands (day kind, local start, price) of ``--price``, ``--band``s or ``--none`` (no
    bands: no tariff); an area's tariff without either has one band of 0. A band without a day
    kind holds on every day; with one, weekdays and weekends must each have a band. ``name``
    names a term in a message (``--band`` for the command, ``bands`` for a contract)."""
    if none and area is not None:
        raise InvalidInput(
            f"{name('none')} sets no tariff: it takes no {name('area')}", field=name("area")
        )
    if area is not None and price is None and not bands:
        return [("all", time(0, 0), 0.0)]  # the area's prices alone
    if sum((price is not None, bool(bands), none)) != 1:
        ways = [f"{name('price')}", f"{name('band')} (repeatable)", name("none")]
        named = [way for way in ways if way]  # a contract has no --none
        raise InvalidInput(
            f"give exactly one of {', '.join(named[:-1])} or {named[-1]}", field=name("price")
        )
    if none:
        return []
    if price is not None:
        return [("all", time(0, 0), amount(price, bounds.PRICE, name("price")))]
    parsed: dict[tuple[str, time], float] = {}
    for band in bands:
        match = BAND.match(band)
        if match is None:
            raise InvalidInput(
                f"{band!r}: a band looks like 06:00=0.25 or weekend/06:00=0.25 "
                "([weekday/|weekend/]local start=price)",
                field=name("band"),
            )
        days, start = match["days"] or "all", time(int(match["hour"]), int(match["minute"]))
        kinds = DAY_KINDS if days == "all" else (days,)
        for kind in kinds:
            if any((other, start) in parsed for other in (kind, "all")):
                on = "" if days == "all" else f" on {kind}s"
                raise InvalidInput(f"two bands start at {start:%H:%M}{on}", field=name("band"))
        parsed[days, start] = amount(
            match["price"], bounds.PRICE, f"{name('band')} {band.split('=')[0]}"
        )
    given = {days for days, _ in parsed}
    if given & set(DAY_KINDS) and "all" not in given and given != set(DAY_KINDS):
        (missing,) = set(DAY_KINDS) - given
        raise InvalidInput(
            f"{missing}s have no band: give {missing}/ bands or bands without a day kind",
            field=name("band"),
        )
    return sorted((days, start, value) for (days, start), value in parsed.items())


def tariff_terms(
    medium: str,
    *,
    price: Given = None,
    bands: Sequence[str] = (),
    none: bool = False,
    area: str | None = None,
    factor: Given = None,
    vat: Given = None,
    floor: Given = None,
    cap: Given = None,
    standing: Given = None,
    standing_per: str = "day",
    calendar: str | None = None,
    kwh_per_m3: Given = None,
    name: Callable[[str], str] = option,
) -> Terms:
    """A tariff's terms as given, checked against each other and their bounds, else 400
    naming the term (``name``: how the caller calls it)."""
    if factor is not None and area is None:
        raise InvalidInput(
            f"{name('factor')} multiplies an area's prices: give {name('area')} too",
            field=name("factor"),
        )
    given = {
        "standing": standing,
        "vat": vat,
        "floor": floor,
        "cap": cap,
        "holidays": calendar,
        "kwh_per_m3": kwh_per_m3,
    }
    if none and (taken := [term for term, value in given.items() if value is not None]):
        raise InvalidInput(
            f"{name('none')} sets no tariff: it takes no {name(taken[0])}", field=name(taken[0])
        )
    if kwh_per_m3 is not None and medium != "gas":
        raise InvalidInput(
            f"{name('kwh_per_m3')} prices gas per kWh: only with {name('medium')} gas",
            field=name("kwh_per_m3"),
        )
    parsed = parse_bands(price, bands, none, area, name)
    multiplier = 1.0 if factor is None else amount(factor, bounds.FACTOR, name("factor"))
    charge = 0.0 if standing is None else amount(standing, bounds.STANDING, name("standing"))
    rate = 0.0 if vat is None else positive(vat, bounds.VAT, name("vat"), zero=True)
    lowest = None if floor is None else amount(floor, bounds.PRICE, name("floor"))
    highest = None if cap is None else amount(cap, bounds.PRICE, name("cap"))
    if lowest is not None and highest is not None and lowest > highest:
        raise InvalidInput(
            f"{name('floor')} {floor} is above {name('cap')} {cap}", field=name("floor")
        )
    per_kwh = (
        None if kwh_per_m3 is None else positive(kwh_per_m3, bounds.KWH_PER_M3, name("kwh_per_m3"))
    )
    if calendar is not None and all(kind == "all" for kind, _, _ in parsed):
        raise InvalidInput(
            f"{name('holidays')} makes public holidays weekend days: give weekday/ or weekend/ "
            "bands",
            field=name("holidays"),
        )
    return Terms(
        parsed, area, multiplier, charge, standing_per, rate, lowest, highest, calendar, per_kwh
    )


async def set_tariff(
    conn: Connection,
    feed_id: int,
    medium: str,
    since: datetime | None,
    terms: Terms,
    days: Holidays | None,
) -> None:
    """Set the feed's tariff for ``medium`` from ``since`` (None: from the beginning of time)
    to ``terms``, with ``days``, their calendar's public holidays (``public_holidays``); 404
    when the tariff's area has no prices. The feed is the caller's to check."""
    bands = terms.bands or None
    try:
        await conn.execute(
            queries.SET_TARIFF,
            feed_id,
            medium,
            since,
            None if bands is None else [start for _, start, _ in bands],
            None if bands is None else [value for _, _, value in bands],
            terms.area,
            terms.factor,
            terms.standing,
            None if bands is None else [kind for kind, _, _ in bands],
            terms.vat,
            terms.floor,
            terms.cap,
            terms.standing_per,
            terms.kwh_per_m3,
            terms.calendar,
            None if days is None else days.days,
            None if days is None else days.names,
            None if days is None else asyncpg.Range(days.first, days.last + 1),
        )
    except asyncpg.NoDataFoundError:  # a feed checked by the caller: it is the area
        raise NotFound(
            f"price area {terms.area!r} has no prices: import them first (admin prices import)"
        ) from None


async def tariffs_of_feed(conn: asyncpg.Connection, feed_id: int) -> list[Tariff]:
    """The feed's tariff periods, per medium and in time order, each with its bands."""
    grouped: dict[int, Tariff] = {}
    for row in await conn.fetch(queries.TARIFFS_OF_FEED, feed_id):
        tariff = grouped.get(row["id"])
        if tariff is None:
            years = row["holiday_years"]
            tariff = grouped[row["id"]] = Tariff(
                row["medium"],
                _iso(row["valid_from"]),
                _iso(row["valid_to"]),
                row["area"],
                row["factor"],
                row["standing"],
                [],
                vat=_given(row["vat"], 0),
                floor=_given(row["floor"]),
                cap=_given(row["cap"]),
                standing_per=_given(row["standing_per"], "day"),
                holidays=_given(row["holidays"]),
                holiday_years=msgspec.UNSET if years is None else [years.lower, years.upper - 1],
                kwh_per_m3=_given(row["kwh_per_m3"]),
            )
        band = Band(row["starts"], row["ends"], row["price"], _given(row["days"], "all"))
        tariff.bands.append(band)
    return list(grouped.values())


def _given(value: T | None, default: object = None) -> T | msgspec.UnsetType:
    """``value``, or UNSET (not listed) when it is the setting's default."""
    return msgspec.UNSET if value is None or value == default else value


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()
