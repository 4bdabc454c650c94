"""``GET /feeds/{feed_id}/live``: a feed's committed points and buckets as Server-Sent Events.

The request is authenticated and checked like the feed's other endpoints; its subscription is
taken before the replay is read, so every event is either in the replay (position up to the
log's end when read) or comes through the subscription after it, and positions already sent are
skipped: nothing missed, nothing twice (docs/api.md#live). The replay is read in pages
that fit the client's buffer, each sent before the next is read: a reconnect after a busy
quarter of an hour costs the process a page, not the whole window.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncGenerator
from typing import Annotated, NamedTuple

import asyncpg
import msgspec
from litestar import Controller, Router, get
from litestar.di import NamedDependency, Provide
from litestar.openapi.spec import OpenAPIType, Schema
from litestar.params import FromPath, HeaderParameter, QueryParameter
from litestar.response import Stream

from energy_platform.core.errors import InvalidInput, NotFound
from energy_platform.core.http.database import Database, Reads
from energy_platform.core.http.openapi import problems, text_answer
from energy_platform.core.inputs import INT8_MAX, MAX_REPEATED, Ids, parse_id
from energy_platform.live import queries
from energy_platform.live.events import (
    EVENT_BYTES,
    KEEPALIVE,
    KINDS,
    Kind,
    event_of,
    position_frame,
    reload_frame,
)
from energy_platform.live.hub import Ended, LiveHub, Subscription
from energy_platform.users.auth import Caller, authenticate

EVENT_STREAM = "text/event-stream"
LIVE_DOC = (
    "Server-Sent Events, one per commit and stream: `points` (a raw or system stream's points"
    ' that an ingest batch added: `{"stream": "<id>", "points": [[t, v], ...]}`), `buckets`'
    " (processed points the engine wrote, revisions included; a null value: the bucket has"
    " none any more), `prices` (the prices of the feed's next local day are in, when its owner"
    ' is told: `{"feed": "<id>", "day": "YYYY-MM-DD"}`; read the prices again), `reload` (read'
    " again: `reason` `expired` for an id the platform no longer keeps, `revised` with"
    " `stream`, `time_from`, `time_to` for a revision too large to send). `type` chooses among"
    " points, buckets and prices (all when absent); reload always comes; `stream` does not"
    " hold back prices, the feed's own event."
    " Each event's `id` is its place in commit order; send the last one back as"
    " `Last-Event-ID` to resume without a gap. A comment line comes after every"
    " EP_LIVE_KEEPALIVE_S (15) seconds of silence. The stream ends when the token is revoked,"
    " the feed goes, the client reads too slowly, or after EP_LIVE_MAX_STREAM_S (an hour);"
    " reconnect with `Last-Event-ID`. 429: the user already holds EP_LIVE_STREAMS_PER_USER"
    " (20) streams on this API process."
)
Kinds = Annotated[list[Kind], msgspec.Meta(max_length=MAX_REPEATED)]
LastEventId = Annotated[
    str | None,
    HeaderParameter(
        name="Last-Event-ID",
        description="The id of the last event received: the stream starts after it.",
        max_length=20,
    ),
]


def live_routes(hub: LiveHub) -> Router:
    """The live endpoint for the data API's app, fanned out by ``hub``."""
    return Router(
        path="/",
        route_handlers=[LiveController],
        dependencies={"hub": Provide(lambda: hub, sync_to_thread=False)},
    )


