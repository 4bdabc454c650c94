"""Price files: a market area's prices per slot as an operator imports them.

Two formats. CSV: one ``start,price`` row a line (an optional ``start,price`` header, blank
lines ignored); each row's slot ends where the next row's starts, but never later than the slot
length after its own start: ``slot_minutes`` when given, else the length of the area's stored
slot it replaces, else the file's shortest gap between rows. What lies beyond is a gap without a
price, never the price before it (``PriceFile.slots``). ENTSO-E: the Transparency Platform's
day-ahead price document (``Publication_MarketDocument``, type A44), whose Periods say their own
slots, of one classification sequence. Everything is checked here, before the database sees it
(prices per kWh against their bound, core/bounds.py), and the first fault refuses the whole
file saying where (a CSV line, an XML element): an import changes all of an area's prices or
none.
"""

from __future__ import annotations

import itertools
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

import msgspec

from energy_platform.core import bounds
from energy_platform.core.errors import InvalidInput

PER: dict[str, float] = {"kWh": 1.0, "MWh": 1000.0}
"""What a CSV's prices are per, and what they are divided by to be per kWh."""

FORMATS = ("auto", "csv", "entsoe")
"""``auto`` reads a file whose first character (after blanks) is ``<`` as ENTSO-E, else CSV."""

MAX_FILE_BYTES = 10_000_000
"""The largest price file read: a year of quarter hours is about 1.2 MB as CSV and 4 MB as an
ENTSO-E document."""

SLOT_STEP = timedelta(seconds=90)
"""Slots are whole buckets long (the check of ``cluster.prices.slot``)."""

HEADER = ("start", "price")
# A decimal number as exchanges write them; float() alone would also take "1_000" and
# surrounding blanks of any kind.
DECIMAL = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")
TIME_LENGTH = 64

ENTSOE_MAX_SLOTS = 100_000
"""Slots one ENTSO-E document may hold: over two years of quarter hours (ENTSO-E's API answers a
year a request at most). A Period's timeInterval and resolution alone say how many slots it has,
so without a bound a document of a few lines could ask for billions."""
ENTSOE_MWH = 1000.0
"""An ENTSO-E price is per MWh; slots are per kWh."""
# ENTSO-E's curve types: A01 gives every position; A03 omits a Point whose price is the
# previous one's, which then holds on. A series without curveType is read as A01, the stricter:
# a position it lacks is refused rather than guessed.
CURVE_FILLS = {"A01": False, "A03": True}
RESOLUTION = re.compile(r"^PT(?:(?P<hours>\d{1,4})H)?(?:(?P<minutes>\d{1,6})M)?$")
POSITION = re.compile(r"^\d{1,9}$")
SEQUENCE = "classificationSequence_AttributeInstanceComponent.position"
"""Which of an area's publications a TimeSeries is: DE-LU and AT give SDAC's prices as 1 and
EXAA's as 2, for the same slots."""
# A DTD could declare entities that expand without bound or read local files; a price document
# has none, so one anywhere refuses the file before the parser sees it.
DOCTYPE = re.compile(r"<!DOCTYPE", re.IGNORECASE)


class Slot(msgspec.Struct, frozen=True):
    """One slot's price."""

    start: datetime
    """Inclusive, in UTC."""
    end: datetime
    """Exclusive, in UTC."""
    price: float
    """Per kWh in the cost streams' currency; may be negative."""


class PriceRow(msgspec.Struct, frozen=True):
    """A price as a file gives it: from its start on, for at most ``length``."""

    where: str
    """Where the file says it (``line 3``, ``TimeSeries 1 > Period 1, position 7``)."""
    start: datetime
    price: float
    length: timedelta | None
    """The longest its slot can be by the file's own word (``--slot-minutes``, a Period's
    resolution); None: the area's slot it replaces says, else the file's shortest gap."""


class PriceFile(msgspec.Struct, frozen=True):
    """A price file's rows in time order, before their slots' ends are known."""

    rows: list[PriceRow]
    shortest: timedelta | None
    """The shortest gap between two rows; None for a file of one row."""

    def unsized(self) -> list[datetime]:
        """The starts whose slot length only the area's stored slots can say."""
        return [row.start for row in self.rows if row.length is None]

    def slots(self, replaced: Mapping[datetime, timedelta] | None = None) -> list[Slot]:
        """The file's slots: each ends at the next row's start, but never later than its
        length after its own start; ``replaced`` holds the lengths of the area's stored slots
        by their start. ``InvalidInput`` naming the row when a length is unknown or a slot is
        not whole 90 s buckets."""
        known = replaced or {}
        slots: list[Slot] = []
        afters: list[PriceRow | None] = [*self.rows[1:], None]
        for row, after in zip(self.rows, afters, strict=True):
            length = row.length or known.get(row.start) or self.shortest
            if length is None:
                raise _fault(
                    row.where,
                    "a single row says nothing of its slot's length, and the area has no slot "
                    "starting then to replace: give --slot-minutes",
                )
            try:
                end = row.start + length
            except OverflowError:
                raise _fault(row.where, "its slot ends after the year 9999") from None
            if after is not None:
                end = min(end, after.start)
            if (end - row.start) % SLOT_STEP:
                raise _fault(
                    row.where,
                    f"its slot is {(end - row.start).total_seconds():g} s long, not a multiple "
                    "of 90 s",
                )
            slots.append(Slot(row.start, end, row.price))
        return slots


