"""How many feed exports run at once in one API process (api/export.py)."""

import pytest

from energy_platform.api.export import ExportSlots
from energy_platform.core.errors import TooManyRequests


def test_a_slot_is_taken_once_and_given_back_once() -> None:
    slots = ExportSlots(2)
    first, second = slots.take(), slots.take()
    with pytest.raises(TooManyRequests) as refused:
        slots.take()
    assert refused.value.status == 429
    # An export that ends twice (its finally, then its collection) frees one slot, not two.
    first()
    first()
    assert slots.free == 1
    third = slots.take()
    with pytest.raises(TooManyRequests):
        slots.take()
    second()
    third()
    assert slots.free == 2
