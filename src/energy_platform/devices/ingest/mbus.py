"""What an M-Bus reading is when its record did not carry the device's type: the type last
seen from that device (``cluster.mbus_devices``), in the transaction that stores the points,
so that the type is remembered exactly when the points that carried it are committed."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from energy_platform.core.codec import obis
from energy_platform.core.codec.format_v4 import Series
from energy_platform.core.db.pool import Connection

# The newest type per device wins, whichever worker or batch brings it.
REMEMBER_TYPES = """
INSERT INTO cluster.mbus_devices (homebase_sn, channel, device_type, seen_at)
SELECT DISTINCT ON (sn, ch) sn, ch, v, to_timestamp(t)
  FROM unnest($1::text[], $2::int[], $3::float8[], $4::bigint[]) AS u (sn, ch, v, t)
 ORDER BY sn, ch, t DESC
ON CONFLICT (homebase_sn, channel) DO UPDATE
   SET device_type = EXCLUDED.device_type, seen_at = EXCLUDED.seen_at
 WHERE mbus_devices.seen_at <= EXCLUDED.seen_at"""
TYPES_SEEN = """
SELECT m.homebase_sn, m.channel, m.device_type
  FROM cluster.mbus_devices m
  JOIN unnest($1::text[], $2::int[]) AS u (sn, ch) ON m.homebase_sn = u.sn AND m.channel = u.ch"""


async def resolve(
    conn: Connection, batch: Sequence[tuple[str, list[Series]]]
) -> list[list[Series]]:
    """The series of each (serial number, series) of ``batch``, its device types remembered
    and its pending M-Bus readings (:attr:`Series.pending`) given their medium; a reading of
    an unknown type becomes a system stream. No statement for a batch without M-Bus codes."""
    seen: list[tuple[str, int, float, int]] = [
        (sn, s.channel, v, t)
        for sn, series in batch
        for s in series
        if _is_type(s)
        for t, v in zip(s.times, s.values, strict=True)
    ]
    if seen:
        await conn.execute(REMEMBER_TYPES, *(list(c) for c in zip(*seen, strict=True)))
    wanted = sorted({(sn, s.channel) for sn, series in batch for s in series if s.pending})
    if not wanted:
        return [series for _, series in batch]
    rows = await conn.fetch(TYPES_SEEN, *(list(c) for c in zip(*wanted, strict=True)))
    types = {(r["homebase_sn"], r["channel"]): r["device_type"] for r in rows}
    return [
        [_given(s, types.get((sn, s.channel))) if s.pending else s for s in series]
        for sn, series in batch
    ]


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
