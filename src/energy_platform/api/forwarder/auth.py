"""Bearer authentication of forwarder customers: tokens are looked up by their SHA-256."""

from __future__ import annotations

from types import MappingProxyType

import asyncpg
import msgspec
from litestar import Request
from litestar.datastructures import State

from energy_platform.api.forwarder import queries
from energy_platform.errors import Unauthorized
from energy_platform.tokens import token_digest


class BearerRequired(Unauthorized):
    headers = MappingProxyType({"WWW-Authenticate": 'Bearer realm="energy-platform-forwarder"'})


class Customer(msgspec.Struct, frozen=True):
    id: int


async def authenticate(request: Request[object, object, State], state: State) -> Customer:
    """The customer behind ``Authorization: Bearer <token>``; 401 when missing or unknown."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise BearerRequired("send Authorization: Bearer <token>")
    pool: asyncpg.Pool = state.db
    customer_id = await pool.fetchval(queries.CUSTOMER_BY_DIGEST, token_digest(token.strip()))
    if customer_id is None:
        raise BearerRequired("unknown or revoked token")
    return Customer(customer_id)
