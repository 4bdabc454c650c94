"""``GET /feeds/{feed_id}/bill``: what a feed's household pays over local dates, per medium,
with export credit, daily charges, sub-meters apart and a projection (docs/billing.md#the-bill);
``GET /feeds/{feed_id}/prices``: the price per unit it pays meanwhile, its price curve
(docs/billing.md#the-price-curve). Served by the data API (``api.app.create_app`` registers
``bill_routes``).

The numbers come from ``cluster.feed_bill`` (sql/functions/95_billing_bills.sql), which reads
the daily rollups: the bill of a range equals its cost streams' ``resolution=day`` buckets plus
the charges, and a year's bill reads a few hundred rows per stream.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Annotated

import asyncpg
from litestar import Controller, Router, get
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, QueryParameter

from energy_platform.billing import queries
from energy_platform.billing.bills import render_bill
from energy_platform.billing.contracts import CatalogueEntry, catalogue
from energy_platform.billing.plans import PlanController
from energy_platform.billing.schemas import Bill, BillMedium, FeedPrices, PriceStretch
from energy_platform.core import bounds
from energy_platform.core.errors import InvalidInput
from energy_platform.core.http.database import Reads
from energy_platform.users.auth import Caller, authenticate, visible_feed

MAX_DAYS = 366
MAX_PRICE_DAYS = 31
LOCAL_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
DATE_DOC = (
    f"A local date in the feed's time zone, YYYY-MM-DD, from {bounds.CALENDAR}; from and to"
    " are both inclusive."
)
FromDate = Annotated[str, QueryParameter(name="from", description=DATE_DOC, max_length=10)]
ToDate = Annotated[str, QueryParameter(name="to", description=DATE_DOC, max_length=10)]


def parse_local_date(value: str, name: str) -> date:
    """A ``YYYY-MM-DD`` calendar date within the calendar's range (core/bounds.py), else 400
    naming the parameter."""
    try:
        if LOCAL_DATE.match(value):
            return bounds.check_day(date.fromisoformat(value), name)
    except ValueError:
        pass
    raise InvalidInput(f"{name}: {value[:40]!r} is not a date (YYYY-MM-DD)", field=name)


def date_range(start: str, end: str, most: int = MAX_DAYS) -> tuple[date, date]:
    """The inclusive range [start, end]: in order and at most ``most`` days, else 400."""
    first, last = parse_local_date(start, "from"), parse_local_date(end, "to")
    if first > last:
        raise InvalidInput(f"from ({first}) is after to ({last})", field="from")
    if (last - first).days + 1 > most:
        raise InvalidInput(f"at most {most} days: from {first} to {last} is more", field="to")
    return first, last


class BillController(Controller):
    dependencies = {"caller": Provide(authenticate)}  # noqa: RUF012 - Litestar's own convention
    tags = ["bills"]  # noqa: RUF012

    @get(
        "/feeds/{feed_id:str}/bill",
        summary="A feed's bill over local dates: per medium, export credit, daily charges",
    )
    async def bill(
        self,
        feed_id: FromPath[str],
        caller: NamedDependency[Caller],
        reads: Reads,
        currency: NamedDependency[str],
        start: FromDate,
        end: ToDate,
    ) -> Bill:
        first, last = date_range(start, end)
        feed = await visible_feed(reads, feed_id, caller)
        days, rows = await _days_and(reads, queries.FEED_BILL, feed["id"], first, last)
        return render_bill(str(feed["id"]), first, last, currency, days, rows)

    @get(
        "/feeds/{feed_id:str}/prices",
        summary="What a feed pays per kWh or m³ over local dates: its tariff's price curve",
    )
    async def prices(
        self,
        feed_id: FromPath[str],
        caller: NamedDependency[Caller],
        reads: Reads,
        currency: NamedDependency[str],
        start: FromDate,
        end: ToDate,
        medium: Annotated[
            BillMedium,
            QueryParameter(description="The tariff's medium; export: what feeding in earns."),
        ] = "power",
    ) -> FeedPrices:
        first, last = date_range(start, end, MAX_PRICE_DAYS)
        feed = await visible_feed(reads, feed_id, caller)
        days, rows = await _days_and(reads, queries.FEED_PRICES, feed["id"], first, last, medium)
        return FeedPrices(
            feed=str(feed["id"]),
            medium=medium,
            from_=first.isoformat(),
            to=last.isoformat(),
            timezone=days["timezone"],
            currency=currency,
            prices=[
                PriceStretch(int(r["start"].timestamp()), int(r["finish"].timestamp()), r["price"])
                for r in rows
            ],
        )


class ContractsController(Controller):
    dependencies = {"caller": Provide(authenticate)}  # noqa: RUF012 - Litestar's own convention
    tags = ["contracts"]  # noqa: RUF012

    @get("/contracts", summary="The cluster's catalogue of contracts, to set beside one's own")
    async def contracts(
        self, caller: NamedDependency[Caller], reads: Reads
    ) -> list[CatalogueEntry]:
        async with reads.acquire() as conn:
            return await catalogue(conn)


async def _days_and(
    reads: asyncpg.Pool, query: str, feed: int, first: date, last: date, *more: object
) -> tuple[asyncpg.Record, list[asyncpg.Record]]:
    """``BILL_DAYS``' row and ``query``'s rows ($1 feed, $2 first, $3 last, then ``more``), in
    one snapshot: a day ending between two statements would otherwise count as open in one
    and over in the other."""
    async with (
        reads.acquire() as conn,
        conn.transaction(isolation="repeatable_read", readonly=True),
    ):
        days = await conn.fetchrow(queries.BILL_DAYS, feed, first, last)
        rows = await conn.fetch(query, feed, first, last, *more)
    assert days is not None  # noqa: S101 - aggregates answer one row
    return days, rows


def bill_routes(currency: str) -> Router:
    """The bill's routes for the data API's app; ``currency`` names what its money is in."""
    return Router(
        path="/",
        route_handlers=[BillController, PlanController, ContractsController],
        dependencies={"currency": Provide(lambda: currency, sync_to_thread=False)},
    )
