"""A user's named tokens over HTTP (``/users/{user_id}/tokens``): made, listed and revoked with a
write token; a read token reads everything and changes nothing (403); tenancy as everywhere."""

from __future__ import annotations

import secrets
from typing import Any

import asyncpg
import pytest

from energy_platform import seeding
from energy_platform.core.tokens import token_digest
from energy_platform.users.tokens import MAX_TOKENS
from tests.support.data import World
from tests.support.http import http_client
from tests.support.services import eventually

READ_ONLY = "urn:energy-platform:problem:read-only-token"


def tokens_of(world: World, who: str) -> str:
    return f"/users/{world.users[who]}/tokens"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def unique(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(4)}"


async def make(world: World, scope: str, who: str = "alice") -> dict[str, Any]:
    """A new token of ``who``, made over HTTP with their default (write) token."""
    async with world.client(who) as http:
        made = await http.post(tokens_of(world, who), json={"name": unique(scope), "scope": scope})
    assert made.status_code == 201, made.text
    body: dict[str, Any] = made.json()
    return body


async def scopes(world: World, who: str = "alice") -> dict[str, str]:
    """Each token's scope by name: what a refused request must leave as it was (the last uses
    move with every request, the listing's own included)."""
    return {name: t["scope"] for name, t in (await listed(world, who)).items()}


async def listed(world: World, who: str = "alice") -> dict[str, dict[str, Any]]:
    async with world.client(who) as http:
        answer = await http.get(tokens_of(world, who))
    assert answer.status_code == 200, answer.text
    return {t["name"]: t for t in answer.json()}


async def test_a_token_is_made_shown_once_listed_without_its_secret_and_revoked(
    world: World, db: asyncpg.Connection
) -> None:
    name = unique("wall")
    async with world.client("alice") as http:
        made = await http.post(tokens_of(world, "alice"), json={"name": name, "scope": "read"})
        assert made.status_code == 201
        assert made.headers["content-type"] == "application/json"
        body = made.json()
        assert set(body) == {"name", "scope", "token"}
        assert (body["name"], body["scope"]) == (name, "read")

        listing = await http.get(tokens_of(world, "alice"))
        entries = {t["name"]: t for t in listing.json()}
        # Every user starts with the write token `default` (admin users add, seeding).
        assert entries["default"]["scope"] == "write"
        assert entries[name]["scope"] == "read"
        assert entries[name]["last_used_at"] is None
        for entry in entries.values():
            assert set(entry) == {"name", "scope", "created_at", "last_used_at"}
        assert body["token"] not in listing.text
        assert token_digest(body["token"]).hex() not in listing.text
        # Only the hash is kept.
        stored = await db.fetchval(
            "SELECT token_sha256 FROM cluster.user_tokens WHERE user_id = $1 AND name = $2",
            int(world.users["alice"]),
            name,
        )
        assert stored == token_digest(body["token"])

        works = await http.get(
            f"/users/{world.users['alice']}/feeds", headers=bearer(body["token"])
        )
        revoked = await http.delete(f"{tokens_of(world, 'alice')}/{name}")
        after = await http.get(
            f"/users/{world.users['alice']}/feeds", headers=bearer(body["token"])
        )
        gone = await http.delete(f"{tokens_of(world, 'alice')}/{name}")
    assert works.status_code == 200
    assert revoked.status_code == 204
    assert revoked.content == b""
    assert after.status_code == 401
    assert after.headers["www-authenticate"].startswith("Bearer")
    assert gone.status_code == 404
    assert name not in await listed(world)


