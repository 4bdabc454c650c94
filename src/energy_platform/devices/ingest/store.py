"""Writes batches of readings: streams created on first sight, points and the engine's dirty
ranges in one transaction, so a batch is stored whole or not at all."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import TypeVar

import asyncpg
import msgspec

from energy_platform.core.codec.format_v4 import Series
from energy_platform.core.db.live_log import LIVE_PUBLISH
from energy_platform.core.db.pool import Connection
from energy_platform.devices.ingest import mbus
from energy_platform.devices.ingest.drops import (
    INSERT_DEAD_LETTERS,
    DeadLetter,
    dead_letter_columns,
)
from energy_platform.devices.ingest.routes import Route

# Streams: unique per identity (partial unique indexes), created concurrently by several
# workers without harm, then read back; ids are cached only after the batch commits.
CLUSTER_STREAMS_UPSERT = """
INSERT INTO cluster.streams (feed_id, type, channel, device, medium, idx, source)
SELECT * FROM unnest($1::bigint[], $2::text[], $3::int[], $4::int[], $5::int[], $6::int[],
                     $7::text[])
ON CONFLICT DO NOTHING"""
CLUSTER_STREAM_IDS = """
SELECT k.n, s.id
  FROM unnest($1::bigint[], $2::text[], $3::int[], $4::int[], $5::int[], $6::int[], $7::text[])
       WITH ORDINALITY AS k(feed_id, type, channel, device, medium, idx, source, n)
  JOIN cluster.streams s
    ON s.feed_id = k.feed_id AND s.type = k.type AND s.channel = k.channel
   AND s.device IS NOT DISTINCT FROM k.device AND s.medium IS NOT DISTINCT FROM k.medium
   AND s.idx IS NOT DISTINCT FROM k.idx AND s.source IS NOT DISTINCT FROM k.source"""
FORWARDER_STREAMS_UPSERT = """
INSERT INTO forwarder.streams (homebase_sn, channel, device, medium, idx, obis)
SELECT * FROM unnest($1::text[], $2::int[], $3::int[], $4::int[], $5::int[], $6::text[])
ON CONFLICT DO NOTHING"""
FORWARDER_STREAM_IDS = """
SELECT k.n, s.id
  FROM unnest($1::text[], $2::int[], $3::int[], $4::int[], $5::int[], $6::text[])
       WITH ORDINALITY AS k(homebase_sn, channel, device, medium, idx, obis, n)
  JOIN forwarder.streams s
    ON s.homebase_sn = k.homebase_sn AND s.channel = k.channel AND s.device = k.device
   AND s.medium IS NOT DISTINCT FROM k.medium AND s.idx IS NOT DISTINCT FROM k.idx
   AND s.obis IS NOT DISTINCT FROM k.obis"""

# A resent point is a no-op; only points really added mark their days dirty for the engine
# (one range per stream and UTC day, cluster.day_ranges: an old timestamp costs its own day,
# not the years between it and the rest of the batch) and become live events (staged here,
# numbered by LIVE_PUBLISH at the end of the batch).
RAW_POINTS_INSERT = """
WITH added AS (
    INSERT INTO cluster.raw_points (stream_id, ts, value)
    SELECT s, to_timestamp(t), v FROM unnest($1::bigint[], $2::bigint[], $3::float8[]) AS u(s, t, v)
    ON CONFLICT DO NOTHING
    RETURNING stream_id, ts, value
), dirty AS (
    INSERT INTO cluster.dirty_ranges (stream_id, ts_from, ts_to)
    SELECT d.stream_id, d.ts_from, d.ts_to
      FROM (SELECT array_agg(stream_id) AS s, array_agg(ts) AS t FROM added) a
     CROSS JOIN LATERAL cluster.day_ranges(a.s, a.t) d)
SELECT cluster.live_stage('points', array_agg(stream_id),
                          array_agg(date_part('epoch', ts)::bigint), array_agg(value))
  FROM added"""
# System points have no processing; their hours go straight to the rollup queue, a range per
# stream and UTC day as above.
SYSTEM_POINTS_INSERT = """
WITH added AS (
    INSERT INTO cluster.system_points (stream_id, ts, value)
    SELECT s, to_timestamp(t), v FROM unnest($1::bigint[], $2::bigint[], $3::float8[]) AS u(s, t, v)
    ON CONFLICT DO NOTHING
    RETURNING stream_id, ts, value
), rolled AS (
    INSERT INTO cluster.rollup_work (stream_id, span)
    SELECT d.stream_id, tstzrange(d.ts_from, d.ts_to, '[]')
      FROM (SELECT array_agg(stream_id) AS s, array_agg(ts) AS t FROM added) a
     CROSS JOIN LATERAL cluster.day_ranges(a.s, a.t) d)
