"""The notifications API: list with since, bulk and single PATCH, counts, refusals."""

from typing import Any

import psycopg
import pytest

from tests.support.data import World
from tests.support.http import http_client

CREATED = [
    "2026-03-01T10:00:00+00:00",
    "2026-03-02T10:00:00.250000+00:00",
    "2026-03-03T10:00:00+00:00",
    "2026-03-04T10:00:00+00:00",
]


@pytest.fixture
def seeded(world: World, database_url: str) -> list[str]:
    """Four notifications of alice (oldest first) and one of bob; their ids."""
    with psycopg.connect(database_url) as conn:
        conn.execute("DELETE FROM cluster.notifications")
        ids = []
        for i, created in enumerate(CREATED):
            row = conn.execute(
                "INSERT INTO cluster.notifications"
                " (user_id, feed_id, rule, subject, title, content, created_at)"
                " VALUES (%s, %s, 'power_change', %s, %s, '<p>x</p>', %s) RETURNING id",
                (world.users["alice"], world.feeds["home"], f"s{i}", f"n{i}", created),
            ).fetchone()
            assert row
            ids.append(str(row[0]))
        row = conn.execute(
            "INSERT INTO cluster.notifications (user_id, feed_id, rule, subject, title, content)"
            " VALUES (%s, %s, 'power_change', 'b', 'bobs', '') RETURNING id",
            (world.users["bob"], world.feeds["bobs"]),
        ).fetchone()
        assert row
        ids.append(str(row[0]))
    return ids


def base(world: World, who: str = "alice") -> str:
    return f"/users/{world.users[who]}"


async def state(world: World) -> dict[str, tuple[bool, bool]]:
    async with world.client("alice") as http:
        listed = (await http.get(base(world) + "/notifications")).json()
    return {str(n["id"]): (n["read"], n["archived"]) for n in listed}


async def counts_agree(world: World) -> dict[str, int]:
    async with world.client("alice") as http:
        count = (await http.get(base(world) + "/notification_count")).json()
    flags = await state(world)
    assert count["read"] + count["unread"] == count["total"] == len(flags)
    assert count["archived"] + count["unarchived"] == count["total"]
    assert count["read"] == sum(read for read, _ in flags.values())
    assert count["archived"] == sum(archived for _, archived in flags.values())
    return dict(count)


async def test_a_list_is_newest_first_with_the_specs_fields(
    world: World, seeded: list[str]
) -> None:
    async with world.client("alice") as http:
        listed = (await http.get(base(world) + "/notifications")).json()
    assert [n["id"] for n in listed] == [int(i) for i in reversed(seeded[:4])]
    assert listed[0] == {
        "id": int(seeded[3]),
        "title": "n3",
        "content": "<p>x</p>",
        "feed_title": "Home (renamed)",  # the feed's current configuration
        "created_at": CREATED[3],
        "read": False,
        "archived": False,
    }


async def test_since_exactly_at_a_creation_time_includes_it(
    world: World, seeded: list[str]
) -> None:
    async with world.client("alice") as http:
        at = (await http.get(base(world) + "/notifications", params={"since": CREATED[1]})).json()
        after = (
            await http.get(
                base(world) + "/notifications", params={"since": "2026-03-02T10:00:00.250001Z"}
            )
        ).json()
    assert [n["id"] for n in at] == [int(seeded[3]), int(seeded[2]), int(seeded[1])]
    assert [n["id"] for n in after] == [int(seeded[3]), int(seeded[2])]


async def test_a_bulk_patch_changes_only_the_selection(world: World, seeded: list[str]) -> None:
    await counts_agree(world)
    async with world.client("alice") as http:
        by_id = await http.patch(
            base(world) + "/notifications",
            params=[("id", seeded[0]), ("id", seeded[2])],
            json={"read": True},
        )
        flags = await state(world)
        await counts_agree(world)
        by_since = await http.patch(
            base(world) + "/notifications", params={"since": CREATED[2]}, json={"archived": True}
        )
    assert (by_id.status_code, by_id.content) == (205, b"")
    assert flags == {
        seeded[0]: (True, False),
        seeded[1]: (False, False),
        seeded[2]: (True, False),
        seeded[3]: (False, False),
    }
    assert by_since.status_code == 205
    assert await state(world) == {
        seeded[0]: (True, False),
        seeded[1]: (False, False),
        seeded[2]: (True, True),
        seeded[3]: (False, True),
    }
    assert await counts_agree(world) == {
        "read": 2,
        "unread": 2,
        "archived": 2,
        "unarchived": 2,
        "total": 4,
    }


async def test_patching_one_returns_it_updated(world: World, seeded: list[str]) -> None:
    async with world.client("alice") as http:
        response = await http.patch(
            base(world) + f"/notifications/{seeded[1]}", json={"read": True, "archived": True}
        )
        one = (await http.get(base(world) + f"/notifications/{seeded[1]}")).json()
        back = await http.patch(base(world) + f"/notifications/{seeded[1]}", json={"read": False})
    assert response.status_code == 200
    assert response.json() == one
    assert (one["read"], one["archived"]) == (True, True)
    assert (back.json()["read"], back.json()["archived"]) == (False, True)
    await counts_agree(world)


