"""The delivery body (DESIGN: Forwarder) and how a batch is made from the SQL's rows."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Literal
from uuid import UUID

import asyncpg
import msgspec

Mode = Literal["all", "aggregated"]
Method = Literal["LAST", "AVERAGE", "INTEGRAL"]


class DeliveryPoint(msgspec.Struct):
    gateway: str
    """Serial number of the homebase."""
    channel: int
    device: int
    medium: int | None
    """Aggregated INTEGRAL points carry the remapped medium (e.g. 12 -> 22)."""
    index: int | None
    obis: str | None
    method: Method | None
    """How the point was aggregated; null in ``all`` mode."""
    t: int
    """Unix seconds: the measurement time, or the interval's end when aggregated."""
    v: float


class DeliveryBody(msgspec.Struct):
    id: UUID
    """The batch id; also the ``Idempotency-Key`` header. Retries send the same one."""
    from_: int = msgspec.field(name="from")
    """Start of the interval (inclusive), Unix seconds."""
    to: int
    """End of the interval (exclusive), Unix seconds."""
    mode: Mode
    data: list[DeliveryPoint]


class Batch(msgspec.Struct, frozen=True):
    """One pending delivery of one customer, as persisted in forwarder.delivery_state."""

    customer_id: int
    id: UUID
    start: datetime
    end: datetime
    body: bytes
    points: int
    attempt: int
    """1 for the first attempt."""
    url: str
    username: str | None
    password: str | None
    interval_seconds: int
    stored: bool
    """The body is already in the database (an earlier attempt failed)."""

    def __repr__(self) -> str:
        # Batches may end up in tracebacks: the credentials must not.
        return f"Batch(customer_id={self.customer_id}, id={self.id}, attempt={self.attempt})"


def encode(
    batch_id: UUID, start: datetime, end: datetime, mode: Mode, rows: Iterable[asyncpg.Record]
) -> tuple[bytes, int]:
    """The JSON body and its number of points; ``rows`` as ALL_POINTS or AGGREGATED_POINTS
    return them (the customer id first)."""
    data = [DeliveryPoint(r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9]) for r in rows]
    body = DeliveryBody(batch_id, int(start.timestamp()), int(end.timestamp()), mode, data)
    return msgspec.json.encode(body), len(data)
