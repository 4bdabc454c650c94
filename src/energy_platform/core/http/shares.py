"""Costly reads get a share, like writes (docs/api.md#shares-of-costly-reads): the feed export
and the overview each let one user run a few at once in an API process (``UserSlots``, 429 with
``Retry-After`` beyond; an overview first waits a while for its turn), and together they hold at
most half of the process's pool (``PoolShare``), so that the other half is always left for every
other request: one user looping year overviews, or a few slow downloads, never queue the data
endpoint behind them. A user's overview and what-if reads also hold at most a few connections
at once (``UserLanes``, EP_API_COSTLY_CONNECTIONS_PER_USER): the database time one user's loop
of them takes is that many backends', whatever the number of requests it sends. While anyone
else is being served, a user's costly reads are rationed besides (``Ration``,
EP_API_COSTLY_SHARE_PER_USER): past a burst, they hold connections for at most that share of
one backend's time, so that a loop of them cannot crowd the others out of the database's
cores; served alone, they run at the lane's width (``Presence``).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
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


class Presence:
    """Who was served lately in this process, by token: whether anyone but a given token was
    served in the last ``window_s`` seconds. Every authenticated request notes its token
    (users/usage.py ``token_used``); two entries suffice, the latest token and the latest
    other one."""

    def __init__(self, window_s: float = 1.0, clock: Callable[[], float] = time.monotonic):
        self.window_s = window_s
        self._clock = clock
        self._latest: tuple[bytes, float] = (b"", -math.inf)
        self._other: tuple[bytes, float] = (b"", -math.inf)

    def seen(self, token: bytes) -> None:
        """A request by ``token`` (its digest) is being served now."""
        now = self._clock()
        if token != self._latest[0]:
            self._other = self._latest
        self._latest = (token, now)

    def others(self, token: bytes) -> bool:
        """Whether a token other than ``token`` was served in the last ``window_s`` s."""
        _, at = self._latest if self._latest[0] != token else self._other
        return self._clock() - at < self.window_s


RECHECK_S = 0.25
"""How often a rationed read looks again whether anyone else is still being served."""
REMEMBERED_USERS = 10_000
"""Users whose debts a ration keeps before it forgets those paid off."""


class Ration:
    """Each user's connection time as a debt: every second a connection is held adds a
    second; it is paid off at ``share`` seconds a second. Past ``burst_s`` of debt, a user's
    next read waits until the debt is back at the burst: over time their reads hold at most
    ``share`` of one backend."""

    def __init__(
        self, share: float, burst_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.share = share
        self.burst_s = burst_s
        self.clock = clock
        self._debts: dict[int, tuple[float, float]] = {}

    def owed(self, user: int) -> float:
        """``user``'s debt now, in connection seconds."""
        debt, at = self._debts.get(user, (0.0, 0.0))
        return max(0.0, debt - (self.clock() - at) * self.share)

    def wait_s(self, user: int) -> float:
        """How long ``user``'s next read waits before it may hold a connection."""
        return max(0.0, (self.owed(user) - self.burst_s) / self.share)

    def charge(self, user: int, held_s: float) -> None:
        """``user`` held a connection for ``held_s`` seconds."""
        if len(self._debts) >= REMEMBERED_USERS:
            self._debts = {u: d for u, d in self._debts.items() if self.owed(u) > 0}
        self._debts[user] = (self.owed(user) + held_s, self.clock())


class CostlyReads:
    """The costly reads' half of the pool, each user's lane of it and, while anyone else is
    being served, each user's ration of time: a read of an overview or a what-if waits out
    its user's ration first, then takes its user's turn, then a connection of the share."""

    def __init__(
        self,
        share: PoolShare,
        lanes: UserLanes,
        ration: Ration,
        presence: Presence,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.share = share
        self.lanes = lanes
        self.ration = ration
        self.presence = presence
        self._sleep = sleep

    @asynccontextmanager
    async def connection(self, user: int, token: bytes) -> AsyncIterator[None]:
        """A connection for a costly read of ``user`` (asking with ``token``): rationed while
        another token is served; a user waiting for their own turn holds nothing of the share
        meanwhile."""
        while (wait := self.ration.wait_s(user)) > 0 and self.presence.others(token):
            await self._sleep(min(wait, RECHECK_S))
        async with self.lanes.held(user), self.share.held():
            started = self.ration.clock()
            try:
                yield
            finally:
                self.ration.charge(user, self.ration.clock() - started)
