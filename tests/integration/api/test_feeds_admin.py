"""The admin commands as an operator runs them (in this process: tests/integration/test_cli.py
runs them as processes), checked through the API a user reads."""

import secrets
from typing import Any

import psycopg
import pytest

from energy_platform.core.settings import Settings
from tests.support.admin import admin_refusal, run_admin
from tests.support.data import World
from tests.support.http import http_client
from tests.support.platform import add_feed


def snapshot(database_url: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(database_url) as conn:
        return conn.execute(
            "SELECT f.id, f.homebase_sn, c.title, c.timezone, c.validity::text"
            " FROM cluster.feeds f JOIN cluster.feed_configs c ON c.feed_id = f.id"
            " UNION ALL SELECT s.stream_id, '', s.title, s.medium, s.validity::text"
            " FROM cluster.stream_configs s ORDER BY 1, 5"
        ).fetchall()


async def test_a_new_users_token_reads_the_feed_the_operator_added(
    world: World, settings: Settings
) -> None:
    user = await run_admin(settings, "users", "add", "carol")
    feed = await add_feed(
        settings,
        user["id"],
        "C0FFEE0000000001",
        title="Cottage",
        timezone="Europe/Prague",
        subscription_from="2026-01-01T00:00:00+01:00",
        subscription_to="2027-01-01T00:00:00+01:00",
    )
    listed = await run_admin(settings, "users", "list")

    headers = {"Authorization": f"Bearer {user['token']}"}
    async with http_client(base_url=world.url, headers=headers) as http:
        feeds = (await http.get(f"/users/{user['id']}/feeds")).json()

    assert feeds == [feed]
    assert feed["subscription"] == {
        "from": "2025-12-31T23:00:00+00:00",
        "to": "2026-12-31T23:00:00+00:00",
    }
    assert feed["configs"] == [
        {"title": "Cottage", "timezone": "Europe/Prague", "valid_from": None, "valid_to": None}
    ]
    carol = next(u for u in listed if u["name"] == "carol")
    assert "token" not in carol


async def test_configuring_from_an_instant_closes_the_period_and_opens_a_current_one(
    world: World, settings: Settings
) -> None:
    feed = world.feeds["bobs"]
    first = await run_admin(
        settings, "feeds", "configure", feed, "--from", "2026-04-01T00:00:00Z", "--title", "Flat"
    )
    # Back-dating replaces what started after the instant: the April period goes. A time
    # without a UTC offset is UTC, as in the API.
    second = await run_admin(
        settings,
        "feeds",
        "configure",
        feed,
        "--from",
        "2026-02-01T00:00:00",
        "--timezone",
        "Europe/London",
    )

    assert [(c["title"], c["valid_from"], c["valid_to"]) for c in first["configs"]] == [
        ("bobs feed", None, "2026-04-01T00:00:00+00:00"),
        ("Flat", "2026-04-01T00:00:00+00:00", None),
    ]
    assert [(c["title"], c["timezone"], c["valid_to"]) for c in second["configs"]] == [
        ("bobs feed", "Europe/Prague", "2026-02-01T00:00:00+00:00"),
        ("bobs feed", "Europe/London", None),
    ]


async def test_a_stream_configured_with_medium_none_is_unprocessed_from_then_on(
    world: World, settings: Settings
) -> None:
    stream = await run_admin(
        settings,
        "streams",
        "configure",
        world.streams["energy"],
        "--from",
        "2026-09-01T12:00:00Z",
        "--medium",
        "none",
    )
    assert [(c["medium"], c["unit"], c["valid_to"]) for c in stream["configs"]] == [
        ("power", "kWh", "2026-09-01T12:00:00+00:00"),
        (None, "kWh", None),
    ]


async def test_a_stream_marked_as_a_sub_meter_stays_one_until_unmarked(
    world: World, settings: Settings
) -> None:
    # energy1 is this test's alone in the module's world (its other tests change "energy").
    configure = ("streams", "configure", world.streams["energy1"], "--from")
    await run_admin(settings, *configure, "2026-09-01T00:00:00Z", "--submeter")
    # A later change of title keeps the flag; --no-submeter clears it from its instant on.
    await run_admin(settings, *configure, "2026-10-01T00:00:00Z", "--title", "Heat pump")
    stream = await run_admin(settings, *configure, "2026-11-01T00:00:00Z", "--no-submeter")
    assert [(c["title"], c["submeter"], c["valid_to"]) for c in stream["configs"]] == [
        ("Energy", False, "2026-03-01T00:00:00+00:00"),
        ("Off", False, "2026-09-01T00:00:00+00:00"),
        ("Off", True, "2026-10-01T00:00:00+00:00"),
        ("Heat pump", True, "2026-11-01T00:00:00+00:00"),
        ("Heat pump", False, None),
    ]
    export = await admin_refusal(
        settings, "streams", "configure", world.streams["export"], "--from", "now", "--submeter"
    )
    assert "only a consumption stream can be a sub-meter" in export


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            (
                "feeds",
                "add",
                "--owner",
                "1",
                "--homebase",
                "c0ffee0000000002",
                "--title",
                "x",
                "--timezone",
                "UTC",
            ),
            "not a serial number",
        ),
        (
            (
                "feeds",
                "add",
                "--owner",
                "1",
                "--homebase",
                "C0FFEE0000000002",
                "--title",
                "x",
                "--timezone",
                "Mars/Olympus",
            ),
            "not an IANA time zone",
        ),
        (
            (
                "feeds",
                "add",
                "--owner",
                "424242",
                "--homebase",
                "C0FFEE0000000002",
                "--title",
                "x",
                "--timezone",
                "UTC",
            ),
            "no user '424242'",
        ),
        (
            ("feeds", "configure", "1", "--from", "0001-01-01T00:00:00+01:00", "--title", "x"),
            "outside the years 1 to 9999",
        ),
        (("feeds", "configure", "1", "--from", "now", "--title", "a\x01b"), "control characters"),
        (("feeds", "configure", "\u00b2", "--from", "now", "--title", "x"), "no feed"),
        (("users", "add", "tab\tname"), "control characters"),
        (("users", "add", "x" * 201), "at most 200 characters"),
        (("feeds", "list", "--owner", "9223372036854775808"), "no user"),
        (("streams", "configure", "424242", "--from", "now", "--title", "x"), "no processed"),
        (("feeds", "subscription", "1"), "give --to, --from or both"),
        (("feeds", "subscription", "424242", "--to", "now"), "no feed"),
        (("feeds", "subscription", "1", "--to", "soon"), "ISO 8601"),
    ],
)
async def test_admin_mistakes_are_one_line_errors_and_change_nothing(
    database_url: str, args: tuple[str, ...], message: str, settings: Settings
) -> None:
    before = snapshot(database_url)
    result = await admin_refusal(settings, *args)
    after = snapshot(database_url)
    assert len(result.strip().splitlines()) == 1
    assert message in result
    assert before == after


