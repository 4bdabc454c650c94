"""Who calls the data API: users looked up by their bearer token's SHA-256, and which users
they may see. Every surface a user reads (feeds, notifications) authenticates here."""

from __future__ import annotations

import asyncpg
import msgspec
from litestar import Request
from litestar.datastructures import State

from energy_platform.core.errors import NotFound
from energy_platform.core.http.bearer import bearer_digest, unknown_token
from energy_platform.core.http.database import Reads
from energy_platform.core.inputs import parse_id

CALLER_BY_DIGEST = "SELECT id, is_admin FROM cluster.users WHERE token_sha256 = $1"
USER_EXISTS = "SELECT EXISTS (SELECT 1 FROM cluster.users WHERE id = $1)"


class Caller(msgspec.Struct, frozen=True):
    user_id: int
    is_admin: bool

    def may_see_user(self, user_id: int) -> bool:
        return self.is_admin or self.user_id == user_id


async def authenticate(request: Request[object, object, State], reads: Reads) -> Caller:
    """The user behind ``Authorization: Bearer <token>``; 401 when missing or unknown. Read
    where the API reads (a replica when configured: a new or revoked token takes effect there
    after the replica's lag)."""
    row = await reads.fetchrow(CALLER_BY_DIGEST, bearer_digest(request))
    if row is None:
        raise unknown_token()
    return Caller(row["id"], row["is_admin"])


async def visible_user(pool: asyncpg.Pool, user_id: str, caller: Caller) -> int:
    """The id of ``user_id`` if the caller may see that user (themself, or any as admin)."""
    owner = parse_id(user_id, "user")
    if not caller.may_see_user(owner) or not await pool.fetchval(USER_EXISTS, owner):
        raise NotFound(f"no user {user_id!r}")
    return owner
