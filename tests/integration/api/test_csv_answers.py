"""CSV out as a client meets it: the data endpoint's `Accept: text/csv`, and the feed export's
columns, quoting, empty cells, errors and a download abandoned halfway."""

from __future__ import annotations

import asyncio
import csv
import io
import time
from collections.abc import AsyncIterator

import asyncpg
import httpx
import msgspec
import pytest

from energy_platform import seeding
from energy_platform.core.settings import Settings
from tests.support.data import T0, World, data_api
from tests.support.http import http_client
from tests.support.live import SlowClient
from tests.support.services import eventually


def data_path(world: World, stream: str) -> str:
    return f"/feeds/{world.feeds['home']}/streams/{world.streams[stream]}/data"


def export_path(world: World, feed: str = "home") -> str:
    return f"/feeds/{world.feeds[feed]}/export"


def alice_headers(world: World) -> dict[str, str]:
    return {"Authorization": f"Bearer {world.tokens['alice']}"}


def rows_of(answer: httpx.Response) -> list[list[str]]:
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "text/csv; charset=utf-8"
    return list(csv.reader(io.StringIO(answer.text, newline="")))


@pytest.mark.parametrize(
    "accept",
    ["text/csv", "text/csv; charset=utf-8", "application/json;q=0.5, text/csv", "TEXT/CSV"],
)
async def test_the_data_endpoint_answers_csv_when_accept_prefers_it(
    world: World, accept: str
) -> None:
    async with world.client("alice") as http:
        answer = await http.get(
            data_path(world, "phase1"), params={"limit": 3}, headers={"Accept": accept}
        )
    assert answer.content == (
        f"time,value\r\n{T0 + 1485},297.0\r\n{T0 + 1490},298.0\r\n{T0 + 1495},299.0\r\n".encode()
    )
    assert answer.headers["content-type"] == "text/csv; charset=utf-8"
    assert answer.headers["vary"] == "Accept"


@pytest.mark.parametrize(
    "accept", [None, "*/*", "application/json", "text/csv;q=0.5, application/json", "text/*"]
)
async def test_the_data_endpoint_answers_json_unless_accept_prefers_csv(
    world: World, accept: str | None
) -> None:
    headers = {} if accept is None else {"Accept": accept}
    async with world.client("alice") as http:
        answer = await http.get(data_path(world, "phase1"), params={"limit": 1}, headers=headers)
    assert answer.headers["content-type"] == "application/json"
    assert answer.json() == [[T0 + 1495, 299.0]]


async def test_csv_without_points_is_its_header_line(world: World) -> None:
    async with world.client("alice") as http:
        answer = await http.get(data_path(world, "phase2"), headers={"Accept": "text/csv"})
    assert answer.content == b"time,value\r\n"


@pytest.mark.parametrize(
    ("who", "path", "query", "status"),
    [
        ("alice", "phase1", {"limit": 0}, 400),
        ("alice", "phase1", {"resolution": "week"}, 400),
        (None, "phase1", {}, 401),
        ("bob", "phase1", {}, 404),
    ],
)
async def test_errors_asked_as_csv_stay_problem_json(
    world: World, who: str | None, path: str, query: dict[str, object], status: int
) -> None:
    async with world.client(who) as http:
        answer = await http.get(
            data_path(world, path), params=query, headers={"Accept": "text/csv"}
        )
    assert answer.status_code == status
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["status"] == status


@pytest.fixture
async def titled(world: World, db: asyncpg.Connection) -> AsyncIterator[dict[str, int]]:
    """Two processed streams of alice's home feed whose titles need CSV's quoting, and one that
    a spreadsheet would take for a formula; removed afterwards."""
    home = int(world.feeds["home"])
    streams = {
        "quoted": await seeding.processed_stream(
            db, home, 7, title='Heat pump, "north"', unit="Wh"
        ),
        "formula": await seeding.processed_stream(
            db, home, 8, title='=HYPERLINK("http://example.invalid")', unit="Wh"
        ),
    }
    # A point straight into the processed tier, on purpose: the streams are the test's own
    # titles (CSV quoting), not an engine's result.
    await db.execute(
        "INSERT INTO cluster.processed_points VALUES ($1, to_timestamp($2), 12.5)",
        streams["quoted"],
        T0,
    )
    yield streams
    await db.execute(
        "DELETE FROM cluster.processed_points WHERE stream_id = ANY($1::bigint[])",
        list(streams.values()),
    )
    await db.execute(
        "DELETE FROM cluster.streams WHERE id = ANY($1::bigint[])", list(streams.values())
    )


