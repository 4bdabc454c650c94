"""When to run a load: the cheapest quarter hours of a window for a load (a power profile per
quarter hour, or an energy at a power), at the household's price of each quarter
(docs/api.md#plan). Pure arithmetic on a list of quarter prices; the HTTP side
(``billing/plans.py``) reads the prices and answers.

Every quarter is 900 s of UTC time, so a DST day has 92 or 100 of them and no index is taken
from a wall clock. A quarter without a known price (None) is never used.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, cast

QUARTER = 900
"""Seconds of one quarter hour, the planner's slot."""
QUARTER_HOURS = QUARTER / 3600
MAX_ALTERNATIVES = 3
_State = tuple[int, int, bool, bool]
"""A split plan's state after a quarter: quarters taken, runs begun, whether the quarter was
taken, whether the smaller last quarter is placed."""
MAX_SPLIT_WORK = 3_000_000
"""quarters x load quarters x max_blocks: the most a split plan with ``max_blocks`` may cost
(about a second of CPU); a bigger one is refused as too large (docs/api.md#plan)."""


class Choice(NamedTuple):
    """A plan: the window's quarter indexes used, the kWh in each, and what it costs. A tuple,
    not a frozen dataclass: a window of two days makes 190 of them a request, and a frozen
    dataclass's construction cost more than the load's sums."""

    quarters: tuple[int, ...]
    kwh: tuple[float, ...]
    cost: float

    @property
    def blocks(self) -> list[tuple[int, int]]:
        """The runs of consecutive quarters used: (first index, index after the last)."""
        runs: list[tuple[int, int]] = []
        for q in self.quarters:
            if runs and runs[-1][1] == q:
                runs[-1] = (runs[-1][0], q + 1)
            else:
                runs.append((q, q + 1))
        return runs


def known(price: float | None) -> float:
    """A quarter's price where the planner has made sure there is one."""
    assert price is not None  # noqa: S101 - only quarters with a price are ever used
    return price


def cost_of(prices: Sequence[float | None], quarters: Sequence[int], kwh: Sequence[float]) -> float:
    """What running ``kwh`` in ``quarters`` costs."""
    return sum(k * known(prices[q]) for q, k in zip(quarters, kwh, strict=True))


def profile_of(power_kw: float, quarters: int | None, energy_kwh: float | None) -> list[float]:
    """kWh per quarter of a load at ``power_kw``: ``quarters`` whole quarters, or as many as
    ``energy_kwh`` takes, its last quarter holding what remains."""
    per_quarter = power_kw * QUARTER_HOURS
    if quarters is not None:
        return [per_quarter] * quarters
    assert energy_kwh is not None  # noqa: S101 - the caller gives one of the two
    whole = math.floor(energy_kwh / per_quarter + 1e-9)
    rest = energy_kwh - whole * per_quarter
    return [per_quarter] * whole + ([rest] if rest > 1e-9 else [])


@dataclass(frozen=True)
class Starts:
    """Every start of a load run in one block whose quarters all have a price (at most a
    limit), in start order, with what the load costs from each: ``(cost, start)``. A
    ``Choice`` is made only for the starts an answer shows (a two-day window has 190 starts)."""

    load: tuple[float, ...]
    costs: list[tuple[float, int]]

    def choice(self, cost: float, start: int) -> Choice:
        return Choice(tuple(range(start, start + len(self.load))), self.load, cost)

    def first(self) -> Choice | None:
        """The earliest start."""
        return self.choice(*self.costs[0]) if self.costs else None

    def dearest(self) -> Choice | None:
        """The dearest start (the earliest of equals)."""
        return self.choice(*max(self.costs, key=lambda c: c[0])) if self.costs else None


def contiguous_starts(
    prices: Sequence[float | None], kwh: Sequence[float], max_price: float | None
) -> Starts:
    """Every start whose quarters all have a price (at most ``max_price``), with the cost of
    the load run from it, in start order."""
    n = len(kwh)
    load = tuple(kwh)
    if n == 0:
        return Starts(load, [])
    first, last = load[0], load[-1]
    # A load of equal quarters (perhaps a smaller last one) costs, from each start, the sum of
    # its full quarters' products, made once, plus its last: cost_of's terms in cost_of's
    # order, so the same figure to the last bit. A profile's costs are summed start by start.
    even = all(k == first for k in load[:-1])
    scaled = [first * p if p is not None else 0.0 for p in prices] if even else []
    costs: list[tuple[float, int]] = []
    run = 0  # usable quarters ending at q
    for q, price in enumerate(prices):
        run = run + 1 if price is not None and (max_price is None or price <= max_price) else 0
        if run >= n:
            start = q - n + 1
            if even:
                cost = sum(scaled[start:q]) + last * known(price)
            else:
                cost = sum(map(operator.mul, load, cast("Sequence[float]", prices[start : q + 1])))
            costs.append((cost, start))
    return Starts(load, costs)


