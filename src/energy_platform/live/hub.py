"""One follower of the live log per API process, fanning each event out to its clients.

The follower holds one connection to the primary: it LISTENs on ``ep_live`` (every writer's
commit) and ``ep_live_access`` (a token, user, feed or registration changed), reads the events
of the feeds its clients follow, renders each once and hands the frame to every client that
wants it. A client's buffer is bounded (``EP_LIVE_CLIENT_BUFFER_BYTES``): one that falls behind
is ended, never waited for, so a slow reader costs neither ingest nor the other clients.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager

import asyncpg
import structlog
from prometheus_client import Counter, Gauge

from energy_platform.core.background import Backoff, sleep_unless_stopped
from energy_platform.core.db.listening import listening
from energy_platform.core.errors import TooManyRequests
from energy_platform.core.settings import DatabaseSettings, LiveSettings
from energy_platform.live import queries
from energy_platform.live.events import Event, event_of, reload_frame

log = structlog.get_logger()
CLIENTS = Gauge("ep_live_clients", "Clients following a feed live, in this process")
ENDED = Counter("ep_live_clients_ended", "Live streams the server ended", ["reason"])
EVENTS = Counter("ep_live_events", "Live events sent to a client (one per client)")
PAGE = 2_000
"""Events read per statement while catching up."""
POLL = 5.0
"""Seconds between reads when no notification came (a lost one costs at most this)."""
ACCESS_EVERY = 60.0
APPLICATION_NAME = "energy-platform live follower"
"""Seconds between checks of who may follow what, notified or not."""


class Ended(Exception):
    """The server ended this client's stream: ``reason`` is ``slow`` (its buffer was full) or
    ``access`` (its token, feed or visibility changed)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Subscription:
    """One client's feed, what it asked for, and its bounded buffer of frames."""

    def __init__(
        self,
        feed: int,
        user: int,
        digest: bytes,
        streams: frozenset[int] | None,
        kinds: frozenset[str],
        limit: int,
    ) -> None:
        self.feed, self.user, self.digest = feed, user, digest
        self._streams, self._kinds, self._limit = streams, kinds, limit
        self._frames: deque[tuple[int, bytes]] = deque()
        self._bytes = 0
        self._ready = asyncio.Event()
        self.ended: str | None = None

    def wants(self, event: Event) -> bool:
        """Whether this client asked for ``event`` (a reload is sent whatever the types; the
        feed's own events, ``prices``, whatever the streams)."""
        if (
            event.stream is not None
            and self._streams is not None
            and event.stream not in self._streams
        ):
            return False
        return event.kind == "reload" or event.kind in self._kinds

    def offer(self, pos: int, frame: bytes) -> None:
        """Queue a frame; past the buffer's bound the client is ended instead (an empty buffer
        takes any one frame: a client that keeps up gets even an event larger than the bound)."""
        if self.ended is not None:
            return
        if self._frames and self._bytes + len(frame) > self._limit:
            self.end("slow")
            return
        self._frames.append((pos, frame))
        self._bytes += len(frame)
        self._ready.set()

    def end(self, reason: str) -> None:
        """End the stream: what is buffered is dropped (the client resumes from its last id)."""
        if self.ended is None:
            self.ended = reason
            ENDED.labels(reason).inc()
            self._frames.clear()
            self._bytes = 0
            self._ready.set()

    async def take(self, wait_s: float) -> list[tuple[int, bytes]]:
        """The frames waiting, after at most ``wait_s`` seconds (none: a keepalive is due); raises
        :class:`Ended` once the stream was ended."""
        if not self._frames and self.ended is None:
            self._ready.clear()
            try:
                await asyncio.wait_for(self._ready.wait(), wait_s)
            except TimeoutError:
                return []
        if self.ended is not None:
            raise Ended(self.ended)
        frames = list(self._frames)
        self._frames.clear()
        self._bytes = 0
        EVENTS.inc(len(frames))
        return frames


