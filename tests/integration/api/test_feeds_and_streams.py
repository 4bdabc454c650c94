from datetime import datetime

import pytest

from tests.support.data import T0, World


async def test_a_feed_carries_exactly_the_specs_fields_with_configs_in_order(world: World) -> None:
    async with world.client("alice") as http:
        response = await http.get(f"/feeds/{world.feeds['home']}")
    assert response.status_code == 200
    assert response.json() == {
        "id": world.feeds["home"],
        "subscription": {"from": "2026-01-01T00:00:00+00:00", "to": "2027-01-01T00:00:00+00:00"},
        "configs": [
            {
                "title": "home feed",
                "timezone": "Europe/Prague",
                "valid_from": None,
                "valid_to": "2026-06-01T00:00:00+00:00",
            },
            {
                "title": "Home (renamed)",
                "timezone": "Europe/Prague",
                "valid_from": "2026-06-01T00:00:00+00:00",
                "valid_to": None,
            },
        ],
    }
    for time in ("2026-01-01T00:00:00+00:00", "2026-06-01T00:00:00+00:00"):
        assert datetime.fromisoformat(time).utcoffset() is not None


async def test_streams_carry_exactly_their_types_fields(world: World) -> None:
    async with world.client("alice") as http:
        response = await http.get(f"/feeds/{world.feeds['home']}/streams")
    by_id = {s["id"]: s for s in response.json()}
    s = world.streams
    # phase1 and phase2 come from one three-phase clamp sensor: only index tells them apart.
    assert by_id[s["phase1"]] == {
        "id": s["phase1"],
        "type": "raw",
        "channel": 1,
        "device": 3,
        "medium": 1,
        "index": 1,
    }
    assert by_id[s["phase2"]]["index"] == 2
    assert by_id[s["gas"]] == {
        "id": s["gas"],
        "type": "raw",
        "channel": 2,
        "device": 5,
        "medium": 7,
    }
    assert by_id[s["signal"]] == {"id": s["signal"], "type": "system", "channel": 0}
    assert by_id[s["energy"]] == {
        "id": s["energy"],
        "type": "processed",
        "channel": 1,
        "combined": True,
        "quantity": "consumption",
        "configs": [
            {
                "title": "Energy",
                "medium": "power",
                "unit": "kWh",
                "valid_from": None,
                "valid_to": None,
                "submeter": False,
                "main": False,
            }
        ],
    }
    phase = by_id[s["energy1"]]
    assert phase["index"] == 1
    assert phase["combined"] is False
    assert [(c["medium"], c["valid_to"]) for c in phase["configs"]] == [
        ("power", "2026-03-01T00:00:00+00:00"),
        (None, None),
    ]
    assert by_id[s["tariff2"]] == {
        "id": s["tariff2"],
        "type": "processed",
        "channel": 3,
        "combined": False,
        "quantity": "consumption",
        "configs": [
            {
                "title": "Electricity, channel 3, tariff 2",
                "medium": "power",
                "unit": "Wh",
                "valid_from": None,
                "valid_to": None,
                "submeter": False,
                "main": False,
            }
        ],
        "register": 2,
        "tariff": 2,  # register's old name, answered beside it (deprecated)
    }
    assert by_id[s["export"]]["quantity"] == "export"
    assert not {"register", "tariff"} & set(by_id[s["export"]])
    assert set(by_id) == {
        s[k]
        for k in ("phase1", "phase2", "gas", "energy1", "energy", "tariff2", "export", "signal")
    }


@pytest.mark.parametrize("name", ["energy1", "tariff2", "export", "phase1", "signal"])
async def test_one_stream_is_the_same_object_as_in_the_list(world: World, name: str) -> None:
    feed, stream = world.feeds["home"], world.streams[name]
    async with world.client("alice") as http:
        one = (await http.get(f"/feeds/{feed}/streams/{stream}")).json()
        listed = (await http.get(f"/feeds/{feed}/streams")).json()
    assert one == next(s for s in listed if s["id"] == stream)


async def test_one_processed_stream_says_what_it_measures(world: World) -> None:
    feed = world.feeds["home"]
    async with world.client("alice") as http:
        phase = (await http.get(f"/feeds/{feed}/streams/{world.streams['energy1']}")).json()
        register = (await http.get(f"/feeds/{feed}/streams/{world.streams['tariff2']}")).json()
    # A phase has an index and no register; a tariff register's stream a register and no index.
    assert (phase["quantity"], phase["index"], "register" in phase) == ("consumption", 1, False)
    assert (register["quantity"], register["register"], "index" in register) == (
        "consumption",
        2,
        False,
    )


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("type=raw", {"phase1", "phase2", "gas"}),
        ("type=raw&type=system", {"phase1", "phase2", "gas", "signal"}),
        ("channel=2", {"gas"}),
        ("channel=0&channel=2", {"gas", "signal"}),
        ("channel=3", {"tariff2", "export"}),
        ("type=processed&channel=1", {"energy1", "energy"}),
        # phase1 has points in [T0, T0+1495]; gas at T0+1000; energy1 in [T0, T0+3510];
        # signal at T0+86400; phase2 and energy have none.
        # Two rules, each on its own (the spec): a point at or after `from` and a point at or
        # before `to`, not one point between them. energy1 has points at T0+990 and T0+1080.
        (f"data_time_from={T0 + 1000}&data_time_to={T0 + 1000}", {"phase1", "gas", "energy1"}),
        (f"data_time_from={T0 + 2000}&data_time_to={T0 + 500}", {"energy1"}),
        (f"data_time_from={T0 + 1496}", {"energy1", "signal"}),
        (f"data_time_to={T0 - 1}", set()),
        (f"data_time_from={T0 + 86_400}&type=system", {"signal"}),
        (f"data_time_from={T0 + 86_401}", set()),
    ],
)
async def test_stream_filters(world: World, query: str, expected: set[str]) -> None:
    async with world.client("alice") as http:
        response = await http.get(f"/feeds/{world.feeds['home']}/streams?{query}")
    assert response.status_code == 200
    names = {k for k, v in world.streams.items() if v in {s["id"] for s in response.json()}}
    assert names == expected
