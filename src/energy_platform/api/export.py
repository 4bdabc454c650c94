"""``GET /feeds/{feed_id}/export``: a feed's streams side by side in one CSV, over any range.

One line per point time (``resolution=points``) or per local hour, day or month: ``time`` (Unix
seconds), ``local_time`` (ISO 8601 with the offset of the feed's zone at that time), then a
column per stream, empty where the stream has no value at that time (docs/api.md#csv).

There is no limit: the lines are read from the database as the client takes them. The handler
checks everything that can fail (token, feed, streams, parameters) and only then answers 200
with a stream whose body PostgreSQL writes: one read-only transaction (one snapshot), per
configuration period of the feed's time zone a cursor, whose rows are ready CSV text (a UTC
day of points, or a bucket's line). Memory stays that of a few days of lines, whatever the
range; exports hold connections of the costly reads' half of the pool (core/http/shares.py,
shared with the overview), and each user at most EP_API_EXPORTS_PER_USER of them
(ExportSlots); an export whose client stops reading for
EP_API_EXPORT_STALL_S is ended and its connection returned (core/http/stalls.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import weakref
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Annotated, Literal

import asyncpg
import msgspec
import structlog
from litestar import Controller, Router, get
from litestar.datastructures import ResponseHeader
from litestar.di import NamedDependency, Provide
from litestar.openapi.spec import OpenAPIType, Schema
from litestar.params import FromPath, QueryParameter
from litestar.response import Stream
from prometheus_client import Counter

from energy_platform.api.feeds import BUCKET_REACH, CSV, EARLIEST, LATEST, UnixTime
from energy_platform.core.db.pool import Connection
from energy_platform.core.errors import InvalidInput, NotFound
from energy_platform.core.http.database import Reads
from energy_platform.core.http.openapi import problems, text_answer
from energy_platform.core.http.shares import PoolShare, SharesBusy, UserSlots, once
from energy_platform.core.http.stalls import until_stalled
from energy_platform.core.inputs import INT8_MAX, MAX_REPEATED, Ids
from energy_platform.core.settings import ApiSettings
from energy_platform.users.auth import Caller, authenticate, visible_feed

ExportResolution = Literal["points", "hour", "day", "month"]
RESOLUTION_DOC = (
    "points: a line per point time of any of the streams; hour, day, month: a line per local"
    " bucket of the feed's time zone, valued as the data endpoint's `resolution` values it"
    " (summed or averaged, from the rollups in real time)."
)
STREAM_DOC = (
    "A column per stream, in the order first given (raw, processed or system streams of the"
    " feed; a stream given again is the same column); absent: every processed stream of the"
    f" feed, by id (at most {MAX_REPEATED:,} columns either way)."
)
EXPORT_DOC = (
    'CSV (RFC 4180, CRLF line ends, text quoted, numbers bare): a header line `"time",'
    '"local_time","<stream title> (<unit>)"...`, then a line per point time or bucket: Unix'
    " seconds, the local time in ISO 8601 with its offset (the feed's zone at that time), and"
    " each stream's value as the data endpoint writes it, empty where it has none. Streamed,"
    " without a limit of size; a client that stops reading for EP_API_EXPORT_STALL_S (60)"
    " seconds is disconnected. 429 (with Retry-After): the user already runs"
    " EP_API_EXPORTS_PER_USER (2) exports on this API process, or half its pool serves exports"
    " and overviews."
)
MAX_COLUMNS = MAX_REPEATED
"""Streams one export writes at most: each is a column of every line and a cursor's function
call per UTC day."""
log = structlog.get_logger()
STALLED = Counter(
    "ep_api_exports_stalled", "Feed exports ended because their client stopped reading"
)
BUCKET_LINES = 2000
"""Bucket lines per chunk of the body: a year of hours in five chunks."""
DAYS = 4
"""UTC days of one stream's points per fetch (under 4 MB of CSV at 5 s): each fetch costs
PostgreSQL milliseconds of its own, an eighth of its time for a year fetched day by day.
Several streams' days come one at a time, their size growing with the streams."""