async def test_export_headers_are_titles_and_units_quoted_as_csv_quotes_them(
    world: World, titled: dict[str, int]
) -> None:
    s = world.streams
    async with world.client("alice") as http:
        answer = await http.get(
            export_path(world),
            params=[
                ("stream", titled["quoted"]),
                ("stream", titled["formula"]),
                ("stream", s["phase1"]),
                ("stream", s["signal"]),
                ("time_to", T0),
            ],
        )
    first_line = answer.content.split(b"\r\n")[0]
    assert first_line == (
        b'"time","local_time","Heat pump, ""north"" (Wh)","\'=HYPERLINK(""http://example.invalid"")'
        b' (Wh)","raw stream ' + s["phase1"].encode() + b": channel 1, device 3, medium 1,"
        b' index 1","system stream ' + s["signal"].encode() + b': channel 0, medium:40"'
    )
    assert answer.headers["content-disposition"] == (
        f'attachment; filename="feed-{world.feeds["home"]}.csv"'
    )
    assert rows_of(answer)[1] == [str(T0), "2026-01-01T01:00:00+01:00", "12.5", "", "0.0", ""]


async def test_export_columns_come_in_the_order_asked_with_empty_cells(world: World) -> None:
    s = world.streams
    async with world.client("alice") as http:
        answer = await http.get(
            export_path(world),
            params=[
                ("stream", s["gas"]),
                ("stream", s["phase1"]),
                ("stream", s["energy1"]),
                ("time_from", T0 + 995),
                ("time_to", T0 + 1005),
            ],
        )
    header, *rows = rows_of(answer)
    assert header[2:] == [
        f"raw stream {s['gas']}: channel 2, device 5, medium 7",
        f"raw stream {s['phase1']}: channel 1, device 3, medium 1, index 1",
        "Off (kWh)",
    ]
    # phase1 every 5 s (value = index), gas once at T0 + 1000, energy1 every 90 s (T0 + 990
    # and T0 + 1080: none in this range); local time is CET (+01:00).
    assert rows == [
        [str(T0 + 995), "2026-01-01T01:16:35+01:00", "", "199.0", ""],
        [str(T0 + 1000), "2026-01-01T01:16:40+01:00", "1234.5", "200.0", ""],
        [str(T0 + 1005), "2026-01-01T01:16:45+01:00", "", "201.0", ""],
    ]


async def test_a_stream_asked_for_again_is_the_one_column_it_already_has(world: World) -> None:
    s = world.streams
    # 50 times phase1 around one gas reading: two columns, in the order first asked.
    asked = [("stream", s["phase1"])] * 25 + [("stream", s["gas"])] + [("stream", s["phase1"])] * 25
    async with world.client("alice") as http:
        answer = await http.get(
            export_path(world), params=[*asked, ("time_from", T0 + 995), ("time_to", T0 + 1005)]
        )
    header, *rows = rows_of(answer)
    assert header[2:] == [
        f"raw stream {s['phase1']}: channel 1, device 3, medium 1, index 1",
        f"raw stream {s['gas']}: channel 2, device 5, medium 7",
    ]
    assert rows == [
        [str(T0 + 995), "2026-01-01T01:16:35+01:00", "199.0", ""],
        [str(T0 + 1000), "2026-01-01T01:16:40+01:00", "200.0", "1234.5"],
        [str(T0 + 1005), "2026-01-01T01:16:45+01:00", "201.0", ""],
    ]


async def test_without_streams_the_export_has_every_processed_stream_by_id(world: World) -> None:
    s = world.streams
    async with world.client("alice") as http:
        header, *rows = rows_of(await http.get(export_path(world)))
    # energy1's current title is "Off" (set from March on); only energy1 has points.
    assert header == [
        "time",
        "local_time",
        "Off (kWh)",
        "Energy (kWh)",
        "Electricity, channel 3, tariff 2 (Wh)",
        "Electricity export, channel 3 (Wh)",
    ]
    assert sorted(int(s[k]) for k in ("energy1", "energy", "tariff2", "export")) == [
        int(s[k]) for k in ("energy1", "energy", "tariff2", "export")
    ]
    assert [r[0] for r in rows] == [str(T0 + 90 * i) for i in range(40)]
    assert all(r[2:] == ["0.025", "", "", ""] for r in rows)