async def test_a_name_in_use_is_409_problem_json(world: World) -> None:
    name = unique("twice")
    async with world.client("alice") as http:
        first = await http.post(tokens_of(world, "alice"), json={"name": name, "scope": "read"})
        again = await http.post(tokens_of(world, "alice"), json={"name": name, "scope": "write"})
    assert first.status_code == 201
    assert again.status_code == 409
    assert again.headers["content-type"] == "application/problem+json"
    assert "exists" in again.json()["detail"]
    assert (await listed(world))[name]["scope"] == "read"  # the first one, unchanged


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "", "scope": "read"}, "name"),
        ({"name": "a b", "scope": "read"}, "name"),
        ({"name": "-lead", "scope": "read"}, "name"),
        ({"name": "wall\n", "scope": "read"}, "name"),  # a JSON-schema `$` passes a newline
        ({"name": "x" * 65, "scope": "read"}, "name"),
        ({"name": "w/all", "scope": "read"}, "name"),
        ({"name": "wall", "scope": "admin"}, "scope"),
        ({"name": "wall"}, None),
        ({"name": "wall", "scope": "read", "extra": 1}, None),
        (["wall", "read"], None),
    ],
)
async def test_a_bad_name_or_scope_is_400_and_makes_nothing(
    world: World, body: Any, field: str | None
) -> None:
    before = await scopes(world)
    async with world.client("alice") as http:
        answer = await http.post(tokens_of(world, "alice"), json=body)
    assert answer.status_code == 400, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    if field:
        assert field in answer.json()["detail"]
    assert await scopes(world) == before


async def test_a_request_never_revokes_its_own_token(world: World) -> None:
    own = await make(world, "write")
    async with http_client(base_url=world.url, headers=bearer(own["token"])) as http:
        refused = await http.delete(f"{tokens_of(world, 'alice')}/{own['name']}")
        still = await http.get(tokens_of(world, "alice"))
        # Another write token of the same user revokes it.
        by_default = await http.delete(
            f"{tokens_of(world, 'alice')}/{own['name']}", headers=bearer(world.tokens["alice"])
        )
        after = await http.get(tokens_of(world, "alice"))
    assert refused.status_code == 409
    assert refused.headers["content-type"] == "application/problem+json"
    assert still.status_code == 200
    assert by_default.status_code == 204
    assert after.status_code == 401


async def test_another_users_tokens_are_404_and_an_admin_sees_them(world: World) -> None:
    bobs = tokens_of(world, "bob")
    async with world.client("alice") as http:
        answers = [
            await http.get(bobs),
            await http.post(bobs, json={"name": unique("x"), "scope": "read"}),
            await http.delete(f"{bobs}/default"),
            await http.get("/users/987654321/tokens"),
            await http.delete("/users/987654321/tokens/default"),
            await http.delete(f"{tokens_of(world, 'alice')}/no-such-token"),
            await http.delete(f"{tokens_of(world, 'alice')}/%C2%B2"),
        ]
    for answer in answers:
        assert answer.status_code == 404, answer.request.url
        assert answer.headers["content-type"] == "application/problem+json"
    assert "default" in await listed(world, "bob")  # nothing of bob's changed
    async with world.client("root") as http:
        as_admin = await http.get(bobs)
    assert as_admin.status_code == 200
    assert [t["name"] for t in as_admin.json()] == ["default"]


WRITES = [
    ("PATCH", "/users/{alice}/notifications", {"read": True}),
    ("PATCH", "/users/{alice}/notifications/1", {"read": True}),
    ("GET", "/users/{alice}/tokens", None),
    ("POST", "/users/{alice}/tokens", {"name": "from-a-read-token", "scope": "write"}),
    ("DELETE", "/users/{alice}/tokens/default", None),
    # Whoever's: the answer depends on the token alone, so it tells nothing about other ids.
    ("PATCH", "/users/{bob}/notifications", {"read": True}),
    ("DELETE", "/users/987654321/tokens/default", None),
    ("POST", "/feeds/{home}/streams/{phase1}/data", [[1767225600, 1.0]]),
    ("DELETE", "/feeds/{home}/streams/{phase1}/data?time_from=0&time_to=1767225600", None),
]


@pytest.mark.parametrize(("method", "path", "body"), WRITES)
async def test_a_read_token_gets_403_on_every_writing_request(
    world: World, method: str, path: str, body: Any
) -> None:
    reader = await make(world, "read")
    before = await scopes(world)
    url = path.format(
        alice=world.users["alice"],
        bob=world.users["bob"],
        home=world.feeds["home"],
        phase1=world.streams["phase1"],
    )
    async with http_client(base_url=world.url, headers=bearer(reader["token"])) as http:
        answer = await http.request(method, url, json=body)
    assert answer.status_code == 403, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["type"] == READ_ONLY
    assert await scopes(world) == before


