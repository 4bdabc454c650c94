"""A history by the interval as a register's readings (history/intervals.py), for any set of
intervals that do not overlap: each interval's rise is its energy, a gap between two holds the
total still, and the readings never fall."""

from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from energy_platform.core.errors import InvalidInput
from energy_platform.history.intervals import check_interval, check_medium, totals
from energy_platform.history.points import Points

SECOND = 1_000_000


@st.composite
def intervals(draw: st.DrawFn) -> tuple[Points, int]:
    """Intervals of one length, in any order, with gaps of whole intervals between some."""
    length = draw(st.sampled_from([60, 900, 3600, 86_400])) * SECOND
    gaps = draw(st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=40))
    energies = draw(
        st.lists(
            # What the file's parser lets through (core/bounds.py): 0, or at least 1e-30.
            st.just(0.0) | st.floats(min_value=1e-30, max_value=1e6),
            min_size=len(gaps),
            max_size=len(gaps),
        )
    )
    starts, t = [], 1_767_225_600 * SECOND
    for gap in gaps:
        t += gap * length
        starts.append(t)
        t += length
    order = draw(st.permutations(range(len(starts))))
    return Points([starts[n] for n in order], [energies[n] for n in order]), length


@settings(max_examples=300, deadline=None)
@given(intervals(), st.just(0.0) | st.floats(min_value=1e-30, max_value=1e12))
def test_each_interval_rises_by_its_energy_and_gaps_hold_still(
    given_: tuple[Points, int], base: float
) -> None:
    points, length = given_
    readings = totals(points, length, base)
    energy = dict(zip(points.times, points.values, strict=True))
    assert readings[min(points.times)] == base
    for (t0, v0), (t1, v1) in pairwise(sorted(readings.items())):
        assert v1 >= v0
        if t0 in energy:
            assert t1 == t0 + length
            # A sum's rounding, relative to the total it is taken from (base up to 1e12 Wh).
            assert v1 - v0 == pytest.approx(energy[t0], rel=1e-9, abs=1e-13 * v1 + 1e-6)
        else:
            assert v1 == v0  # a gap: nothing used that the file says
    assert max(readings.values()) == pytest.approx(base + sum(points.values), rel=1e-9, abs=1e-6)


def test_overlapping_intervals_and_negative_energy_are_refused() -> None:
    with pytest.raises(InvalidInput, match="overlap"):
        totals(Points([0, 600 * SECOND], [1.0, 1.0]), 900 * SECOND, 0.0)
    with pytest.raises(InvalidInput, match="overlap"):
        totals(Points([0, 0], [1.0, 1.0]), 900 * SECOND, 0.0)
    with pytest.raises(InvalidInput, match="counts up"):
        totals(Points([0], [-1.0]), 900 * SECOND, 0.0)


@pytest.mark.parametrize("seconds", [0, -900, 31 * 86_400 + 1, 10**12])
def test_an_interval_outside_1_s_to_31_days_is_refused(seconds: int) -> None:
    with pytest.raises(InvalidInput, match=f"^interval {seconds}|^interval: {seconds} "):
        check_interval(seconds)


def test_an_interval_of_1_s_to_31_days_is_taken_in_microseconds() -> None:
    assert [check_interval(s) for s in (1, 900, 31 * 86_400)] == [
        1_000_000,
        900_000_000,
        31 * 86_400_000_000,
    ]


@pytest.mark.parametrize("medium", [None, 12, 7, 9])
def test_intervals_go_only_into_energy_registers(medium: int | None) -> None:
    with pytest.raises(InvalidInput, match="medium 22 or 23"):
        check_medium(medium)
    check_medium(22)
    check_medium(23)
