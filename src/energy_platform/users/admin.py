"""Admin commands of the data API's users: add, list, rotate or revoke their default token,
delete; and each user's named tokens (``users tokens add|list|revoke``, users/tokens.py)."""

from __future__ import annotations

from typing import Any

import asyncpg
import click
import msgspec

from energy_platform.core.console import CommandGroup, emit, run_in_transaction
from energy_platform.core.errors import InvalidInput, NotFound
from energy_platform.core.inputs import checked_slug, checked_text, parse_id
from energy_platform.core.settings import Settings
from energy_platform.core.tokens import new_token, token_digest
from energy_platform.users.tokens import (
    NewToken,
    Scope,
    Token,
    add_token,
    list_tokens,
    revoke_token,
)

# A user is made with their write token `default` (tokens.DEFAULT; $2 is its SHA-256), in one
# statement.
INSERT_USER = """
WITH added AS (
    INSERT INTO cluster.users (name, is_admin) VALUES ($1, $3)
    RETURNING id, name, is_admin, created_at),
token AS (
    INSERT INTO cluster.user_tokens (user_id, name, scope, token_sha256, created_at)
    SELECT id, 'default', 'write', $2, created_at FROM added)
SELECT id, name, is_admin, created_at FROM added"""
LIST_USERS = "SELECT id, name, is_admin, created_at FROM cluster.users ORDER BY id"
USER_EXISTS = "SELECT EXISTS (SELECT FROM cluster.users WHERE id = $1)"
# Rotation gives the user's `default` token a new secret (its scope stays: rotating changes no
# rights), or makes it afresh as a write token if it was revoked; their other tokens stay.
ROTATE_DEFAULT = """
WITH owner AS (
    SELECT id, name, is_admin, created_at FROM cluster.users WHERE id = $1),
put AS (
    INSERT INTO cluster.user_tokens (user_id, name, scope, token_sha256)
    SELECT id, 'default', 'write', $2 FROM owner
    ON CONFLICT (user_id, name) DO UPDATE
       SET token_sha256 = excluded.token_sha256, created_at = now(), last_used_at = NULL)
SELECT id, name, is_admin, created_at FROM owner"""
REVOKE_ALL = """
WITH gone AS (DELETE FROM cluster.user_tokens WHERE user_id = $1 RETURNING 1)
SELECT id, name, is_admin, created_at, (SELECT count(*) FROM gone) AS revoked
  FROM cluster.users WHERE id = $1"""
# A user who still owns feeds is not deleted (the feeds and their points would lose their
# owner); notifications go with the user (ON DELETE CASCADE).
FEEDS_OWNED = "SELECT array_agg(id ORDER BY id) FROM cluster.feeds WHERE owner_id = $1"
DELETE_USER = """
DELETE FROM cluster.users WHERE id = $1 RETURNING id, name, is_admin, created_at"""


class User(msgspec.Struct):
    id: str
    name: str
    admin: bool
    created_at: str


class NewUser(User):
    token: str
    """Shown once: only its SHA-256 is stored."""


def _user(row: asyncpg.Record) -> dict[str, Any]:
    return {
        "id": str(row["id"]),
        "name": row["name"],
        "admin": row["is_admin"],
        "created_at": row["created_at"].isoformat(),
    }


@click.group("users", cls=CommandGroup)
def users() -> None:
    """Users of the data API."""


@users.command("add")
@click.argument("name")
@click.option("--admin", is_flag=True, help="May see every user's feeds.")
@click.pass_obj
def add_user(settings: Settings, name: str, admin: bool) -> None:
    """Add a user; prints its token, which is shown only this once."""
    name = checked_text(name, "name")
    token = new_token()

    async def work(conn: asyncpg.Connection) -> NewUser:
        try:
            (row,) = await conn.fetch(INSERT_USER, name, token_digest(token), admin)
        except asyncpg.UniqueViolationError:
            raise InvalidInput(f"a user named {name!r} exists") from None
        return NewUser(**_user(row), token=token)

    emit(run_in_transaction(settings.database, work))


