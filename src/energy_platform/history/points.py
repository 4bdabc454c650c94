"""Points sent to a raw stream from outside a device: a JSON array ``[[t, v], ...]`` or CSV
``time,value`` lines. A time is Unix seconds (a fraction allowed, to the microsecond) or, in
CSV, ISO 8601 with a UTC offset (what other systems export), within the calendar's range
(core/bounds.py), else 400 naming its place (``$[3][0]``, ``line 5``); a value is a finite
number within the bound of the stream's quantity (core/bounds.py), else 400 naming the value
and the bound.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import msgspec

from energy_platform.core import bounds
from energy_platform.core.errors import InvalidInput, OutOfBounds, PayloadTooLarge

MAX_POINTS = 100_000
"""Points one request may carry (the issue's limit; a file through the CLI has none)."""
MAX_BODY_BYTES = MAX_POINTS * 64
"""Bytes a request body may have: 100,000 points with long times and values fit. Short ones
fit many more (``[0,0],`` is 6 bytes), so the points are counted before they are decoded."""
# The calendar's range (core/bounds.py), in Unix seconds: a time outside it is 400.
EARLIEST, LATEST = bounds.EARLIEST, bounds.LATEST
UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)

_points = msgspec.json.Decoder(list[tuple[float, float]])


class Points(msgspec.Struct, frozen=True):
    times: list[int]
    """Microseconds since the Unix epoch: whole microseconds, as a timestamptz holds them
    (``history/queries.py`` turns them into instants exactly, in the database)."""
    values: list[float]


def from_json(body: bytes, *, bound: bounds.Bound) -> Points:
    """A JSON body of ``[unix seconds, value]`` pairs of a quantity of ``bound``; 400 naming the
    fault, 413 past the limit.

    The brackets are counted first (one a pair, one around them; a byte scan): a body of more
    pairs than the limit is refused before the decoder builds them (about 110 bytes each)."""
    _within_limit(body.count(b"[") - 1)
    try:
        pairs = _points.decode(body)
    except msgspec.ValidationError as e:
        raise InvalidInput(f"points: {e}") from None
    except msgspec.DecodeError as e:
        raise InvalidInput(f"not JSON: {e}") from None
    _within_limit(len(pairs))
    times = [
        round(bounds.check_seconds(seconds, f"$[{n}][0]") * 1_000_000)
        for n, (seconds, _) in enumerate(pairs)
    ]
    values = [bounds.check(bound, value, f"point {n}") for n, (_, value) in enumerate(pairs)]
    return Points(times, values)


def from_csv(
    text: str, *, bound: bounds.Bound, first_line: int = 1, limit: int | None = MAX_POINTS
) -> Points:
    """CSV ``time,value`` lines of a quantity of ``bound`` (a header line ``time,value`` first
    is skipped, blank lines too); 400 with the line number of the first bad one.
    ``first_line`` numbers a chunk of a longer file; ``limit`` None: any number of lines (the
    admin command's chunks)."""
    times, values = [], []
    # Line by line (newline="": the line ends the admin command's file reading sees), never all
    # lines at once: a body of short lines is refused at the limit, not after splitting it.
    lines = io.StringIO(text, newline="")
    for number, line in enumerate(lines, start=first_line):
        cells = line.strip()
        if not cells or (number == 1 and cells.replace(" ", "").lower() == "time,value"):
            continue
        parts = cells.split(",")
        if len(parts) != 2:
            raise InvalidInput(f"line {number}: expected time,value, got {cells[:80]!r}")
        times.append(_csv_time(parts[0].strip(), number))
        try:
            value = float(parts[1])
        except ValueError:
            raise InvalidInput(
                f"line {number}: {parts[1].strip()[:40]!r} is not a number"
            ) from None
        values.append(bounds.check(bound, value, f"line {number}"))
        if limit is not None and len(times) > limit:
            _within_limit(len(times), limit)
    return Points(times, values)


def _csv_time(text: str, number: int) -> int:
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return round(bounds.check_seconds(seconds, f"line {number}") * 1_000_000)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput(
            f"line {number}: {text[:40]!r} is neither Unix seconds nor an ISO 8601 time"
        ) from None
    if parsed.utcoffset() is None:
        # A local time alone is ambiguous the night the clocks go back.
        raise InvalidInput(f"line {number}: {text[:40]!r} has no UTC offset (add Z or +01:00)")
    try:
        parsed = parsed.astimezone(UTC)
    except OverflowError:
        raise OutOfBounds(
            f"line {number}: {text[:40]!r} is outside the calendar, {bounds.CALENDAR}",
            field=f"line {number}",
        ) from None
    return (bounds.check_instant(parsed, f"line {number}") - UNIX_EPOCH) // MICROSECOND


def instant(seconds: float) -> datetime:
    """Unix seconds (in range) as an instant, to the microsecond."""
    return UNIX_EPOCH + timedelta(microseconds=round(seconds * 1_000_000))


def _within_limit(count: int, limit: int = MAX_POINTS) -> None:
    if count > limit:
        raise PayloadTooLarge(f"at most {limit:,} points a request: split the import")