class LiveHub:
    """The process's follower of the live log and its subscriptions."""

    def __init__(self, database: DatabaseSettings, live: LiveSettings) -> None:
        self.settings = live
        self._database = database
        self._feeds: dict[int, set[Subscription]] = {}
        self._per_user: dict[int, int] = {}
        self._position: int | None = None
        self._wake = asyncio.Event()
        self._access = asyncio.Event()

    def subscribe(
        self,
        feed: int,
        caller: tuple[int, bytes],
        streams: Iterable[int] | None,
        kinds: Iterable[str],
    ) -> Subscription:
        """A client's subscription to ``feed``: it receives every event committed from now on
        that it wants, until :meth:`unsubscribe`. ``caller``: the user and the SHA-256 of the
        token (checked again when access may have changed). 429 when the user holds as many
        streams here as they may (``EP_LIVE_STREAMS_PER_USER``)."""
        user, digest = caller
        if self._per_user.get(user, 0) >= self.settings.streams_per_user:
            raise TooManyRequests(
                f"this user already follows {self.settings.streams_per_user} live streams"
                " here; close one first"
            )
        self._per_user[user] = self._per_user.get(user, 0) + 1
        sub = Subscription(
            feed,
            user,
            digest,
            None if streams is None else frozenset(streams),
            frozenset(kinds),
            self.settings.client_buffer_bytes,
        )
        # No read now: what came before is the replay's (http.py), what comes after arrives
        # with the next commit's notification.
        self._feeds.setdefault(feed, set()).add(sub)
        CLIENTS.inc()
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        subs = self._feeds.get(sub.feed)
        if subs is not None and sub in subs:
            subs.discard(sub)
            CLIENTS.dec()
            if not subs:
                del self._feeds[sub.feed]
            held = self._per_user.pop(sub.user) - 1
            if held:
                self._per_user[sub.user] = held

    @asynccontextmanager
    async def following(self) -> AsyncIterator[None]:
        """Follow the log while the context lasts (the app's lifespan). A bug in the follower
        is logged and the follower starts again: clients wait, they are never silently lost."""
        stop = asyncio.Event()

        async def supervise() -> None:
            backoff = Backoff(base=1.0, cap=30.0)
            while not stop.is_set():
                try:
                    await self.follow(stop)
                except Exception:
                    log.exception("live: the follower failed; starting again")
                    await sleep_unless_stopped(stop, backoff.next_delay())

        task = asyncio.create_task(supervise(), name="live-follower")
        try:
            yield
        finally:
            stop.set()
            await task

    def _notified(self, *_: object) -> None:
        self._wake.set()

    def _access_changed(self, *_: object) -> None:
        self._access.set()
        self._wake.set()

    async def follow(self, stop: asyncio.Event) -> None:
        """Follow the log until ``stop``; reconnect with backoff when the connection is lost."""

        async def session(conn: asyncpg.Connection, lost: asyncio.Event) -> None:
            await self._resume(conn)
            await self._loop(conn, stop, lost)

        channels = {"ep_live": self._notified, "ep_live_access": self._access_changed}
        await listening(self._database, channels, stop, session, who=APPLICATION_NAME, cap=10.0)

    async def _resume(self, conn: asyncpg.Connection) -> None:
        """Start at the log's end; after an outage longer than the log keeps, every client
        gets ``reload`` (events may have been pruned unread)."""
        edges = await conn.fetchrow(queries.EDGES)
        assert edges is not None  # noqa: S101 - the horizon table has its one row
        if self._position is not None and self._position < edges["horizon"]:
            frame = reload_frame(edges["top"])
            for subs in self._feeds.values():
                for sub in subs:
                    sub.offer(edges["top"], frame)
            self._position = edges["top"]
        elif self._position is None:
            self._position = edges["top"]
        self._access.set()  # what changed while nobody listened

    async def _loop(
        self, conn: asyncpg.Connection, stop: asyncio.Event, lost: asyncio.Event
    ) -> None:
        loop = asyncio.get_running_loop()
        checked = loop.time()
        while not (stop.is_set() or lost.is_set()):
            self._wake.clear()
            await self._read(conn)
            if self._access.is_set() or loop.time() - checked > ACCESS_EVERY:
                self._access.clear()
                checked = loop.time()
                await self._check_access(conn)
            if not self._wake.is_set():
                await sleep_unless_stopped(stop, POLL, self._wake)

    async def _read(self, conn: asyncpg.Connection) -> None:
        """Fan out every event committed since the last read."""
        assert self._position is not None  # noqa: S101 - set by _resume
        while True:
            feeds = list(self._feeds)
            rows = await conn.fetch(queries.FOLLOW, self._position, PAGE, feeds)
            events = [r for r in rows if r["pos"] is not None]
            for row in events:
                self._fan_out(row)
            if len(events) < PAGE:
                top = rows[0]["top"] if rows else None
                if top is not None:
                    self._position = max(self._position, top)
                return
            self._position = events[-1]["pos"]

    def _fan_out(self, row: asyncpg.Record) -> None:
        subs = self._feeds.get(row["feed_id"])
        if not subs:
            return
        event = event_of(
            row["pos"],
            row["stream_id"],
            row["kind"],
            row["times"],
            row["vals"],
            feed=row["feed_id"],
            day=row["day"],
        )
        for sub in list(subs):
            if sub.wants(event):
                sub.offer(event.pos, event.frame)

    async def _check_access(self, conn: asyncpg.Connection) -> None:
        """End every client whose token no longer opens its feed."""
        subs = [sub for subs in self._feeds.values() for sub in subs if sub.ended is None]
        if not subs:
            return
        allowed = await conn.fetch(
            queries.STILL_ALLOWED, [s.digest for s in subs], [s.feed for s in subs]
        )
        kept = {row["n"] - 1 for row in allowed}
        for n, sub in enumerate(subs):
            if n not in kept:
                sub.end("access")