def best_contiguous(starts: Starts) -> tuple[Choice, list[Choice]] | None:
    """The cheapest start (the earliest of equals) and up to three next-best starts, each
    overlapping neither it nor each other (a quarter later is no alternative worth naming)."""
    if not starts.costs:
        return None
    ranked = sorted(starts.costs)
    n = len(starts.load)
    taken = [ranked[0]]
    for cost, start in ranked[1:]:
        if len(taken) > MAX_ALTERNATIVES:
            break
        # Runs of n quarters are apart when their starts are n or more apart.
        if all(abs(start - other) >= n for _, other in taken):
            taken.append((cost, start))
    best, *others = (starts.choice(cost, start) for cost, start in taken)
    return best, others


def split(
    prices: Sequence[float | None],
    kwh: Sequence[float],
    max_price: float | None,
    max_blocks: int | None,
    sign: int = 1,
) -> Choice | None:
    """The cheapest quarters (``sign`` -1: the dearest) for a load of equal quarters with
    perhaps a smaller last one (``kwh``), in at most ``max_blocks`` runs: None when the window
    has too few usable quarters. With ``max_price`` and too few quarters at or under it, every
    one of them is used, cheapest first, up to the load (the load runs only where it pays)."""
    eligible = [
        q for q, p in enumerate(prices) if p is not None and (max_price is None or p <= max_price)
    ]
    n = len(kwh)
    if n == 0:
        return None
    if len(eligible) < n:
        if max_price is None or not eligible:
            return None
        kwh = kwh[: len(eligible)]
        n = len(eligible)
    full, last = kwh[0], kwh[-1]
    if max_blocks is None:
        ranked = sorted(eligible, key=lambda q: (sign * known(prices[q]), q))[:n]
        # The smaller last quarter goes where a kWh is worth least to the plan: the dearest
        # chosen quarter (the cheapest one when planning the worst).
        chosen = sorted(ranked)
        spot = ranked[-1]
        amounts = tuple(last if q == spot else full for q in chosen)
        return Choice(tuple(chosen), amounts, cost_of(prices, chosen, amounts))
    return _split_in_blocks(prices, eligible, n, full, last, max_blocks, sign)


def _split_in_blocks(
    prices: Sequence[float | None],
    eligible: Sequence[int],
    n: int,
    full: float,
    last: float,
    max_blocks: int,
    sign: int,
) -> Choice | None:
    """Dynamic programming over the quarters: per count of quarters taken, runs begun,
    whether the previous quarter was taken and whether the smaller quarter is placed, the
    least cost; then the choice traced back."""
    allowed = set(eligible)
    remainder = last != full
    # state (taken, blocks, in_run, rest_placed) -> (cost, back pointer, quarter taken)
    layers: list[dict[_State, tuple[float, _State | None, bool]]] = []
    current: dict[_State, tuple[float, _State | None, bool]] = {
        (0, 0, False, False): (0.0, None, False)
    }
    for q, price in enumerate(prices):
        following: dict[_State, tuple[float, _State | None, bool]] = {}
        for state, (cost, _, _) in current.items():
            taken, runs, in_run, placed = state
            _keep(following, (taken, runs, False, placed), cost, state, False)
            if q not in allowed or taken == n:
                continue
            begun = runs + (0 if in_run else 1)
            if begun > max_blocks:
                continue
            p = sign * known(price)
            _keep(following, (taken + 1, begun, True, placed), cost + full * p, state, True)
            if remainder and not placed:
                _keep(following, (taken + 1, begun, True, True), cost + last * p, state, True)
        layers.append(following)
        current = following
    ends = [
        (cost, state)
        for state, (cost, _, _) in current.items()
        if state[0] == n and state[3] == remainder
    ]
    if not ends:
        return None
    _, state = min(ends)
    picked: list[tuple[int, float]] = []
    for q in range(len(prices) - 1, -1, -1):
        _, came, took = layers[q][state]
        if took:
            assert came is not None  # noqa: S101 - a taken quarter has a state before it
            picked.append((q, last if came[3] != state[3] else full))
        assert came is not None  # noqa: S101
        state = came
    picked.reverse()
    quarters, amounts = tuple(q for q, _ in picked), tuple(a for _, a in picked)
    return Choice(quarters, amounts, cost_of(prices, quarters, amounts))


def _keep(
    layer: dict[_State, tuple[float, _State | None, bool]],
    state: _State,
    cost: float,
    came: _State,
    took: bool,
) -> None:
    """Record ``state`` in ``layer`` if it is reached more cheaply than before."""
    if cost < layer.get(state, (math.inf, None, False))[0]:
        layer[state] = (cost, came, took)
