"""``/register``: homebases whose data the forwarder delivers to the calling customer."""

from __future__ import annotations

from litestar import Controller, Response, delete, get, post
from litestar.di import NamedDependency, Provide
from litestar.openapi import ResponseSpec
from litestar.params import FromPath

from energy_platform.core.errors import Conflict, Forbidden, InvalidInput, NotFound
from energy_platform.core.http.database import Database
from energy_platform.core.http.openapi import problems
from energy_platform.forwarder.http import queries
from energy_platform.forwarder.http.auth import Customer, authenticate
from energy_platform.forwarder.http.schemas import (
    SN_PATTERN,
    Registered,
    Registration,
    Unregistration,
)
from energy_platform.pairing.pairings import Pairings

Authenticated = NamedDependency[Customer]
Pairing = NamedDependency[Pairings]


def _serial(sn: str) -> str:
    if not SN_PATTERN.fullmatch(sn):
        raise InvalidInput(f"{sn!r} is not a serial number ([0-9A-F]{{16}})", field="sn")
    return sn


class RegistrationsController(Controller):
    path = "/register"
    dependencies = {"customer": Provide(authenticate)}  # noqa: RUF012 - Litestar's own convention
    tags = ["forwarder registrations"]  # noqa: RUF012

    @get(summary="Serial numbers registered to the caller")
    async def registered(self, customer: Authenticated, pool: Database) -> Registered:
        rows = await pool.fetch(queries.REGISTERED, customer.id)
        return Registered([row["homebase_sn"] for row in rows])

    @post(
        "/{sn:str}",
        summary=(
            "Register a homebase (201; 200 if already the caller's; 403 if not granted to the"
            " caller; 409 if another's or paired with another cluster)"
        ),
        description=(
            "A homebase with no feed in this cluster is paired with it and given its broker"
            " account, so that its data reaches the forwarder (docs/forwarder.md)."
        ),
        opt=problems(400, 403, 404, 409, 503),
        responses={200: ResponseSpec(Registration, description="Already the caller's")},
    )
    async def register(
        self, sn: FromPath[str], customer: Authenticated, pool: Database, pairings: Pairing
    ) -> Response[Registration]:
        # Any request body is ignored (the spec): the handler never reads it.
        serial = _serial(sn)
        if not await pool.fetchval(queries.GRANTED, customer.id, serial):
            raise Forbidden(
                f"homebase {serial} was not granted to you: an administrator grants homebases"
                " (admin customers grant)"
            )
        async with pool.acquire() as conn, conn.transaction():
            row = None
            for _ in range(3):  # a concurrent unregistration can hide the row from one statement
                row = await conn.fetchrow(queries.REGISTER, serial, customer.id)
                if row is not None:
                    break
            if row is None or row["customer_id"] != customer.id:
                raise Conflict(f"homebase {serial} is registered to another customer")
            if row["added"]:
                # Inside the transaction: a refused pairing leaves no registration behind.
                await pairings.hold(conn, serial)
        body = Registration(serial, int(row["registered_at"].timestamp()))
        return Response(body, status_code=201 if row["added"] else 200)

    @delete(
        "/{sn:str}",
        status_code=200,
        summary="Unregister a homebase (404 if not the caller's)",
        description=(
            "A homebase that only the registration held in this cluster is unpaired and loses"
            " its broker account; one with a feed stays paired."
        ),
        opt=problems(400, 503),
    )
    async def unregister(
        self, sn: FromPath[str], customer: Authenticated, pool: Database, pairings: Pairing
    ) -> Unregistration:
        serial = _serial(sn)
        async with pool.acquire() as conn, conn.transaction():
            at = await conn.fetchval(queries.UNREGISTER, serial, customer.id)
            if at is None:
                raise NotFound(f"homebase {serial} is not registered to you")
            # Unpaired if registration was all that held it here; the registration stays if
            # provisioning or the broker cannot be told.
            await pairings.release(conn, serial)
        return Unregistration(serial, int(at.timestamp()))
