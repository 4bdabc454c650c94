"""A user's tokens, each named, ``read`` or ``write``: made, listed and revoked by the same
statements from the HTTP API (``users/http.py``) and the admin commands (``users/admin.py``).

A token is shown once, when it is made; the database keeps its SHA-256 only
(``cluster.user_tokens``). A revoked token's row is deleted, so the token answers 401 from the
next request on (after the replica's lag where the API reads from one).
"""

from __future__ import annotations

from typing import Annotated, Literal

import asyncpg
import msgspec

from energy_platform.core.db.pool import Connection
from energy_platform.core.errors import Conflict, NotFound
from energy_platform.core.inputs import Slug
from energy_platform.core.tokens import new_token, token_digest

Scope = Literal["read", "write"]
DEFAULT = "default"
"""The write token ``admin users add`` makes and ``admin users token`` rotates."""
MAX_TOKENS = 100
"""Tokens a user may hold: the API lets users make their own, and each is a row."""

LIST_TOKENS = """
SELECT name, scope, created_at, last_used_at
  FROM cluster.user_tokens
 WHERE user_id = $1
 ORDER BY created_at, name"""
# Two additions for one user wait for each other here, so that both cannot pass the count.
LOCK_USER = "SELECT true FROM cluster.users WHERE id = $1 FOR NO KEY UPDATE"
INSERT_NAMED = """
INSERT INTO cluster.user_tokens (user_id, name, scope, token_sha256)
SELECT $1, $2, $3, $4
 WHERE (SELECT count(*) FROM cluster.user_tokens WHERE user_id = $1) < $5
ON CONFLICT (user_id, name) DO NOTHING
RETURNING name"""
NAME_TAKEN = "SELECT EXISTS (SELECT FROM cluster.user_tokens WHERE user_id = $1 AND name = $2)"
# Token $3 is the request's own: never revoked here (the answer says so). Both parts read the
# statement's one snapshot, so `itself` describes the row as it was before the delete.
REVOKE_NAMED = """
WITH gone AS (
    DELETE FROM cluster.user_tokens
     WHERE user_id = $1 AND name = $2 AND token_sha256 IS DISTINCT FROM $3::bytea
    RETURNING 1)
SELECT coalesce(token_sha256 = $3::bytea, false) AS itself
  FROM cluster.user_tokens
 WHERE user_id = $1 AND name = $2"""


ScopeField = Annotated[
    Scope,
    msgspec.Meta(description="read: reads what the user sees; write: may also change it."),
]


class TokenRequest(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /users/{user_id}/tokens``: the token to make."""

    name: Annotated[
        Slug,
        msgspec.Meta(description="Unique among the user's tokens; the path that revokes it."),
    ]
    scope: ScopeField


class Token(msgspec.Struct):
    """A token as listed: never the token or its hash."""

    name: str
    scope: ScopeField
    created_at: str
    last_used_at: Annotated[
        str | None,
        msgspec.Meta(
            description="To the minute (written at most once a minute); null: unused so far."
        ),
    ]


class NewToken(msgspec.Struct):
    name: str
    scope: ScopeField
    token: Annotated[
        str, msgspec.Meta(description="The bearer token, shown this once: only its hash is kept.")
    ]


async def list_tokens(conn: Connection | asyncpg.Pool, user_id: int) -> list[Token]:
    rows = await conn.fetch(LIST_TOKENS, user_id)
    return [
        Token(
            row["name"],
            row["scope"],
            row["created_at"].isoformat(),
            None if row["last_used_at"] is None else row["last_used_at"].isoformat(),
        )
        for row in rows
    ]


async def add_token(conn: Connection, user_id: int, name: str, scope: Scope) -> NewToken:
    """Make token ``name`` of user ``user_id``; 404 for no such user, 409 for a name in use or
    a user at :data:`MAX_TOKENS`. Inside the caller's transaction (the user's row stays locked
    until it ends)."""
    if not await conn.fetchval(LOCK_USER, user_id):
        raise NotFound(f"no user '{user_id}'")
    token = new_token()
    added = await conn.fetchval(INSERT_NAMED, user_id, name, scope, token_digest(token), MAX_TOKENS)
    if added is None:
        if await conn.fetchval(NAME_TAKEN, user_id, name):
            raise Conflict(f"a token named {name!r} exists: revoke it or choose another name")
        raise Conflict(f"a user holds at most {MAX_TOKENS} tokens: revoke one first")
    return NewToken(name, scope, token)


async def revoke_token(
    conn: Connection | asyncpg.Pool, user_id: int, name: str, *, keeping: bytes | None = None
) -> None:
    """Revoke token ``name`` of user ``user_id``; 404 if there is none. ``keeping``: the
    digest of the token making the request, which is never revoked by itself (409)."""
    row = await conn.fetchrow(REVOKE_NAMED, user_id, name, keeping)
    if row is None:
        raise NotFound(f"no token {name!r}")
    if row["itself"]:
        raise Conflict(
            f"token {name!r} is the one this request came with: revoke it with another write"
            " token, or ask an administrator (admin users tokens revoke)"
        )
