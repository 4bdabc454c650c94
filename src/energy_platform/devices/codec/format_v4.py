"""Data format v4: the homebase batch (MQTT) and the CoAP record, decoded and validated.

Decoding is per record: one bad record of a batch is dropped and counted, the others are kept.
Readings are grouped into one :class:`Series` per stream; whether a stream is raw or system is
decided here, from the medium and OBIS tables of docs/devices.md.
"""

from __future__ import annotations

import math
from typing import Final, TypeVar

import msgspec

from energy_platform.devices.codec import obis

FORMAT: Final = 4
EARLIEST: Final = 946_684_800  # 2000-01-01T00:00:00Z
MAX_AHEAD: Final = 600  # a device clock may run at most 10 minutes fast
# Media stored as raw streams; 40 (signal) and 41 (battery) and unknown ones are system streams.
RAW_MEDIA: Final = frozenset({1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 14, 18, 22, 23, 24, 28})
SIGNAL, BATTERY = 40, 41


class RecordError(ValueError):
    """A record that cannot be stored; ``cause`` names the reason for the drop counters."""

    def __init__(self, cause: str, detail: str) -> None:
        super().__init__(detail)
        self.cause = cause


Value = float | list[float]
T = TypeVar("T")


class HomebaseRecord(msgspec.Struct):
    f: int
    t: int
    d: int
    ch: int
    uniq: int | str
    s: dict[str, Value] = msgspec.field(default_factory=dict)
    o: dict[str, float] = msgspec.field(default_factory=dict)


class CoapRecord(msgspec.Struct):
    f: int
    t: int
    d: int
    o: dict[str, float]
    # Present only to refuse them: CoAP data comes from the device itself, as OBIS codes.
    ch: int | msgspec.UnsetType | None = msgspec.UNSET
    uniq: int | str | msgspec.UnsetType | None = msgspec.UNSET
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


_homebase_record = msgspec.json.Decoder(HomebaseRecord)
_coap_record = msgspec.json.Decoder(CoapRecord)
_batch = msgspec.json.Decoder(list[msgspec.Raw])


def decode_batch(payload: bytes, now: float) -> tuple[list[Series], list[RecordError]]:
    """Series of a homebase batch and the errors of the records that were dropped.

    Raises RecordError (cause ``invalid_json``) when the payload is not a JSON array at all.
    """
    try:
        raws = _batch.decode(payload)
    except msgspec.DecodeError as e:
        raise RecordError("invalid_json", str(e)) from None
    grouped = _Grouped()
    errors: list[RecordError] = []
    for raw in raws:
        try:
            record = _decode(_homebase_record, raw)
            # Checked whole before anything is kept: a bad record is dropped entirely.
            for key, t, value in _homebase_points(record, now):
                grouped.add(key, t, value)
        except RecordError as e:
            errors.append(e)
    return list(grouped.series.values()), errors


def decode_coap(payload: bytes, now: float) -> list[Series]:
    """Series (a point each) of one CoAP record; RecordError if anything about it is wrong."""
    record = _decode(_coap_record, payload)
    for name in ("ch", "uniq", "s"):
        if getattr(record, name) is not msgspec.UNSET:
            raise RecordError("forbidden_field", f"{name!r} is not allowed in CoAP data")
    _check_header(record.f, record.t, now)
    if not record.o:
        raise RecordError("empty", "'o' has no values")
    grouped = _Grouped()
    for code, v in record.o.items():
        grouped.add(_obis_key(0, record.d, code), record.t, _finite(v))
    return list(grouped.series.values())


def _decode(decoder: msgspec.json.Decoder[T], raw: bytes | msgspec.Raw) -> T:
    try:
        return decoder.decode(raw)
    except msgspec.ValidationError as e:
        raise RecordError("invalid_record", str(e)) from None
    except msgspec.DecodeError as e:
        raise RecordError("invalid_json", str(e)) from None


def _check_header(f: int, t: int, now: float) -> None:
    if f != FORMAT:
        raise RecordError("unsupported_format", f"format {f} is not {FORMAT}")
    if t < EARLIEST or t > now + MAX_AHEAD:
        raise RecordError("bad_timestamp", f"time {t} is before 2000 or over 10 min ahead")


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise RecordError("not_finite", "NaN and infinities are not measurements")
    return value


def _homebase_points(record: HomebaseRecord, now: float) -> list[tuple[Key, int, float]]:
    _check_header(record.f, record.t, now)
    if record.ch < 0 or record.d < 0:
        raise RecordError("invalid_record", "channel and device are non-negative")
    t, channel, device = record.t, record.ch, record.d
    out: list[tuple[Key, int, float]] = []
    for name, value in record.s.items():
        if not name.isdigit():
            raise RecordError("invalid_record", f"medium {name!r} is not a number")
        medium = int(name)
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
    name = obis.normalise(code)
    if known is None:
        return (channel, device, None, None, f"obis:{name}", name)
    medium, index = known
    return (channel, device, medium, index, None, name)
