"""A user's tokens over HTTP: ``/users/{user_id}/tokens`` (list, make) and
``/users/{user_id}/tokens/{name}`` (revoke), all with a write token (a read token given to a
wall display or a neighbour neither sees nor changes the user's tokens).

Tenancy as everywhere: another user's tokens are 404 (an admin's token sees every user's). A
request never revokes the token it came with (409): a user cannot lock themself out by
accident, and a leaked token is replaced by making a new one and revoking the old with it.
"""

from __future__ import annotations

from litestar import Controller, delete, get, post
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, JSONBody

from energy_platform.core.errors import InvalidInput, NotFound
from energy_platform.core.http.database import Database
from energy_platform.core.http.openapi import problems
from energy_platform.core.inputs import checked_slug
from energy_platform.users.auth import Caller, authenticate, require_write, visible_user
from energy_platform.users.tokens import (
    NewToken,
    Token,
    TokenRequest,
    add_token,
    list_tokens,
    revoke_token,
)

Authenticated = NamedDependency[Caller]


class TokensController(Controller):
    path = "/users/{user_id:str}/tokens"
    dependencies = {"caller": Provide(authenticate)}  # noqa: RUF012 - Litestar's own convention
    tags = ("tokens",)

    # Read from the primary, as the changes below are written: a list made right after a
    # change shows it, whatever the replica's lag.
    @get(summary="A user's tokens: names, scopes, times (never a token)", opt=problems(403))
    async def list_of_user(
        self, user_id: FromPath[str], caller: Authenticated, pool: Database
    ) -> list[Token]:
        require_write(caller)
        owner = await visible_user(pool, user_id, caller)
        return await list_tokens(pool, owner)

    @post(
        summary="Make a token (201, shown this once; 409 for a name in use)",
        opt=problems(403, 409),
    )
    async def add(
        self,
        user_id: FromPath[str],
        caller: Authenticated,
        pool: Database,
        data: JSONBody[TokenRequest],
    ) -> NewToken:
        require_write(caller)
        owner = await visible_user(pool, user_id, caller)
        name = checked_slug(data.name, "name")
        async with pool.acquire() as conn, conn.transaction():
            return await add_token(conn, owner, name, data.scope)

    @delete(
        "/{name:str}",
        summary="Revoke a token (204; 409 for the token the request came with)",
        opt=problems(403, 409),
    )
    async def revoke(
        self, user_id: FromPath[str], name: FromPath[str], caller: Authenticated, pool: Database
    ) -> None:
        require_write(caller)
        owner = await visible_user(pool, user_id, caller)
        try:
            checked_slug(name, "name")
        except InvalidInput:
            raise NotFound(f"no token {name[:80]!r}") from None
        await revoke_token(pool, owner, name, keeping=caller.digest)
