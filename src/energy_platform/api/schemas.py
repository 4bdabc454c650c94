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