@pytest.mark.parametrize(
    ("resolution", "start", "local"),
    [
        # The local hour from 01:00 CET (00:00Z), and the local day from midnight CET (23:00Z).
        ("hour", T0, "2026-01-01T01:00:00+01:00"),
        ("day", T0 - 3600, "2026-01-01T00:00:00+01:00"),
        ("month", T0 - 3600, "2026-01-01T00:00:00+01:00"),
    ],
)
async def test_an_export_per_bucket_averages_raw_points_like_the_data_endpoint(
    world: World, db: asyncpg.Connection, resolution: str, start: int, local: str
) -> None:
    s = world.streams
    raw = [int(s["phase1"]), int(s["gas"])]
    # The world's points were written without the engine: queued, their buckets are answered
    # in real time from the points (docs/engine.md#real-time-rollups), by both endpoints alike,
    # over the whole of time when no range is given.
    await db.execute(
        "INSERT INTO cluster.rollup_work (stream_id, span)"
        " SELECT s, tstzrange(NULL, NULL) FROM unnest($1::bigint[]) s",
        raw,
    )
    try:
        async with world.client("alice") as http:
            answer = await http.get(
                export_path(world),
                params=[("resolution", resolution), ("stream", s["phase1"]), ("stream", s["gas"])],
            )
            phase1 = await http.get(data_path(world, "phase1"), params={"resolution": resolution})
    finally:
        await db.execute("DELETE FROM cluster.rollup_work WHERE stream_id = ANY($1::bigint[])", raw)
    # (0 + ... + 299) / 300 = 149.5 in one bucket; gas's one point beside it.
    assert phase1.json() == [[start, 149.5]]
    assert rows_of(answer)[1:] == [[str(start), local, "149.5", "1234.5"]]


async def test_an_admin_exports_any_feed(world: World) -> None:
    async with world.client("root") as http:
        answer = await http.get(
            export_path(world, "bobs"), params={"stream": world.streams["bobs_power"]}
        )
    assert rows_of(answer)[1:] == [[str(T0), "2026-01-01T01:00:00+01:00", "50.0"]]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("resolution=week", "resolution"),
        ("resolution=HOUR", "resolution"),
        ("resolution=", "resolution"),
        (f"time_from={T0 + 10}&time_to={T0}", "time_from"),
        ("time_from=", "time_from"),
        ("time_to=yesterday", "time_to"),
        ("stream=abc", "stream"),
        ("stream=0", "stream"),
        (f"stream={2**63}", "stream"),
        ("&".join(["stream=1"] * 1001), "stream"),
    ],
)
async def test_bad_export_parameters_are_400_problem_json(
    world: World, query: str, field: str
) -> None:
    async with world.client("alice") as http:
        answer = await http.get(f"{export_path(world)}?{query}")
    assert answer.status_code == 400, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["field"] == field


@pytest.mark.parametrize(
    ("feed", "stream"),
    [
        ("bobs", None),  # another user's feed
        ("forwarded", None),  # a feed while it is registered with the forwarder
        ("home", "bobs_power"),  # a stream of another feed
        ("home", "999999999"),  # a stream that does not exist
    ],
)
async def test_exports_of_what_the_caller_does_not_see_are_404(
    world: World, feed: str, stream: str | None
) -> None:
    query = {} if stream is None else {"stream": world.streams.get(stream, stream)}
    async with world.client("alice") as http:
        answer = await http.get(export_path(world, feed), params=query)
        unknown = await http.get("/feeds/999999999/export")
        nonsense = await http.get("/feeds/%C2%B2/export")
    for response in (answer, unknown, nonsense):
        assert response.status_code == 404, response.text
        assert response.headers["content-type"] == "application/problem+json"


async def test_an_export_without_a_known_token_is_401(world: World) -> None:
    async with world.client(None) as http:
        missing = await http.get(export_path(world))
        unknown = await http.get(export_path(world), headers={"Authorization": "Bearer nope"})
    assert missing.status_code == unknown.status_code == 401
    assert missing.headers["www-authenticate"].startswith("Bearer")