# The columns, in their order: the streams asked for ($2, with their position), or every
# processed stream of feed $1 by id. A stream that is not the feed's has no row in streams.
EXPORT_COLUMNS = """
WITH asked AS (
    SELECT c.id, c.k FROM unnest($2::bigint[]) WITH ORDINALITY AS c (id, k)
    UNION ALL
    SELECT s.id, row_number() OVER (ORDER BY s.id)
      FROM cluster.streams s
     WHERE $2::bigint[] IS NULL AND s.feed_id = $1 AND s.type = 'processed')
SELECT a.id AS asked, s.id, s.type, s.channel, s.device, s.medium, s.idx, s.source,
       c.title, c.unit
  FROM asked a
  LEFT JOIN cluster.streams s ON s.id = a.id AND s.feed_id = $1
  LEFT JOIN LATERAL (
      SELECT sc.title, sc.unit FROM cluster.stream_configs sc
       WHERE sc.stream_id = s.id
       ORDER BY lower(sc.validity) DESC NULLS LAST LIMIT 1) c ON true
 ORDER BY a.k"""

# The feed's time zone periods that meet [$2, $3] (Unix seconds), in time order: its
# configuration periods, and UTC for time none covers (as for the rollups). Their bounds are
# the configurations' own (null: unbounded), handed back to the statements below as they are:
# the export's range is computed in SQL from the request's seconds, never from a Python
# datetime (asyncpg sends 0001-01-01T00:00Z, the earliest time a request may name, as
# -infinity).
EXPORT_PERIODS = """
WITH zones AS (
    SELECT z.validity AS r, z.timezone FROM cluster.feed_configs z WHERE z.feed_id = $1
    UNION ALL
    SELECT g.r, 'UTC'
      FROM unnest(tstzmultirange(tstzrange(NULL, NULL))
                  - coalesce((SELECT range_agg(z.validity) FROM cluster.feed_configs z
                               WHERE z.feed_id = $1), '{}'::tstzmultirange)) AS g (r))
SELECT lower(z.r) AS valid_from, upper(z.r) AS valid_to, z.timezone
  FROM zones z
 WHERE z.r && tstzrange(to_timestamp($2::bigint), to_timestamp($3::bigint), '[]')
 ORDER BY lower(z.r) NULLS FIRST"""

# Local times are written in the session's zone (cluster.csv_times): set for the transaction.
SET_TIME_ZONE = "SELECT set_config('TimeZone', $1, true)"
# JIT compiles these statements for longer than they run: their generic plans' estimates are
# guesses (a year of chunks), and the per-point work is in functions JIT does not reach.
NO_JIT = "SELECT set_config('jit', 'off', true)"

# Every point of stream $1 in [$2, $3] (Unix seconds) and in the zone period [$4, $5), a row
# per UTC day that has any: its lines as ready CSV (cluster.csv_times, then the value as
# cluster.json_number writes it). The range shrinks to the stream's first and last points, so
# that an open range does not walk ten thousand years of days. A UTC day is a row of the compact
# tier (cluster.stream_points reads both tiers): each is unpacked once. The days are walked in
# order, so PostgreSQL sorts nothing bigger than a day and hands out the first day before it
# reads the second. A day's points are sorted, then aggregated in that order: the form
# PostgreSQL's documentation gives for an ordered aggregate ("supplying the input values from a
# sorted subquery", safe with no join at that level), which sorts the narrow points instead of
# the finished lines (an aggregate's own ORDER BY cost a quarter more).
EXPORT_STREAM_POINTS = """
WITH span AS (
    SELECT greatest(to_timestamp($2::bigint), $4::timestamptz, e.first) AS lo,
           least(to_timestamp($3::bigint) + interval '1 microsecond', $5::timestamptz,
                 e.last + interval '1 microsecond') AS hi
      FROM (SELECT cluster.stream_point_edge($1::bigint, false) AS first,
                   cluster.stream_point_edge($1::bigint, true) AS last) e
     WHERE e.first IS NOT NULL)
SELECT x.chunk
  FROM (SELECT d.start
          FROM generate_series(date_trunc('day', (SELECT lo FROM span), 'UTC'),
                               (SELECT hi FROM span) - interval '1 microsecond',
                               interval '24 hours') AS d (start)
         ORDER BY d.start) w
 CROSS JOIN LATERAL (
     SELECT convert_to(string_agg(cluster.csv_times(p.ts) || ',' || cluster.json_number(p.value),
                                  E'\\r\\n') || E'\\r\\n', 'UTF8') AS chunk
       FROM (SELECT q.ts, q.value
               FROM cluster.stream_points($1::bigint, greatest(w.start, (SELECT lo FROM span)),
                                          least(w.start + interval '24 hours',
                                                (SELECT hi FROM span))) q
              ORDER BY q.ts) p) x
 WHERE x.chunk IS NOT NULL
 ORDER BY w.start"""

