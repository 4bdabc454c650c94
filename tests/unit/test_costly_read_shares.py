"""The costly reads' half of the pool and each user's slots (core/http/shares.py): an overview's
read waits for a connection of the share, an export is refused when none is free, and what one
gives back the next takes."""

import asyncio

import pytest

from energy_platform.core.errors import TooManyRequests
from energy_platform.core.http.shares import WAITING_PER_USER, PoolShare, UserLanes, UserSlots
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


async def test_an_overview_past_its_users_slots_waits_its_turn_then_is_refused() -> None:
    slots = UserSlots(1, "overviews")
    first = await slots.wait(ALICE)
    # Bob is not behind Alice: his slot is his own.
    bobs = await slots.wait(BOB, patience=0)
    queued = asyncio.create_task(slots.wait(ALICE))
    await eventually(lambda: slots.waiting(ALICE) == 1, what="Alice's second overview queued")
    # A third that cannot wait is refused, naming what runs and what waits.
    with pytest.raises(TooManyRequests) as refused:
        await slots.wait(ALICE, patience=0)
    assert refused.value.headers["Retry-After"] == "10"
    assert "this user already runs 1 overviews here and 1 wait" in refused.value.detail
    first()
    second = await queued  # the slot given back went to the one waiting
    assert slots.waiting(ALICE) == 0
    with pytest.raises(TooManyRequests):
        slots.take(ALICE)
    second()
    bobs()
    slots.take(ALICE)()


async def test_no_more_than_the_bound_wait_and_a_cancelled_waiter_passes_its_slot_on() -> None:
    slots = UserSlots(1, "overviews")
    held = await slots.wait(ALICE)
    waiting = [asyncio.create_task(slots.wait(ALICE)) for _ in range(WAITING_PER_USER)]
    await eventually(lambda: slots.waiting(ALICE) == WAITING_PER_USER, what="the queue full")
    with pytest.raises(TooManyRequests):
        await slots.wait(ALICE)  # refused at once: it does not wait
    waiting[0].cancel()
    held()
    # The cancelled one took nothing: the next in line has the slot, and one slot only.
    second = await waiting[1]
    assert slots.waiting(ALICE) == WAITING_PER_USER - 2
    for task in waiting[2:]:
        task.cancel()
    await asyncio.gather(*waiting, return_exceptions=True)
    with pytest.raises(TooManyRequests):
        slots.take(ALICE)
    second()
    slots.take(ALICE)()


async def test_one_users_reads_hold_their_lane_one_at_a_time_and_others_pass() -> None:
    lanes = UserLanes(1)
    inside: list[int] = []
    leave = asyncio.Event()

    async def read(user: int) -> None:
        async with lanes.held(user):
            inside.append(user)
            await leave.wait()

    reads = [asyncio.create_task(read(ALICE)) for _ in range(3)] + [asyncio.create_task(read(BOB))]
    await eventually(lambda: sorted(inside) == [ALICE, BOB], what="one read of each user in")
    leave.set()
    await asyncio.gather(*reads)
    assert inside.count(ALICE) == 3
    assert lanes.users == 0  # no lane is kept for a user with nothing to read
