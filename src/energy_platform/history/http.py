"""``POST`` and ``DELETE /feeds/{feed_id}/streams/{stream_id}/data``: history into a raw stream,
and a range of it removed (a spike), the way late data enters (docs/data-api.md#history-in).

Only raw streams are written: processed points are the engine's, system points a device's
(409); only with a write token (403). Every replaced or removed point is recorded in
``cluster.corrections`` with who did it.
"""

from __future__ import annotations

from typing import Annotated

import asyncpg
import msgspec
from litestar import Request, delete, post
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.openapi.spec import OpenAPIType, Schema
from litestar.params import FromPath, QueryParameter

from energy_platform.core import bounds
from energy_platform.core.errors import Conflict, InvalidInput, NotFound
from energy_platform.core.http.database import Database
from energy_platform.core.http.openapi import problems, request_body
from energy_platform.core.inputs import parse_id
from energy_platform.history import queries
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


class Deleted(msgspec.Struct):
    deleted: int


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
    ) -> Written:
        require_write(caller)
        stream, medium = await _raw_stream(pool, feed_id, stream_id, caller)
        points = _points(request.content_type[0], await request.body(), bounds.of_medium(medium))
        row = await pool.fetchrow(
            queries.WRITE_POINTS, stream, points.times, points.values, await actor(pool, caller)
        )
        assert row is not None  # noqa: S101 - the function answers one row
        return Written(row["inserted"], row["replaced"], row["unchanged"])

    @delete(
        "/feeds/{feed_id:str}/streams/{stream_id:str}/data",
        status_code=200,
        summary="Remove a raw stream's points between two times (both inclusive)",
        opt=problems(403, 409),
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
        stream, _ = await _raw_stream(pool, feed_id, stream_id, caller)
        row = await pool.fetchrow(
            queries.DELETE_POINTS,
            stream,
            instant(time_from),
            instant(time_to),
            await actor(pool, caller),
        )
        assert row is not None  # noqa: S101 - the function answers one row
        return Deleted(row["deleted"])


async def actor(pool: asyncpg.Pool, caller: Caller) -> str:
    """Who a correction is recorded as: the user, and the name of the token they sent."""
    name = await pool.fetchval(queries.ACTOR_NAME, caller.digest)
    return f"user {caller.user_id}" if name is None else f"user {caller.user_id} ({name})"


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
