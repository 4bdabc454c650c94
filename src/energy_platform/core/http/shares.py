"""Costly reads get a share, like writes (docs/api.md#shares-of-costly-reads): the feed export
and the overview each let one user run a few at once in an API process (``UserSlots``, 429 with
``Retry-After`` beyond), and together they hold at most half of the process's pool
(``PoolShare``), so that the other half is always left for every other request: one user
looping year overviews, or a few slow downloads, never queue the data endpoint behind them.
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

    def take(self, user: int) -> Callable[[], None]:
        """A slot for ``user``, else 429; the function returned gives it back, once however
        often called."""
        held = self._held.get(user, 0)
        if held >= self.per_user:
            raise SharesBusy(
                f"this user already runs {held} {self.what} here; retry when one has finished"
            )
        self._held[user] = held + 1

        def release() -> None:
            left = self._held.pop(user) - 1
            if left:
                self._held[user] = left

        return once(release)
