"""``GET /feeds/{feed_id}/overview``: a feed's day, week, month or year at a glance, the one call
a dashboard draws from (docs/api.md#overview): now, so far and projected (the bill of the
period's days, ``cluster.feed_bill``), buckets per local hour, day or month
(``cluster.feed_overview``), a compared period, baseload and coverage. Billing's: its figures
add up billing's one reading of the period (``cluster.period_rows``, sql/functions/
96_billing_overview.sql), and its projection is the bill's (``bills.projected``).

Every number comes from billing's functions, in three read-only transactions at once (the
period's bill and buckets share one snapshot); a year reads a few hundred rows per stream, never
a point. Within a share (docs/api.md#shares-of-costly-reads): a user computes
at most EP_API_OVERVIEWS_PER_USER overviews at once (one more waits its turn a while, then
429), its reads hold at most EP_API_COSTLY_CONNECTIONS_PER_USER connections at once, each of
the costly reads' half of the pool (core/http/shares.py), and a feed of more than
EP_API_OVERVIEW_MAX_CHANNELS channels is refused (413).
"""

from __future__ import annotations

import asyncio
import calendar
from collections.abc import Callable, Iterable
from contextlib import AbstractAsyncContextManager
from datetime import date, datetime, timedelta
from typing import Annotated, Literal

import asyncpg
import msgspec
from litestar import Controller, Router, get
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, QueryParameter

from energy_platform.billing import queries
from energy_platform.billing.bills import projected, render_bill
from energy_platform.billing.dates import parse_local_date
from energy_platform.billing.schemas import (
    Bill,
    Overview,
    OverviewBucket,
    OverviewCompare,
    OverviewLine,
    OverviewMeter,
    OverviewNow,
    OverviewPeriod,
    OverviewProjection,
    OverviewSoFar,
)
from energy_platform.core import bounds
from energy_platform.core.db.pool import Connection
from energy_platform.core.errors import NotFound, PayloadTooLarge
from energy_platform.core.http.database import Reads
from energy_platform.core.http.openapi import problems
from energy_platform.core.http.shares import CostlyReads, UserSlots
from energy_platform.core.inputs import parse_id
from energy_platform.core.settings import ApiSettings
from energy_platform.users.auth import Caller, authenticate

Compare = Literal["previous", "last_year", "none"]
Turn = Callable[[], AbstractAsyncContextManager[None]]
"""A connection's turn for one of the overview's reads (OverviewLimits.connection)."""
# The rollups' grain of each period's buckets.
GRAIN: dict[str, str] = {"day": "hour", "week": "day", "month": "day", "year": "month"}
DATE_DOC = (
    "Any local date of the period, YYYY-MM-DD, in the feed's time zone, from"
    f" {bounds.CALENDAR}; default: its today."
    " A week runs Monday to Sunday."
)
COMPARE_DOC = (
    "The period set beside it: the one before (previous), the same one a year earlier"
    " (last_year; 29 February compares with the 28th), or none."
)


def period_dates(period: str, day: date) -> tuple[date, date]:
    """The local dates, both inclusive, of the ``period`` holding ``day``."""
    if period == "day":
        return day, day
    if period == "week":
        monday = day - timedelta(days=day.weekday())
        return monday, monday + timedelta(days=6)
    if period == "month":
        last = calendar.monthrange(day.year, day.month)[1]
        return day.replace(day=1), day.replace(day=last)
    return date(day.year, 1, 1), date(day.year, 12, 31)


def a_year_before(day: date) -> date:
    """The same date a year earlier; 29 February becomes the 28th."""
    if day.month == 2 and day.day == 29:
        return date(day.year - 1, 2, 28)
    return day.replace(year=day.year - 1)


def compared_dates(period: str, first: date, compare: str) -> tuple[date, date] | None:
    """The dates of the period compared with the one starting at ``first``."""
    if compare == "none":
        return None
    if compare == "last_year":
        return period_dates(period, a_year_before(first))
    if period == "day":
        return period_dates(period, first - timedelta(days=1))
    if period == "week":
        return period_dates(period, first - timedelta(days=7))
    # The month or year before holds the day before the first.
    return period_dates(period, first - timedelta(days=1))


def overview_lines(bill: Bill) -> tuple[list[OverviewLine], float]:
    """The bill's lines money first (export as minus its credit), and its standing charges."""
    lines = [
        OverviewLine(
            line.medium,
            line.quantity,
            line.unit,
            -line.credit if isinstance(line.credit, float) else _amount(line.energy),
        )
        for line in bill.lines
    ]
    return lines, sum(line.standing for line in bill.lines)


