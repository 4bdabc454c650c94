"""The data API's wire format: the spec's resource objects, field for field."""

from __future__ import annotations

from typing import Literal

import msgspec

StreamType = Literal["raw", "processed", "system"]


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
    configs: list[StreamConfig]
    index: int | msgspec.UnsetType = msgspec.UNSET
    """Present only when a sensor produces several streams of the same kind."""


class SystemStream(msgspec.Struct):
    id: str
    type: Literal["system"]
    channel: int


Stream = RawStream | ProcessedStream | SystemStream
