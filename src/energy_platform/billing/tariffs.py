"""Tariffs: what a feed pays per kWh or m³ of a medium from an instant on, as bands by local
time of day, optionally following a price area's market prices (price = factor x the area's
price + the band's price), with a standing charge per local day (docs/billing.md#tariffs).

Here: the bands as an operator writes them, checked against their bounds (core/bounds.py), and
a feed's tariffs as stored (``cluster.tariffs``, ``cluster.tariff_bands``). Setting one is
``cluster.set_tariff`` (sql/functions/19_billing_tariffs.sql)."""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import datetime, time

import asyncpg
import msgspec

from energy_platform.billing import queries
from energy_platform.core import bounds
from energy_platform.core.errors import InvalidInput

MEDIA = ("power", "gas", "water", "export")
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


def amount(text: str, bound: bounds.Bound, option: str) -> float:
    """A price, factor or standing charge as given to ``option``, within its bound."""
    return bounds.check(bound, _price(text), option)


def parse_bands(
    price: str | None, bands: tuple[str, ...], none: bool, area: str | None
) -> list[tuple[time, float]]:
    """The bands (local start, price) of ``--price``, ``--band``s or ``--none`` (no bands: no
    tariff); an area's tariff without either has one band of 0."""
    if none and area is not None:
        raise InvalidInput("--none sets no tariff: it takes no --area")
    if area is not None and price is None and not bands:
        return [(time(0, 0), 0.0)]  # the area's prices alone
    if sum((price is not None, bool(bands), none)) != 1:
        raise InvalidInput("give exactly one of --price, --band (repeatable) or --none")
    if none:
        return []
    if price is not None:
        return [(time(0, 0), amount(price, bounds.PRICE, "--price"))]
    parsed: dict[time, float] = {}
    for band in bands:
        match = BAND.match(band)
        if match is None:
            raise InvalidInput(f"{band!r}: a band looks like 06:00=0.25 (local start=price)")
        start = time(int(match["hour"]), int(match["minute"]))
        if start in parsed:
            raise InvalidInput(f"two bands start at {start:%H:%M}")
        parsed[start] = amount(match["price"], bounds.PRICE, f"--band {start:%H:%M}")
    return sorted(parsed.items())


async def tariffs_of_feed(conn: asyncpg.Connection, feed_id: int) -> list[Tariff]:
    """The feed's tariff periods, per medium and in time order, each with its bands."""
    Period = tuple[str, datetime | None, datetime | None, str | None, float, float]
    grouped: dict[Period, list[Band]] = defaultdict(list)
    for row in await conn.fetch(queries.TARIFFS_OF_FEED, feed_id):
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
