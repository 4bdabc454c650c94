import asyncpg
import psycopg
import pytest

from energy_platform import seeding
from energy_platform.core.tokens import token_digest
from tests.support.data import T0, YEAR, World
from tests.support.forwarder import NO_CUSTOMER


async def test_a_request_without_a_token_is_401_problem_json_with_a_challenge(world: World) -> None:
    async with world.client(None) as http:
        response = await http.get(f"/feeds/{world.feeds['home']}")
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/problem+json"
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert response.json()["status"] == 401


@pytest.mark.parametrize("header", ["Bearer nope", "Basic YWxpY2U6eA==", "Bearer", "alice-token"])
async def test_an_unknown_or_malformed_token_is_401(world: World, header: str) -> None:
    async with world.client(None) as http:
        response = await http.get(
            f"/users/{world.users['alice']}/feeds", headers={"Authorization": header}
        )
    assert response.status_code == 401


async def test_a_user_lists_their_own_feeds_without_the_forwarded_one(world: World) -> None:
    async with world.client("alice") as http:
        response = await http.get(f"/users/{world.users['alice']}/feeds")
    assert response.status_code == 200
    assert [feed["id"] for feed in response.json()] == [world.feeds["home"]]


async def test_another_users_feeds_and_feed_are_404_never_403(world: World) -> None:
    async with world.client("alice") as http:
        their_list = await http.get(f"/users/{world.users['bob']}/feeds")
        their_feed = await http.get(f"/feeds/{world.feeds['bobs']}")
        their_stream = await http.get(
            f"/feeds/{world.feeds['bobs']}/streams/{world.streams['bobs_power']}/data"
        )
        # A stream reached through one's own feed id must still belong to that feed.
        smuggled = await http.get(
            f"/feeds/{world.feeds['home']}/streams/{world.streams['bobs_power']}"
        )
    for response in (their_list, their_feed, their_stream, smuggled):
        assert response.status_code == 404
        assert response.headers["content-type"] == "application/problem+json"


async def test_an_admin_sees_every_users_feeds(world: World) -> None:
    async with world.client("root") as http:
        bobs = await http.get(f"/users/{world.users['bob']}/feeds")
        feed = await http.get(f"/feeds/{world.feeds['bobs']}")
        nobody = await http.get("/users/987654321/feeds")
    assert [f["id"] for f in bobs.json()] == [world.feeds["bobs"]]
    assert feed.status_code == 200
    assert nobody.status_code == 404


@pytest.mark.parametrize(
    "path",
    [
        "/feeds/abc",
        "/feeds/-1",
        "/feeds/0",
        "/feeds/99999999999999999999999",
        "/feeds/9223372036854775808",  # one past the largest bigint
        "/feeds/%C2%B2",  # "²": str.isdigit() says yes, int() says no
        "/feeds/%D9%A3",  # "٣", an Arabic-Indic 3: not feed 3
        "/feeds/%EF%BC%91",  # U+FF11, a full-width 1
        "/feeds/1%00",
        "/users/%C2%B2/feeds",
        "/users/9223372036854775808/notifications",
        "/users/%D9%A3/notification_count",
        "/feeds/1/streams/%C2%B2",
        "/feeds/%C2%B2/streams/1/data",
    ],
)
async def test_ids_that_name_nothing_are_404(world: World, path: str) -> None:
    async with world.client("root") as http:
        response = await http.get(path)
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["status"] == 404


