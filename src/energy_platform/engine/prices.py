"""Price files: a market area's prices per slot as an operator imports them.

A file is CSV, one ``start,price`` row a line (an optional ``start,price`` header, blank lines
ignored). Each row's slot ends where the next row's starts; the last one is as long as the gap
before it (or ``slot_minutes`` when given: a file of one row needs it). Everything is checked
here, before the database sees it, and the first fault refuses the whole file with its line
number: an import changes all of an area's prices or none.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta

import msgspec

from energy_platform.core.errors import InvalidInput

PER: dict[str, float] = {"kWh": 1.0, "MWh": 1000.0}
"""What a file's prices are per, and what they are divided by to be per kWh."""

SLOT_STEP = timedelta(seconds=90)
"""Slots are whole buckets long (the check of ``cluster.prices.slot``)."""

HEADER = ("start", "price")
# A decimal number as exchanges write them; float() alone would also take "1_000" and
# surrounding blanks of any kind.
DECIMAL = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")
TIME_LENGTH = 64


class Slot(msgspec.Struct, frozen=True):
    """One slot's price."""

    start: datetime
    """Inclusive, in UTC."""
    end: datetime
    """Exclusive, in UTC."""
    price: float
    """Per kWh in the cost streams' currency; may be negative."""


class _Row(msgspec.Struct, frozen=True):
    line: int
    start: datetime
    price: float


def parse_csv(text: str, *, per: str = "kWh", slot_minutes: int | None = None) -> list[Slot]:
    """The slots of a price file, in order; ``InvalidInput`` naming the line of the first
    fault otherwise."""
    divisor = PER[per]
    rows: list[_Row] = []
    for number, raw in enumerate(text.lstrip("\ufeff").split("\n"), start=1):
        line = raw.strip()
        if not line:
            continue
        fields = tuple(field.strip() for field in line.split(","))
        if not rows and tuple(f.lower() for f in fields) == HEADER:
            continue
        if len(fields) != 2:
            raise _fault(number, f"{_shown(line)} is not start,price")
        start = _instant(number, fields[0])
        if rows and start <= rows[-1].start:
            raise _fault(
                number,
                f"{fields[0]} is not after the previous row's start: times must increase "
                "strictly (slots would overlap)",
            )
        rows.append(_Row(number, start, _price(number, fields[1]) / divisor))
    if not rows:
        raise InvalidInput("the file holds no prices")
    return _slots(rows, slot_minutes)


def _slots(rows: list[_Row], slot_minutes: int | None) -> list[Slot]:
    if slot_minutes is None and len(rows) < 2:
        raise _fault(
            rows[0].line, "a single row says nothing of its slot's length: give --slot-minutes"
        )
    ends = [row.start for row in rows[1:]]
    try:
        last = (
            rows[-1].start - rows[-2].start
            if slot_minutes is None
            else timedelta(minutes=slot_minutes)
        )
        ends.append(rows[-1].start + last)
    except OverflowError:
        raise _fault(rows[-1].line, "the last slot ends after the year 9999") from None
    slots = [Slot(row.start, end, row.price) for row, end in zip(rows, ends, strict=True)]
    for row, slot in zip(rows, slots, strict=True):
        length = slot.end - slot.start
        if length <= timedelta(0) or length % SLOT_STEP:
            raise _fault(
                row.line,
                f"its slot is {length.total_seconds():g} s long, not a multiple of 90 s",
            )
    return slots


def _instant(number: int, text: str) -> datetime:
    if len(text) > TIME_LENGTH or not text.isascii():
        raise _fault(number, f"{_shown(text)} is not an ISO 8601 time")
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise _fault(number, f"{_shown(text)} is not an ISO 8601 time") from None
    if parsed.tzinfo is None:
        # A local time without an offset is ambiguous on the night clocks go back.
        raise _fault(number, f"{_shown(text)} has no UTC offset (add Z or +01:00, say)")
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        raise _fault(number, f"{_shown(text)} is outside the years 1 to 9999 in UTC") from None


def _price(number: int, text: str) -> float:
    try:
        price = float(text)
    except ValueError:
        raise _fault(number, f"{_shown(text)} is not a price") from None
    if not math.isfinite(price):  # NaN, inf, and 1e999 alike
        raise _fault(number, f"{_shown(text)} is not a finite price")
    if not DECIMAL.match(text):
        raise _fault(number, f"{_shown(text)} is not a price")
    return price


def _shown(text: str) -> str:
    return repr(text[:40])


def _fault(number: int, what: str) -> InvalidInput:
    return InvalidInput(f"line {number}: {what}")
