"""Bearer authentication of the data API: tokens are looked up by their SHA-256."""

from __future__ import annotations

from types import MappingProxyType

import asyncpg
import msgspec
from litestar import Request
from litestar.datastructures import State

from energy_platform.api.data import queries
from energy_platform.errors import NotFound, Unauthorized
from energy_platform.inputs import parse_id
from energy_platform.tokens import token_digest


class BearerRequired(Unauthorized):
    headers = MappingProxyType({"WWW-Authenticate": 'Bearer realm="energy-platform"'})


class Caller(msgspec.Struct, frozen=True):
    user_id: int
    is_admin: bool

    def may_see_user(self, user_id: int) -> bool:
        return self.is_admin or self.user_id == user_id


async def authenticate(request: Request[object, object, State], state: State) -> Caller:
    """The user behind ``Authorization: Bearer <token>``; 401 when missing or unknown."""
    pool: asyncpg.Pool = state.db
    row = await pool.fetchrow(queries.CALLER_BY_DIGEST, bearer_digest(request))
    if row is None:
        raise unknown_token()
    return Caller(row["id"], row["is_admin"])


def unknown_token() -> BearerRequired:
    return BearerRequired("unknown or revoked token")


def bearer_digest(request: Request[object, object, State]) -> bytes:
    """The SHA-256 of the request's bearer token, as users are looked up by; 401 without one."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise BearerRequired("send Authorization: Bearer <token>")
    return token_digest(token.strip())


async def visible_user(pool: asyncpg.Pool, user_id: str, caller: Caller) -> int:
    """The id of ``user_id`` if the caller may see that user (themself, or any as admin)."""
    owner = parse_id(user_id, "user")
    if not caller.may_see_user(owner) or not await pool.fetchval(queries.USER_EXISTS, owner):
        raise NotFound(f"no user {user_id!r}")
    return owner
