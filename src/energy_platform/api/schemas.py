"""The data API's wire format: the spec's resource objects, field for field."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

StreamType = Literal["raw", "processed", "system"]
Quantity = Literal["consumption", "export", "cost", "credit", "mean"]
# Described in the OpenAPI document too: a dashboard charts a stream by what it measures.
QUANTITY = msgspec.Meta(
    description="What the points are: consumption (energy or volume used) or export (energy fed"
    " in) per bucket; cost of the consumption or credit for the export per bucket, the unit"
    " being a currency; or mean (a temperature's time-weighted mean over the bucket)."
)
TARIFF = msgspec.Meta(
    description="Present only for a tariff register's stream (OBIS 1-0:1.8.n or 2.8.n): n."
)

SUBMETER = msgspec.Meta(
    description="A consumption stream that meters part of another (a heat pump behind the main"
    " meter): a bill lists it apart and does not add it to the total."
)


class Subscription(msgspec.Struct):
    from_: str = msgspec.field(name="from")
    to: str


class FeedConfig(msgspec.Struct):
    title: str
    timezone: str
    valid_from: str | None
    valid_to: str | None


class Feed(msgspec.Struct):
    id: str
    subscription: Subscription
    configs: list[FeedConfig]


class StreamConfig(msgspec.Struct):
    title: str
    medium: Literal["power", "gas", "water", "temperature"] | None
    unit: str
    valid_from: str | None
    valid_to: str | None
    submeter: Annotated[bool, SUBMETER] = False


class RawStream(msgspec.Struct, omit_defaults=True):
    id: str
    type: Literal["raw"]
    channel: int
    device: int
    medium: int
    index: int | msgspec.UnsetType = msgspec.UNSET
    """Present only when a sensor produces several streams of the same kind (phases 1..3)."""


class ProcessedStream(msgspec.Struct, omit_defaults=True):
    id: str
    type: Literal["processed"]
    channel: int
    combined: bool
    quantity: Annotated[Quantity, QUANTITY]
    configs: list[StreamConfig]
    index: int | msgspec.UnsetType = msgspec.UNSET
    """Present only when a sensor produces several streams of the same kind."""
    tariff: Annotated[int, TARIFF] | msgspec.UnsetType = msgspec.UNSET


class SystemStream(msgspec.Struct):
    id: str
    type: Literal["system"]
    channel: int


Stream = RawStream | ProcessedStream | SystemStream


BillMedium = Literal["power", "gas", "water", "export"]


class BillLine(msgspec.Struct, omit_defaults=True):
    """One medium of a bill: what was used (or fed in) and what it costs (or earns)."""

    medium: BillMedium
    quantity: float
    """kWh for power and export, m³ for gas and water."""
    unit: Literal["kWh", "m³"]
    standing: float
    """Daily charges: each day of the range that has begun, once."""
    total: float
    """energy + standing, or standing - credit for export."""
    energy: float | msgspec.UnsetType = msgspec.UNSET
    """What the consumption costs (every medium but export)."""
    credit: float | msgspec.UnsetType = msgspec.UNSET
    """What the export earns (export only)."""


class Submeter(msgspec.Struct):
    """A stream marked as a sub-meter: part of a line's consumption, shown apart."""

    stream: str
    title: str
    medium: Literal["power", "gas", "water"]
    quantity: float
    unit: Literal["kWh", "m³"]
    energy: float


class Bill(msgspec.Struct):
    """A feed's bill over local dates, both inclusive (docs/data-api.md#the-bill)."""

    feed: str
    from_: str = msgspec.field(name="from")
    to: str
    timezone: str
    currency: str
    complete: bool
    """False while the range holds a day not yet over or a bucket without a price."""
    total: float
    projected_total: float | None
    """The total of the days already over, scaled to the range's days; null once the range is
    over, or before its first day is."""
    lines: list[BillLine]
    submeters: list[Submeter]


class PriceStretch(msgspec.Struct):
    """A stretch of time at one price."""

    start: int
    """Unix seconds (inclusive)."""
    end: int
    """Unix seconds (exclusive)."""
    price: float
    """Per kWh (power, export) or m³ (gas, water) in the currency."""


class FeedPrices(msgspec.Struct):
    """What a feed pays per unit of a medium (earns, for export) over local dates."""

    feed: str
    medium: BillMedium
    from_: str = msgspec.field(name="from")
    to: str
    timezone: str
    currency: str
    prices: list[PriceStretch]
    """In time order; a gap is time without a tariff or without a market price yet."""
