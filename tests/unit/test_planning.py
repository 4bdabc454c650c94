"""The planner's choices equal a brute-force search over every start and every set of quarters,
on random price curves (negative prices and unknown quarters among them), loads, profiles,
price limits and block limits."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from energy_platform.billing.planning import (
    Choice,
    best_contiguous,
    contiguous_starts,
    profile_of,
    split,
)

PRICES = st.lists(
    st.one_of(st.none(), st.integers(-30, 60).map(lambda cents: cents / 100)),
    min_size=1,
    max_size=10,
)
LIMIT = st.one_of(st.none(), st.integers(-10, 40).map(lambda cents: cents / 100))


def runs(quarters: tuple[int, ...]) -> int:
    return len(Choice(quarters, (), 0.0).blocks)


@given(
    prices=PRICES,
    profile=st.lists(st.integers(0, 8).map(lambda k: k / 4), min_size=1, max_size=4),
    max_price=LIMIT,
)
def test_a_contiguous_plan_is_the_cheapest_start_of_all(
    prices: list[float | None], profile: list[float], max_price: float | None
) -> None:
    found = best_contiguous(contiguous_starts(prices, profile, max_price))
    costs = {
        start: sum(k * prices[start + i] for i, k in enumerate(profile))  # type: ignore[operator]
        for start in range(len(prices) - len(profile) + 1)
        if all(
            prices[start + i] is not None and (max_price is None or prices[start + i] <= max_price)  # type: ignore[operator]
            for i in range(len(profile))
        )
    }
    if not costs:
        assert found is None
        return
    assert found is not None
    best, alternatives = found
    assert best.cost == pytest.approx(min(costs.values()))
    assert costs[best.quarters[0]] == pytest.approx(best.cost)
    # The alternatives: dearer or equal, and apart from the best and from each other.
    used = set(best.quarters)
    for other in alternatives:
        assert other.cost >= best.cost - 1e-9
        assert used.isdisjoint(other.quarters)
        used |= set(other.quarters)


@given(
    prices=PRICES,
    quarters=st.integers(1, 4),
    rest=st.sampled_from([0.0, 0.1, 0.2]),
    max_price=LIMIT,
    max_blocks=st.one_of(st.none(), st.integers(1, 3)),
    worst=st.booleans(),
)
def test_a_split_plan_is_the_cheapest_set_of_quarters_of_all(
    prices: list[float | None],
    quarters: int,
    rest: float,
    max_price: float | None,
    max_blocks: int | None,
    worst: bool,
) -> None:
    # A load of 1 kW: 0.25 kWh a quarter, and perhaps a smaller last one.
    kwh = [0.25] * quarters + ([rest] if rest else [])
    sign = -1 if worst else 1
    found = split(prices, kwh, max_price, max_blocks, sign)
    usable = [
        q for q, p in enumerate(prices) if p is not None and (max_price is None or p <= max_price)
    ]
    load = kwh if len(usable) >= len(kwh) or max_price is None else [0.25] * len(usable)
    best = None
    for chosen in itertools.combinations(usable, len(load)):
        if not chosen or (max_blocks is not None and runs(chosen) > max_blocks):
            continue
        for smaller in set(chosen):  # where the last, smaller quarter goes
            amounts = [load[-1] if q == smaller else load[0] for q in chosen]
            cost = sum(a * prices[q] for q, a in zip(chosen, amounts, strict=True))  # type: ignore[operator]
            if best is None or sign * cost < sign * best:
                best = cost
    if best is None:
        assert found is None
        return
    assert found is not None
    assert found.cost == pytest.approx(best)
    assert sum(found.kwh) == pytest.approx(sum(load))
    assert max_blocks is None or len(found.blocks) <= max_blocks
    assert all(q in usable for q in found.quarters)


def test_an_energy_at_a_power_fills_whole_quarters_and_a_smaller_last_one() -> None:
    # 1.2 kWh at 2 kW: 0.5 kWh a quarter, two of them and 0.2 kWh in a third.
    assert profile_of(2.0, None, 1.2) == [0.5, 0.5, pytest.approx(0.2)]
    assert profile_of(2.0, None, 1.0) == [0.5, 0.5]
    assert profile_of(2.0, 3, None) == [0.5, 0.5, 0.5]