# The same for several streams $1 (column k = position): a line per time any of them has a
# point, each value in its column (cluster.csv_cells), empty cells where a stream has none.
EXPORT_POINTS = """
WITH chosen AS (
    SELECT c.id, c.k FROM unnest($1::bigint[]) WITH ORDINALITY AS c (id, k)),
span AS (
    SELECT greatest(to_timestamp($2::bigint), $4::timestamptz, e.first) AS lo,
           least(to_timestamp($3::bigint) + interval '1 microsecond', $5::timestamptz,
                 e.last + interval '1 microsecond') AS hi
      FROM (SELECT min(cluster.stream_point_edge(c.id, false)) AS first,
                   max(cluster.stream_point_edge(c.id, true)) AS last
              FROM chosen c) e
     WHERE e.first IS NOT NULL)
SELECT x.chunk
  FROM (SELECT d.start
          FROM generate_series(date_trunc('day', (SELECT lo FROM span), 'UTC'),
                               (SELECT hi FROM span) - interval '1 microsecond',
                               interval '24 hours') AS d (start)
         ORDER BY d.start) w
 CROSS JOIN LATERAL (
     SELECT convert_to(string_agg(cluster.csv_times(g.ts) || ','
                                  || cluster.csv_cells(g.ks, g.nums, $6::integer),
                                  E'\\r\\n') || E'\\r\\n', 'UTF8') AS chunk
       FROM (SELECT p.ts, array_agg(c.k) AS ks, array_agg(cluster.json_number(p.value)) AS nums
               FROM chosen c
              CROSS JOIN LATERAL cluster.stream_points(
                  c.id, greatest(w.start, (SELECT lo FROM span)),
                  least(w.start + interval '24 hours', (SELECT hi FROM span))) p
              GROUP BY p.ts
              ORDER BY p.ts) g) x
 WHERE x.chunk IS NOT NULL
 ORDER BY w.start"""

# The buckets of streams $1 whose start lies in [$2, $3] (Unix seconds) and in the zone period
# [$4, $5), per local hour, day or month ($7), valued as the data endpoint values them
# (api/queries.py, STREAM_BUCKETS): from the rollups in real time (cluster.realtime_hours and
# realtime_days answer what the engine has not materialised yet from the points), summed or
# averaged by the configuration valid at a bucket's first hour (cluster.additive); days read up
# to $8 further so that a month is whole. A month's days are summed in their order, so that its
# value is the same to the bit on every read. A line per bucket start, in order.
EXPORT_BUCKETS = """
WITH chosen AS (
    SELECT c.id, c.k, s.type
      FROM unnest($1::bigint[]) WITH ORDINALITY AS c (id, k)
      JOIN cluster.streams s ON s.id = c.id),
span AS MATERIALIZED (
    SELECT greatest(to_timestamp($2::bigint), $4::timestamptz) AS lo,
           least(to_timestamp($3::bigint) + interval '1 microsecond', $5::timestamptz) AS hi),
rows AS (
    SELECT c.k, h.hour AS start, h.hour AS first, h.total, h.points
      FROM chosen c
     CROSS JOIN span
     CROSS JOIN LATERAL cluster.realtime_hours(c.id, span.lo, span.hi) h
     WHERE $7::text = 'hour'
    UNION ALL
    SELECT c.k, CASE $7::text WHEN 'day' THEN d.start
                ELSE date_trunc('month', d.day)::timestamp AT TIME ZONE d.timezone END,
           d.start, d.total, d.points
      FROM chosen c
     CROSS JOIN span
     CROSS JOIN LATERAL cluster.realtime_days(c.id, span.lo, span.hi + $8::interval) d
     WHERE $7::text <> 'hour'),
buckets AS (
    SELECT b.start, b.k,
           CASE WHEN cluster.additive(c.type, (
                         SELECT m.medium FROM cluster.stream_configs m
                          WHERE m.stream_id = c.id AND m.validity @> min(b.first)))
                THEN sum(b.total ORDER BY b.first)
                ELSE sum(b.total ORDER BY b.first) / sum(b.points) END AS value
      FROM rows b
      JOIN chosen c ON c.k = b.k
     GROUP BY b.start, b.k, c.id, c.type
    HAVING b.start >= (SELECT lo FROM span) AND b.start < (SELECT hi FROM span))
SELECT convert_to(cluster.csv_times(g.start) || ','
                  || CASE WHEN $6::integer = 1 THEN g.nums[1]
                          ELSE cluster.csv_cells(g.ks, g.nums, $6::integer) END
                  || E'\\r\\n', 'UTF8') AS line
  FROM (SELECT start, array_agg(k) AS ks, array_agg(cluster.json_number(value)) AS nums
          FROM buckets
         GROUP BY start) g
 ORDER BY g.start"""


