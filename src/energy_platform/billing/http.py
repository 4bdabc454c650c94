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

from datetime import UTC, date, datetime
from typing import Annotated

import asyncpg
from litestar import Controller, Request, Router, get, post
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide
from litestar.openapi.spec import OpenAPIType, Schema
from litestar.params import FromPath, QueryParameter

from energy_platform.billing import queries, what_if
from energy_platform.billing.bills import render_bill
from energy_platform.billing.contracts import CatalogueEntry, catalogue
from energy_platform.billing.dates import date_range
from energy_platform.billing.plans import PlanController
from energy_platform.billing.schemas import Bill, BillMedium, FeedPrices, PriceStretch, WhatIf
from energy_platform.billing.what_if import MAX_CONTRACTS
from energy_platform.core import bounds
from energy_platform.core.http.database import Reads
from energy_platform.core.http.openapi import request_body
from energy_platform.core.http.shares import CostlyReads
from energy_platform.users.auth import Caller, authenticate, visible_feed

MAX_PRICE_DAYS = 31
DATE_DOC = (
    f"A local date in the feed's time zone, YYYY-MM-DD, from {bounds.CALENDAR}; from and to"
    " are both inclusive."
)
FromDate = Annotated[str, QueryParameter(name="from", description=DATE_DOC, max_length=10)]
ToDate = Annotated[str, QueryParameter(name="to", description=DATE_DOC, max_length=10)]


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


WHAT_IF_BODY = request_body(
    "Local dates (both inclusive, YYYY-MM-DD; both or neither: the last 12 whole local months)"
    f" and at most {MAX_CONTRACTS} contracts, each a catalogue name or a contract as"
    " GET /contracts lists them (docs/billing.md#contracts).",
    {
        "application/json": Schema(
            type=OpenAPIType.OBJECT,
            properties={
                "from": Schema(type=OpenAPIType.STRING, description=DATE_DOC),
                "to": Schema(type=OpenAPIType.STRING, description=DATE_DOC),
                "contracts": Schema(
                    type=OpenAPIType.ARRAY,
                    max_items=MAX_CONTRACTS,
                    items=Schema(
                        type=OpenAPIType.OBJECT,
                        description='{"name": a catalogue contract} or {"contract": {...}}',
                    ),
                ),
            },
        )
    },
)


class WhatIfController(Controller):
    dependencies = {"caller": Provide(authenticate)}  # noqa: RUF012 - Litestar's own convention
    tags = ["bills"]  # noqa: RUF012

    @post(
        "/feeds/{feed_id:str}/what-if",
        status_code=200,
        summary="The household's own months replayed through other contracts, to the cent",
        opt=WHAT_IF_BODY,
    )
    async def what_if(
        self,
        feed_id: FromPath[str],
        request: Request[object, object, State],
        caller: NamedDependency[Caller],
        reads: Reads,
        currency: NamedDependency[str],
        costly: NamedDependency[CostlyReads],
    ) -> WhatIf:
        # A read: a read token may ask it (nothing is written).
        ask = what_if.decode_ask(await request.body())
        feed = await visible_feed(reads, feed_id, caller)
        # A year of quarter hours per contract: a costly read, on the caller's lane of their
        # half of the pool (one user's loop of them keeps one backend busy).
        async with (
            costly.connection(caller.user_id, caller.digest),
            reads.acquire() as conn,
            conn.transaction(isolation="repeatable_read", readonly=True),
        ):
            zone = await conn.fetchval(queries.FEED_ZONE_TODAY, feed["id"])
            first, last = what_if.asked_range(ask, zone, datetime.now(UTC))
            asked = await what_if.replay(conn, ask, first, last)
            days = await conn.fetchrow(queries.BILL_DAYS, feed["id"], first, last)
            rows = await conn.fetch(
                queries.WHAT_IFS, feed["id"], first, last, asked.medium, asked.contracts
            )
        assert days is not None  # noqa: S101 - aggregates answer one row
        return what_if.answer(str(feed["id"]), first, last, days["timezone"], currency, asked, rows)


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


def bill_routes(currency: str, costly: CostlyReads) -> Router:
    """The bill's routes for the data API's app; ``currency`` names what its money is in,
    ``costly`` the costly reads' half of the pool (what-if reads within it)."""
    return Router(
        path="/",
        route_handlers=[BillController, PlanController, ContractsController, WhatIfController],
        dependencies={
            "currency": Provide(lambda: currency, sync_to_thread=False),
            "costly": Provide(lambda: costly, sync_to_thread=False),
        },
    )