def _amount(value: float | msgspec.UnsetType) -> float:
    return value if isinstance(value, float) else 0.0


def buckets_of(rows: Iterable[asyncpg.Record]) -> tuple[list[OverviewBucket], float]:
    """``cluster.feed_overview``'s rows as buckets, and the seconds of data they cover."""
    buckets: dict[datetime, OverviewBucket] = {}
    covered = 0.0
    for row in rows:
        bucket = buckets.get(row["start"])
        if bucket is None:
            bucket = OverviewBucket(int(row["start"].timestamp()), {}, None, 0.0, {})
            buckets[row["start"]] = bucket
            covered += row["covered"] or 0.0
        bucket.meters[str(row["stream_id"])] = row["quantity"]
        if not row["counted"]:
            continue
        bucket.money += row["money"]
        if row["line"] == "export":
            bucket.export = (bucket.export or 0.0) + row["quantity"]
        else:
            bucket.consumption[row["line"]] = (
                bucket.consumption.get(row["line"], 0.0) + row["quantity"]
            )
    return list(buckets.values()), covered


async def _bill(
    conn: Connection, feed: int, first: date, last: date, currency: str
) -> tuple[asyncpg.Record, Bill]:
    days = await conn.fetchrow(queries.BILL_DAYS, feed, first, last)
    assert days is not None  # noqa: S101 - aggregates answer one row
    rows = await conn.fetch(queries.FEED_BILL, feed, first, last)
    return days, render_bill(str(feed), first, last, currency, days, rows)


class OverviewLimits(msgspec.Struct, frozen=True):
    """The overview's share of the process: the connections of the costly reads' half of the
    pool, each user's slots and lane of connections, and the channels one overview reads at
    most."""

    costly: CostlyReads
    users: UserSlots
    max_channels: int


async def _period(
    reads: asyncpg.Pool,
    turn: Turn,
    feed: int,
    first: date,
    last: date,
    grain: str,
    currency: str,
) -> tuple[asyncpg.Record, Bill, list[asyncpg.Record], list[asyncpg.Record]]:
    """The period's days, bill, bucket rows and meters, in one snapshot: a day ending
    between two statements would otherwise count as open in one and over in the other."""
    async with (
        turn(),
        reads.acquire() as conn,
        conn.transaction(isolation="repeatable_read", readonly=True),
    ):
        days, bill = await _bill(conn, feed, first, last, currency)
        rows = await conn.fetch(queries.OVERVIEW_BUCKETS, feed, first, last, grain)
        meters = await conn.fetch(queries.OVERVIEW_METERS, feed)
    return days, bill, rows, meters


async def _figures(
    reads: asyncpg.Pool, turn: Turn, feed: int, first: date, last: date, today: date
) -> asyncpg.Record:
    """The period's baseload, mean price and the feed's now."""
    async with turn():
        figures = await reads.fetchrow(queries.OVERVIEW_FIGURES, feed, first, last, today)
    assert figures is not None  # noqa: S101 - one row of scalars
    return figures


async def _compared(
    reads: asyncpg.Pool,
    turn: Turn,
    feed: int,
    dates: tuple[date, date] | None,
    grain: str,
    currency: str,
) -> OverviewCompare | None:
    """The compared period whole: its bill and its buckets (none without one)."""
    if dates is None:
        return None
    async with (
        turn(),
        reads.acquire() as conn,
        conn.transaction(isolation="repeatable_read", readonly=True),
    ):
        _, bill = await _bill(conn, feed, *dates, currency)
        rows = await conn.fetch(queries.OVERVIEW_BUCKETS, feed, *dates, grain)
    lines, standing = overview_lines(bill)
    return OverviewCompare(
        from_=dates[0].isoformat(),
        to=dates[1].isoformat(),
        total=bill.total,
        lines=lines,
        standing=standing,
        buckets=buckets_of(rows)[0],
    )


def projection(days: asyncpg.Record, so_far: OverviewSoFar) -> float | None:
    """Where a running period is heading (``bills.projected``): its energy money so far at the
    same pace for the rest of its time, plus the standing charge of every day at the days
    begun's average."""
    start = days["start"]
    return projected(
        (days["now"] - start).total_seconds(),
        (days["finish"] - start).total_seconds(),
        by_time=so_far.total - so_far.standing,
        by_day=so_far.standing,
        begun=days["over"] + 1,
        days=days["days"],
    )