class ExportSlots:
    """How many exports may run at once in this process, and per user. Each holds one
    connection of the API's pool, and its snapshot, for as long as its client reads: one of the
    costly reads' half of the pool (``PoolShare``, shared with the overview), so that the rest
    stays for every other request (a handful of slow downloads would otherwise queue the data
    endpoint behind them), and one user cannot take every slot."""

    def __init__(self, share: PoolShare, per_user: int) -> None:
        self.share = share
        self.users = UserSlots(per_user, "exports")

    @property
    def free(self) -> int:
        return self.share.free

    def take(self, user: int) -> Callable[[], None]:
        """A slot for ``user``, else 429; the function returned gives it back, once however
        often called."""
        user_slot = self.users.take(user)
        try:
            connection = self.share.take_now("exports and overviews")
        except SharesBusy:
            user_slot()
            raise

        def give_back() -> None:
            connection()
            user_slot()

        return once(give_back)


class ExportLimits(msgspec.Struct, frozen=True):
    """The process's export slots and how long a client may stop reading."""

    slots: ExportSlots
    stall_s: float


def export_routes(share: PoolShare, api: ApiSettings) -> Router:
    """The export's route for the data API's app: exports hold connections of the costly
    reads' ``share`` of the pool, ``api.exports_per_user`` of them per user."""
    limits = ExportLimits(ExportSlots(share, api.exports_per_user), api.export_stall_s)
    return Router(
        path="/",
        route_handlers=[ExportController],
        dependencies={"limits": Provide(lambda: limits, sync_to_thread=False)},
    )


class Export(msgspec.Struct, frozen=True):
    """What one export writes, checked: the feed's streams in column order and the range."""

    feed: int
    streams: list[int]
    time_from: int
    time_to: int
    resolution: ExportResolution


class ExportController(Controller):
    dependencies = {"caller": Provide(authenticate)}  # noqa: RUF012 - Litestar's own convention
    tags = ["feeds and streams"]  # noqa: RUF012

    @get(
        "/feeds/{feed_id:str}/export",
        summary="A feed's streams side by side as CSV, per point time or local bucket, any range",
        media_type=CSV,
        response_description="The export, streamed",
        response_headers=[
            ResponseHeader(
                name="Content-Disposition",
                description='attachment; filename="feed-<id>.csv": browsers save it as a file.',
                documentation_only=True,
            )
        ],
        opt={**text_answer(CSV, EXPORT_DOC), **problems(429)},
    )
    async def export(
        self,
        feed_id: FromPath[str],
        caller: NamedDependency[Caller],
        reads: Reads,
        limits: NamedDependency[ExportLimits],
        time_from: UnixTime = None,
        time_to: UnixTime = None,
        resolution: Annotated[
            ExportResolution, QueryParameter(description=RESOLUTION_DOC)
        ] = "points",
        streams: Annotated[
            Ids | None,
            QueryParameter(
                name="stream",
                max_items=MAX_REPEATED,
                description=STREAM_DOC,
                # Litestar leaves the items' own bounds out of the document.
                schema_extra={
                    "items": Schema(type=OpenAPIType.INTEGER, minimum=1, maximum=INT8_MAX)
                },
            ),
        ] = None,
    ) -> Stream:
        if time_from is not None and time_to is not None and time_from > time_to:
            raise InvalidInput(
                f"time_from ({time_from}) is after time_to ({time_to})", field="time_from"
            )
        feed = await visible_feed(reads, feed_id, caller)
        # A stream asked for again is the column it already has (issue 46: a thousand copies of
        # one stream cost a thousand columns' work on every line).
        asked = None if streams is None else list(dict.fromkeys(streams))
        columns = await reads.fetch(EXPORT_COLUMNS, feed["id"], asked)
        if len(columns) > MAX_COLUMNS:
            raise InvalidInput(
                f"the feed has {len(columns):,} processed streams: name at most"
                f" {MAX_COLUMNS:,} with stream=",
                field="stream",
            )
        for column in columns:
            if column["id"] is None:
                raise NotFound(f"no stream {str(column['asked'])!r} in feed {feed_id!r}")
        export = Export(
            feed["id"],
            [c["id"] for c in columns],
            EARLIEST if time_from is None else time_from,
            LATEST if time_to is None else time_to,
            resolution,
        )
        give_back = limits.slots.take(caller.user_id)
        body = csv_body(reads, header_line(columns), export, give_back)
        # A body never started (its client gone before the first byte) runs no finally: its
        # slot comes back when it is collected.
        weakref.finalize(body, give_back)

        def stalled() -> None:
            STALLED.inc()
            log.warning("export: client stopped reading; ended", feed=feed["id"])

        return Stream(
            until_stalled(body, limits.stall_s, stalled),
            media_type=CSV,
            headers={"Content-Disposition": f'attachment; filename="feed-{feed["id"]}.csv"'},
        )