async def test_a_forwarded_feed_is_hidden_until_unregistered(
    world: World, database_url: str
) -> None:
    # Every path under the feed, each read by its own query (cluster.user_feeds in each).
    feed = world.feeds["forwarded"]
    stream = world.streams["forwarded_power"]
    paths = [
        f"/feeds/{feed}",
        f"/feeds/{feed}/streams",
        f"/feeds/{feed}/streams/{stream}",
        f"/feeds/{feed}/streams/{stream}/data",
        f"/feeds/{feed}/streams/{stream}/data?resolution=hour",
    ]

    async def answers() -> dict[str, list[int]]:
        found = {}
        for who in ("alice", "root"):
            async with world.client(who) as http:
                found[who] = [(await http.get(path)).status_code for path in paths]
        return found

    async def listed() -> list[str]:
        async with world.client("alice") as http:
            response = await http.get(f"/users/{world.users['alice']}/feeds")
        return [f["id"] for f in response.json()]

    while_registered, listed_then = await answers(), await listed()
    with psycopg.connect(database_url) as conn:
        conn.execute("DELETE FROM forwarder.registrations WHERE homebase_sn = 'D000000000000003'")
    try:
        after, listed_after = await answers(), await listed()
    finally:
        with psycopg.connect(database_url) as conn:
            conn.execute(
                "INSERT INTO forwarder.registrations (homebase_sn, customer_id)"
                " VALUES ('D000000000000003', %s)",
                (NO_CUSTOMER,),
            )
    assert while_registered == {"alice": [404] * 5, "root": [404] * 5}
    assert feed not in listed_then
    assert after == {"alice": [200] * 5, "root": [200] * 5}
    assert feed in listed_after


def test_the_views_for_owners_and_analysts_hide_a_forwarded_feed(
    world_data: World, database_url: str
) -> None:
    # What the API and the rules read (cluster.user_feeds, cluster.visible_feeds and the rules'
    # cluster.homebase_activity over it), as an analyst reads it.
    feeds, users = world_data.feeds, world_data.users
    mine = [int(feeds[k]) for k in ("home", "bobs", "forwarded")]

    def ids(sql: str, *args: object) -> list[int]:
        with psycopg.connect(database_url) as conn:
            return sorted(r[0] for r in conn.execute(sql, args).fetchall() if r[0] in mine)

    home, bobs = int(feeds["home"]), int(feeds["bobs"])
    assert ids("SELECT id FROM cluster.visible_feeds") == [home, bobs]
    assert ids("SELECT feed_id FROM cluster.homebase_activity") == [home, bobs]
    assert ids("SELECT id FROM cluster.user_feeds(%s, false)", int(users["alice"])) == [home]
    assert ids("SELECT id FROM cluster.user_feeds(%s, true)", int(users["alice"])) == [home, bobs]
    assert ids("SELECT id FROM cluster.user_feeds(%s, false)", int(users["root"])) == []


async def test_a_revoked_token_and_a_removed_feed_stop_working_at_once(
    world: World, database_url: str, db: asyncpg.Connection
) -> None:
    # A user of their own with two feeds, so that nothing else in the world changes.
    user = (await seeding.add_user(db, "carol-data-api", token="carol-token")).id
    streams = []
    for sn in ("D000000000000004", "D000000000000005"):
        feed = await seeding.add_feed(db, user, sn, start=YEAR[0], end=YEAR[1])
        stream = await seeding.raw_stream(db, feed, 1, 1, device=3)
        await seeding.write_points(db, stream, [(T0, 1.5)])
        streams.append(f"/feeds/{feed}/streams/{stream}/data")
    kept, removed = streams
    try:
        async with world.client(None) as http:
            carol = {"Authorization": "Bearer carol-token"}
            # Enough requests that every pooled connection has prepared the statement.
            before = [(await http.get(path, headers=carol)).status_code for path in streams * 10]
            with psycopg.connect(database_url) as conn:
                conn.execute("DELETE FROM cluster.feeds WHERE homebase_sn = 'D000000000000005'")
            feed_gone = (await http.get(removed, headers=carol)).status_code
            still_there = await http.get(kept, headers=carol)
            with psycopg.connect(database_url) as conn:
                conn.execute(
                    "UPDATE cluster.user_tokens SET token_sha256 = %s WHERE user_id = %s",
                    (token_digest("carol-new-token"), user),
                )
            revoked = await http.get(kept, headers=carol)
            renewed = await http.get(kept, headers={"Authorization": "Bearer carol-new-token"})
    finally:
        with psycopg.connect(database_url) as conn:
            conn.execute("DELETE FROM cluster.feeds WHERE owner_id = %s", (user,))
            conn.execute("DELETE FROM cluster.users WHERE id = %s", (user,))
    assert before == [200] * 20
    assert feed_gone == 404
    assert still_there.json() == [[T0, 1.5]]
    assert revoked.status_code == 401
    assert revoked.headers["www-authenticate"].startswith("Bearer")
    assert renewed.json() == [[T0, 1.5]]