class _Placed(msgspec.Struct, frozen=True):
    """A document's slot and the Period and position it came from."""

    slot: Slot
    period: str
    position: int


def parse_prices(
    text: str,
    *,
    kind: str = "auto",
    per: str | None = None,
    slot_minutes: int | None = None,
    currency: str | None = None,
    sequence: int | None = None,
) -> PriceFile:
    """The rows of a price file of a kind in ``FORMATS``; ``InvalidInput`` otherwise.

    ``per`` and ``slot_minutes`` are a CSV's: an ENTSO-E document says both itself, so either
    contradicting it is refused; ``sequence`` is a document's classification sequence.
    ``currency``, when given, is the one its prices must be in.
    """
    if kind == "auto":
        kind = "entsoe" if text.lstrip("\ufeff \t\r\n").startswith("<") else "csv"
    if kind == "csv":
        if sequence is not None:
            raise InvalidInput("--sequence is for ENTSO-E documents: a CSV holds one series")
        return parse_csv(text, per=per or "kWh", slot_minutes=slot_minutes)
    if per is not None and PER[per] != ENTSOE_MWH:
        raise InvalidInput(
            f"--per {per}: an ENTSO-E document's prices are per MWh (leave --per out)"
        )
    if slot_minutes is not None:
        raise InvalidInput(
            "--slot-minutes is for CSV: an ENTSO-E document gives each Period's resolution"
        )
    return parse_entsoe(text, currency=currency, sequence=sequence)


def parse_csv(text: str, *, per: str = "kWh", slot_minutes: int | None = None) -> PriceFile:
    """The rows of a price file, in order; ``InvalidInput`` naming the line of the first
    fault otherwise."""
    divisor = PER[per]
    length = None if slot_minutes is None else timedelta(minutes=slot_minutes)
    rows: list[PriceRow] = []
    for number, raw in enumerate(text.lstrip("\ufeff").split("\n"), start=1):
        line = raw.strip()
        if not line:
            continue
        fields = tuple(field.strip() for field in line.split(","))
        if not rows and tuple(f.lower() for f in fields) == HEADER:
            continue
        where = f"line {number}"
        if len(fields) != 2:
            raise _fault(where, f"{_shown(line)} is not start,price")
        start = _instant(where, fields[0])
        if rows and start <= rows[-1].start:
            raise _fault(
                where,
                f"{fields[0]} is not after the previous row's start: times must increase "
                "strictly (slots would overlap)",
            )
        rows.append(PriceRow(where, start, _per_kwh(where, fields[1], divisor), length))
    if not rows:
        raise InvalidInput("the file holds no prices")
    gaps = [b.start - a.start for a, b in itertools.pairwise(rows)]
    return PriceFile(rows, min(gaps, default=None))


def parse_entsoe(
    text: str, *, currency: str | None = None, sequence: int | None = None
) -> PriceFile:
    """The slots of an ENTSO-E day-ahead price document, per kWh, in order, as rows as long as
    their Period's resolution; ``InvalidInput`` naming the element of the first fault otherwise.

    ``sequence`` takes the TimeSeries of that classification sequence; without it, a document
    must hold one sequence (or name none)."""
    root = _document(text)
    name = _local(root.tag)
    if name == "Acknowledgement_MarketDocument":
        # What ENTSO-E's API answers instead of prices, e.g. when it has none for the day yet.
        reasons = [_optional(reason, "text", "Reason") for reason in _children(root, "Reason")]
        said = "; ".join(r for r in reasons if r) or "no reason given"
        raise InvalidInput(f"the document is ENTSO-E's acknowledgement, not prices: {said}")
    if name != "Publication_MarketDocument":
        raise InvalidInput(f"the document is <{name[:40]}>, not a Publication_MarketDocument")
    kind = _optional(root, "type", name)
    if kind is not None and kind != "A44":
        raise _fault(f"{name} > type", f"{_shown(kind)} is not day-ahead prices (A44)")
    placed: list[_Placed] = []
    for number, series in _chosen(root, sequence):
        placed.extend(
            _series(series, f"TimeSeries {number}", currency, ENTSOE_MAX_SLOTS - len(placed))
        )
    if not placed:
        raise InvalidInput("the document holds no prices (no TimeSeries with a Period)")
    placed.sort(key=lambda p: p.slot.start)
    for before, after in itertools.pairwise(placed):
        if before.slot.end > after.slot.start:
            raise _fault(
                f"{after.period}, position {after.position}",
                f"its slot {_span(after.slot)} overlaps that of {before.period}, position "
                f"{before.position} ({_span(before.slot)}): a slot has one price (a day at two "
                "resolutions? fetch one)",
            )
    rows = [
        PriceRow(
            f"{p.period}, position {p.position}",
            p.slot.start,
            p.slot.price,
            p.slot.end - p.slot.start,
        )
        for p in placed
    ]
    return PriceFile(rows, None)


