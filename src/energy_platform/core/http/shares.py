"""Costly reads get a share, like writes (docs/api.md#shares-of-costly-reads): the feed export
and the overview each let one user run a few at once in an API process (``UserSlots``, 429 with
``Retry-After`` beyond; an overview first waits a while for its turn), and together they hold at
most half of the process's pool (``PoolShare``), so that the other half is always left for every
other request: one user looping year overviews, or a few slow downloads, never queue the data
endpoint behind them. A user's overview and what-if reads also hold at most a few connections
at once (``UserLanes``, EP_API_COSTLY_CONNECTIONS_PER_USER): the database time one user's loop
of them takes is that many backends', whatever the number of requests it sends.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from types import MappingProxyType

from energy_platform.core.errors import TooManyRequests

RETRY_AFTER_S = 10
"""What a refused costly read is told to wait: how long one runs is not known in advance."""
TURN_WAIT_S = RETRY_AFTER_S
"""How long an overview past its user's slots waits for one before its 429."""
WAITING_PER_USER = 16
"""Overviews of one user that wait for a slot at most; more are refused at once. A page or a
script sending a few at a time waits its turn instead of being refused, and a loop over a
dozen connections waits without costing a request each turn."""


class SharesBusy(TooManyRequests):
    headers = MappingProxyType({"Retry-After": str(RETRY_AFTER_S)})


def once(release: Callable[[], None]) -> Callable[[], None]:
    """``release``, run the first time the function returned is called and never again."""
    done = False

    def give_back() -> None:
        nonlocal done
        if not done:
            done = True
            release()

    return give_back


class PoolShare:
    """The connections of the API's pool that costly reads may hold at once (half of it). An
    export holds one for as long as its client reads, and is refused when none is free; an
    overview's reads wait for one each, so that a flood of them waits in this process, not in
    the pool where every other request waits too."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.held_now = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def free(self) -> int:
        """Connections of the share not held now."""
        return self.size - self.held_now

    @property
    def waiting(self) -> int:
        """Reads queued for a connection of the share now."""
        return len(self._waiters)

    def take_now(self, what: str) -> Callable[[], None]:
        """One connection of the share at once, else 429 naming ``what`` (exports); the
        function returned gives it back, once however often called."""
        if self.held_now >= self.size:
            raise SharesBusy(f"too many {what} at once here; retry when one has finished")
        self.held_now += 1
        return once(self._release)

    @asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """One connection of the share, waited for, for the block."""
        while self.held_now >= self.size:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._wake()  # woken, then cancelled: the next one gets the turn
                raise
            finally:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
        self.held_now += 1
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        self.held_now -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return


class UserSlots:
    """How many costly reads of one kind (``what``: exports, overviews) each user may run at
    once in this process."""

    def __init__(self, per_user: int, what: str) -> None:
        self.per_user = per_user
        self.what = what
        self._held: dict[int, int] = {}
        self._waiters: dict[int, deque[asyncio.Future[None]]] = {}

    def waiting(self, user: int) -> int:
        """The user's reads waiting for a slot now."""
        return len(self._waiters.get(user, ()))

    def take(self, user: int) -> Callable[[], None]:
        """A slot for ``user``, else 429; the function returned gives it back, once however
        often called."""
        held = self._held.get(user, 0)
        if held >= self.per_user:
            raise self._busy(held)
        return self._taken(user)

    async def wait(self, user: int, patience: float = TURN_WAIT_S) -> Callable[[], None]:
        """A slot for ``user``, waited for in turn up to ``patience`` seconds behind at most
        WAITING_PER_USER others, else 429; the function returned gives it back once."""
        if self._held.get(user, 0) < self.per_user and not self.waiting(user):
            return self._taken(user)
        queue = self._waiters.setdefault(user, deque())
        if len(queue) >= WAITING_PER_USER:
            raise self._busy(self._held.get(user, 0), len(queue))
        turn = asyncio.get_running_loop().create_future()
        queue.append(turn)
        try:
            await asyncio.wait_for(asyncio.shield(turn), patience)
        except TimeoutError:
            pass  # a slot handed over as the wait ended is taken below all the same
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self._release(user)  # handed a slot, then cancelled: the next one gets it
            raise
        finally:
            with contextlib.suppress(ValueError):
                queue.remove(turn)
            if not queue and self._waiters.get(user) is queue:
                del self._waiters[user]
        if turn.done() and not turn.cancelled():
            return once(lambda: self._release(user))
        turn.cancel()
        raise self._busy(self._held.get(user, 0), self.waiting(user))

    def _taken(self, user: int) -> Callable[[], None]:
        self._held[user] = self._held.get(user, 0) + 1
        return once(lambda: self._release(user))

    def _release(self, user: int) -> None:
        """A slot of ``user`` given back: handed straight to their next waiter, if any."""
        for turn in self._waiters.get(user, ()):
            if not turn.done():
                turn.set_result(None)  # the slot passes on: the count stays
                self._waiters[user].remove(turn)
                return
        left = self._held.pop(user) - 1
        if left:
            self._held[user] = left

    def _busy(self, held: int, waiting: int = 0) -> SharesBusy:
        queued = f" and {waiting} wait" if waiting else ""
        return SharesBusy(
            f"this user already runs {held} {self.what} here{queued}; retry when one has finished"
        )


class UserLanes:
    """The connections each user's costly reads hold at once (``per_user``), one user's beyond
    that waiting for their own turn: what one user's loop of reads costs the database is
    ``per_user`` backends, whatever the number of requests it sends."""

    def __init__(self, per_user: int) -> None:
        self.per_user = per_user
        self._lanes: dict[int, tuple[PoolShare, list[int]]] = {}

    @asynccontextmanager
    async def held(self, user: int) -> AsyncIterator[None]:
        """One connection of ``user``'s lane, waited for, for the block."""
        lane, users = self._lanes.setdefault(user, (PoolShare(self.per_user), [0]))
        users[0] += 1  # the lane lives while anyone holds or waits for it
        try:
            async with lane.held():
                yield
        finally:
            users[0] -= 1
            if not users[0]:
                del self._lanes[user]

    @property
    def users(self) -> int:
        """Users with a lane now (held or waited for)."""
        return len(self._lanes)


class CostlyReads:
    """The costly reads' half of the pool and each user's lane of it: a read of an overview
    or a what-if takes its user's turn first, then a connection of the share."""

    def __init__(self, share: PoolShare, lanes: UserLanes) -> None:
        self.share = share
        self.lanes = lanes

    @asynccontextmanager
    async def connection(self, user: int) -> AsyncIterator[None]:
        """A turn of ``user``'s lane, then a connection of the share: a user waiting for their
        own turn holds nothing of the share meanwhile."""
        async with self.lanes.held(user), self.share.held():
            yield