EXPORTING = """
SELECT count(*) FROM pg_stat_activity
 WHERE datname = current_database() AND pid <> pg_backend_pid()
   AND state <> 'idle' AND query LIKE '%cluster.csv_times%'"""


async def test_an_export_abandoned_halfway_gives_its_connection_back(
    world: World, db: asyncpg.Connection
) -> None:
    # Five days of 5 s points (86,400, some 4 MB of CSV): far more than one read takes.
    home = int(world.feeds["home"])
    stream = await seeding.raw_stream(db, home, 9, 1, device=9)
    await seeding.write_points(db, stream, [(T0 + 5 * i, i) for i in range(86_400)])
    try:
        async with world.client("alice") as http:
            async with http.stream("GET", export_path(world), params={"stream": stream}) as answer:
                assert answer.status_code == 200
                received = 0
                async for chunk in answer.aiter_raw():
                    received += len(chunk)
                    if received > 1_000_000:
                        break  # a day or so in: the client goes away with the rest unread

            # The export's transaction ends: nothing of it runs any more.
            async def ended() -> bool:
                return await db.fetchval(EXPORTING) == 0

            await eventually(ended)
            # The pool is whole: the same export, read to its end, has every line.
            whole = await http.get(export_path(world), params={"stream": stream}, timeout=60)
        assert whole.status_code == 200
        assert whole.content.count(b"\r\n") == 1 + 86_400
    finally:
        await db.execute("DELETE FROM cluster.raw_points WHERE stream_id = $1", stream)
        await db.execute("DELETE FROM cluster.streams WHERE id = $1", stream)


async def test_exports_past_half_the_pool_wait_their_turn_as_429(
    world: World, db: asyncpg.Connection, settings: Settings
) -> None:
    # A pool of 2: one export at a time. Two weeks of 5 s points (some 11 MB of CSV) are more
    # than the sockets between a server and a client that stopped reading can hold.
    small = msgspec.structs.replace(
        settings, database=msgspec.structs.replace(settings.database, pool_max=2)
    )
    stream = await seeding.raw_stream(db, int(world.feeds["home"]), 9, 1, device=10)
    await seeding.write_points(db, stream, [(T0 + 5 * i, i) for i in range(241_920)])
    path = f"{export_path(world)}?stream={stream}"
    try:
        async with data_api(small) as url:
            port = int(url.rsplit(":", 1)[1])
            # A client that asks and then reads nothing: its export stays open.
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(
                f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Authorization: Bearer {world.tokens['alice']}\r\n\r\n".encode()
            )
            await writer.drain()
            assert (await reader.readline()).startswith(b"HTTP/1.1 200")
            async with http_client(base_url=url, headers=alice_headers(world)) as http:
                refused = await http.get(path)
                assert refused.status_code == 429
                assert refused.headers["content-type"] == "application/problem+json"
                # The stalled client goes: its slot comes back.
                writer.close()
                await writer.wait_closed()

                async def served() -> bool:
                    answer = await http.get(path, params={"time_to": T0 + 10})
                    return answer.status_code == 200

                await eventually(served)
    finally:
        await db.execute("DELETE FROM cluster.raw_points WHERE stream_id = $1", stream)
        await db.execute("DELETE FROM cluster.streams WHERE id = $1", stream)


@pytest.fixture(scope="module")
async def fortnight(world_data: World, database_url: str) -> AsyncIterator[str]:
    """A raw stream of Alice's with two weeks of 5 s points (241,920, some 11 MB of CSV): more
    than the sockets between a server and a client that stopped reading can hold."""
    conn = await asyncpg.connect(database_url)
    try:
        stream = await seeding.raw_stream(conn, int(world_data.feeds["home"]), 9, 1, device=11)
        await seeding.write_points(conn, stream, [(T0 + 5 * i, i) for i in range(241_920)])
        yield f"/feeds/{world_data.feeds['home']}/export?stream={stream}"
        await conn.execute("DELETE FROM cluster.raw_points WHERE stream_id = $1", stream)
        await conn.execute("DELETE FROM cluster.streams WHERE id = $1", stream)
    finally:
        await conn.close()


# The connections of this database an export holds in an open transaction, by backend pid.
EXPORT_BACKENDS = """
SELECT pid, state FROM pg_stat_activity
 WHERE datname = current_database() AND pid <> pg_backend_pid()
   AND query LIKE '%cluster.csv_times%' AND state LIKE 'idle in transaction%'"""