def header_line(columns: Sequence[asyncpg.Record]) -> bytes:
    """``time``, ``local_time`` and each stream's title, quoted as the export quotes all its
    text (titles hold commas and may hold quotes)."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n", quoting=csv.QUOTE_ALL).writerow(
        ["time", "local_time", *(inert(column_title(c)) for c in columns)]
    )
    return out.getvalue().encode()


def column_title(column: asyncpg.Record) -> str:
    """A processed stream's current title and unit; raw and system streams, which have neither,
    by what identifies them."""
    if column["title"] is not None:
        return f"{column['title']} ({column['unit']})" if column["unit"] else column["title"]
    if column["type"] == "raw":
        index = "" if column["idx"] is None else f", index {column['idx']}"
        return (
            f"raw stream {column['id']}: channel {column['channel']}, device {column['device']},"
            f" medium {column['medium']}{index}"
        )
    if column["type"] == "system":
        return f"system stream {column['id']}: channel {column['channel']}, {column['source']}"
    return f"{column['type']} stream {column['id']}"


FORMULA_START = ("=", "+", "-", "@")


def inert(cell: str) -> str:
    """A header cell a spreadsheet shows as text: one starting like a formula gets a leading
    apostrophe (OWASP's advice on CSV injection; titles are typed by people)."""
    return f"'{cell}" if cell.startswith(FORMULA_START) else cell


async def csv_body(
    pool: asyncpg.Pool, header: bytes, export: Export, give_back: Callable[[], None]
) -> AsyncGenerator[bytes, None]:
    """The export's body: the header, then its lines as PostgreSQL writes them, read from
    cursors in one read-only transaction as the client takes them; its slot given back at the
    end, however it ends."""
    try:
        yield header
        async with contextlib.aclosing(csv_lines(pool, export)) as lines:
            async for chunk in lines:
                yield chunk
    finally:
        give_back()


async def csv_lines(pool: asyncpg.Pool, export: Export) -> AsyncGenerator[bytes, None]:
    """The lines after the header, per time zone period of the feed: its zone set, then a
    cursor of UTC days (points) or of bucket lines."""
    if not export.streams:
        return
    resolution = export.resolution
    columns = len(export.streams)
    async with (
        pool.acquire() as conn,
        conn.transaction(isolation="repeatable_read", readonly=True),
    ):
        periods = await conn.fetch(EXPORT_PERIODS, export.feed, export.time_from, export.time_to)
        await conn.execute(NO_JIT)
        for period in periods:
            await conn.execute(SET_TIME_ZONE, period["timezone"])
            span = (export.time_from, export.time_to, period["valid_from"], period["valid_to"])
            if resolution == "points":
                # A row is a UTC day of lines. One stream needs no merging of times.
                days = (
                    fetched(conn, DAYS, EXPORT_STREAM_POINTS, export.streams[0], *span)
                    if columns == 1
                    else fetched(conn, 1, EXPORT_POINTS, export.streams, *span, columns)
                )
                # Closed before the transaction ends, whatever ends it: a fetch in flight
                # must finish before the rollback can run.
                async with contextlib.aclosing(days):
                    async for records in days:
                        for day in records:
                            yield day["chunk"]
                continue
            buckets = fetched(
                conn,
                BUCKET_LINES,
                EXPORT_BUCKETS,
                export.streams,
                *span,
                columns,
                resolution,
                BUCKET_REACH[resolution],
            )
            async with contextlib.aclosing(buckets):
                async for lines in buckets:
                    yield b"".join(line["line"] for line in lines)


async def fetched(
    conn: Connection, rows: int, query: str, *args: object
) -> AsyncGenerator[list[asyncpg.Record], None]:
    """``query``'s rows from a cursor, ``rows`` at a time, the next ones asked for before these
    are handed on: PostgreSQL computes them while the client receives these (fetched one after
    the other, each waited for its turn and the export took twice its database time)."""
    cursor = await conn.cursor(query, *args)
    batch = asyncio.ensure_future(cursor.fetch(rows))
    try:
        while records := await batch:
            batch = asyncio.ensure_future(cursor.fetch(rows))
            # Let the fetch send its request now: writing this batch out may never suspend,
            # and the request would then leave only once it was done.
            await asyncio.sleep(0)
            yield records
    finally:
        # A client gone mid-export: the fetch in flight ends before the transaction does.
        batch.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await batch
