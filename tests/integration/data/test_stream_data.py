import pytest

from tests.integration.data.conftest import T0, World


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
        f"data_time_from={T0 + 10}&data_time_to={T0}",
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
