"""Tariffs: what a feed pays per kWh or m³ of a medium from an instant on, as bands by local
time of day and kind of day, optionally following a price area's market prices, with VAT, a
floor and a cap (price = clamp((factor x area price + band price) x (1 + vat/100), floor,
cap)), and a standing charge per local day or month (docs/billing.md#tariffs).

Here: the bands as an operator writes them, checked against their bounds (core/bounds.py), and
a feed's tariffs as stored (``cluster.tariffs``, ``cluster.tariff_bands``). Setting one is
``cluster.set_tariff`` (sql/functions/19_billing_tariffs_and_prices.sql)."""

from __future__ import annotations

import re
from datetime import datetime, time
from typing import TypeVar

import asyncpg
import msgspec

from energy_platform.billing import queries
from energy_platform.core import bounds
from energy_platform.core.errors import InvalidInput

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


def _price(text: str) -> float:
    try:
        price = float(text)
    except ValueError:
        raise InvalidInput(f"{text!r} is not a price") from None
    if price != price or price in (float("inf"), float("-inf")):
        raise InvalidInput(f"{text!r} is not a finite price")
    return price


def amount(text: str, bound: bounds.Bound, option: str) -> float:
    """A price, factor or standing charge as given to ``option``, within its bound."""
    return bounds.check(bound, _price(text), option)


def positive(text: str, bound: bounds.Bound, option: str, zero: bool = False) -> float:
    """A VAT rate (``zero``: 0 allowed) or a kWh per m³ given to ``option``, within its bound."""
    value = amount(text, bound, option)
    if value < 0 or (value == 0 and not zero):
        raise InvalidInput(f"{option}: {text!r} must be {'at least 0' if zero else 'above 0'}")
    return value


def parse_bands(
    price: str | None, bands: tuple[str, ...], none: bool, area: str | None
) -> list[tuple[str, time, float]]:
    """The bands (day kind, local start, price) of ``--price``, ``--band``s or ``--none`` (no
    bands: no tariff); an area's tariff without either has one band of 0. A band without a day
    kind holds on every day; with one, weekdays and weekends must each have a band."""
    if none and area is not None:
        raise InvalidInput("--none sets no tariff: it takes no --area")
    if area is not None and price is None and not bands:
        return [("all", time(0, 0), 0.0)]  # the area's prices alone
    if sum((price is not None, bool(bands), none)) != 1:
        raise InvalidInput("give exactly one of --price, --band (repeatable) or --none")
    if none:
        return []
    if price is not None:
        return [("all", time(0, 0), amount(price, bounds.PRICE, "--price"))]
    parsed: dict[tuple[str, time], float] = {}
    for band in bands:
        match = BAND.match(band)
        if match is None:
            raise InvalidInput(
                f"{band!r}: a band looks like 06:00=0.25 or weekend/06:00=0.25 "
                "([weekday/|weekend/]local start=price)"
            )
        days, start = match["days"] or "all", time(int(match["hour"]), int(match["minute"]))
        kinds = DAY_KINDS if days == "all" else (days,)
        for kind in kinds:
            if any((other, start) in parsed for other in (kind, "all")):
                on = "" if days == "all" else f" on {kind}s"
                raise InvalidInput(f"two bands start at {start:%H:%M}{on}")
        parsed[days, start] = amount(match["price"], bounds.PRICE, f"--band {band.split('=')[0]}")
    given = {days for days, _ in parsed}
    if given & set(DAY_KINDS) and "all" not in given and given != set(DAY_KINDS):
        (missing,) = set(DAY_KINDS) - given
        raise InvalidInput(
            f"{missing}s have no band: give {missing}/ bands or bands without a day kind"
        )
    return sorted((days, start, value) for (days, start), value in parsed.items())


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
