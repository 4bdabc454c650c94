"""When each token was last used, recorded without turning the API's reads into writes.

The data API answers reads from a replica when it has one (``EP_DATABASE_READ_URL``), where
nothing can be written, and its data endpoint is one read-only statement on the hot path. So a
request only *notes* its token here; the write is a conditional ``UPDATE`` on the primary, in a
task of its own that the request does not wait for, at most once a minute per token and
process. The statement's own condition keeps it to one row version a minute per token however
many API processes there are: the others' updates match no row and write nothing. The time is
therefore right to the minute, and a use in the last minute before a process stops may be lost
(docs/decisions.md, issue 39).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import timedelta

import asyncpg
import structlog
from litestar import Litestar, Request
from litestar.datastructures import State

from energy_platform.core.faults import is_outside_fault
from energy_platform.core.http.shares import Presence

log = structlog.get_logger()

TOUCH = """
UPDATE cluster.user_tokens SET last_used_at = now()
 WHERE token_sha256 = $1 AND (last_used_at IS NULL OR last_used_at < now() - $2::interval)"""
EVERY = timedelta(minutes=1)
SLACK = timedelta(seconds=5)
"""The database's bound is this much under ``EVERY``: a process notes by its own clock, the
row holds the database's time of the previous write (later by that write's latency), and an
equal bound would refuse every other minute's write."""
REMEMBERED = 10_000
"""Tokens a process remembers having noted: past this, those noted over a minute ago go."""
CLOSE_WITHIN = 5.0
"""Seconds the app's shutdown waits for last uses still being written."""


class TokenUses:
    """The tokens one API process has noted, and the writes of their last use in flight;
    ``presence``: who is being served, which the costly reads' ration asks
    (core/http/shares.py)."""

    def __init__(
        self,
        every: timedelta = EVERY,
        clock: Callable[[], float] = time.monotonic,
        presence: Presence | None = None,
    ):
        self._every = every
        self._clock = clock
        self._presence = presence or Presence(clock=clock)
        self._noted: dict[bytes, float] = {}
        self._writing: set[asyncio.Task[None]] = set()

    def note(self, pool: asyncpg.Pool, digest: bytes) -> None:
        """Token ``digest`` was used now: its last use is written unless this process wrote
        it less than a minute ago."""
        self._presence.seen(digest)
        now = self._clock()
        last = self._noted.get(digest)
        if last is not None and now - last < self._every.total_seconds():
            return
        if len(self._noted) >= REMEMBERED:
            self._forget_before(now - self._every.total_seconds())
        self._noted[digest] = now
        task = asyncio.create_task(self._write(pool, digest), name="token-last-use")
        self._writing.add(task)
        task.add_done_callback(self._writing.discard)

    async def close(self) -> None:
        """Let the writes in flight finish (briefly: the pool closes next)."""
        if not self._writing:
            return
        _, late = await asyncio.wait(set(self._writing), timeout=CLOSE_WITHIN)
        for task in late:
            task.cancel()

    def _forget_before(self, cutoff: float) -> None:
        self._noted = {d: at for d, at in self._noted.items() if at >= cutoff}
        if len(self._noted) >= REMEMBERED:
            # A minute of this many tokens: forgetting costs only updates that match no row.
            self._noted.clear()

    async def _write(self, pool: asyncpg.Pool, digest: bytes) -> None:
        try:
            await pool.execute(TOUCH, digest, self._every - SLACK)
        except Exception as e:
            # A lost last-use time fails no request and is not retried: the token's next use
            # after a minute writes it again.
            if is_outside_fault(e):
                log.warning("token use not recorded", error=f"{type(e).__name__}: {e}")
            else:
                log.exception("token use not recorded")


def recording_token_uses(
    presence: Presence,
) -> Callable[[Litestar], AbstractAsyncContextManager[None]]:
    """The app's :class:`TokenUses`, noting its requests in ``presence`` too, for its
    lifetime (a ``lifespan`` of ``build_app``: it opens after the pool and closes before it)."""

    @asynccontextmanager
    async def recording(app: Litestar) -> AsyncIterator[None]:
        uses = TokenUses(presence=presence)
        app.state.token_uses = uses
        try:
            yield
        finally:
            await uses.close()

    return recording


def token_used(request: Request[object, object, State], pool: asyncpg.Pool, digest: bytes) -> None:
    """Note that the request was authenticated by token ``digest``; ``pool``: the primary's."""
    uses: TokenUses = request.app.state.token_uses
    uses.note(pool, digest)
