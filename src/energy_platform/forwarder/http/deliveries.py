"""``GET /deliveries``: the caller's recent batches, so a customer can see why nothing arrives."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from litestar import Controller, get
from litestar.di import NamedDependency, Provide
from litestar.params import QueryParameter

from energy_platform.core.http.database import Database
from energy_platform.forwarder.http import queries
from energy_platform.forwarder.http.auth import Customer, authenticate
from energy_platform.forwarder.http.schemas import Deliveries, Delivery

Authenticated = NamedDependency[Customer]


def _unix(at: datetime | None) -> int | None:
    return None if at is None else int(at.timestamp())


class DeliveriesController(Controller):
    path = "/deliveries"
    dependencies = {"customer": Provide(authenticate)}  # noqa: RUF012 - Litestar's own convention
    tags = ["forwarder deliveries"]  # noqa: RUF012

    @get(summary="The caller's latest batches: points, attempts, last status or error, next retry")
    async def recent(
        self,
        customer: Authenticated,
        pool: Database,
        limit: Annotated[int, QueryParameter(ge=1, le=1000)] = 50,
    ) -> Deliveries:
        rows = await pool.fetch(queries.DELIVERIES, customer.id, limit)
        return Deliveries(
            [
                Delivery(
                    id=str(r["batch_id"]),
                    from_=int(r["batch_from"].timestamp()),
                    to=int(r["batch_to"].timestamp()),
                    points=r["points"],
                    attempts=r["attempts"],
                    outcome=r["outcome"],
                    status=r["status"],
                    error=r["error"],
                    attempted_at=_unix(r["attempted_at"]),
                    next_retry=_unix(r["next_attempt_at"]) if r["pending"] else None,
                )
                for r in rows
            ]
        )