class OverviewController(Controller):
    dependencies = {"caller": Provide(authenticate)}  # noqa: RUF012 - Litestar's own convention
    tags = ["overview"]  # noqa: RUF012

    @get(
        "/feeds/{feed_id:str}/overview",
        summary="A feed's day, week, month or year at a glance: now, so far, projected, buckets",
        opt=problems(413, 429),
    )
    async def overview(
        self,
        feed_id: FromPath[str],
        caller: NamedDependency[Caller],
        reads: Reads,
        currency: NamedDependency[str],
        limits: NamedDependency[OverviewLimits],
        period: Annotated[
            OverviewPeriod, QueryParameter(description="The calendar unit shown.")
        ] = "day",
        on: Annotated[
            str | None, QueryParameter(name="date", description=DATE_DOC, max_length=10)
        ] = None,
        compare: Annotated[Compare, QueryParameter(description=COMPARE_DOC)] = "previous",
    ) -> Overview:
        # In the calendar's range, the period and the compared one stay inside the calendar.
        asked = None if on is None else parse_local_date(on, "date")
        # First: a user past their slots costs nothing more than their token's check.
        give_back = await limits.users.wait(caller.user_id)
        try:
            return await self._computed(
                reads, limits, caller, feed_id, currency, period, asked, compare
            )
        finally:
            give_back()

    async def _computed(
        self,
        reads: asyncpg.Pool,
        limits: OverviewLimits,
        caller: Caller,
        feed_id: str,
        currency: str,
        period: OverviewPeriod,
        asked: date | None,
        compare: Compare,
    ) -> Overview:
        found = await reads.fetchrow(
            queries.OVERVIEW_FEED, parse_id(feed_id, "feed"), caller.user_id, caller.is_admin
        )
        if found is None:
            raise NotFound(f"no feed {feed_id!r}")
        feed, channels, today = found["id"], found["channels"], found["today"]
        if channels > limits.max_channels:
            raise PayloadTooLarge(
                f"the feed has {channels:,} channels; the overview reads at most"
                f" {limits.max_channels:,} (EP_API_OVERVIEW_MAX_CHANNELS): read its streams"
                " with the data endpoint"
            )
        first, last = period_dates(period, asked or today)
        other = compared_dates(period, first, compare)

        # Three independent reads, each on a connection of its own from the caller's lane
        # and the costly reads' share of the pool (at once where the lane is wider than one):
        # the period (its days, bill, buckets and meters in one snapshot), its figures, the
        # compared period.
        def turn() -> AbstractAsyncContextManager[None]:
            return limits.costly.connection(caller.user_id, caller.digest)

        (days, bill, rows, meters), figures, compared = await asyncio.gather(
            _period(reads, turn, feed, first, last, GRAIN[period], currency),
            _figures(reads, turn, feed, first, last, today),
            _compared(reads, turn, feed, other, GRAIN[period], currency),
        )
        lines, standing = overview_lines(bill)
        power = next((line for line in lines if line.medium == "power"), None)
        so_far = OverviewSoFar(
            lines=lines,
            standing=standing,
            total=bill.total,
            vat=bill.vat,
            average_price=power.money / power.quantity if power and power.quantity else None,
            market_average_price=figures["mean_price"],
        )
        buckets, covered = buckets_of(rows)
        elapsed = (min(days["now"], days["finish"]) - days["start"]).total_seconds()
        return Overview(
            feed=str(feed),
            period=period,
            from_=first.isoformat(),
            to=last.isoformat(),
            timezone=bill.timezone,
            currency=currency,
            now=OverviewNow(
                power_w=figures["power_w"],
                export_w=figures["export_w"],
                price=figures["price"],
                at=None if figures["at"] is None else int(figures["at"].timestamp()),
            ),
            so_far=so_far,
            projection=OverviewProjection(projection(days, so_far)),
            compare=compared,
            buckets=buckets,
            baseload_w=figures["baseload"],
            coverage=min(covered / elapsed, 1.0) if elapsed > 0 else 0.0,
            warnings=bill.warnings,
            meters=[
                OverviewMeter(
                    str(m["stream_id"]),
                    m["title"],
                    "export" if m["quantity"] == "export" else m["medium"],
                    m["submeter"],
                )
                for m in meters
            ],
        )


def overview_routes(currency: str, costly: CostlyReads, api: ApiSettings) -> Router:
    """The overview's route for the data API's app; ``currency`` names what its money is in,
    ``share`` the connections of the pool it may hold with the exports."""
    limits = OverviewLimits(
        costly, UserSlots(api.overviews_per_user, "overviews"), api.overview_max_channels
    )
    return Router(
        path="/",
        route_handlers=[OverviewController],
        dependencies={
            "currency": Provide(lambda: currency, sync_to_thread=False),
            "limits": Provide(lambda: limits, sync_to_thread=False),
        },
    )
