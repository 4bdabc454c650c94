"""Data format v4: the homebase batch (MQTT) and the CoAP record, decoded and validated.

A homebase batch is judged record by record: a record with anything wrong inside it (a field's
type or range, a value beyond its quantity's bound, its time) is refused alone, its cause
named, and the others are kept (:class:`Decoded`). What is wrong with the message itself (JSON,
text, size, nesting, not an array of at most MAX_RECORDS) refuses it whole with a
:class:`RecordError`; so does anything wrong in a CoAP record, which is one record. The caller
dead-letters what is refused. Every integer is checked against the column it lands in, every
number is finite and within its quantity's bound (core/bounds.py), every key matches its
pattern. Unknown properties are ignored, never refused: the spec makes an added property a
compatible change, so a device with newer firmware keeps its data. Their nesting is bounded by
the decoder (too deep: ``too_deep``) and their size by the payload limit. Readings are grouped
into one :class:`Series` per stream; whether a stream is raw or system is decided here, from
the medium and OBIS tables of docs/devices.md.
"""

from __future__ import annotations

import math
from typing import Annotated, Final, TypeVar

import msgspec

from energy_platform.core import bounds
from energy_platform.core.codec import obis
from energy_platform.core.errors import OutOfBounds

FORMAT: Final = 4
EARLIEST: Final = 946_684_800  # 2000-01-01T00:00:00Z
MAX_AHEAD: Final = 600  # a device clock may run at most 10 minutes fast
MAX_PAYLOAD_BYTES: Final = 1_048_576  # the broker's message_size_limit, and CoAP's block cap
MAX_RECORDS: Final = 20_000
# Media stored as raw streams; 40 (signal) and 41 (battery) and unknown ones are system streams.
RAW_MEDIA: Final = frozenset({1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 14, 18, 22, 23, 24, 28})
SIGNAL, BATTERY = 40, 41
MAX_INDEXES: Final = 64  # values per medium (phases, tariff registers)
# ``int`` columns of PostgreSQL; a time must fit the window checked in _check_header anyway.
Int32 = Annotated[int, msgspec.Meta(ge=0, le=2**31 - 1)]
Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
# Printable ASCII only: no NUL, no control characters, nothing a log or a CSV export chokes on.
Uniq = Int64 | Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern=r"^[\x20-\x7e]+$")]
Medium = Annotated[str, msgspec.Meta(min_length=1, max_length=5)]
# Any text: a code that cannot be read costs only its own reading (:data:`UNREADABLE`), so its
# form is judged per code, not by the record's schema.
ObisCode = str
UNREADABLE: Final = "unreadable_code"


class RecordError(ValueError):
    """A message that cannot be stored; ``cause`` names the reason for the drop counters."""

    def __init__(self, cause: str, detail: str) -> None:
        super().__init__(detail)
        self.cause = cause


Value = float | Annotated[list[float], msgspec.Meta(min_length=1, max_length=MAX_INDEXES)]
T = TypeVar("T")


class HomebaseRecord(msgspec.Struct):
    f: Int64
    t: Int64
    d: Int32
    ch: Int32
    uniq: Uniq
    s: dict[Medium, Value] = msgspec.field(default_factory=dict)
    o: dict[ObisCode, float] = msgspec.field(default_factory=dict)


class CoapRecord(msgspec.Struct):
    f: Int64
    t: Int64
    d: Int32
    o: dict[ObisCode, float]
    # Present only to refuse them: CoAP data comes from the device itself, as OBIS codes.
    ch: object = msgspec.UNSET
    uniq: object = msgspec.UNSET
    s: object = msgspec.UNSET


class Series(msgspec.Struct):
    """Points of one stream within one message: raw when ``source`` is None, else system.

    Decoding groups by stream, so that everything downstream works per stream, not per point.
    An M-Bus reading whose record did not carry its device's type has neither ``medium`` nor
    ``source`` (:attr:`pending`): the store gives it the medium of the type last seen.
    """

    channel: int
    device: int
    medium: int | None
    index: int | None
    source: str | None
    obis: str | None
    times: list[int] = msgspec.field(default_factory=list)
    values: list[float] = msgspec.field(default_factory=list)

    @property
    def pending(self) -> bool:
        return self.medium is None and self.source is None

    @property
    def key(self) -> tuple[int, int, int | None, int | None, str | None, str | None]:
        return (self.channel, self.device, self.medium, self.index, self.source, self.obis)


Key = tuple[int, int, int | None, int | None, str | None, str | None]


class _Grouped:
    """Series by stream, in the order they first appear."""

    def __init__(self) -> None:
        self.series: dict[Key, Series] = {}

    def add(self, key: Key, t: int, value: float) -> None:
        series = self.series.get(key)
        if series is None:
            series = self.series[key] = Series(*key)
        series.times.append(t)
        series.values.append(value)


class Refused(msgspec.Struct):
    """The records of a batch refused for one cause."""

    cause: str
    detail: str
    """The first records' reasons, each with its position in the batch (from 0)."""
    count: int
    payload: bytes
    """The refused records as sent, as a batch of their own (a JSON array)."""


