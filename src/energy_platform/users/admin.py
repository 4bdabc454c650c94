"""Admin commands of the data API's users: add, list, rotate or revoke a token, delete."""

from __future__ import annotations

from typing import Any

import asyncpg
import click
import msgspec

from energy_platform.core.console import CommandGroup, emit, run_in_transaction
from energy_platform.core.errors import InvalidInput, NotFound
from energy_platform.core.inputs import checked_text, parse_id
from energy_platform.core.settings import Settings
from energy_platform.core.tokens import new_token, token_digest

INSERT_USER = """
INSERT INTO cluster.users (name, token_sha256, is_admin) VALUES ($1, $2, $3)
RETURNING id, name, is_admin, created_at"""
LIST_USERS = "SELECT id, name, is_admin, created_at FROM cluster.users ORDER BY id"
REPLACE_USER_DIGEST = """
UPDATE cluster.users SET token_sha256 = $2 WHERE id = $1
RETURNING id, name, is_admin, created_at"""
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
    "--revoke", is_flag=True, help="Give no new token: the user can no longer sign in at all."
)
@click.pass_obj
def user_token(settings: Settings, user_id: str, revoke: bool) -> None:
    """Rotate a user's token (prints the new one, shown only this once) or revoke it; the old
    token stops working at once."""
    uid = parse_id(user_id, "user")
    # A revoked user keeps a digest nobody holds the token of: the column stays unique and set.
    token = new_token()

    async def work(conn: asyncpg.Connection) -> Any:
        row = await conn.fetchrow(REPLACE_USER_DIGEST, uid, token_digest(token))
        if row is None:
            raise NotFound(f"no user {user_id!r}")
        if revoke:
            return {**_user(row), "revoked": True}
        return NewUser(**_user(row), token=token)

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