@pytest.mark.parametrize(
    "body",
    [{"read": "yes"}, {"archived": 1}, {"read": True, "colour": "red"}, {}, [], None, "read"],
)
async def test_bad_bodies_are_400_and_change_nothing(
    world: World, seeded: list[str], body: Any
) -> None:
    before = await state(world)
    async with world.client("alice") as http:
        one = await http.patch(base(world) + f"/notifications/{seeded[0]}", json=body)
        bulk = await http.patch(base(world) + "/notifications", json=body)
        garbage = await http.patch(
            base(world) + "/notifications",
            content=b"{read: true",
            headers={"content-type": "application/json"},
        )
    for response in (one, bulk, garbage):
        assert response.status_code == 400
        assert response.headers["content-type"] == "application/problem+json"
    assert await state(world) == before


@pytest.mark.parametrize(
    "since",
    [
        "yesterday",
        "2026-13-01T00:00:00Z",
        "",
        "0001-01-01T00:00:00+01:00",  # before year 1 in UTC
        "9999-12-31T23:00:00-02:00",  # after year 9999 in UTC
        "2026-03-01T10:00:00\x00",
        "٢٠٢٦-03-01",
        "2026-03-01T10:00:00" + "0" * 100,
    ],
)
async def test_a_malformed_since_is_400_and_changes_nothing(
    world: World, seeded: list[str], since: str
) -> None:
    before = await state(world)
    async with world.client("alice") as http:
        listed = await http.get(base(world) + "/notifications", params={"since": since})
        bulk = await http.patch(
            base(world) + "/notifications", params={"since": since}, json={"read": True}
        )
    assert (listed.status_code, bulk.status_code) == (400, 400)
    assert listed.json()["field"] == "since"
    assert await state(world) == before


async def test_a_since_without_offset_is_utc(world: World, seeded: list[str]) -> None:
    async with world.client("alice") as http:
        # CREATED[2] is 2026-03-03T10:00:00+00:00: a bare 10:00:00 includes it, 10:00:01 not.
        at = await http.get(base(world) + "/notifications", params={"since": "2026-03-03T10:00:00"})
        after = await http.get(
            base(world) + "/notifications", params={"since": "2026-03-03T10:00:01"}
        )
        marked = await http.patch(
            base(world) + "/notifications",
            params={"since": "2026-03-04T10:00:00"},
            json={"read": True},
        )
    assert at.status_code == 200
    assert [n["title"] for n in at.json()] == ["n3", "n2"]
    assert [n["title"] for n in after.json()] == ["n3"]
    assert marked.status_code == 205
    assert (await state(world))[seeded[3]] == (True, False)
    assert (await state(world))[seeded[2]] == (False, False)


@pytest.mark.parametrize(
    "query",
    [
        "id=9223372036854775808",
        "id=0",
        "id=-1",
        "id=%D9%A3",
        "id=%C2%B2",
        "id=1e30",
        "&".join(["id=1"] * 1001),
    ],
)
async def test_ids_beyond_what_the_database_holds_are_400(
    world: World, seeded: list[str], query: str
) -> None:
    before = await state(world)
    async with world.client("alice") as http:
        bulk = await http.patch(f"{base(world)}/notifications?{query}", json={"read": True})
    assert bulk.status_code == 400, bulk.text
    assert bulk.headers["content-type"] == "application/problem+json"
    assert bulk.json()["field"] == "id"
    assert await state(world) == before


@pytest.mark.parametrize(
    "notification", ["9223372036854775808", "99999999999999999999", "%C2%B2", "%D9%A3", "-1"]
)
async def test_a_notification_id_that_names_nothing_is_404(
    world: World, seeded: list[str], notification: str
) -> None:
    async with world.client("alice") as http:
        one = await http.get(f"{base(world)}/notifications/{notification}")
        patched = await http.patch(
            f"{base(world)}/notifications/{notification}", json={"read": True}
        )
    assert (one.status_code, patched.status_code) == (404, 404)
    assert one.headers["content-type"] == "application/problem+json"


async def test_another_users_notifications_are_404(world: World, seeded: list[str]) -> None:
    bobs = seeded[4]
    async with world.client("alice") as http:
        responses = [
            await http.get(base(world) + f"/notifications/{bobs}"),
            await http.patch(base(world) + f"/notifications/{bobs}", json={"read": True}),
            await http.get(base(world, "bob") + "/notifications"),
            await http.get(base(world, "bob") + "/notification_count"),
            await http.patch(base(world, "bob") + "/notifications", json={"read": True}),
        ]
    async with world.client("bob") as http:
        untouched = (await http.get(base(world, "bob") + f"/notifications/{bobs}")).json()
    assert [r.status_code for r in responses] == [404] * 5
    assert untouched["read"] is False


async def test_a_read_token_lists_notifications_but_patches_none(
    world: World, seeded: list[str]
) -> None:
    async with world.client("alice") as http:
        made = await http.post(
            base(world) + "/tokens", json={"name": f"wall-{seeded[0]}", "scope": "read"}
        )
    reader = {"Authorization": f"Bearer {made.json()['token']}"}
    before = await state(world)
    async with http_client(base_url=world.url, headers=reader) as http:
        listed = await http.get(base(world) + "/notifications")
        one = await http.patch(base(world) + f"/notifications/{seeded[0]}", json={"read": True})
        bulk = await http.patch(base(world) + "/notifications", json={"archived": True})
    assert listed.status_code == 200
    assert len(listed.json()) == 4
    for refused in (one, bulk):
        assert refused.status_code == 403
        assert refused.headers["content-type"] == "application/problem+json"
        assert refused.json()["type"] == "urn:energy-platform:problem:read-only-token"
    assert await state(world) == before
