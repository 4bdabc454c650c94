from collections.abc import AsyncIterator, Sequence
from typing import Protocol

import asyncpg
import msgspec
import pytest

from energy_platform import seeding
from tests.support.data import T0, World


def data_path(world: World, stream: str = "phase1") -> str:
    return f"/feeds/{world.feeds['home']}/streams/{world.streams[stream]}/data"


async def test_by_default_the_newest_100_points_come_oldest_first(world: World) -> None:
    async with world.client("alice") as http:
        response = await http.get(data_path(world))
    points = response.json()
    assert response.status_code == 200
    assert len(points) == 100
    assert points[0] == [T0 + 5 * 200, 200.0]
    assert points[-1] == [T0 + 5 * 299, 299.0]
    assert [p[0] for p in points] == sorted(p[0] for p in points)
    assert all(isinstance(t, int) for t, _ in points)


async def test_time_from_and_time_to_are_both_inclusive(world: World) -> None:
    async with world.client("alice") as http:
        response = await http.get(
            data_path(world), params={"time_from": T0 + 10, "time_to": T0 + 20}
        )
    assert response.json() == [[T0 + 10, 2.0], [T0 + 15, 3.0], [T0 + 20, 4.0]]


async def test_limit_keeps_the_newest_points_of_the_window(world: World) -> None:
    async with world.client("alice") as http:
        response = await http.get(data_path(world), params={"time_to": T0 + 100, "limit": 3})
        everything = await http.get(data_path(world), params={"limit": 10_000})
    assert response.json() == [[T0 + 90, 18.0], [T0 + 95, 19.0], [T0 + 100, 20.0]]
    assert len(everything.json()) == 300


async def test_a_day_of_5_s_points_fits_one_request(world: World) -> None:
    async with world.client("alice") as http:
        day = await http.get(data_path(world), params={"limit": 17_280})
        most = await http.get(data_path(world), params={"limit": 100_000})
    assert day.status_code == most.status_code == 200
    assert len(day.json()) == len(most.json()) == 300  # all phase1 has


async def test_every_stream_type_serves_its_own_points(world: World) -> None:
    async with world.client("alice") as http:
        processed = (await http.get(data_path(world, "energy1"), params={"limit": 2})).json()
        system = (await http.get(data_path(world, "signal"))).json()
        empty = (await http.get(data_path(world, "phase2"))).json()
    assert processed == [[T0 + 90 * 38, 0.025], [T0 + 90 * 39, 0.025]]
    assert system == [[T0 + 86_400, -71.0]]
    assert empty == []


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"time_from": T0 + 20, "time_to": T0 + 10}, "time_from"),
        ({"limit": 0}, "limit"),
        ({"limit": 100_001}, "limit"),
        ({"limit": 2**63}, "limit"),
        ({"limit": "\u0663"}, "limit"),  # "٣"
        ({"limit": "\u00b2"}, "limit"),  # "²"
        ({"time_from": "\u0661\u0662"}, "time_from"),
        ({"limit": "many"}, "limit"),
        ({"limit": ""}, "limit"),
        ({"time_from": "yesterday"}, "time_from"),
        ({"time_from": "1.5"}, "time_from"),
        ({"time_to": 10**20}, "time_to"),
        ({"time_from": ""}, "time_from"),
    ],
)
async def test_bad_data_parameters_are_400_problem_json(
    world: World, query: dict[str, object], field: str
) -> None:
    async with world.client("alice") as http:
        response = await http.get(data_path(world), params=query)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == 400
    assert body["field"] == field
    assert field in body["detail"]


@pytest.mark.parametrize(
    "query",
    [
        "type=bogus",
        "type=raw&type=",
        "channel=one",
        "channel=-1",
        "data_time_from=",
        f"data_time_to={10**19}",
        "channel=2147483648",  # one past the largest integer column value
        "channel=%C2%B2",
        "channel=%D9%A3",
        "&".join(["channel=1"] * 1001),
        "&".join(["type=raw"] * 1001),
    ],
)
async def test_bad_stream_filters_are_400_problem_json(world: World, query: str) -> None:
    async with world.client("alice") as http:
        response = await http.get(f"/feeds/{world.feeds['home']}/streams?{query}")
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/problem+json"


class AddStream(Protocol):
    async def __call__(self, points: Sequence[tuple[int, float]]) -> str: ...


@pytest.fixture
async def extra_stream(world: World, db: asyncpg.Connection) -> AsyncIterator[AddStream]:
    """Adds a raw stream with ``points`` to alice's home feed; the path of its data."""
    added: list[int] = []
    home = int(world.feeds["home"])

    async def add(points: Sequence[tuple[int, float]]) -> str:
        stream = await seeding.raw_stream(db, home, 9, 1 + len(added), device=3)
        await seeding.write_points(db, stream, points)
        added.append(stream)
        return f"/feeds/{home}/streams/{stream}/data"

    yield add
    await db.execute("DELETE FROM cluster.raw_points WHERE stream_id = ANY($1::bigint[])", added)
    await db.execute("DELETE FROM cluster.streams WHERE id = ANY($1::bigint[])", added)


async def test_a_100000_point_request_returns_the_newest_100000(
    world: World, extra_stream: AddStream
) -> None:
    # A week and a bit of 5 s points (100,050), value = index / 4.
    path = await extra_stream([(T0 + 5 * i, i / 4) for i in range(100_050)])
    async with world.client("alice") as http:
        response = await http.get(path, params={"limit": 100_000}, timeout=30)
    assert response.status_code == 200
    # The 50 oldest are left out; each point is exactly what msgspec would have written.
    expected = [(T0 + 5 * i, i / 4) for i in range(50, 100_050)]
    assert response.content == msgspec.json.encode(expected)


async def test_values_keep_their_json_form_at_every_magnitude(
    world: World, extra_stream: AddStream
) -> None:
    values = [0.0, -0.0, 200.0, -71.0, 0.025, 1234.5, 0.1 + 0.2, 1e-4, 1e-5, 1.2345e-5, 1e-7]
    values += [1e15, 1234567890123456.8, 1e16, 5.486020414815598e16, 1e22, -2.5e-308, 5e-324]
    values += [1.7976931348623157e308, 123456789.125, 2.0**53 + 2]
    path = await extra_stream([(T0 + i, v) for i, v in enumerate(values, start=1)])
    async with world.client("alice") as http:
        response = await http.get(path)
    # The body the API always wrote: msgspec's (200.0, 1e16, 0.00001, 1e-7, -0.0).
    expected = [(T0 + i, v) for i, v in enumerate(values, start=1)]
    assert response.content == msgspec.json.encode(expected)
    assert response.json() == [list(p) for p in expected]


async def test_points_in_a_new_chunk_are_served_at_once(
    world: World, extra_stream: AddStream, db: asyncpg.Connection
) -> None:
    path = await extra_stream([(T0, 1.0)])
    async with world.client("alice") as http:
        for _ in range(20):  # every pooled connection has its plan of the statement
            assert (await http.get(path)).json() == [[T0, 1.0]]
        # A month later: a chunk of its own.
        await seeding.write_points(db, int(path.split("/")[-2]), [(T0 + 30 * 86_400, 2.0)])
        later = (await http.get(path)).json()
    assert later == [[T0, 1.0], [T0 + 30 * 86_400, 2.0]]