def _chosen(root: ET.Element, sequence: int | None) -> list[tuple[int, ET.Element]]:
    """The document's TimeSeries, numbered as written, of the classification sequence asked
    for; refused, naming the sequences it holds, when it holds several and none was asked for,
    or not the one asked for. A series that names no sequence belongs to none."""
    numbered = list(enumerate(_children(root, "TimeSeries"), start=1))
    held: dict[int, int | None] = {}
    for number, series in numbered:
        written = _optional(series, SEQUENCE, f"TimeSeries {number}")
        if written is not None and not POSITION.match(written):
            raise _fault(
                f"TimeSeries {number} > {SEQUENCE}",
                f"{_shown(written)} is not a sequence (1, 2, ...)",
            )
        held[number] = None if written is None else int(written)
    named = sorted({s for s in held.values() if s is not None})
    names = ", ".join(map(str, named))
    if sequence is None:
        if len(named) > 1:
            raise InvalidInput(
                f"the document holds the classification sequences {names} (DE-LU and AT: 1 "
                "is SDAC's auction, 2 EXAA's): choose one with --sequence"
            )
        return numbered
    if sequence not in named:
        holds = (
            f"only sequence{'s' if len(named) > 1 else ''} {names}"
            if named
            else "no classification sequence"
        )
        raise InvalidInput(f"--sequence {sequence}: the document holds {holds}")
    return [(number, series) for number, series in numbered if held[number] == sequence]


def _series(series: ET.Element, where: str, currency: str | None, room: int) -> list[_Placed]:
    unit = _optional(series, "price_Measure_Unit.name", where)
    if unit is not None and unit.upper() != "MWH":
        raise _fault(f"{where} > price_Measure_Unit.name", f"{_shown(unit)} is not MWH")
    money = _optional(series, "currency_Unit.name", where)
    if currency is not None and money is not None and money != currency:
        raise _fault(
            f"{where} > currency_Unit.name",
            f"{_shown(money)} is not the cost streams' currency {currency!r} "
            "(EP_BILLING_CURRENCY): convert the prices and import them as CSV",
        )
    curve = _optional(series, "curveType", where) or "A01"
    if curve not in CURVE_FILLS:
        raise _fault(
            f"{where} > curveType",
            f"{_shown(curve)} is not read (A01: every position; A03: a missing position "
            "repeats the one before)",
        )
    placed: list[_Placed] = []
    for number, period in enumerate(_children(series, "Period"), start=1):
        placed.extend(
            _period(period, f"{where} > Period {number}", CURVE_FILLS[curve], room - len(placed))
        )
    return placed


def _period(period: ET.Element, where: str, fills: bool, room: int) -> list[_Placed]:
    interval = _one(period, "timeInterval", where)
    start = _instant(f"{where} > timeInterval > start", _text(interval, "start", where))
    end = _instant(f"{where} > timeInterval > end", _text(interval, "end", where))
    written = _text(period, "resolution", where)
    resolution = _resolution(f"{where} > resolution", written)
    span = end - start
    if span <= timedelta(0):
        raise _fault(f"{where} > timeInterval", "its end is not after its start")
    if span % resolution:
        raise _fault(where, f"its timeInterval is not a whole number of {written} slots")
    count = span // resolution
    if count > room:
        raise _fault(where, f"the document would hold over {ENTSOE_MAX_SLOTS} slots")
    prices: dict[int, float] = {}
    for number, point in enumerate(_children(period, "Point"), start=1):
        at = f"{where} > Point {number}"
        position = _position(f"{at} > position", _text(point, "position", at), count)
        if position in prices:
            raise _fault(at, f"position {position} is given twice")
        amount = f"{at} > price.amount"
        prices[position] = _per_kwh(amount, _text(point, "price.amount", at), ENTSOE_MWH)
    placed: list[_Placed] = []
    held: float | None = None
    for position in range(1, count + 1):
        if position in prices:
            held = prices[position]
        elif not fills:
            raise _fault(where, f"position {position} is missing (curveType A01 gives every one)")
        elif held is None:
            raise _fault(
                where, "position 1 is missing (curveType A03 repeats the position before: none)"
            )
        slot = Slot(start + resolution * (position - 1), start + resolution * position, held)
        placed.append(_Placed(slot, where, position))
    return placed


