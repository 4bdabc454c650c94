"""``POST`` and ``DELETE /feeds/{feed_id}/streams/{stream_id}/data``: history into a raw stream,
and a range of it removed (a spike), the way late data enters (docs/api.md#history-in).

Only raw streams are written: processed points are the engine's, system points a device's
(409); only with a write token (403). Every request that changes a point is one correction,
which ``POST /feeds/{feed_id}/corrections/{correction_id}/undo`` takes back
(docs/api.md#undo).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Annotated

import asyncpg
import msgspec
from litestar import Request, delete, post
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide
from litestar.exceptions.http_exceptions import RequestEntityTooLarge
from litestar.openapi.spec import OpenAPIType, Schema
from litestar.params import FromPath, QueryParameter

from energy_platform.core import bounds
from energy_platform.core.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    PayloadTooLarge,
    TooManyRequests,
)
from energy_platform.core.http.database import Database
from energy_platform.core.http.openapi import problems, request_body
from energy_platform.core.inputs import parse_id
from energy_platform.core.ratelimit import TokenBuckets
from energy_platform.core.settings import HistorySettings
from energy_platform.history import intervals, queries
from energy_platform.history.corrections import Undone, undo
from energy_platform.history.points import (
    EARLIEST,
    LATEST,
    MAX_BODY_BYTES,
    MAX_POINTS,
    Points,
    from_csv,
    from_json,
    instant,
)
from energy_platform.users.auth import Caller, require_write

UnixTime = Annotated[int, QueryParameter(ge=EARLIEST, le=LATEST)]
MAX_REMOVED_POINTS = 1_000_000
"""Points one removal may take: its correction keeps them all for EP_HISTORY_CORRECTIONS_DAYS."""
MAX_REMOVED_DAYS = 366
"""Days one removal may span (the range is checked before anything is read)."""
POINTS_BODY = request_body(
    f"At most {MAX_POINTS:,} points: JSON [[unix seconds, value], ...] or CSV time,value lines"
    " (Content-Type text/csv; a time is Unix seconds or ISO 8601 with an offset).",
    {
        "application/json": Schema(
            type=OpenAPIType.ARRAY,
            max_items=MAX_POINTS,
            items=Schema(
                type=OpenAPIType.ARRAY,
                items=Schema(type=OpenAPIType.NUMBER),
                min_items=2,
                max_items=2,
            ),
        ),
        "text/csv": Schema(type=OpenAPIType.STRING),
    },
)


class Written(msgspec.Struct):
    inserted: int
    """Points at times the stream held no point."""
    replaced: int
    """Points whose value changed (the old one is in the audit trail)."""
    unchanged: int
    """Points the stream already held with that value."""
    correction: str | None
    """The correction that records what this request added and replaced (undo takes it
    back); null when nothing changed."""


class Deleted(msgspec.Struct):
    deleted: int
    correction: str | None
    """The correction that records the removed points; null when there were none."""


class UndosSpent(TooManyRequests):
    headers = MappingProxyType({"Retry-After": "60"})


class UndoLimits:
    """Each user's undos in this API process: ``per_minute`` at once, refilled at that rate
    (core/ratelimit.py's token buckets, keyed by user)."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._buckets = TokenBuckets(per_minute, per_minute)

    def take(self, user: int) -> None:
        """One undo of ``user``'s, else 429 with Retry-After."""
        if not self._buckets.take(str(user)):
            raise UndosSpent(
                f"at most {self.per_minute} undos a minute per user"
                " (EP_HISTORY_UNDOS_PER_MINUTE): retry in a minute"
            )


def undo_limits(settings: HistorySettings) -> dict[str, Provide]:
    """The dependency the undo handler takes its user's share from (``undos``): one set of
    buckets per app, so per API process."""
    limits = UndoLimits(settings.undos_per_minute)
    return {"undos": Provide(lambda: limits, sync_to_thread=False)}


class StreamWrites:
    """The writing handlers of a stream's data, mixed into the data API's ``FeedsController``
    beside the reading one: Litestar gives each controller an OPTIONS handler of its own for
    each path, so two controllers cannot share ``.../data``. They use its ``caller``."""

    @post(
        "/feeds/{feed_id:str}/streams/{stream_id:str}/data",
        status_code=200,
        summary="Add or replace a raw stream's points (history, a corrected reading)",
        request_max_body_size=MAX_BODY_BYTES,
        opt={**problems(403, 409), **POINTS_BODY},
    )
    async def add(
        self,
        feed_id: FromPath[str],
        stream_id: FromPath[str],
        request: Request[object, object, State],
        caller: NamedDependency[Caller],
        pool: Database,
        interval: Annotated[
            int | None,
            QueryParameter(
                ge=1,
                le=int(bounds.INTERVAL.limit),
                description="Seconds: each value is the Wh used in the interval starting at its"
                " time, made the energy register's readings (media 22, 23; docs/api.md).",
            ),
        ] = None,
    ) -> Written:
        require_write(caller)
        stream, medium = await _raw_stream(pool, feed_id, stream_id, caller)
        if interval is not None:
            intervals.check_medium(medium)
        try:
            body = await request.body()
        except RequestEntityTooLarge:
            raise PayloadTooLarge(
                f"a body of at most {MAX_BODY_BYTES:,} bytes and {MAX_POINTS:,} points:"
                " split the import"
            ) from None
        points = _points(request.content_type[0], body, bounds.of_medium(medium))
        who = await actor(pool, caller)
        async with pool.acquire() as conn, conn.transaction():
            if interval is not None and points.times:
                points = await intervals.as_readings(
                    conn, stream, points, intervals.check_interval(interval)
                )
            row = await conn.fetchrow(
                queries.WRITE_POINTS, stream, points.times, points.values, who, None
            )
        assert row is not None  # noqa: S101 - the function answers one row
        return Written(row["inserted"], row["replaced"], row["unchanged"], _id(row))

    @delete(
        "/feeds/{feed_id:str}/streams/{stream_id:str}/data",
        status_code=200,
        summary=(
            f"Remove a raw stream's points between two times (both inclusive; at most"
            f" {MAX_REMOVED_DAYS} days and {MAX_REMOVED_POINTS:,} points)"
        ),
        opt=problems(403, 409, 413),
    )
    async def remove(
        self,
        feed_id: FromPath[str],
        stream_id: FromPath[str],
        caller: NamedDependency[Caller],
        pool: Database,
        time_from: UnixTime,
        time_to: UnixTime,
    ) -> Deleted:
        require_write(caller)
        if time_from > time_to:
            raise InvalidInput(
                f"time_from ({time_from}) is after time_to ({time_to})", field="time_from"
            )
        if time_to - time_from > MAX_REMOVED_DAYS * 86_400:
            raise PayloadTooLarge(
                f"at most {MAX_REMOVED_DAYS} days a removal: remove the range in parts"
            )
        stream, _ = await _raw_stream(pool, feed_id, stream_id, caller)
        try:
            row = await pool.fetchrow(
                queries.DELETE_POINTS,
                stream,
                instant(time_from),
                instant(time_to),
                await actor(pool, caller),
                MAX_REMOVED_POINTS,
            )
        except asyncpg.ProgramLimitExceededError as e:
            raise PayloadTooLarge(str(e)) from None
        assert row is not None  # noqa: S101 - the function answers one row
        return Deleted(row["deleted"], _id(row))

    @post(
        "/feeds/{feed_id:str}/corrections/{correction_id:str}/undo",
        status_code=200,
        summary=(
            "Undo a correction (an import, a removal, an undo): its points get back what they"
            " held before it, if each still holds what it left (else 409, nothing changed);"
            f" at most {MAX_POINTS:,} points (else 413), each within its bound (else 400)"
        ),
        opt=problems(403, 409, 413, 429),
    )
    async def undo_correction(
        self,
        feed_id: FromPath[str],
        correction_id: FromPath[str],
        caller: NamedDependency[Caller],
        pool: Database,
        undos: NamedDependency[UndoLimits],
    ) -> Undone:
        require_write(caller)
        undos.take(caller.user_id)
        feed, number = parse_id(feed_id, "feed"), parse_id(correction_id, "correction")
        seen = await pool.fetchval(
            queries.VISIBLE_CORRECTION, number, feed, caller.user_id, caller.is_admin
        )
        if seen is None:
            raise NotFound(f"no correction {correction_id!r} in feed {feed_id!r}")
        return await undo(pool, number, await actor(pool, caller), most=MAX_POINTS)


async def actor(pool: asyncpg.Pool, caller: Caller) -> str:
    """Who a correction is recorded as: the user, and the name of the token they sent."""
    name = await pool.fetchval(queries.ACTOR_NAME, caller.digest)
    return f"user {caller.user_id}" if name is None else f"user {caller.user_id} ({name})"


def _id(row: asyncpg.Record) -> str | None:
    return None if row["correction"] is None else str(row["correction"])


def _points(content_type: str, body: bytes, bound: bounds.Bound) -> Points:
    if content_type == "text/csv":
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InvalidInput(f"not UTF-8 text (byte {e.start})") from None
        return from_csv(text, bound=bound)
    if content_type in ("application/json", ""):
        return from_json(body, bound=bound)
    raise InvalidInput(f"Content-Type {content_type!r}: send application/json or text/csv")


async def _raw_stream(
    pool: asyncpg.Pool, feed_id: str, stream_id: str, caller: Caller
) -> tuple[int, int]:
    """Stream ``stream_id`` of ``feed_id`` and its medium when the caller sees it and it is raw;
    404, 409."""
    stream = parse_id(stream_id, "stream")
    row = await pool.fetchrow(
        queries.STREAM_TYPE, stream, parse_id(feed_id, "feed"), caller.user_id, caller.is_admin
    )
    if row is None:
        raise NotFound(f"no stream {stream_id!r} in feed {feed_id!r}")
    kind = row["type"]
    if kind != "raw":
        raise Conflict(
            f"stream {stream_id} is a {kind} stream: only raw streams take points "
            "(the engine makes the processed ones from them)"
        )
    return stream, row["medium"]
