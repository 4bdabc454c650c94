"""The costly reads' half of the pool and each user's slots (core/http/shares.py): an overview's
read waits for a connection of the share, an export is refused when none is free, and what one
gives back the next takes."""

import asyncio

import pytest

from energy_platform.core.errors import TooManyRequests
from energy_platform.core.http.shares import PoolShare, UserSlots
from tests.support.services import eventually

ALICE, BOB = 1, 2


async def test_a_read_waits_for_the_share_and_an_export_is_refused_meanwhile() -> None:
    share = PoolShare(2)
    export = share.take_now("exports")
    entered = asyncio.Event()
    leave = asyncio.Event()

    async def overview_read() -> None:
        async with share.held():
            entered.set()
            await leave.wait()

    first = asyncio.create_task(overview_read())
    await entered.wait()
    assert share.free == 0
    entered.clear()
    second = asyncio.create_task(overview_read())
    with pytest.raises(TooManyRequests) as refused:
        share.take_now("exports")
    assert refused.value.headers["Retry-After"] == "10"
    # The export ends: the waiting read gets its connection.
    export()
    export()  # given back once however often called
    await entered.wait()
    assert share.free == 0
    leave.set()
    await asyncio.gather(first, second)
    assert share.free == 2


async def test_a_cancelled_waiter_takes_nothing_and_passes_its_turn_on() -> None:
    share = PoolShare(1)
    held = share.take_now("exports")
    waiting = asyncio.create_task(share.held().__aenter__())
    await eventually(lambda: share.waiting == 1, what="the read queued for the share")
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    held()
    async with share.held():
        assert share.free == 0
    assert share.free == 1


def test_each_user_holds_at_most_their_slots() -> None:
    slots = UserSlots(2, "overviews")
    held = [slots.take(ALICE), slots.take(ALICE)]
    with pytest.raises(TooManyRequests) as refused:
        slots.take(ALICE)
    assert "this user already runs 2 overviews" in refused.value.detail
    bobs = slots.take(BOB)
    held[0]()
    held[0]()
    held.append(slots.take(ALICE))
    with pytest.raises(TooManyRequests):
        slots.take(ALICE)
    for give_back in (*held, bobs):
        give_back()
