"""The data API's wire format: the spec's resource objects, field for field."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from energy_platform.billing.schemas import BillMedium

StreamType = Literal["raw", "processed", "system"]
Quantity = Literal["consumption", "export", "cost", "credit", "mean"]
# Described in the OpenAPI document too: a dashboard charts a stream by what it measures.
QUANTITY = msgspec.Meta(
    description="What the points are: consumption (energy or volume used) or export (energy fed"
    " in) per bucket; cost of the consumption or credit for the export per bucket, the unit"
    " being a currency; or mean (a temperature's time-weighted mean over the bucket)."
)
REGISTER = msgspec.Meta(
    description="Present only for an energy register's stream (OBIS 1-0:1.8.n or 2.8.n): n."
)
# The old name of `register`, answered beside it with the same value until clients have moved.
# Litestar copies the "extra" of a field's JSON schema into its OpenAPI schema: deprecated.
TARIFF = msgspec.Meta(
    description="Deprecated: `register` under its old name (the same value).",
    extra_json_schema={"extra": {"deprecated": True}},
)

SUBMETER = msgspec.Meta(
    description="A consumption stream that meters part of another (a heat pump behind the main"
    " meter): a bill lists it apart and does not add it to the total."
)

MAIN = msgspec.Meta(
    description="A consumption total that is its medium's main meter (the utility's): where a"
    " medium has one, a bill adds only main meters and lists the other totals as sub-meters."
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
    medium: Literal["power", "gas", "water", "heat", "temperature"] | None
    unit: str
    valid_from: str | None
    valid_to: str | None
    submeter: Annotated[bool, SUBMETER] = False
    main: Annotated[bool, MAIN] = False


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
    register: Annotated[int, REGISTER] | msgspec.UnsetType = msgspec.UNSET
    tariff: Annotated[int, TARIFF] | msgspec.UnsetType = msgspec.UNSET


class SystemStream(msgspec.Struct):
    id: str
    type: Literal["system"]
    channel: int


Stream = RawStream | ProcessedStream | SystemStream


# The overview (api/overview.py, docs/api.md#overview): one answer a dashboard draws from.
OverviewPeriod = Literal["day", "week", "month", "year"]
OverviewMedium = BillMedium  # a line of the overview is a line of the bill


class OverviewNow(msgspec.Struct):
    """The newest values: each null when unknown."""

    power_w: float | None
    """Electricity used: the newest 90 s bucket of each counted meter (last 15 minutes), in W."""
    export_w: float | None
    """Electricity fed in, likewise, in W."""
    price: float | None
    """What a kWh costs now (the feed's electricity price curve)."""
    at: int | None
    """Unix seconds: the start of the newest bucket behind power_w and export_w."""


class OverviewLine(msgspec.Struct):
    """A bill's line, money first: what the medium's energy cost, or minus what export earned."""

    medium: OverviewMedium
    quantity: float
    unit: Literal["kWh", "m³"]
    money: float
    """Energy cost, or minus the export credit; the fixed charges are the period's `standing`."""


class OverviewSoFar(msgspec.Struct):
    """The bill of the period's days (GET /feeds/{id}/bill), days still ahead not charged."""

    lines: list[OverviewLine]
    standing: float
    """Fixed charges: each day that has begun, once."""
    total: float
    """The lines' money plus the standing charges: the bill's total."""
    vat: float
    """The VAT included in the total."""
    average_price: float | None
    """What a kWh of electricity cost on average (the power line's money / its kWh)."""
    market_average_price: float | None
    """The time-weighted mean of the feed's electricity price curve over the period so far:
    what a flat load would have paid per kWh."""


class OverviewProjection(msgspec.Struct):
    total: float | None
    """The total the period is heading for; null once it is over, or before it began."""


class OverviewBucket(msgspec.Struct):
    """A local hour (day), day (week, month) or month (year) with data."""

    start: int
    """Unix seconds: the bucket's local start."""
    consumption: dict[str, float]
    """Per medium (power, gas, water) the bill's quantity (kWh, m³); a medium without data is
    absent."""
    export: float | None
    """kWh fed in; null without export data."""
    money: float
    """Energy cost minus export credit (fixed charges are not in buckets)."""
    meters: dict[str, float]
    """Per stream id of `meters`: its quantity, sub-meters included (for stacked bars)."""


class OverviewCompare(msgspec.Struct):
    """The period compared with, whole: its bill and its buckets (drawn as a ghost)."""

    from_: str = msgspec.field(name="from")
    to: str
    total: float
    lines: list[OverviewLine]
    standing: float
    buckets: list[OverviewBucket]


class OverviewMeter(msgspec.Struct):
    """A stream the overview counts (a channel total) or lists (a sub-meter)."""

    stream: str
    title: str
    medium: OverviewMedium
    submeter: bool
    """Now configured as a sub-meter: part of another meter's consumption, added to no line."""


class Overview(msgspec.Struct):
    """A feed's day, week, month or year at a glance (docs/api.md#overview)."""

    feed: str
    period: OverviewPeriod
    from_: str = msgspec.field(name="from")
    to: str
    timezone: str
    currency: str
    now: OverviewNow
    so_far: OverviewSoFar
    projection: OverviewProjection
    compare: OverviewCompare | None
    buckets: list[OverviewBucket]
    baseload_w: float | None
    """Always-on electricity use: the 5th percentile of the night hours' power (local 00:00 to
    05:00), in W; null without night data."""
    coverage: float
    """The share of the period so far that holds data, 0..1."""
    warnings: list[str]
    """The bill's warnings, each naming the command that settles it."""
    meters: list[OverviewMeter]
