"""Billing's wire format on the data API: a feed's bill, its price curve, what-if and its
overview."""

from __future__ import annotations

from typing import Literal

import msgspec

BillMedium = Literal["power", "gas", "water", "heat", "export"]


class BillLine(msgspec.Struct, omit_defaults=True):
    """One medium of a bill: what was used (or fed in) and what it costs (or earns)."""

    medium: BillMedium
    quantity: float
    """kWh for power, heat and export, m³ for gas and water."""
    unit: Literal["kWh", "m³"]
    standing: float
    """Standing charges with their VAT: each day of the range that has begun once, or its share
    of a monthly charge (1 / its month's days)."""
    total: float
    """energy + standing, or standing - credit for export."""
    vat: float
    """The VAT included in total (each day's at the rate of the tariff holding its start)."""
    energy: float | msgspec.UnsetType = msgspec.UNSET
    """What the consumption costs (every medium but export)."""
    credit: float | msgspec.UnsetType = msgspec.UNSET
    """What the export earns (export only)."""
    kwh: float | msgspec.UnsetType = msgspec.UNSET
    """Gas on a tariff priced per kWh: the m³ times the tariff's kWh per m³ (each day's at the
    factor of the tariff holding its start)."""


class Submeter(msgspec.Struct):
    """A stream marked as a sub-meter, or a total beside its medium's main meter: part of a
    line's consumption, shown apart."""

    stream: str
    title: str
    medium: Literal["power", "gas", "water", "heat"]
    quantity: float
    unit: Literal["kWh", "m³"]
    energy: float


class Bill(msgspec.Struct):
    """A feed's bill over local dates, both inclusive (docs/billing.md#the-bill)."""

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
    vat: float
    """The VAT included in total: the sum of the lines' vat."""
    warnings: list[str]
    """Sentences on what may make the bill wrong, empty when nothing does: a medium whose
    several meters are added up with none marked as the main meter, naming their channels and
    the command that settles it."""


class PriceStretch(msgspec.Struct):
    """A stretch of time at one price."""

    start: int
    """Unix seconds (inclusive)."""
    end: int
    """Unix seconds (exclusive)."""
    price: float
    """Per kWh (power, heat, export; gas on a tariff with kWh per m³) or m³ (gas, water) in
    the currency, after VAT, floor and cap."""


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


PlanStatus = Literal["ok", "partial_prices", "infeasible"]
PlanMode = Literal["contiguous", "split"]
PlanBasis = Literal["all_in", "market"]


class PlanBlock(msgspec.Struct):
    """A run of consecutive quarter hours the load runs in."""

    start: str
    """ISO 8601 in the feed's local time, with its offset then."""
    end: str
    start_utc: str
    end_utc: str
    kwh: float
    cost: float


class PlanAlternative(msgspec.Struct):
    """Another start of a contiguous load, apart from the plan's block and the other ones."""

    start: str
    start_utc: str
    cost: float


class PlanSlot(msgspec.Struct):
    """A quarter hour of the window and its price; null where none is known."""

    start: int
    """Unix seconds; the quarter ends 900 s later."""
    price: float | None
    kwh: float
    """What the plan runs in it (0: nothing)."""


class PlanWindow(msgspec.Struct):
    """A run of quarter hours whose price is below zero."""

    start: str
    end: str
    start_utc: str
    end_utc: str
    lowest_price: float


class Plan(msgspec.Struct):
    """When to run a load: the cheapest quarter hours of a window (docs/api.md#plan)."""

    feed: str
    timezone: str
    currency: str
    basis: PlanBasis
    mode: PlanMode
    status: PlanStatus
    """ok; partial_prices: the window runs past the prices known yet, planned within them;
    infeasible: no quarters of the window can hold the load."""
    earliest: str
    deadline: str
    prices_known_until: str | None
    """Where the known prices end (local time); null: known through the whole window."""
    load_kwh: float
    planned_kwh: float
    """What the plan runs: less than load_kwh only where max_price leaves too few quarters."""
    blocks: list[PlanBlock]
    cost: float | None
    cost_if_started_now: float | None
    """The load run at once from the window's first quarter; null where it cannot."""
    saving: float | None
    """cost_if_started_now - cost."""
    worst_cost: float | None
    """The dearest way the same load could run in the window, with the same shape."""
    alternatives: list[PlanAlternative]
    slots: list[PlanSlot]
    negative_windows: list[PlanWindow] | msgspec.UnsetType = msgspec.UNSET
    """With negative=true: the window's runs of quarters priced below zero."""
    note: str = (
        "The load is planned on the prices of each quarter hour; what else the household "
        "runs meanwhile is not modelled."
    )


class WhatIfMonth(msgspec.Struct):
    """A local month (of the range) of a contract's replay."""

    month: str
    """YYYY-MM."""
    quantity: float
    """What the bill adds for the medium: kWh (power, heat) or m³ (gas, water)."""
    export: float
    """kWh fed in."""
    energy: float
    """What the quantity costs, VAT included."""
    standing: float
    """Standing charges of the days begun, VAT included (the export part's too)."""
    credit: float
    """What the export earns."""
    vat: float
    """The VAT included in total."""
    total: float
    """energy + standing - credit."""
    average_price: float | None
    """energy / quantity; null without consumption."""
    coverage: float
    """The share of the month's time (of the range) with measured buckets: a month with gaps
    is never scaled up."""
    complete: bool
    """False while a day is not over, or where a bucket with energy had no price."""
    market_average_price: float | None = None
    """A contract on an area: the area's price over the month, weighted by time."""
    load_shape_factor: float | None = None
    """The area's price weighted by the household's consumption / market_average_price."""


class WhatIfContract(msgspec.Struct, omit_defaults=True):
    """One contract replayed over the household's own buckets."""

    name: str
    """``current`` (the feed's own tariffs), a catalogue name, or ``contracts[i]``."""
    months: list[WhatIfMonth]
    total: float
    difference: float
    """total - the current contract's total."""
    rank: int
    """1: the cheapest."""
    complete: bool
    market_average_price: float | None = None
    """A contract on an area: over the range, weighted by time."""
    load_shape_factor: float | None = None
    break_even: float | None = None
    """The cheapest contract, when cheaper than the current one: the extra markup per kWh (or
    m³), before VAT, at which it would cost as much as the current one."""


class WhatIf(msgspec.Struct):
    """The household's own buckets replayed through contracts (docs/billing.md#what-if)."""

    feed: str
    from_: str = msgspec.field(name="from")
    to: str
    timezone: str
    currency: str
    medium: BillMedium
    contracts: list[WhatIfContract]
    """The current contract first, then each asked, in the order asked."""
    note: str = (
        "The household's load is replayed as it was measured: no shifting of load to cheaper "
        "hours is modelled."
    )


# The overview (overview.py, docs/api.md#overview): one answer a dashboard draws from.
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
