"""Feeds, streams and stream data: ``/users/{id}/feeds`` and ``/feeds/...``."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Literal

import asyncpg
import msgspec
from litestar import Controller, MediaType, Request, Response, get
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, QueryParameter

from energy_platform.api import queries
from energy_platform.api.json_shapes import render_feeds, render_streams
from energy_platform.api.schemas import Feed, Stream, StreamType
from energy_platform.core import bounds
from energy_platform.core.errors import InvalidInput, NotFound
from energy_platform.core.http.bearer import bearer_digest, unknown_token
from energy_platform.core.http.database import Database, Reads
from energy_platform.core.http.openapi import authenticates_as, text_answer
from energy_platform.core.inputs import MAX_REPEATED, Channels, parse_id
from energy_platform.history.http import StreamWrites
from energy_platform.users.auth import Caller, authenticate, visible_feed, visible_user
from energy_platform.users.usage import token_used

# The calendar's range (core/bounds.py): a time outside it is 400 naming its parameter.
EARLIEST, LATEST = bounds.EARLIEST, bounds.LATEST
UnixTime = Annotated[int | None, QueryParameter(ge=EARLIEST, le=LATEST)]
Authenticated = NamedDependency[Caller]
Types = Annotated[list[StreamType], msgspec.Meta(max_length=MAX_REPEATED)]
MAX_POINTS = 100_000
"""A week of 5 s points (DESIGN: at least 100,000)."""
Resolution = Literal["hour", "day", "month"]
# How far past time_to a bucket starting at time_to reaches: its last day's start.
BUCKET_REACH: dict[Resolution, timedelta] = {
    "hour": timedelta(0),
    "day": timedelta(0),
    "month": timedelta(days=31),
}
RESOLUTION_DOC = (
    "Answer per calendar unit instead of per point: `[bucket start, value]` for each local"
    " hour, day (from local midnight) or month (from the first, local midnight) in the feed's"
    " time zone valid at the bucket (a day is 23 or 25 hours across DST). time_from/time_to"
    " select buckets whose start lies between them; `limit` keeps the newest. Processed"
    " energy, volume and cost are summed; temperature, raw and system streams are averaged"
    " (the mean of the points in the bucket)."
)
CSV = "text/csv"
DATA_CSV_DOC = (
    "With `Accept: text/csv`: a header line `time,value`, then a line per point or bucket (Unix"
    " seconds, the value written as in JSON), CRLF line ends."
)


class FeedsController(StreamWrites, Controller):
    dependencies = {"caller": Provide(authenticate)}  # noqa: RUF012 - Litestar's own convention
    tags = ["feeds and streams"]  # noqa: RUF012

    @get("/users/{user_id:str}/feeds", summary="A user's feeds")
    async def user_feeds(
        self, user_id: FromPath[str], caller: Authenticated, reads: Reads
    ) -> list[Feed]:
        owner = await visible_user(reads, user_id, caller)
        rows = await reads.fetch(queries.FEEDS_OF_OWNER, owner)
        return await render_feeds(reads, rows)

    @get("/feeds/{feed_id:str}", summary="One feed")
    async def feed(self, feed_id: FromPath[str], caller: Authenticated, reads: Reads) -> Feed:
        row = await visible_feed(reads, feed_id, caller)
        return (await render_feeds(reads, [row]))[0]

    @get("/feeds/{feed_id:str}/streams", summary="A feed's streams, filtered")
    async def streams(
        self,
        feed_id: FromPath[str],
        caller: Authenticated,
        reads: Reads,
        types: Annotated[Types | None, QueryParameter(name="type", max_items=MAX_REPEATED)] = None,
        channels: Annotated[
            Channels | None, QueryParameter(name="channel", max_items=MAX_REPEATED)
        ] = None,
        data_time_from: UnixTime = None,
        data_time_to: UnixTime = None,
    ) -> list[Stream]:
        # Two independent rules (points at or after from; points at or before to): a `from`
        # after `to` asks for streams with data on both sides, not for nothing.
        feed = await visible_feed(reads, feed_id, caller)
        rows = await reads.fetch(
            queries.STREAMS_OF_FEED, feed["id"], types, channels, data_time_from, data_time_to
        )
        return await render_streams(reads, rows)

    @get("/feeds/{feed_id:str}/streams/{stream_id:str}", summary="One stream")
    async def stream(
        self,
        feed_id: FromPath[str],
        stream_id: FromPath[str],
        caller: Authenticated,
        reads: Reads,
    ) -> Stream:
        row = await _visible_stream(reads, feed_id, stream_id, caller)
        return (await render_streams(reads, [row]))[0]

    @get(
        "/feeds/{feed_id:str}/streams/{stream_id:str}/data",
        summary="A stream's points [unix time, value], oldest first; the newest `limit` match",
        opt={**authenticates_as("caller"), **text_answer(CSV, DATA_CSV_DOC)},
    )
    async def data(
        self,
        feed_id: FromPath[str],
        stream_id: FromPath[str],
        request: Request[object, object, State],
        reads: Reads,
        pool: Database,
        time_from: UnixTime = None,
        time_to: UnixTime = None,
        limit: Annotated[int, QueryParameter(ge=1, le=MAX_POINTS)] = 100,
        resolution: Annotated[Resolution | None, QueryParameter(description=RESOLUTION_DOC)] = None,
    ) -> Response[list[tuple[int, float]]]:
        # One round trip: the caller, the stream's visibility and the body, built by PostgreSQL.
        digest = bearer_digest(request)
        start = EARLIEST if time_from is None else time_from
        # A time_from after its time_to is refused below, once the caller is known (401 first);
        # meanwhile the query reads the one instant time_from, not a window whose ends are
        # reversed (the real-time rollups' ranges raised on it: a 500).
        window = (
            digest,
            _id_or_none(feed_id, "feed"),
            _id_or_none(stream_id, "stream"),
            start,
            max(start, LATEST if time_to is None else time_to),
            limit,
        )
        csv = wants_csv(request)
        if resolution is None:
            row = await reads.fetchrow(queries.STREAM_DATA, *window, csv)
        else:
            row = await reads.fetchrow(
                queries.STREAM_BUCKETS, *window, resolution, BUCKET_REACH[resolution], csv
            )
        assert row is not None  # noqa: S101 - a query of subselects answers exactly one row
        if not row["caller_known"]:
            raise unknown_token()
        token_used(request, pool, digest)
        _check_order(time_from, time_to, "time_from", "time_to")
        if not row["visible"]:
            raise NotFound(f"no stream {stream_id!r} in feed {feed_id!r}")
        # One URL, two representations: caches must key on Accept.
        return Response(
            row["body"], media_type=CSV if csv else MediaType.JSON, headers={"Vary": "Accept"}
        )


def wants_csv(request: Request[object, object, State]) -> bool:
    """Whether the request's ``Accept`` names CSV and ranks it above JSON (JSON otherwise: a
    client that names neither, or anything else, gets what it always got)."""
    # Most requests do not mention CSV: they skip parsing the header.
    if "csv" not in request.headers.get("accept", "").lower():
        return False
    return request.accept.best_match([MediaType.JSON, CSV]) == CSV


def _id_or_none(value: str, what: str) -> int | None:
    """``parse_id``'s id, or None for one that names nothing (the query then finds no stream)."""
    try:
        return parse_id(value, what)
    except NotFound:
        return None


def _check_order(start: int | None, end: int | None, start_name: str, end_name: str) -> None:
    if start is not None and end is not None and start > end:
        raise InvalidInput(f"{start_name} ({start}) is after {end_name} ({end})", field=start_name)


async def _visible_stream(
    pool: asyncpg.Pool, feed_id: FromPath[str], stream_id: FromPath[str], caller: Caller
) -> asyncpg.Record:
    row = await pool.fetchrow(
        queries.VISIBLE_STREAM,
        parse_id(stream_id, "stream"),
        parse_id(feed_id, "feed"),
        caller.user_id,
        caller.is_admin,
    )
    if row is None:
        raise NotFound(f"no stream {stream_id!r} in feed {feed_id!r}")
    return row