def _document(text: str) -> ET.Element:
    doctype = DOCTYPE.search(text)
    if doctype is not None:
        line = text.count("\n", 0, doctype.start()) + 1
        raise _fault(f"line {line}", "a DOCTYPE is refused (DTDs and entities are not read)")
    try:
        # Without a DTD only XML's five predefined entities exist: nothing can expand or reach
        # outside the text, which is what defusedxml would guard against.
        return ET.fromstring(text)  # noqa: S314
    except ET.ParseError as e:
        raise InvalidInput(f"the file is not an XML document: {e}") from None


def _local(tag: str) -> str:
    # The namespace names the schema's version (…:publicationdocument:7:0, 7:3): not read.
    return tag.rpartition("}")[2]


def _children(element: ET.Element, name: str) -> list[ET.Element]:
    return [child for child in element if _local(child.tag) == name]


def _one(element: ET.Element, name: str, where: str) -> ET.Element:
    found = _children(element, name)
    if len(found) != 1:
        raise _fault(where, f"{'no' if not found else 'more than one'} <{name}>")
    return found[0]


def _optional(element: ET.Element, name: str, where: str) -> str | None:
    found = _children(element, name)
    if len(found) > 1:
        raise _fault(where, f"more than one <{name}>")
    return (found[0].text or "").strip() if found else None


def _text(element: ET.Element, name: str, where: str) -> str:
    return (_one(element, name, where).text or "").strip()


def _resolution(where: str, text: str) -> timedelta:
    match = RESOLUTION.match(text)
    if match is None or not (match["hours"] or match["minutes"]):
        raise _fault(where, f"{_shown(text)} is not a resolution (PT15M, PT30M, PT60M)")
    length = timedelta(hours=int(match["hours"] or 0), minutes=int(match["minutes"] or 0))
    if not length or length % SLOT_STEP:
        raise _fault(where, f"{text} is not a positive multiple of 90 s")
    return length


def _position(where: str, text: str, count: int) -> int:
    if not POSITION.match(text):
        raise _fault(where, f"{_shown(text)} is not a position (1, 2, ...)")
    position = int(text)
    if not 1 <= position <= count:
        raise _fault(where, f"{position} is not within 1 to {count}, the Period's slots")
    return position


def _span(slot: Slot) -> str:
    return f"{slot.start.isoformat()} to {slot.end.isoformat()}"


def _instant(where: str, text: str) -> datetime:
    if len(text) > TIME_LENGTH or not text.isascii():
        raise _fault(where, f"{_shown(text)} is not an ISO 8601 time")
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise _fault(where, f"{_shown(text)} is not an ISO 8601 time") from None
    if parsed.tzinfo is None:
        # A local time without an offset is ambiguous on the night clocks go back.
        raise _fault(where, f"{_shown(text)} has no UTC offset (add Z or +01:00, say)")
    try:
        at = parsed.astimezone(UTC)
    except OverflowError:
        at = None
    if at is None or not bounds.in_calendar(at):
        raise _fault(where, f"{_shown(text)} is outside the calendar, {bounds.CALENDAR}")
    return at


def _price(where: str, text: str) -> float:
    try:
        price = float(text)
    except ValueError:
        raise _fault(where, f"{_shown(text)} is not a price") from None
    if not math.isfinite(price):  # NaN, inf, and 1e999 alike
        raise _fault(where, f"{_shown(text)} is not a finite price")
    if not DECIMAL.match(text):
        raise _fault(where, f"{_shown(text)} is not a price")
    return price


def _per_kwh(where: str, text: str, divisor: float) -> float:
    """A price as written, per kWh, within the bound of prices (core/bounds.py)."""
    return bounds.check(bounds.PRICE, _price(where, text) / divisor, f"{where} (per kWh)")


def _shown(text: str) -> str:
    return repr(text[:40])


def _fault(where: str, what: str) -> InvalidInput:
    return InvalidInput(f"{where}: {what}")