async def test_a_subscription_cannot_be_made_to_end_before_it_starts(
    database_url: str, settings: Settings
) -> None:
    user = await run_admin(settings, "users", "add", f"sub-{secrets.token_hex(4)}")
    feed = await add_feed(
        settings, user["id"], secrets.token_hex(8).upper(), title="t", timezone="UTC", pair=False
    )

    def period() -> Any:
        with psycopg.connect(database_url) as conn:
            return conn.execute(
                "SELECT subscription_from, subscription_to FROM cluster.feeds WHERE id = %s",
                (int(feed["id"]),),
            ).fetchone()

    before = period()

    result = await admin_refusal(
        settings, "feeds", "subscription", feed["id"], "--to", "1999-01-01T00:00Z"
    )
    assert "must end after" in result
    assert period() == before


async def test_a_rotated_token_replaces_the_old_one_and_a_revoked_one_reads_nothing(
    world: World, settings: Settings
) -> None:
    user = await run_admin(settings, "users", "add", f"rotating-{secrets.token_hex(4)}")
    path = f"/users/{user['id']}/feeds"

    async def status(token: str) -> int:
        headers = {"Authorization": f"Bearer {token}"}
        async with http_client(base_url=world.url, headers=headers) as http:
            return (await http.get(path)).status_code

    assert await status(user["token"]) == 200
    rotated = await run_admin(settings, "users", "token", user["id"])
    assert rotated["id"] == user["id"]
    assert rotated["token"] != user["token"]
    # The old token stops at once; the new one works.
    assert await status(user["token"]) == 401
    assert await status(rotated["token"]) == 200

    revoked = await run_admin(settings, "users", "token", user["id"], "--revoke")
    assert revoked["revoked"] is True
    assert "token" not in revoked
    assert await status(rotated["token"]) == 401
    # An unknown user is a one-line error.
    missing = await admin_refusal(settings, "users", "token", "424242424")
    assert "no user" in missing


async def test_a_user_is_deleted_only_once_their_feeds_are_gone(
    world: World, settings: Settings
) -> None:
    user = await run_admin(settings, "users", "add", f"leaving-{secrets.token_hex(4)}")
    feed = await add_feed(
        settings,
        user["id"],
        f"C0FFEE{secrets.token_hex(5).upper()}",
        title="Flat",
        timezone="UTC",
        subscription_from="2026-01-01T00:00:00Z",
        subscription_to="2027-01-01T00:00:00Z",
    )
    # Refused while they own a feed, naming it; nothing changes.
    refused = await admin_refusal(settings, "users", "delete", user["id"])
    assert f"owns feeds {feed['id']}" in refused
    assert user["id"] in [u["id"] for u in await run_admin(settings, "users", "list")]

    await run_admin(settings, "feeds", "delete", feed["id"])
    deleted = await run_admin(settings, "users", "delete", user["id"])
    assert deleted["deleted"] is True
    assert user["id"] not in [u["id"] for u in await run_admin(settings, "users", "list")]
    async with http_client(base_url=world.url) as http:
        answer = await http.get(
            f"/users/{user['id']}/feeds", headers={"Authorization": f"Bearer {user['token']}"}
        )
    assert answer.status_code == 401
    again = await admin_refusal(settings, "users", "delete", user["id"])
    assert "no user" in again