class Decoded(msgspec.Struct):
    """A homebase batch: the series of its good records, and the refused ones by cause."""

    series: list[Series]
    refused: list[Refused]


Batch = Annotated[list[HomebaseRecord], msgspec.Meta(max_length=MAX_RECORDS)]
RawBatch = Annotated[list[msgspec.Raw], msgspec.Meta(max_length=MAX_RECORDS)]
_batch = msgspec.json.Decoder(Batch)
_raw_batch = msgspec.json.Decoder(RawBatch)
_homebase_record = msgspec.json.Decoder(HomebaseRecord)
_coap_record = msgspec.json.Decoder(CoapRecord)
REASONS_SHOWN = 5
"""Reasons a dead letter's detail spells out; the count says how many records it holds."""


def decode_batch(payload: bytes, now: float) -> Decoded:
    """The series of a homebase batch's good records (none for an empty batch) and its refused
    records by cause; RecordError (with its cause) if the message itself is wrong."""
    raw: list[msgspec.Raw] | None = None
    records: list[HomebaseRecord | RecordError]
    try:
        typed = _decode(_batch, payload)
    except RecordError as whole:
        # Some record is malformed: judge each alone, if the message is an array of records.
        if whole.cause != "invalid_record":
            raise
        try:
            raw = _raw_batch.decode(payload)
        except (msgspec.DecodeError, RecursionError):
            raise whole from None
        records = [_one_record(text) for text in raw]
    else:
        records = list(typed)
    grouped = _Grouped()
    refused: dict[str, list[tuple[int, RecordError]]] = {}
    unreadable: list[tuple[int, HomebaseRecord, list[str]]] = []
    for n, record in enumerate(records):
        try:
            if isinstance(record, RecordError):
                raise record
            points, bad = _homebase_points(record, now)
        except RecordError as e:
            refused.setdefault(e.cause, []).append((n, e))
            continue
        for key, t, value in points:
            grouped.add(key, t, value)
        if bad:
            unreadable.append((n, record, bad))
    if refused and raw is None:
        raw = _raw_batch.decode(payload)  # the refused records as sent, for their dead letters
    out = [_refused(cause, errors, raw) for cause, errors in refused.items() if raw is not None]
    if unreadable:
        out.append(_unreadable(unreadable))
    return Decoded(list(grouped.series.values()), out)


def _one_record(text: msgspec.Raw) -> HomebaseRecord | RecordError:
    try:
        return _homebase_record.decode(text)
    except msgspec.ValidationError as e:
        return RecordError("invalid_record", str(e))
    except RecursionError:
        return RecordError("too_deep", "the JSON is nested too deeply")


def _refused(cause: str, errors: list[tuple[int, RecordError]], raw: list[msgspec.Raw]) -> Refused:
    reasons = "; ".join(f"record {n}: {e}" for n, e in errors[:REASONS_SHOWN])
    more = len(errors) - REASONS_SHOWN
    detail = reasons if more <= 0 else f"{reasons}; and {more} more"
    payload = b"[" + b",".join(bytes(raw[n]) for n, _ in errors) + b"]"
    return Refused(cause, detail, len(errors), payload)


def _unreadable(readings: list[tuple[int, HomebaseRecord, list[str]]]) -> Refused:
    """The readings whose codes cannot be read, as records holding only those readings (their
    records' other readings are stored)."""
    named = [(n, code) for n, _, bad in readings for code in bad]
    reasons = "; ".join(
        f"record {n}: {_unreadable_reason(code)}" for n, code in named[:REASONS_SHOWN]
    )
    more = len(named) - REASONS_SHOWN
    detail = reasons if more <= 0 else f"{reasons}; and {more} more"
    alone = [
        msgspec.structs.replace(record, s={}, o={code: record.o[code] for code in bad})
        for _, record, bad in readings
    ]
    return Refused(UNREADABLE, detail, len(alone), msgspec.json.encode(alone))


def _unreadable_reason(code: str) -> str:
    return f"OBIS code {code[:40]!r} is not A-B:C.D.E[*F] (nor a letter or dotted form of it)"


def decode_coap(payload: bytes, now: float) -> list[Series]:
    """Series (a point each) of one CoAP record; RecordError if anything about it is wrong."""
    record = _decode(_coap_record, payload)
    for name in ("ch", "uniq", "s"):
        if getattr(record, name) is not msgspec.UNSET:
            raise RecordError("forbidden_field", f"{name!r} is not allowed in CoAP data")
    check_time(record.t, now)
    if record.f != FORMAT:
        raise RecordError("unsupported_format", f"format {record.f} is not {FORMAT}")
    if not record.o:
        raise RecordError("empty", "'o' has no values")
    grouped = _Grouped()
    points, bad = _obis_points(0, record.d, record.t, record.o)
    if bad:
        # One record, one answer: the device is told at once what it sent wrong.
        raise RecordError(UNREADABLE, _unreadable_reason(bad[0]))
    for key, t, value in points:
        grouped.add(key, t, value)
    return list(grouped.series.values())


