"""The data API's world: three users, feeds (one forwarded), streams of every type and points
at known times (served by the ``world`` fixture of the data tests' conftest)."""

from __future__ import annotations

from dataclasses import dataclass

import httpx
import psycopg

from energy_platform.core.tokens import token_digest

T0 = 1_767_225_600
"""2026-01-01T00:00:00Z: the data tests' points are placed from here (a 90 s bucket start)."""


@dataclass
class World:
    url: str
    tokens: dict[str, str]
    users: dict[str, str]
    feeds: dict[str, str]
    streams: dict[str, str]

    def client(self, who: str | None) -> httpx.AsyncClient:
        headers = {} if who is None else {"Authorization": f"Bearer {self.tokens[who]}"}
        return httpx.AsyncClient(base_url=self.url, headers=headers)


def seed(conn: psycopg.Connection) -> World:
    """Users with tokens, feeds (one forwarded), streams of every type and points at known
    times; the world's ``url`` is filled in when its API is served."""
    tokens = {"alice": "alice-token", "bob": "bob-token", "root": "root-token"}
    users = {}
    for name, token in tokens.items():
        row = conn.execute(
            "INSERT INTO cluster.users (name, token_sha256, is_admin)"
            " VALUES (%s, %s, %s) RETURNING id",
            (f"{name}-data-api", token_digest(token), name == "root"),
        ).fetchone()
        assert row
        users[name] = str(row[0])
    feeds = {}
    for key, owner, sn in (
        ("home", "alice", "D000000000000001"),
        ("bobs", "bob", "D000000000000002"),
        ("forwarded", "alice", "D000000000000003"),
    ):
        row = conn.execute(
            "INSERT INTO cluster.feeds (owner_id, homebase_sn, subscription_from, subscription_to)"
            " VALUES (%s, %s, '2026-01-01T00:00:00Z', '2027-01-01T00:00:00Z') RETURNING id",
            (users[owner], sn),
        ).fetchone()
        assert row
        feeds[key] = str(row[0])
        conn.execute(
            "INSERT INTO cluster.feed_configs (feed_id, title, timezone, validity)"
            " VALUES (%s, %s, 'Europe/Prague', tstzrange(NULL, NULL))",
            (row[0], f"{key} feed"),
        )
    conn.execute(
        "SELECT cluster.set_feed_config(%s, '2026-06-01T00:00:00Z', 'Home (renamed)',"
        " 'Europe/Prague')",
        (feeds["home"],),
    )
    conn.execute(
        "INSERT INTO forwarder.registrations (homebase_sn, customer_id) VALUES (%s, 1)",
        ("D000000000000003",),
    )
    streams = {}
    for key, feed, columns in (
        ("phase1", "home", ("raw", 1, 3, 1, 1, None, None)),
        ("phase2", "home", ("raw", 1, 3, 1, 2, None, None)),
        ("gas", "home", ("raw", 2, 5, 7, None, None, None)),
        ("energy1", "home", ("processed", 1, None, None, 1, False, None)),
        ("energy", "home", ("processed", 1, None, None, None, True, None)),
        ("signal", "home", ("system", 0, 3, None, None, None, "medium:40")),
        ("bobs_power", "bobs", ("raw", 1, 3, 1, None, None, None)),
        ("forwarded_power", "forwarded", ("raw", 1, 3, 1, None, None, None)),
    ):
        row = conn.execute(
            "INSERT INTO cluster.streams (feed_id, type, channel, device, medium, idx, combined,"
            " source) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
            (feeds[feed], *columns),
        ).fetchone()
        assert row
        streams[key] = str(row[0])
    for key in ("energy1", "energy"):
        conn.execute(
            "SELECT cluster.set_stream_config(%s, '-infinity', 'Energy', 'power', 'kWh')",
            (streams[key],),
        )
    conn.execute(
        "SELECT cluster.set_stream_config(%s, '2026-03-01T00:00:00Z', 'Off', NULL, 'kWh')",
        (streams["energy1"],),
    )
    # phase1: 300 points, 5 s apart from T0, value = index; gas: one point at T0 + 1000;
    # energy1: one point per 90 s bucket for an hour; signal: one point at T0 + 86400.
    conn.execute(
        "INSERT INTO cluster.raw_points SELECT %s, to_timestamp(%s + 5 * i), i"
        " FROM generate_series(0, 299) i",
        (streams["phase1"], T0),
    )
    conn.execute(
        "INSERT INTO cluster.raw_points VALUES (%s, to_timestamp(%s), 1234.5)",
        (streams["gas"], T0 + 1000),
    )
    conn.execute(
        "INSERT INTO cluster.processed_points SELECT %s, to_timestamp(%s + 90 * i), 0.025"
        " FROM generate_series(0, 39) i",
        (streams["energy1"], T0),
    )
    conn.execute(
        "INSERT INTO cluster.system_points VALUES (%s, to_timestamp(%s), -71)",
        (streams["signal"], T0 + 86_400),
    )
    conn.execute(
        "INSERT INTO cluster.raw_points VALUES (%s, to_timestamp(%s), 50)",
        (streams["bobs_power"], T0),
    )
    return World("", tokens, users, feeds, streams)
