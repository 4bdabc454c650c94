"""``admin users tokens add|list|revoke`` and ``admin users token`` (rotation) as an operator runs
them (in this process, but for a usage error), checked through the API the tokens are used on."""

from __future__ import annotations

import json
import secrets

import psycopg
import pytest

from energy_platform.core.settings import Settings
from tests.support.admin import admin_process, admin_refusal, run_admin
from tests.support.data import World
from tests.support.http import http_client


async def status(world: World, token: str, method: str, path: str) -> int:
    headers = {"Authorization": f"Bearer {token}"}
    async with http_client(base_url=world.url, headers=headers) as http:
        body = {"read": True} if method == "PATCH" else None
        return (await http.request(method, path, json=body)).status_code


async def test_an_operator_adds_lists_and_revokes_a_read_token(
    world: World, settings: Settings
) -> None:
    user = await run_admin(settings, "users", "add", f"tokens-{secrets.token_hex(4)}")
    feeds = f"/users/{user['id']}/feeds"
    notifications = f"/users/{user['id']}/notifications"

    made = await run_admin(settings, "users", "tokens", "add", user["id"], "--name", "wall",
                                 "--scope", "read")  # fmt: skip
    assert set(made) == {"name", "scope", "token"}
    assert (made["name"], made["scope"]) == ("wall", "read")
    listed = await run_admin(settings, "users", "tokens", "list", user["id"])
    assert [(t["name"], t["scope"]) for t in listed] == [("default", "write"), ("wall", "read")]
    assert made["token"] not in json.dumps(listed)
    assert user["token"] not in json.dumps(listed)

    assert await status(world, made["token"], "GET", feeds) == 200
    assert await status(world, made["token"], "PATCH", notifications) == 403
    assert await status(world, user["token"], "PATCH", notifications) == 205

    revoked = await run_admin(settings, "users", "tokens", "revoke", user["id"], "wall")
    assert revoked == {"user": user["id"], "name": "wall", "revoked": True}
    assert await status(world, made["token"], "GET", feeds) == 401
    assert await status(world, user["token"], "GET", feeds) == 200
    again = await admin_refusal(settings, "users", "tokens", "revoke", user["id"], "wall")
    assert "no token 'wall'" in again
    assert [
        t["name"] for t in await run_admin(settings, "users", "tokens", "list", user["id"])
    ] == ["default"]


async def test_rotation_replaces_the_default_token_and_revoke_takes_every_token(
    world: World, settings: Settings
) -> None:
    user = await run_admin(settings, "users", "add", f"rotate-{secrets.token_hex(4)}")
    feeds = f"/users/{user['id']}/feeds"
    laptop = await run_admin(settings, "users", "tokens", "add", user["id"], "--name", "laptop",
                                   "--scope", "write")  # fmt: skip

    rotated = await run_admin(settings, "users", "token", user["id"])
    assert await status(world, user["token"], "GET", feeds) == 401
    assert await status(world, rotated["token"], "GET", feeds) == 200
    assert await status(world, laptop["token"], "GET", feeds) == 200  # other tokens stay

    revoked = await run_admin(settings, "users", "token", user["id"], "--revoke")
    assert (revoked["revoked"], revoked["tokens_revoked"]) == (True, 2)
    assert await status(world, rotated["token"], "GET", feeds) == 401
    assert await status(world, laptop["token"], "GET", feeds) == 401
    assert await run_admin(settings, "users", "tokens", "list", user["id"]) == []

    # Rotating after that gives the user a write token `default` again.
    renewed = await run_admin(settings, "users", "token", user["id"])
    assert (
        await status(world, renewed["token"], "PATCH", f"/users/{user['id']}/notifications") == 205
    )
    listed = await run_admin(settings, "users", "tokens", "list", user["id"])
    assert [(t["name"], t["scope"]) for t in listed] == [("default", "write")]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("add", "{user}", "--name", "default", "--scope", "read"),
            "a token named 'default' exists",
        ),
        (("add", "{user}", "--name", "a b", "--scope", "read"), "name: 1 to 64 letters"),
        (("add", "{user}", "--name", "-x", "--scope", "read"), "name: 1 to 64 letters"),
        (("add", "424242424", "--name", "wall", "--scope", "read"), "no user"),
        (("list", "424242424"), "no user"),
        (("revoke", "424242424", "default"), "no user"),
        (("revoke", "{user}", "nope"), "no token 'nope'"),
    ],
)
async def test_token_mistakes_are_one_line_errors_and_change_nothing(
    database_url: str, settings: Settings, args: tuple[str, ...], message: str
) -> None:
    user = await run_admin(settings, "users", "add", f"mistakes-{secrets.token_hex(4)}")

    def tokens() -> list[tuple[object, ...]]:
        with psycopg.connect(database_url) as conn:
            return conn.execute(
                "SELECT user_id, name, scope, token_sha256, created_at, last_used_at"
                " FROM cluster.user_tokens ORDER BY user_id, name"
            ).fetchall()

    before = tokens()
    tokens_args = (a.format(user=user["id"]) for a in args)
    result = await admin_refusal(settings, "users", "tokens", *tokens_args)
    assert len(result.strip().splitlines()) == 1
    assert message in result
    assert tokens() == before


@pytest.mark.parametrize(
    "args",
    [
        ("add", "1", "--name", "wall"),  # the scope is a choice the operator makes
        ("add", "1", "--name", "wall", "--scope", "admin"),
        ("add", "1", "--scope", "read"),
    ],
)
def test_a_token_without_a_name_or_a_valid_scope_is_a_usage_error(
    database_url: str, args: tuple[str, ...]
) -> None:
    # A usage error is click's, with its own exit status: only a process shows it.
    result = admin_process(database_url, "users", "tokens", *args)
    assert result.returncode == 2
    assert result.stdout == ""
