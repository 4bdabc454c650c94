"""History by the interval: each value is the Wh used in the interval that starts at its time
(how utility portals export: kWh per 15 minutes or per hour, sent in Wh). The values become an
energy register's readings, a running total, and enter as any import does (``write_points``),
so each interval's energy is the register's rise across that interval and the engine prices it
at its slots (docs/api.md#history-by-the-interval).

Where the total starts: at the stream's reading at or before the first interval's start (a
second file goes on from where the first ended, and a resent file finds its own first reading:
nothing changes); else, so that history imported before a live meter's readings meets them
without a jump, at the stream's first reading at or after the last interval's end less the
file's energy; else at 0. The file's span must hold no reading of the stream but those it
would write itself with the same values (a resent file): anything else is refused, naming the
readings' range, and nothing is stored.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from itertools import pairwise

from energy_platform.core import bounds
from energy_platform.core.db.pool import Connection
from energy_platform.core.errors import InvalidInput
from energy_platform.history import queries
from energy_platform.history.points import UNIX_EPOCH, Points

MEDIA = frozenset({22, 23})
"""Energy registers, import and export: the media a history by the interval may go into."""
SAME = 1e-9
"""Relative difference within which a stored reading is the one the file would write: only
the reading at the file's end can differ, by the rounding of a sum (a total that ends at a
later file's first reading)."""


def check_medium(medium: int | None) -> None:
    """400 unless ``medium`` is an energy register's (22, 23)."""
    if medium not in MEDIA:
        raise InvalidInput(
            f"an interval's energy goes into an energy register (medium 22 or 23), not medium"
            f" {medium}: import power or readings without --interval",
            field="interval",
        )


def check_interval(seconds: int) -> int:
    """The interval in microseconds; 400 unless it is 1 s to the bound (31 days)."""
    if seconds < 1:
        raise InvalidInput(f"interval {seconds}: at least 1 second", field="interval")
    bounds.check(bounds.INTERVAL, seconds, "interval")
    return seconds * 1_000_000


def totals(points: Points, interval: int, base: float) -> dict[int, float]:
    """The register's readings (microseconds: Wh) of ``points``' intervals, ``interval``
    microseconds each, the total starting at ``base``: before each interval the total so far,
    after it that plus its energy; a gap between intervals holds the total still. 400 for a
    negative energy, or two intervals that overlap (one time twice included)."""
    order = sorted(range(len(points.times)), key=points.times.__getitem__)
    for a, b in pairwise(order):
        if points.times[b] < points.times[a] + interval:
            raise InvalidInput(
                f"the intervals starting at {_iso(points.times[a])} and {_iso(points.times[b])}"
                f" overlap: each is {interval // 1_000_000} s long"
            )
    readings: dict[int, float] = {}
    total = bounds.check(
        bounds.ENERGY, base, f"the running total at {_iso(points.times[order[0]])}"
    )
    for n in order:
        start, energy = points.times[n], points.values[n]
        if energy < 0:
            raise InvalidInput(
                f"the interval starting at {_iso(start)}: {energy!r} Wh; a register counts up"
                " (export has its own medium, 23)"
            )
        readings[start] = total
        total += energy
        readings[start + interval] = total
    bounds.check(bounds.ENERGY, total, f"the running total at {_iso(max(readings))}")
    return readings


async def as_readings(conn: Connection, stream: int, points: Points, interval: int) -> Points:
    """``points`` (interval start, Wh) as raw stream ``stream``'s register readings, the total
    continuing the stream's (module docstring); 400 naming the stored readings the file's span
    meets. Locks the stream's row for the transaction, as ``write_points`` does."""
    first = min(points.times)
    end = max(points.times) + interval
    await conn.execute(queries.LOCK_RAW_STREAM, stream)
    edge = await conn.fetchrow(queries.INTERVAL_EDGES, stream, _at(first), _at(end))
    assert edge is not None  # noqa: S101 - one row always
    if edge["before"] is not None:
        base = edge["before"]
    elif edge["after"] is not None:
        base = edge["after"] - sum(points.values)
    else:
        base = 0.0
    readings = totals(points, interval, base)
    stored = await conn.fetch(queries.READINGS_BETWEEN, stream, _at(first), _at(end))
    meets = [r["micros"] for r in stored if not _same(readings.get(r["micros"]), r["value"])]
    if meets:
        raise InvalidInput(
            f"the intervals from {_iso(first)} to {_iso(end)} meet {len(meets)} stored"
            f" readings of stream {stream}, from {_iso(min(meets))} to {_iso(max(meets))}:"
            " import only the intervals it lacks, or remove those readings first"
        )
    # A stored reading the file agrees with stays as stored: the file changes nothing there.
    readings |= {r["micros"]: r["value"] for r in stored}
    times = sorted(readings)
    return Points(times, [readings[t] for t in times])


def _same(ours: float | None, stored: float) -> bool:
    return ours is not None and math.isclose(ours, stored, rel_tol=SAME, abs_tol=SAME)


def _at(micros: int) -> datetime:
    return UNIX_EPOCH + timedelta(microseconds=micros)


def _iso(micros: int) -> str:
    return _at(micros).isoformat()