class LiveController(Controller):
    dependencies = {"caller": Provide(authenticate)}  # noqa: RUF012 - Litestar's own convention
    tags = ["feeds and streams"]  # noqa: RUF012

    @get(
        "/feeds/{feed_id:str}/live",
        summary="A feed's points and buckets as they are committed (Server-Sent Events)",
        media_type=EVENT_STREAM,
        response_description="The live stream, open until the client leaves",
        opt={**text_answer(EVENT_STREAM, LIVE_DOC), **problems(429)},
    )
    async def live(
        self,
        feed_id: FromPath[str],
        caller: NamedDependency[Caller],
        reads: Reads,
        pool: Database,
        hub: NamedDependency[LiveHub],
        last_event_id: LastEventId = None,
        streams: Annotated[
            Ids | None,
            QueryParameter(
                name="stream",
                max_items=MAX_REPEATED,
                description="Only these streams of the feed (repeatable); all when absent.",
                schema_extra={
                    "items": Schema(type=OpenAPIType.INTEGER, minimum=1, maximum=INT8_MAX)
                },
            ),
        ] = None,
        kinds: Annotated[
            Kinds | None,
            QueryParameter(
                name="type",
                max_items=MAX_REPEATED,
                description="Only these events (repeatable); all when absent.",
            ),
        ] = None,
    ) -> Stream:
        after = parse_event_id(last_event_id)
        feed = parse_id(feed_id, "feed")
        row = await reads.fetchrow(
            queries.VISIBLE_FEED, feed, caller.user_id, caller.is_admin, streams or []
        )
        if row is None:
            raise NotFound(f"no feed {feed_id!r}")
        if row["foreign_stream"] is not None:
            raise NotFound(f"no stream {str(row['foreign_stream'])!r} in feed {feed_id!r}")
        sub = hub.subscribe(feed, (caller.user_id, caller.digest), streams, kinds or KINDS)
        body = _events(hub, pool, sub, after)
        # A body never started (its client gone before the first byte) runs no finally: its
        # subscription goes when it is collected.
        weakref.finalize(body, hub.unsubscribe, sub)
        return Stream(
            body,
            media_type=EVENT_STREAM,
            # Proxies must pass each event on as it comes, and keep none of it.
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )


def parse_event_id(value: str | None) -> int | None:
    """``Last-Event-ID`` as a position; 400 unless it is one of this API's ids."""
    if value is None or value == "":
        return None
    if not value.isascii() or not value.isdigit() or int(value) > INT8_MAX:
        raise InvalidInput(
            f"Last-Event-ID must be an event id (a whole number), not {value[:20]!r}",
            field="Last-Event-ID",
        )
    return int(value)


class Edges(NamedTuple):
    """Where the log stands when a stream starts: its highest position, and the highest
    pruned."""

    top: int
    horizon: int


async def _events(
    hub: LiveHub, pool: asyncpg.Pool, sub: Subscription, after: int | None
) -> AsyncGenerator[bytes, None]:
    """The stream: the replay after ``after`` (or where the log stands, for a new client), then
    the subscription's frames, each position once."""
    loop = asyncio.get_running_loop()
    ends = loop.time() + hub.settings.max_stream_s
    try:
        row = await pool.fetchrow(queries.EDGES)
        assert row is not None  # noqa: S101 - the horizon table has its one row
        edges = Edges(row["top"], row["horizon"])
        sent = edges.top
        page = replay_page(hub.settings.client_buffer_bytes)
        async for replayed in _replay(pool, sub, after, edges, page):
            yield replayed
        while (left := ends - loop.time()) > 0:
            try:
                frames = await sub.take(min(hub.settings.keepalive_s, left))
            except Ended:
                return
            if not frames:
                yield KEEPALIVE
                continue
            fresh = b"".join(frame for pos, frame in frames if pos > sent)
            sent = max(sent, frames[-1][0])
            if fresh:
                yield fresh
    finally:
        hub.unsubscribe(sub)


def replay_page(buffer_bytes: int) -> int:
    """Events read per page of a replay: as many as a client's buffer holds at their largest."""
    return max(1, buffer_bytes // EVENT_BYTES)


async def _replay(
    pool: asyncpg.Pool, sub: Subscription, after: int | None, edges: Edges, page: int
) -> AsyncGenerator[bytes, None]:
    """What the stream sends first: everything of the feed committed after ``after`` up to
    the log's top that the client wants, ``page`` events a statement, each page handed on (and
    sent) before the next is read, then the id where the stream goes on; ``reload`` when
    ``after`` is older than the log keeps (when the stream starts, or when pruning passes it
    while the pages are read) or is not an id it gave; for a new client, only that id. No
    transaction stays open while the client reads."""
    if after is None:
        yield position_frame(edges.top)
        return
    if after < edges.horizon or after > edges.top:
        yield reload_frame(edges.top)
        return
    last = after
    while True:
        rows = await pool.fetch(queries.REPLAY_PAGE, sub.feed, last, edges.top, page)
        if rows[0]["horizon"] > last:
            yield reload_frame(edges.top)  # some of what follows was pruned unread
            return
        found = [r for r in rows if r["pos"] is not None]
        events = (
            event_of(
                r["pos"],
                r["stream_id"],
                r["kind"],
                r["times"],
                r["vals"],
                feed=sub.feed,
                day=r["day"],
            )
            for r in found
        )
        frames = b"".join(e.frame for e in events if sub.wants(e))
        if len(found) < page:
            yield frames + position_frame(edges.top)
            return
        if frames:
            yield frames
        last = found[-1]["pos"]
