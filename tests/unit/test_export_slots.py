"""How many feed exports run at once in one API process, and per user (api/export.py, over
core/http/shares.py)."""

import pytest

from energy_platform.api.export import ExportSlots
from energy_platform.core.errors import TooManyRequests
from energy_platform.core.http.shares import PoolShare

ALICE, BOB, CAROL = 1, 2, 3


def test_a_slot_is_taken_once_and_given_back_once() -> None:
    slots = ExportSlots(PoolShare(2), per_user=2)
    first, second = slots.take(ALICE), slots.take(BOB)
    with pytest.raises(TooManyRequests) as refused:
        slots.take(CAROL)
    assert refused.value.status == 429
    assert refused.value.headers["Retry-After"] == "10"
    # An export that ends twice (its finally, then its collection) frees one slot, not two.
    first()
    first()
    assert slots.free == 1
    third = slots.take(CAROL)
    with pytest.raises(TooManyRequests):
        slots.take(ALICE)
    second()
    third()
    assert slots.free == 2


def test_one_user_holds_at_most_their_share_and_the_others_still_export() -> None:
    slots = ExportSlots(PoolShare(5), per_user=2)
    held = [slots.take(ALICE), slots.take(ALICE)]
    with pytest.raises(TooManyRequests) as refused:
        slots.take(ALICE)
    assert "already runs 2 exports" in refused.value.detail
    assert refused.value.headers["Retry-After"] == "10"
    bobs = slots.take(BOB)
    # One of Alice's ends: she may start another, and only one.
    held[0]()
    held[0] = slots.take(ALICE)
    with pytest.raises(TooManyRequests):
        slots.take(ALICE)
    for give_back in (*held, bobs):
        give_back()
    assert slots.free == 5
