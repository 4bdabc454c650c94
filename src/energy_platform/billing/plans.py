"""``GET /feeds/{feed_id}/plan``: when to run a load, the cheapest quarter hours of a window at
the household's all-in price (its tariff formula: bands by day kind, factor times the area's
price, VAT, floor, cap; the price curve of ``cluster.feed_prices``) or at the area's market
price alone (docs/api.md#plan). The quarters' prices come from the database; the choice is
``billing/planning.py``'s."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated
from zoneinfo import ZoneInfo

import msgspec
from litestar import Controller, get
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, QueryParameter

from energy_platform.billing import planning, queries
from energy_platform.billing.planning import QUARTER, Choice
from energy_platform.billing.schemas import (
    Plan,
    PlanAlternative,
    PlanBasis,
    PlanBlock,
    PlanMode,
    PlanSlot,
    PlanStatus,
    PlanWindow,
)
from energy_platform.core.errors import InvalidInput, NotFound
from energy_platform.core.http.database import Reads
from energy_platform.core.inputs import parse_id, parse_instant
from energy_platform.users.auth import Caller, authenticate

MAX_WINDOW = timedelta(days=7)
"""The longest window a plan looks at."""
DEFAULT_HORIZON = timedelta(hours=48)
"""A window without a deadline: the known prices, at most this far."""
MAX_LOAD_QUARTERS = 192
"""The longest load: 48 hours of quarters."""
MAX_POWER_KW = 1_000.0
DURATION = re.compile(
    r"^P(?:(?P<days>\d{1,2})D)?(?:T(?:(?P<hours>\d{1,3})H)?(?:(?P<minutes>\d{1,4})M)?)?$"
)


@dataclass(frozen=True)
class Load:
    """What to run: kWh per quarter hour, in order."""

    kwh: list[float]
    shaped: bool
    """A profile: its quarters keep their order, so it runs in one block."""


def parse_duration(value: str) -> int:
    """An ISO 8601 duration of whole quarter hours (PT2H, PT45M, P1DT6H) as quarters, else 400."""
    match = DURATION.match(value)
    if match is None or not any(match.groupdict().values()):
        raise InvalidInput(
            f"duration: {value[:40]!r} is not an ISO 8601 duration such as PT2H", field="duration"
        )
    minutes = (int(match["days"] or 0) * 24 + int(match["hours"] or 0)) * 60 + int(
        match["minutes"] or 0
    )
    if minutes % 15 or minutes == 0:
        raise InvalidInput(
            f"duration: {value!r} is not a whole number of quarter hours", field="duration"
        )
    return minutes // 15


def parse_profile(value: str) -> list[float]:
    """kW per quarter hour, comma-separated, each 0 to the power bound, else 400."""
    parts = value.split(",")
    if len(parts) > MAX_LOAD_QUARTERS:
        raise InvalidInput(f"profile: at most {MAX_LOAD_QUARTERS} quarter hours", field="profile")
    try:
        powers = [float(part) for part in parts]
    except ValueError:
        raise InvalidInput(
            "profile: kW per quarter hour, comma-separated (2.0,1.5,0.3)", field="profile"
        ) from None
    if not all(0 <= kw <= MAX_POWER_KW for kw in powers) or not any(powers):
        raise InvalidInput(
            f"profile: each value 0 to {MAX_POWER_KW:g} kW, not all 0", field="profile"
        )
    return [kw * planning.QUARTER_HOURS for kw in powers]


def parse_load(
    duration: str | None, energy_kwh: float | None, power_kw: float | None, profile: str | None
) -> Load:
    """The load of exactly one of duration (with power_kw), energy_kwh (with power_kw) and
    profile, else 400 naming what is missing or too much."""
    given = [
        name
        for name, value in (
            ("duration", duration),
            ("energy_kwh", energy_kwh),
            ("profile", profile),
        )
        if value is not None
    ]
    if len(given) != 1:
        raise InvalidInput("give one of duration, energy_kwh or profile", field="duration")
    if profile is not None:
        if power_kw is not None:
            raise InvalidInput("power_kw: a profile gives its own power", field="power_kw")
        return Load(parse_profile(profile), shaped=True)
    if power_kw is None or not 0 < power_kw <= MAX_POWER_KW:
        raise InvalidInput(
            f"power_kw: the load's power, more than 0 up to {MAX_POWER_KW:g}", field="power_kw"
        )
    if duration is not None:
        quarters = parse_duration(duration)
        if quarters > MAX_LOAD_QUARTERS:
            raise InvalidInput("duration: at most 48 hours", field="duration")
        return Load(planning.profile_of(power_kw, quarters, None), shaped=False)
    assert energy_kwh is not None  # noqa: S101 - one of the three was given
    if not 0 < energy_kwh <= power_kw * MAX_LOAD_QUARTERS * planning.QUARTER_HOURS:
        raise InvalidInput(
            "energy_kwh: more than 0, at most 48 hours at power_kw", field="energy_kwh"
        )
    return Load(planning.profile_of(power_kw, None, energy_kwh), shaped=False)


class PlanController(Controller):
    dependencies = {"caller": Provide(authenticate)}  # noqa: RUF012 - Litestar's own convention
    tags = ["bills"]  # noqa: RUF012

    @get(
        "/feeds/{feed_id:str}/plan",
        summary="When to run a load: the cheapest quarter hours of a window",
    )
    async def plan(
        self,
        feed_id: FromPath[str],
        caller: NamedDependency[Caller],
        reads: Reads,
        currency: NamedDependency[str],
        duration: Annotated[
            str | None,
            QueryParameter(
                description="ISO 8601, whole quarter hours (PT2H), with power_kw", max_length=20
            ),
        ] = None,
        energy_kwh: Annotated[
            float | None, QueryParameter(description="kWh to run at power_kw")
        ] = None,
        power_kw: Annotated[float | None, QueryParameter(description="kW")] = None,
        profile: Annotated[
            str | None,
            QueryParameter(description="kW per quarter hour, comma-separated", max_length=4000),
        ] = None,
        earliest: Annotated[
            str | None, QueryParameter(description="ISO 8601; default now", max_length=64)
        ] = None,
        deadline: Annotated[
            str | None,
            QueryParameter(
                description="ISO 8601; default the end of the known prices, at most 48 h on",
                max_length=64,
            ),
        ] = None,
        mode: Annotated[
            PlanMode, QueryParameter(description="contiguous: one block; split: any quarters")
        ] = "contiguous",
        max_blocks: Annotated[int | None, QueryParameter(ge=1, le=96)] = None,
        max_price: Annotated[
            float | None, QueryParameter(description="use only quarters priced at most this")
        ] = None,
        basis: Annotated[
            PlanBasis,
            QueryParameter(description="all_in: the household's price; market: the area's alone"),
        ] = "all_in",
        negative: Annotated[
            bool, QueryParameter(description="also list the window's runs of negative prices")
        ] = False,
    ) -> Plan:
        load = (
            None
            if negative and all(v is None for v in (duration, energy_kwh, profile))
            else parse_load(duration, energy_kwh, power_kw, profile)
        )
        if load is not None and load.shaped and mode == "split":
            raise InvalidInput("mode: a profile runs in one block (contiguous)", field="mode")
        if max_blocks is not None and mode != "split":
            raise InvalidInput("max_blocks: only with mode=split", field="max_blocks")
        if max_price is not None and not math.isfinite(max_price):
            raise InvalidInput("max_price: a finite price", field="max_price")
        now = datetime.now(UTC)
        start = parse_instant(earliest, "earliest") if earliest else now
        first = -(-int(start.timestamp()) // QUARTER) * QUARTER  # the next whole quarter
        asked = None
        if deadline:
            asked = int(parse_instant(deadline, "deadline").timestamp()) // QUARTER * QUARTER
            if asked <= first:
                raise InvalidInput(
                    "deadline: after earliest, by a quarter hour at least", field="deadline"
                )
            if asked - first > MAX_WINDOW.total_seconds():
                raise InvalidInput("deadline: at most 7 days after earliest", field="deadline")
        # Prices are read up to the deadline, or the default horizon: no further than needed.
        end = asked or first + int(DEFAULT_HORIZON.total_seconds())
        found = await reads.fetchrow(
            queries.PLAN_QUARTERS,
            parse_id(feed_id, "feed"),
            caller.user_id,
            caller.is_admin,
            basis,
            datetime.fromtimestamp(first, UTC),
            datetime.fromtimestamp(end, UTC),
        )
        if found is None:
            raise NotFound(f"no feed {feed_id!r}")
        zone, prices = found["timezone"], found["prices"]
        known = _known_quarters(prices)
        known_until = None if known == len(prices) else first + known * QUARTER
        last = asked or (end if known_until is None else max(known_until, first))
        window = prices[: (last - first) // QUARTER]
        answer = _planned(window, load, mode, max_blocks, max_price)
        status = answer.status
        if status == "ok" and known_until is not None and last > known_until:
            status = "partial_prices"
        shown = _Shown(ZoneInfo(zone), first)
        return Plan(
            feed=str(found["id"]),
            timezone=zone,
            currency=currency,
            basis=basis,
            mode=mode,
            status=status,
            earliest=shown.local(first),
            deadline=shown.local(last),
            prices_known_until=None if known_until is None else shown.local(known_until),
            load_kwh=sum(load.kwh) if load else 0.0,
            planned_kwh=sum(answer.best.kwh) if answer.best else 0.0,
            blocks=[shown.block(answer.best, a, b, window) for a, b in answer.best.blocks]
            if answer.best
            else [],
            cost=answer.best.cost if answer.best else None,
            cost_if_started_now=answer.now.cost if answer.now else None,
            saving=answer.now.cost - answer.best.cost if answer.now and answer.best else None,
            worst_cost=answer.worst.cost if answer.worst else None,
            alternatives=[
                PlanAlternative(
                    shown.local(shown.at(c.quarters[0])), shown.utc(shown.at(c.quarters[0])), c.cost
                )
                for c in answer.alternatives
            ],
            slots=shown.slots(window, answer.best),
            negative_windows=shown.negative(window) if negative else msgspec.UNSET,
        )


@dataclass(frozen=True)
class _Answer:
    status: PlanStatus
    best: Choice | None
    now: Choice | None
    worst: Choice | None
    alternatives: list[Choice]


def _planned(
    window: list[float | None],
    load: Load | None,
    mode: str,
    max_blocks: int | None,
    max_price: float | None,
) -> _Answer:
    """The plan, the load run at once, the dearest way and the alternatives, in a window."""
    if load is None:
        return _Answer("ok", None, None, None, [])
    if mode == "split":
        if max_blocks is not None and (
            len(window) * len(load.kwh) * max_blocks > planning.MAX_SPLIT_WORK
        ):
            raise InvalidInput(
                "max_blocks: this window and load are too large to split in "
                "blocks; shorten the window or drop max_blocks",
                field="max_blocks",
            )
        best = planning.split(window, load.kwh, max_price, max_blocks)
        worst = planning.split(window, load.kwh, max_price, max_blocks, sign=-1)
        return _Answer("ok" if best else "infeasible", best, _at_once(window, load), worst, [])
    starts = planning.contiguous_starts(window, load.kwh, max_price)
    found = planning.best_contiguous(starts)
    if found is None:
        return _Answer("infeasible", None, _at_once(window, load), None, [])
    best, alternatives = found
    return _Answer("ok", best, _at_once(window, load), starts.dearest(), alternatives)


def _at_once(window: list[float | None], load: Load) -> Choice | None:
    """The load run from the window's first quarter on, whatever its prices; None where one
    of its quarters has no price."""
    return planning.contiguous_starts(window[: len(load.kwh)], load.kwh, None).first()


def _known_quarters(prices: Sequence[float | None]) -> int:
    """How many quarters from the first have a price, without a gap."""
    for q, price in enumerate(prices):
        if price is None:
            return q
    return len(prices)


class _Shown:
    """Quarters of a window as the answer shows them: local time with offset, and UTC."""

    def __init__(self, zone: ZoneInfo, first: int) -> None:
        self.zone, self.first = zone, first

    def at(self, quarter: int) -> int:
        return self.first + quarter * QUARTER

    def local(self, t: int) -> str:
        return datetime.fromtimestamp(t, self.zone).isoformat()

    def utc(self, t: int) -> str:
        return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")

    def block(self, choice: Choice, a: int, b: int, window: list[float | None]) -> PlanBlock:
        used = [(q, k) for q, k in zip(choice.quarters, choice.kwh, strict=True) if a <= q < b]
        cost = planning.cost_of(window, [q for q, _ in used], [k for _, k in used])
        start, end = self.at(a), self.at(b)
        return PlanBlock(
            self.local(start),
            self.local(end),
            self.utc(start),
            self.utc(end),
            sum(k for _, k in used),
            cost,
        )

    def slots(self, window: list[float | None], best: Choice | None) -> list[PlanSlot]:
        runs = dict(zip(best.quarters, best.kwh, strict=True)) if best else {}
        return [PlanSlot(self.at(q), price, runs.get(q, 0.0)) for q, price in enumerate(window)]

    def negative(self, window: list[float | None]) -> list[PlanWindow]:
        below = [q for q, price in enumerate(window) if price is not None and price < 0]
        runs = Choice(tuple(below), (), 0.0).blocks
        return [
            PlanWindow(
                self.local(self.at(a)),
                self.local(self.at(b)),
                self.utc(self.at(a)),
                self.utc(self.at(b)),
                min(planning.known(price) for price in window[a:b]),
            )
            for a, b in runs
        ]
