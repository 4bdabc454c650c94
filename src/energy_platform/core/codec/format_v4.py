"""Data format v4: the homebase batch (MQTT) and the CoAP record, decoded and validated.

A message is judged whole: anything wrong inside it (JSON, a field's type or range, text, size,
time) rejects the whole message with a :class:`RecordError` naming the cause, and the caller
dead-letters it. Every integer is checked against the column it lands in, every number is
finite, every key matches its pattern. Unknown properties are ignored, never refused: the spec
makes an added property a compatible change, so a device with newer firmware keeps its data.
Their nesting is bounded by the decoder (too deep: ``too_deep``) and their size by the payload
limit. Readings are grouped into one :class:`Series` per stream; whether a
stream is raw or system is decided here, from the medium and OBIS tables of docs/devices.md.
"""

from __future__ import annotations

import math
from typing import Annotated, Final, TypeVar

import msgspec

from energy_platform.core.codec import obis

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
ObisCode = Annotated[str, msgspec.Meta(min_length=1, max_length=obis.MAX_LENGTH)]


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


Batch = Annotated[list[HomebaseRecord], msgspec.Meta(max_length=MAX_RECORDS)]
_batch = msgspec.json.Decoder(Batch)
_coap_record = msgspec.json.Decoder(CoapRecord)


def decode_batch(payload: bytes, now: float) -> list[Series]:
    """Series of a homebase batch (none for an empty one); RecordError (with its cause) if
    anything in it is wrong."""
    records = _decode(_batch, payload)
    grouped = _Grouped()
    for record in records:
        for key, t, value in _homebase_points(record, now):
            grouped.add(key, t, value)
    return list(grouped.series.values())


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
    for code, v in record.o.items():
        grouped.add(_obis_key(0, record.d, code), record.t, _finite(v))
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


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise RecordError("not_finite", "NaN and infinities are not measurements")
    return value


def _medium(name: str) -> int:
    # ASCII digits only: str.isdigit() also accepts "²", which int() refuses.
    if not (name.isascii() and name.isdigit()):
        raise RecordError("invalid_record", f"medium {name!r} is not a number")
    return int(name)


def _homebase_points(record: HomebaseRecord, now: float) -> list[tuple[Key, int, float]]:
    if record.f != FORMAT:
        raise RecordError("unsupported_format", f"format {record.f} is not {FORMAT}")
    check_time(record.t, now)
    t, channel, device = record.t, record.ch, record.d
    out: list[tuple[Key, int, float]] = []
    for name, value in record.s.items():
        medium = _medium(name)
        if isinstance(value, list):
            for index, v in enumerate(value, start=1):
                out.append((_medium_key(channel, device, medium, index), t, _finite(v)))
        else:
            out.append((_medium_key(channel, device, medium, None), t, _finite(value)))
    for code, v in record.o.items():
        out.append((_obis_key(channel, device, code), t, _finite(v)))
    return out


def _medium_key(channel: int, device: int, medium: int, index: int | None) -> Key:
    if medium in RAW_MEDIA:
        return (channel, device, medium, index, None, None)
    return (channel, device, None, index, f"medium:{medium}", None)


def _obis_key(channel: int, device: int, code: str) -> Key:
    known = obis.lookup(code)
    if known is None and not obis.is_code(code):
        raise RecordError("invalid_record", f"OBIS code {code[:40]!r} is not A-B:C.D.E")
    name = obis.normalise(code)
    if known is None:
        return (channel, device, None, None, f"obis:{name}", name)
    medium, index = known
    return (channel, device, medium, index, None, name)
