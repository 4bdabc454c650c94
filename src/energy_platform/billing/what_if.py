"""``POST /feeds/{feed_id}/what-if``: the household's own buckets replayed through contracts of
the catalogue or given, month by month, beside its current tariffs (docs/billing.md#what-if).
The money is ``cluster.what_ifs``' (sql/functions/98_billing_what_if.sql); here: the ask checked
(contracts as ``admin tariffs set`` checks them), public holidays computed (SQL cannot call the
holidays package), and the answer ranked."""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime
from zoneinfo import ZoneInfo

import asyncpg
import msgspec

from energy_platform.billing import queries
from energy_platform.billing.contracts import Contract, checked_contract
from energy_platform.billing.dates import date_range
from energy_platform.billing.holidays import holidays_between
from energy_platform.billing.schemas import BillMedium, WhatIf, WhatIfContract, WhatIfMonth
from energy_platform.core.db.pool import Connection
from energy_platform.core.errors import InvalidInput

MAX_CONTRACTS = 10
"""Contracts a call replays at most (the current one besides)."""
CURRENT = "current"
UNKNOWN_FIELD = re.compile(r"^Object contains unknown field `([^`]*)`$")


class ContractAsked(msgspec.Struct, forbid_unknown_fields=True):
    """A contract of the catalogue by ``name``, or one given whole as ``contract``."""

    name: str | None = None
    contract: Contract | None = None


class WhatIfAsk(msgspec.Struct, forbid_unknown_fields=True):
    """The body: local dates (both inclusive; default the last 12 whole local months) and the
    contracts to replay."""

    from_: str | None = msgspec.field(default=None, name="from")
    to: str | None = None
    contracts: list[ContractAsked] = msgspec.field(default_factory=list)


class Replay(msgspec.Struct, frozen=True):
    """What ``cluster.what_ifs`` is asked: each contract named, as JSON for SQL."""

    medium: BillMedium
    names: list[str]
    contracts: list[str]
    vats: list[float]
    """Each contract's VAT rate (percent) on its medium."""


def decode_ask(body: bytes) -> WhatIfAsk:
    """The body, else 400 naming the field (``$.contracts[0].contract.vat``)."""
    try:
        ask = msgspec.json.decode(body or b"{}", type=WhatIfAsk)
    except msgspec.ValidationError as e:
        message, _, path = str(e).rpartition(" - at `")
        field = path.rstrip("`") if message else "$"
        if unknown := UNKNOWN_FIELD.match(message):
            field += f".{unknown[1]}"  # the field itself, not the object holding it
        raise InvalidInput(f"{field}: {message or e}", field=field) from None
    except msgspec.DecodeError:
        raise InvalidInput("the body is not a JSON object", field="$") from None
    if len(ask.contracts) > MAX_CONTRACTS:
        raise InvalidInput(
            f"at most {MAX_CONTRACTS} contracts a call: {len(ask.contracts)} asked",
            field="$.contracts",
        )
    return ask


def last_whole_months(today: date, months: int = 12) -> tuple[date, date]:
    """The ``months`` whole local months before the one holding ``today``."""
    last = today.replace(day=1).toordinal() - 1
    end = date.fromordinal(last)
    year, month = divmod(end.year * 12 + end.month - months, 12)
    return date(year, month + 1, 1), end


def asked_range(ask: WhatIfAsk, timezone: str, now: datetime) -> tuple[date, date]:
    """The ask's dates, or the last 12 whole months in the feed's zone; within the bill's
    bounds (a year at most)."""
    if ask.from_ is None and ask.to is None:
        return last_whole_months(now.astimezone(ZoneInfo(timezone)).date())
    if ask.from_ is None or ask.to is None:
        missing = "$.from" if ask.from_ is None else "$.to"
        raise InvalidInput(f"{missing}: give both from and to, or neither", field=missing)
    return date_range(ask.from_, ask.to, names=("$.from", "$.to"))