@users.command("list")
@click.pass_obj
def list_users(settings: Settings) -> None:
    """List users (never their tokens)."""

    async def work(conn: asyncpg.Connection) -> list[User]:
        return [User(**_user(row)) for row in await conn.fetch(LIST_USERS)]

    emit(run_in_transaction(settings.database, work))


@users.command("token")
@click.argument("user_id")
@click.option(
    "--revoke",
    is_flag=True,
    help="Revoke every token of the user and give no new one: they can no longer sign in.",
)
@click.pass_obj
def user_token(settings: Settings, user_id: str, revoke: bool) -> None:
    """Rotate a user's token `default` (prints the new one, shown only this once; made afresh
    as a write token if it was revoked) or, with --revoke, revoke all their tokens. An old token
    stops working at once."""
    uid = parse_id(user_id, "user")
    token = new_token()

    async def work(conn: asyncpg.Connection) -> Any:
        if revoke:
            row = await conn.fetchrow(REVOKE_ALL, uid)
        else:
            row = await conn.fetchrow(ROTATE_DEFAULT, uid, token_digest(token))
        if row is None:
            raise NotFound(f"no user {user_id!r}")
        if revoke:
            return {**_user(row), "revoked": True, "tokens_revoked": row["revoked"]}
        return NewUser(**_user(row), token=token)

    emit(run_in_transaction(settings.database, work))


@users.group("tokens", cls=CommandGroup)
def tokens() -> None:
    """A user's named tokens, each read or write."""


@tokens.command("add")
@click.argument("user_id")
@click.option("--name", required=True, help="Unique per user: letters, digits, '.', '_', '-'.")
@click.option(
    "--scope",
    type=click.Choice(["read", "write"]),
    required=True,
    help="read: sees what the user sees; write: may also change it.",
)
@click.pass_obj
def add_named_token(settings: Settings, user_id: str, name: str, scope: Scope) -> None:
    """Make a token; prints it, shown only this once."""
    uid = parse_id(user_id, "user")
    name = checked_slug(name, "name")

    async def work(conn: asyncpg.Connection) -> NewToken:
        return await add_token(conn, uid, name, scope)

    emit(run_in_transaction(settings.database, work))


@tokens.command("list")
@click.argument("user_id")
@click.pass_obj
def list_named_tokens(settings: Settings, user_id: str) -> None:
    """List a user's tokens: names, scopes, when made and last used (never the tokens)."""
    uid = parse_id(user_id, "user")

    async def work(conn: asyncpg.Connection) -> list[Token]:
        if not await conn.fetchval(USER_EXISTS, uid):
            raise NotFound(f"no user {user_id!r}")
        return await list_tokens(conn, uid)

    emit(run_in_transaction(settings.database, work))


@tokens.command("revoke")
@click.argument("user_id")
@click.argument("name")
@click.pass_obj
def revoke_named_token(settings: Settings, user_id: str, name: str) -> None:
    """Revoke a token: it answers 401 from the next request on."""
    uid = parse_id(user_id, "user")

    async def work(conn: asyncpg.Connection) -> Any:
        if not await conn.fetchval(USER_EXISTS, uid):
            raise NotFound(f"no user {user_id!r}")
        await revoke_token(conn, uid, name)
        return {"user": str(uid), "name": name, "revoked": True}

    emit(run_in_transaction(settings.database, work))


@users.command("delete")
@click.argument("user_id")
@click.pass_obj
def delete_user(settings: Settings, user_id: str) -> None:
    """Delete a user and their notifications. Refused while they own feeds: delete those first
    (``feeds delete``), which removes their points."""
    uid = parse_id(user_id, "user")

    async def work(conn: asyncpg.Connection) -> Any:
        owned = await conn.fetchval(FEEDS_OWNED, uid)
        if owned:
            listed = ", ".join(str(f) for f in owned)
            raise InvalidInput(
                f"user {user_id} owns feeds {listed}: delete them first (admin feeds delete)"
            )
        row = await conn.fetchrow(DELETE_USER, uid)
        if row is None:
            raise NotFound(f"no user {user_id!r}")
        return {**_user(row), "deleted": True}

    emit(run_in_transaction(settings.database, work))


GROUPS = [users]