def with_api(settings: Settings, **changes: float) -> Settings:
    """``settings`` with these of its ``api`` section changed."""
    return msgspec.structs.replace(settings, api=msgspec.structs.replace(settings.api, **changes))


async def test_an_export_whose_client_stops_reading_is_ended_and_its_slot_comes_back(
    world: World, db: asyncpg.Connection, settings: Settings, fortnight: str
) -> None:
    stall_s = 3.0
    served = with_api(settings, exports_per_user=1, export_stall_s=stall_s)
    async with data_api(served) as url:
        port = int(url.rsplit(":", 1)[1])
        began = time.monotonic()
        # Reads the answer's head, then nothing: the export waits on it in its transaction.
        stalled = await SlowClient.get(port, fortnight, world.tokens["alice"])

        async def waiting() -> bool:
            return len(await db.fetch(EXPORT_BACKENDS)) == 1

        await eventually(waiting, within=stall_s)
        seen = time.monotonic()
        async with http_client(base_url=url, headers=alice_headers(world)) as http:
            # Her one export is taken while it sits.
            refused = await http.get(fortnight, params={"time_to": T0 + 10})
            assert refused.status_code == 429, refused.text

            async def own_export_again() -> bool:
                answer = await http.get(fortnight, params={"time_to": T0 + 10})
                return answer.status_code == 200

            await eventually(own_export_again, within=stall_s + 30)
            back = time.monotonic()
        # Ended, its transaction with it: no connection is left in one.
        assert await db.fetch(EXPORT_BACKENDS) == []
        # The client gets a body cut short without the chunked body's last chunk: an error to
        # any HTTP client, never a short CSV that looks whole.
        body = await stalled.read_to_close()
    assert back - began >= stall_s  # never before the client has sat that long
    print(f"stalled export ended {back - seen:.2f} s after it was seen waiting (stall {stall_s} s)")
    assert back - seen < stall_s + 10
    assert 0 < body.count(b"\r\n") < 1 + 241_920
    assert not stalled.raw.endswith(b"0\r\n\r\n")


async def test_one_user_runs_at_most_their_share_of_exports_then_429_with_retry_after(
    world: World, settings: Settings, fortnight: str
) -> None:
    served = with_api(settings, exports_per_user=2)
    async with data_api(served) as url:
        port = int(url.rsplit(":", 1)[1])
        sitting = [await SlowClient.get(port, fortnight, world.tokens["alice"]) for _ in range(2)]
        try:
            bob = {"Authorization": f"Bearer {world.tokens['bob']}"}
            async with http_client(base_url=url) as http:
                refused = await http.get(
                    fortnight, params={"time_to": T0 + 10}, headers=alice_headers(world)
                )
                bobs = await http.get(
                    f"/feeds/{world.feeds['bobs']}/export",
                    params={"stream": world.streams["bobs_power"]},
                    headers=bob,
                )
        finally:
            for client in sitting:
                client.close()
    assert refused.status_code == 429
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.headers["retry-after"] == "10"
    assert "already runs 2 exports" in refused.json()["detail"]
    # Another user still exports while Alice's two sit.
    assert bobs.status_code == 200, bobs.text
    assert bobs.content.count(b"\r\n") == 2


async def test_postgresql_ends_an_api_transaction_left_idle_past_its_timeout(
    world: World, db: asyncpg.Connection, settings: Settings, fortnight: str
) -> None:
    # The server's backstop, apart from the export's own: a client that sits for longer than
    # EP_API_IDLE_IN_TRANSACTION_S loses the export's session to PostgreSQL itself.
    served = with_api(settings, export_stall_s=600.0, idle_in_transaction_s=3.0)
    async with data_api(served) as url:
        port = int(url.rsplit(":", 1)[1])
        stalled = await SlowClient.get(port, fortnight, world.tokens["alice"])
        try:
            holding: list[int] = []

            async def waiting() -> bool:
                holding[:] = [row["pid"] for row in await db.fetch(EXPORT_BACKENDS)]
                return len(holding) == 1

            await eventually(waiting, within=3.0, every=0.02)

            async def terminated() -> bool:
                return not await db.fetchval(
                    "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", holding[0]
                )

            await eventually(terminated, within=30)
        finally:
            stalled.close()