async def replay(conn: Connection, ask: WhatIfAsk, first: date, last: date) -> Replay:
    """Each asked contract by name from the catalogue or as given, checked as ``admin tariffs
    set`` checks its options, with its public holidays over the range's years."""
    named = {c.name for c in ask.contracts if c.name is not None}
    catalogue = {
        row["name"]: msgspec.json.decode(row["contract"], type=Contract)
        for row in await conn.fetch(queries.CONTRACTS_NAMED, list(named))
    }
    names: list[str] = []
    given: list[Contract] = []
    vats: list[float] = []
    for n, asked in enumerate(ask.contracts):
        where = f"$.contracts[{n}]"
        if (asked.name is None) == (asked.contract is None):
            raise InvalidInput(f"{where}: give a name or a contract", field=where)
        if asked.name is not None:
            if asked.name not in catalogue:
                raise InvalidInput(
                    f"{where}.name: the catalogue has no contract {asked.name[:80]!r}",
                    field=f"{where}.name",
                )
            contract, name = catalogue[asked.name], asked.name
        else:
            assert asked.contract is not None  # noqa: S101 - one of the two, checked above
            contract, name = asked.contract, f"contracts[{n}]"
        vats.append(checked_contract(contract, f"{where}.contract").terms.vat)
        names.append(name)
        given.append(contract)
    await _known_areas(conn, given)
    media = {c.medium for c in given} or {"power"}
    if len(media) > 1:
        raise InvalidInput(
            "the contracts of one call are of one medium, to set beside one bill line",
            field="$.contracts",
        )
    medium: BillMedium = media.pop()
    return Replay(medium, names, [_as_sql(c, first, last) for c in given], vats)


async def _known_areas(conn: Connection, given: list[Contract]) -> None:
    """Each contract's areas have prices, as ``tariffs set --area`` requires: else every
    quarter would be unpriced, a typo answered as an empty month."""
    areas = [
        (n, where, part.area)
        for n, contract in enumerate(given)
        for where, part in (("", contract), (".export", contract.export))
        if part is not None and part.area is not None
    ]
    known = {
        row["area"] for row in await conn.fetch(queries.KNOWN_AREAS, [area for _, _, area in areas])
    }
    for n, where, area in areas:
        if area not in known:
            field = f"$.contracts[{n}].contract{where}.area"
            raise InvalidInput(f"{field}: price area {area[:40]!r} has no prices", field=field)


def _as_sql(contract: Contract, first: date, last: date) -> str:
    """The contract as ``cluster.what_ifs`` takes it: each part naming a calendar carries its
    dates over the range (``holiday_days``)."""
    data = msgspec.to_builtins(contract)
    for part in (data, data.get("export")):
        if part is not None and part.get("holidays") is not None:
            found = holidays_between(part["holidays"], first, last)
            part["holiday_days"] = [d.isoformat() for d in found]
    return msgspec.json.encode(data).decode()


def answer(
    feed: str,
    first: date,
    last: date,
    timezone: str,
    currency: str,
    asked: Replay,
    rows: list[asyncpg.Record],
) -> WhatIf:
    """The answer from ``cluster.what_ifs``' rows: contracts ranked, differences to the
    current one, and the cheapest's break-even markup."""
    names = [CURRENT, *asked.names]
    months: list[list[WhatIfMonth]] = [[] for _ in names]
    for row in rows:
        months[row["contract"]].append(
            WhatIfMonth(
                row["month"].strftime("%Y-%m"),
                row["quantity"],
                row["export"],
                row["energy"],
                row["standing"],
                row["credit"],
                row["vat"],
                row["total"],
                row["average_price"],
                row["coverage"],
                row["complete"],
                row["market_average_price"],
                row["load_shape_factor"],
            )
        )
    totals = [sum(m.total for m in ms) for ms in months]
    order = sorted(range(len(names)), key=lambda n: (round(totals[n], 2), n))
    contracts = [
        WhatIfContract(
            name,
            ms,
            totals[n],
            totals[n] - totals[0],
            order.index(n) + 1,
            all(m.complete for m in ms),
            *_market(ms),
        )
        for n, (name, ms) in enumerate(zip(names, months, strict=True))
    ]
    cheapest = contracts[order[0]]
    quantity = sum(m.quantity for m in cheapest.months)
    if order[0] != 0 and quantity > 0:
        # Each unit's extra price after VAT is markup x (1 + vat/100); floor and cap aside.
        vat = asked.vats[order[0] - 1]
        cheapest.break_even = -cheapest.difference / (quantity * (1 + vat / 100))
    return WhatIf(
        feed=feed,
        from_=first.isoformat(),
        to=last.isoformat(),
        timezone=timezone,
        currency=currency,
        medium=asked.medium,
        contracts=contracts,
    )


def _market(months: list[WhatIfMonth]) -> tuple[float | None, float | None]:
    """The range's market average (the months' by their days) and load shape factor (the
    achieved market price by the months' consumption, over that average)."""
    weighted = days = achieved = used = 0.0
    for m in months:
        if m.market_average_price is None:
            continue
        length = calendar.monthrange(*map(int, m.month.split("-")))[1]
        weighted += m.market_average_price * length
        days += length
        if m.load_shape_factor is not None and m.quantity > 0:
            achieved += m.load_shape_factor * m.market_average_price * m.quantity
            used += m.quantity
    if not days:
        return None, None
    market = weighted / days
    return market, (achieved / used / market if used and market else None)