SELECT cluster.live_stage('points', array_agg(stream_id),
                          array_agg(date_part('epoch', ts)::bigint), array_agg(value))
  FROM added"""
# Late points into days the compaction took: those (stream, UTC day) pairs go back to the row
# tier first, in the same transaction and under the compaction's lock (cluster.thaw_days skips
# days it cannot have taken: a no-op, without a lock, for live data).
THAW_DAYS = "SELECT cluster.thaw_days($1::bigint[], $2::date[])"
UNIX_EPOCH = date(1970, 1, 1).toordinal()
FORWARDER_POINTS_INSERT = """
INSERT INTO forwarder.points (stream_id, ts, value)
SELECT s, to_timestamp(t), v FROM unnest($1::bigint[], $2::bigint[], $3::float8[]) AS u(s, t, v)
ON CONFLICT DO NOTHING"""
# One row per (feed, channel) per statement: ON CONFLICT DO UPDATE may touch a row only once.
CHANNELS_SEEN = """
INSERT INTO cluster.channel_activity (feed_id, channel, last_ts)
SELECT f, c, to_timestamp(t) FROM unnest($1::bigint[], $2::int[], $3::bigint[]) AS u(f, c, t)
ON CONFLICT (feed_id, channel)
DO UPDATE SET last_ts = greatest(channel_activity.last_ts, EXCLUDED.last_ts)"""
DATA_SEEN = """
INSERT INTO cluster.homebase_presence (homebase_sn, online, last_data_at)
SELECT sn, true, now() FROM unnest($1::text[]) AS sn
ON CONFLICT (homebase_sn) DO UPDATE SET last_data_at = now()"""

K = TypeVar("K", bound=tuple[object, ...])
ClusterKey = tuple[int, str, int, int | None, int | None, int | None, str | None]
ForwarderKey = tuple[str, int, int, int | None, int | None, str | None]


class Accepted(msgspec.Struct):
    """The series of one message (or CoAP request) that passed validation, with what it came
    from (the plaintext), in case the database refuses it and it becomes a dead letter, and the
    dead letters of its records that did not pass (the writer stores them beside it)."""

    route: Route
    series: list[Series]
    topic: str = ""
    payload: bytes = b""
    transport: str = "mqtt"
    refused: list[DeadLetter] = msgspec.field(default_factory=list)

    def dead_letter(self, cause: str, detail: str) -> DeadLetter:
        return DeadLetter.of(
            self.transport, self.route.sn, self.topic, cause, detail, self.payload, sealed=False
        )


class _Columns:
    """Points as three parallel arrays, the shape ``unnest`` takes."""

    def __init__(self) -> None:
        self.streams: list[int] = []
        self.times: list[int] = []
        self.values: list[float] = []

    def add(self, stream: int, series: Series) -> None:
        self.streams.extend([stream] * len(series.times))
        self.times.extend(series.times)
        self.values.extend(series.values)

    def args(self) -> tuple[list[int], list[int], list[float]]:
        return self.streams, self.times, self.values


def cluster_key(feed_id: int, r: Series) -> ClusterKey:
    if r.source is None:
        return (feed_id, "raw", r.channel, r.device, r.medium, r.index, None)
    return (feed_id, "system", r.channel, r.device, None, r.index, r.source)


def forwarder_key(sn: str, r: Series) -> ForwarderKey:
    medium = r.medium
    if medium is None and r.source is not None and r.source.startswith("medium:"):
        medium = int(r.source.removeprefix("medium:"))
    return (sn, r.channel, r.device, medium, r.index, r.obis)


class PointStore:
    def __init__(self, pool: asyncpg.Pool, max_cached_streams: int = 1_000_000) -> None:
        self._pool = pool
        self._cluster_ids: dict[ClusterKey, int] = {}
        self._forwarder_ids: dict[ForwarderKey, int] = {}
        self._max_cached = max_cached_streams

    async def write(self, batch: Sequence[Accepted], dead: Sequence[DeadLetter] = ()) -> int:
        """Store ``batch`` and the dead letters ``dead`` in one transaction; returns the number
        of points written."""
        async with self._pool.acquire() as conn, conn.transaction():
            count, new_cluster, new_forwarder = await self._write(conn, batch, dead)
        # Only once committed. Bounded memory whatever streams devices invent: past the limit,
        # start afresh (the ids are read back from the database as they are needed again).
        _remember(self._cluster_ids, new_cluster, self._max_cached)
        _remember(self._forwarder_ids, new_forwarder, self._max_cached)
        return count

    async def _write(
        self, conn: Connection, batch: Sequence[Accepted], dead: Sequence[DeadLetter]
    ) -> tuple[int, dict[ClusterKey, int], dict[ForwarderKey, int]]:
        resolved = await mbus.resolve(
            conn, [(a.route.sn, a.route.feed_id, a.series) for a in batch]
        )
        batch = [
            a if s is a.series else msgspec.structs.replace(a, series=s)
            for a, s in zip(batch, resolved, strict=True)
        ]
        cluster_keys = {
            cluster_key(a.route.feed_id, r): None
            for a in batch
            if a.route.feed_id is not None
            for r in a.series
        }
        forwarder_keys = {
            forwarder_key(a.route.sn, r): None
            for a in batch
            if a.route.feed_id is None
            for r in a.series
        }
        new_cluster = await cluster_streams(
            conn, [k for k in cluster_keys if k not in self._cluster_ids]
        )
        new_forwarder = await _ids(
            conn,
            [k for k in forwarder_keys if k not in self._forwarder_ids],
            FORWARDER_STREAMS_UPSERT,
            FORWARDER_STREAM_IDS,
        )
        cluster_ids = {**self._cluster_ids, **new_cluster}
        forwarder_ids = {**self._forwarder_ids, **new_forwarder}
        raw, system, forwarded = _Columns(), _Columns(), _Columns()
        days: set[tuple[int, int]] = set()  # (stream, UTC day number) of cluster points
        newest: dict[tuple[int, int], int] = {}
        count = 0
        for accepted in batch:
            feed_id = accepted.route.feed_id
            for r in accepted.series:
                count += len(r.times)
                if feed_id is None:
                    forwarded.add(forwarder_ids[forwarder_key(accepted.route.sn, r)], r)
                else:
                    columns = raw if r.source is None else system
                    stream = cluster_ids[cluster_key(feed_id, r)]
                    columns.add(stream, r)
                    days.update((stream, d) for d in {t // 86_400 for t in r.times})
                    channel = (feed_id, r.channel)
                    newest[channel] = max(newest.get(channel, 0), max(r.times))
        if days:
            streams, numbers = zip(*sorted(days), strict=True)
            await conn.execute(
                THAW_DAYS, streams, [date.fromordinal(UNIX_EPOCH + d) for d in numbers]
            )
        for statement, columns in (
            (RAW_POINTS_INSERT, raw),
            (SYSTEM_POINTS_INSERT, system),
            (FORWARDER_POINTS_INSERT, forwarded),
        ):
            if columns.streams:
                await conn.execute(statement, *columns.args())
        if newest:
            feeds, channels = zip(*sorted(newest), strict=True)
            await conn.execute(CHANNELS_SEEN, feeds, channels, [newest[k] for k in sorted(newest)])
        seen = sorted({a.route.sn for a in batch if a.series})
        if seen:
            await conn.execute(DATA_SEEN, seen)
        if dead:
            await conn.execute(INSERT_DEAD_LETTERS, *dead_letter_columns(list(dead)))
        if raw.streams or system.streams:
            # Last: its lock is held from here to the commit.
            await conn.execute(LIVE_PUBLISH)
        return count, new_cluster, new_forwarder


async def cluster_streams(conn: Connection, keys: list[ClusterKey]) -> dict[ClusterKey, int]:
    """The ids of the raw and system streams ``keys`` (``cluster_key``), each created on first
    sight. Public for seeding, so that a fixture's stream is the row a first batch makes."""
    return await _ids(conn, keys, CLUSTER_STREAMS_UPSERT, CLUSTER_STREAM_IDS)


async def forwarder_streams(conn: Connection, keys: list[ForwarderKey]) -> dict[ForwarderKey, int]:
    """The same for the forwarder's streams of registered homebases (``forwarder_key``)."""
    return await _ids(conn, keys, FORWARDER_STREAMS_UPSERT, FORWARDER_STREAM_IDS)


async def _ids(conn: Connection, keys: list[K], upsert: str, select: str) -> dict[K, int]:
    if not keys:
        return {}
    # Sorted, so that concurrent workers creating the same streams lock them in one order.
    keys = sorted(keys, key=repr)
    columns = [list(column) for column in zip(*keys, strict=True)]
    await conn.execute(upsert, *columns)
    rows = await conn.fetch(select, *columns)
    return {keys[row["n"] - 1]: row["id"] for row in rows}


def _remember(ids: dict[K, int], new: dict[K, int], limit: int) -> None:
    if len(ids) + len(new) > limit:
        ids.clear()
    ids.update(new)
