"""Who calls the data API: users looked up by their bearer token's SHA-256, which users and
feeds they may see, and whether their token may write. Every surface a user reads (feeds,
bills, notifications, tokens) authenticates here.

A token is ``read`` or ``write`` (``cluster.user_tokens``). A read token reads everything its
user sees; every request that changes something needs a write token. A writing handler says so
in two places, its first line and its decorator (so that the OpenAPI document lists the 403)::

    @post("/feeds/{feed_id:str}/streams/{stream_id:str}/data", opt=problems(403))
    async def add_points(self, caller: Authenticated, ...) -> ...:
        require_write(caller)
        ...

``require_write`` comes before any lookup (404, 409): its 403 depends on the token alone, so
it tells a read token nothing about other users' ids. The platform's 403 of a read token is
``ReadOnlyToken`` (``urn:energy-platform:problem:read-only-token``), in core/errors.py's tree.

A request that may write (any method but GET, HEAD, OPTIONS) finds its token on the primary,
never on a lagging replica: what ``require_write`` checks is the token as it stands.
"""

from __future__ import annotations

import asyncpg
import msgspec
from litestar import Request
from litestar.datastructures import State

from energy_platform.core.errors import NotFound, ReadOnlyToken
from energy_platform.core.http.bearer import bearer_digest, unknown_token
from energy_platform.core.http.database import Database, Reads
from energy_platform.core.inputs import parse_id
from energy_platform.users.tokens import Scope
from energy_platform.users.usage import token_used

CALLER_BY_DIGEST = "SELECT user_id, is_admin, scope FROM cluster.token_caller($1)"
READING_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Requests that change nothing: only they may be authenticated on a replica."""
USER_EXISTS = "SELECT EXISTS (SELECT 1 FROM cluster.users WHERE id = $1)"
VISIBLE_FEED = """
SELECT f.id, f.subscription_from, f.subscription_to
  FROM cluster.user_feeds($2, $3) f
 WHERE f.id = $1"""


class Caller(msgspec.Struct, frozen=True):
    user_id: int
    is_admin: bool
    scope: Scope
    digest: bytes
    """The SHA-256 of the token the request came with: the token itself, to the handlers."""

    def may_see_user(self, user_id: int) -> bool:
        return self.is_admin or self.user_id == user_id


async def authenticate(
    request: Request[object, object, State], reads: Reads, pool: Database
) -> Caller:
    """The user behind ``Authorization: Bearer <token>``; 401 when missing or unknown. A read
    is authenticated where the API reads (a replica when configured: a new or revoked token
    takes effect there after the replica's lag); a request that may write, on ``pool``, the
    primary, so that a token revoked or made read-only writes nothing more, however far the
    replica lags. The token's last use is written to the primary."""
    digest = bearer_digest(request)
    where = reads if request.method in READING_METHODS else pool
    row = await where.fetchrow(CALLER_BY_DIGEST, digest)
    if row is None:
        raise unknown_token()
    token_used(request, pool, digest)
    return Caller(row["user_id"], row["is_admin"], row["scope"], digest)


def require_write(caller: Caller) -> None:
    """403 problem JSON (``read-only-token``) unless the caller's token may write."""
    if caller.scope != "write":
        raise ReadOnlyToken("this token may only read: send a write token to change anything")


async def visible_user(pool: asyncpg.Pool, user_id: str, caller: Caller) -> int:
    """The id of ``user_id`` if the caller may see that user (themself, or any as admin)."""
    owner = parse_id(user_id, "user")
    if not caller.may_see_user(owner) or not await pool.fetchval(USER_EXISTS, owner):
        raise NotFound(f"no user {user_id!r}")
    return owner


async def visible_feed(pool: asyncpg.Pool, feed_id: str, caller: Caller) -> asyncpg.Record:
    """The feed ``feed_id`` (id and subscription) if the caller sees it (``cluster.user_feeds``),
    else 404: one answer for a feed that is another user's and one that does not exist."""
    row = await pool.fetchrow(
        VISIBLE_FEED, parse_id(feed_id, "feed"), caller.user_id, caller.is_admin
    )
    if row is None:
        raise NotFound(f"no feed {feed_id!r}")
    return row