async def test_a_read_token_reads_everything_its_user_sees(world: World) -> None:
    reader = await make(world, "read")
    home, phase1 = world.feeds["home"], world.streams["phase1"]
    paths = [
        f"/users/{world.users['alice']}/feeds",
        f"/feeds/{home}",
        f"/feeds/{home}/streams",
        f"/feeds/{home}/streams/{phase1}",
        f"/feeds/{home}/streams/{phase1}/data",
        f"/feeds/{home}/streams/{phase1}/data?resolution=day",
        f"/feeds/{home}/bill?from=2026-01-01&to=2026-01-31",
        f"/users/{world.users['alice']}/notifications",
        f"/users/{world.users['alice']}/notification_count",
    ]
    async with http_client(base_url=world.url, headers=bearer(reader["token"])) as http:
        answers = {path: (await http.get(path)).status_code for path in paths}
        theirs = await http.get(f"/feeds/{world.feeds['bobs']}")
    assert answers == dict.fromkeys(paths, 200)
    assert theirs.status_code == 404


async def test_a_revoked_token_is_401_on_reads_and_writes(world: World) -> None:
    writer = await make(world, "write")
    async with world.client("alice") as http:
        assert (
            await http.delete(f"{tokens_of(world, 'alice')}/{writer['name']}")
        ).status_code == 204
    home, phase1 = world.feeds["home"], world.streams["phase1"]
    async with http_client(base_url=world.url, headers=bearer(writer["token"])) as http:
        answers = [
            await http.get(f"/feeds/{home}/streams/{phase1}/data"),
            await http.get(f"/users/{world.users['alice']}/feeds"),
            await http.patch(f"/users/{world.users['alice']}/notifications", json={"read": True}),
            await http.post(tokens_of(world, "alice"), json={"name": unique("x"), "scope": "read"}),
        ]
    assert [a.status_code for a in answers] == [401] * 4


async def test_the_last_use_is_recorded_from_any_endpoint_the_data_one_included(
    world: World,
) -> None:
    reader, other = await make(world, "read"), await make(world, "read")
    home, phase1 = world.feeds["home"], world.streams["phase1"]
    async with http_client(base_url=world.url) as http:
        # The data endpoint authenticates inside its own statement, the others through the
        # dependency: both note the use.
        data = await http.get(
            f"/feeds/{home}/streams/{phase1}/data", headers=bearer(reader["token"])
        )
        feeds = await http.get(f"/feeds/{home}", headers=bearer(other["token"]))
    assert (data.status_code, feeds.status_code) == (200, 200)

    async def both_used() -> bool:
        entries = await listed(world)
        return all(entries[t["name"]]["last_used_at"] for t in (reader, other))

    await eventually(both_used, within=60)
    entries = await listed(world)
    assert entries[reader["name"]]["created_at"] <= entries[reader["name"]]["last_used_at"]


async def test_a_user_holds_at_most_the_limit_of_tokens(
    world: World, db: asyncpg.Connection
) -> None:
    user = await seeding.add_user(db, unique("many-tokens"))
    try:
        # The default token and MAX_TOKENS - 1 more.
        await db.execute(
            "INSERT INTO cluster.user_tokens (user_id, name, scope, token_sha256)"
            " SELECT $1, 't' || i, 'read', sha256(convert_to($1::bigint || '-' || i, 'UTF8'))"
            " FROM generate_series(1, $2 - 1) i",
            user.id,
            MAX_TOKENS,
        )
        async with http_client(base_url=world.url, headers=bearer(user.token)) as http:
            full = await http.post(
                f"/users/{user.id}/tokens", json={"name": "one-more", "scope": "read"}
            )
            freed = await http.delete(f"/users/{user.id}/tokens/t1")
            again = await http.post(
                f"/users/{user.id}/tokens", json={"name": "one-more", "scope": "read"}
            )
    finally:
        await db.execute("DELETE FROM cluster.users WHERE id = $1", user.id)
    assert full.status_code == 409
    assert f"at most {MAX_TOKENS}" in full.json()["detail"]
    assert freed.status_code == 204
    assert again.status_code == 201