def check_time(t: int, now: float) -> None:
    """A measurement or event time must lie between 2000 and ten minutes from now."""
    if t < EARLIEST or t > now + MAX_AHEAD:
        raise RecordError("bad_timestamp", f"time {t} is before 2000 or over 10 min ahead")


def _decode(decoder: msgspec.json.Decoder[T], payload: bytes) -> T:
    if len(payload) > MAX_PAYLOAD_BYTES:
        raise RecordError("too_large", f"{len(payload)} bytes, over {MAX_PAYLOAD_BYTES}")
    # msgspec checks UTF-8 only in the strings it keeps: refuse any invalid text up front.
    if not payload.isascii():
        try:
            payload.decode()
        except UnicodeDecodeError:
            raise RecordError("not_utf8", "the payload is not UTF-8 text") from None
    try:
        return decoder.decode(payload)
    except msgspec.ValidationError as e:
        raise RecordError("invalid_record", str(e)) from None
    except msgspec.DecodeError as e:
        raise RecordError("invalid_json", str(e)) from None
    except RecursionError:
        raise RecordError("too_deep", "the JSON is nested too deeply") from None


def _measured(value: float, bound: bounds.Bound, place: str, *names: object) -> float:
    """``value``, finite and within ``bound``; else RecordError saying where (``place``
    formatted with ``names``, only then: this runs for every value of every batch)."""
    if bounds.within(bound, value):
        return value
    if not math.isfinite(value):
        raise RecordError("not_finite", "NaN and infinities are not measurements")
    try:
        return bounds.check(bound, value, place.format(*names))
    except OutOfBounds as e:
        raise RecordError("out_of_bounds", e.detail) from None


def _medium(name: str) -> int:
    # ASCII digits only: str.isdigit() also accepts "²", which int() refuses.
    if not (name.isascii() and name.isdigit()):
        raise RecordError("invalid_record", f"medium {name!r} is not a number")
    return int(name)


def _homebase_points(
    record: HomebaseRecord, now: float
) -> tuple[list[tuple[Key, int, float]], list[str]]:
    if record.f != FORMAT:
        raise RecordError("unsupported_format", f"format {record.f} is not {FORMAT}")
    check_time(record.t, now)
    t, channel, device = record.t, record.ch, record.d
    out: list[tuple[Key, int, float]] = []
    for name, value in record.s.items():
        medium = _medium(name)
        bound = bounds.of_medium(medium)
        if isinstance(value, list):
            for index, v in enumerate(value, start=1):
                v = _measured(v, bound, "medium {}, index {}", medium, index)
                out.append((_medium_key(channel, device, medium, index), t, v))
        else:
            value = _measured(value, bound, "medium {}", medium)
            out.append((_medium_key(channel, device, medium, None), t, value))
    points, bad = _obis_points(channel, device, t, record.o)
    out.extend(points)
    return out, bad


def _medium_key(channel: int, device: int, medium: int, index: int | None) -> Key:
    if medium in RAW_MEDIA:
        return (channel, device, medium, index, None, None)
    return (channel, device, None, index, f"medium:{medium}", None)


def _obis_points(
    channel: int, device: int, t: int, codes: dict[str, float]
) -> tuple[list[tuple[Key, int, float]], list[str]]:
    """The points of ``codes``, and the codes that cannot be read (each its reading's fault)."""
    # An M-Bus device's type sent beside its reading decides what the reading is.
    types = {m.n: v for code, v in codes.items() if (m := obis.mbus(code)) and m.is_type}
    out: list[tuple[Key, int, float]] = []
    bad: list[str] = []
    for code, v in codes.items():
        if obis.lookup(code) is None and not obis.is_code(code):
            bad.append(code)
            continue
        key = _obis_key(channel, device, code, types)
        v = _measured(v, bounds.of_obis(code), "OBIS {}", key[5])
        if key[2] == obis.IMPORT_POWER and obis.signed(code) is not None:
            # Signed power: its import stream reads the positive part, its export stream the
            # negative part, each 0 while the other flows (both stay sampled: no false gaps).
            out.append((key, t, max(v, 0.0)))
            out.append(((*key[:2], obis.EXPORT_POWER, *key[3:]), t, max(-v, 0.0)))
        else:
            out.append((key, t, v))
    return out, bad


def _obis_key(channel: int, device: int, code: str, types: dict[int, float]) -> Key:
    name = obis.normalise(code)
    mbus = obis.mbus(code)
    if mbus is not None and (own := obis.mbus_channel(channel, mbus.n)) is not None:
        if mbus.is_type:
            return (own, device, None, None, f"obis:{name}", name)
        if mbus.n not in types:
            return (own, device, None, None, None, name)  # pending: see Series
        medium = obis.mbus_medium(types[mbus.n])
        if medium is None:
            return (own, device, None, None, f"obis:{name}", name)
        return (own, device, medium, None, None, name)
    known = obis.lookup(code)
    if known is None and (signed := obis.signed(code)) is not None:
        known = (obis.IMPORT_POWER, signed.phase)
    if known is None:
        return (channel, device, None, None, f"obis:{name}", name)
    medium, index = known
    return (channel, device, medium, index, None, name)
