"""What an M-Bus reading is when its record did not carry the device's type: the type last
seen from that device (``cluster.mbus_devices``, per feed, homebase, device and M-Bus channel),
in the transaction that stores the points, so that the type is remembered exactly when the
points that carried it are committed. And an idle slot: a device that has only ever read 0 is
no meter yet (docs/devices.md#m-bus-devices)."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from energy_platform.core.codec import obis
from energy_platform.core.codec.format_v4 import Series
from energy_platform.core.db.pool import Connection

# The newest type per device wins, whichever worker or batch brings it.
REMEMBER_TYPES = """
INSERT INTO cluster.mbus_devices (homebase_sn, feed_id, device, channel, device_type, seen_at)
SELECT DISTINCT ON (sn, f, d, ch) sn, f, d, ch, v, to_timestamp(t)
  FROM unnest($1::text[], $2::bigint[], $3::int[], $4::int[], $5::float8[], $6::bigint[])
       AS u (sn, f, d, ch, v, t)
 ORDER BY sn, f, d, ch, t DESC
ON CONFLICT (homebase_sn, device, channel, feed_id) DO UPDATE
   SET device_type = EXCLUDED.device_type, seen_at = EXCLUDED.seen_at
 WHERE mbus_devices.seen_at <= EXCLUDED.seen_at"""
TYPES_SEEN = """
SELECT u.n, m.device_type
  FROM unnest($1::text[], $2::bigint[], $3::int[], $4::int[]) WITH ORDINALITY AS u (sn, f, d, ch, n)
  JOIN cluster.mbus_devices m
    ON m.homebase_sn = u.sn AND m.device = u.d AND m.channel = u.ch
   AND m.feed_id IS NOT DISTINCT FROM u.f"""
# Which of these M-Bus readings' raw streams exist: a device that has read more than 0.
MOVED = """
SELECT u.n
  FROM unnest($1::bigint[], $2::int[], $3::int[], $4::int[]) WITH ORDINALITY AS u (f, ch, d, m, n)
 WHERE EXISTS (SELECT FROM cluster.streams s
                WHERE s.feed_id = u.f AND s.type = 'raw' AND s.channel = u.ch
                  AND s.device = u.d AND s.medium = u.m AND s.idx IS NULL)"""

Sent = tuple[str, int | None, list[Series]]
"""A message's series, with its homebase's serial number and feed (None: forwarded)."""


async def resolve(conn: Connection, batch: Sequence[Sent]) -> list[list[Series]]:
    """The series of each message of ``batch``: its device types remembered, its pending
    M-Bus readings (:attr:`Series.pending`) given their medium (a reading of an unknown type
    becomes a system stream), and an idle device's zeros made a system stream. No statement
    for a batch without M-Bus codes."""
    seen: list[tuple[str, int | None, int, int, float, int]] = [
        (sn, feed, s.device, s.channel, v, t)
        for sn, feed, series in batch
        for s in series
        if _is_type(s)
        for t, v in zip(s.times, s.values, strict=True)
    ]
    if seen:
        await conn.execute(REMEMBER_TYPES, *(list(c) for c in zip(*seen, strict=True)))
    out = [series for _, _, series in batch]
    wanted = [(m, n, s) for m, (_, _, series) in enumerate(batch) for n, s in enumerate(series)]
    pending = [(m, n, s) for m, n, s in wanted if s.pending]
    if pending:
        keys = [(batch[m][0], batch[m][1], s.device, s.channel) for m, _, s in pending]
        rows = await conn.fetch(TYPES_SEEN, *(list(c) for c in zip(*keys, strict=True)))
        types = {r["n"] - 1: r["device_type"] for r in rows}
        out = [list(series) for series in out]
        for i, (m, n, s) in enumerate(pending):
            out[m][n] = _given(s, types.get(i))
    return await _idle(
        conn, [(feed, series) for (_, feed, _), series in zip(batch, out, strict=True)]
    )


async def _idle(
    conn: Connection, batch: list[tuple[int | None, list[Series]]]
) -> list[list[Series]]:
    # An empty slot reads 0 for ever (``0-n:24.2.1(700101010000W)(00000000)``), and a second
    # gas meter may stand idle (Fluvius): as a raw stream either would be a total of 0 and a
    # "counted twice" warning on every bill. Until its device has read more than 0, a reading
    # of 0 is a system stream; the first other reading starts its raw stream (its first point:
    # no step counted from the zeros).
    candidates = [
        (m, n, s)
        for m, (feed, series) in enumerate(batch)
        if feed is not None
        for n, s in enumerate(series)
        if _is_reading(s) and s.values[_first(s)] == 0
    ]
    out = [series for _, series in batch]
    if not candidates:
        return out
    keys = [(batch[m][0], s.channel, s.device, s.medium) for m, _, s in candidates]
    moved = {
        r["n"] - 1 for r in await conn.fetch(MOVED, *(list(c) for c in zip(*keys, strict=True)))
    }
    out = [list(series) for series in out]
    for i, (m, n, s) in enumerate(candidates):
        if i not in moved:
            out[m][n : n + 1] = _split_zeros(s)
    return out


def _first(series: Series) -> int:
    return min(range(len(series.times)), key=series.times.__getitem__)


def _split_zeros(series: Series) -> list[Series]:
    """``series`` as a system stream up to its first reading other than 0, raw from it on."""
    points = sorted(zip(series.times, series.values, strict=True))
    moves = next((i for i, (_, v) in enumerate(points) if v != 0), len(points))
    idle = msgspec.structs.replace(
        series, medium=None, source=f"obis:{series.obis}",
        times=[t for t, _ in points[:moves]], values=[v for _, v in points[:moves]],
    )  # fmt: skip
    if moves == len(points):
        return [idle]
    raw = msgspec.structs.replace(
        series, times=[t for t, _ in points[moves:]], values=[v for _, v in points[moves:]]
    )
    return [idle, raw]


def _is_reading(series: Series) -> bool:
    # A raw M-Bus reading sits on an M-Bus channel (n x 1000 + c): most series are ruled out
    # by that before the pattern.
    if series.source is not None or series.obis is None or series.channel < obis.MBUS_CHANNELS:
        return False
    mbus = obis.mbus(series.obis)
    return mbus is not None and not mbus.is_type


def _is_type(series: Series) -> bool:
    # A device type is a system stream ``obis:0-n:24.1.0``: most series are ruled out by the
    # prefix, before the pattern (this runs for every series ingest stores).
    source = series.source
    if source is None or not source.startswith("obis:0-") or series.obis is None:
        return False
    mbus = obis.mbus(series.obis)
    return mbus is not None and mbus.is_type


def _given(series: Series, device_type: float | None) -> Series:
    medium = obis.mbus_medium(device_type)
    if medium is None:
        return msgspec.structs.replace(series, source=f"obis:{series.obis}")
    return msgspec.structs.replace(series, medium=medium)
