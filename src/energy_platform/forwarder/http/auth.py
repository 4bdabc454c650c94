"""Bearer authentication of forwarder customers: looked up by their token's SHA-256."""

from __future__ import annotations

import msgspec
from litestar import Request
from litestar.datastructures import State

from energy_platform.core.http.bearer import bearer_digest, unknown_token
from energy_platform.core.http.database import Database
from energy_platform.forwarder.http import queries


class Customer(msgspec.Struct, frozen=True):
    id: int


async def authenticate(request: Request[object, object, State], pool: Database) -> Customer:
    """The customer behind ``Authorization: Bearer <token>``; 401 when missing or unknown."""
    customer_id = await pool.fetchval(queries.CUSTOMER_BY_DIGEST, bearer_digest(request))
    if customer_id is None:
        raise unknown_token()
    return Customer(customer_id)
