"""Contracts as data: the terms of `admin tariffs set` as one JSON object, checked by the same
code and bounds as the command, kept in the cluster's catalogue (`admin contracts add`, `list`,
`remove`) and listed to any user, read tokens included (`GET /contracts`)."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import httpx
import pytest

from energy_platform.core.settings import Settings
from tests.support.admin import admin_refusal, run_admin
from tests.support.contracts import DAY_NIGHT


def contract_file(tmp_path: Path, contract: Any) -> str:
    path = tmp_path / f"{secrets.token_hex(4)}.json"
    path.write_text(contract if isinstance(contract, str) else json.dumps(contract))
    return str(path)


async def test_a_supplier_publishes_contracts_and_any_user_reads_the_catalogue(
    settings: Settings, api: httpx.AsyncClient, tmp_path: Path
) -> None:
    name = f"day-night-{secrets.token_hex(3)}"
    listed = await run_admin(
        settings, "contracts", "add", name, "--file", contract_file(tmp_path, DAY_NIGHT)
    )
    (entry,) = [e for e in listed if e["name"] == name]
    assert entry["contract"] == DAY_NIGHT

    # Any user, with a read token: the catalogue as the supplier wrote it.
    user = await run_admin(settings, "users", "add", f"reader-{secrets.token_hex(4)}")
    read = await run_admin(
        settings, "users", "tokens", "add", user["id"], "--name", "wall", "--scope", "read"
    )
    answer = await api.get("/contracts", headers={"Authorization": f"Bearer {read['token']}"})
    assert answer.status_code == 200, answer.text
    assert [e["contract"] for e in answer.json() if e["name"] == name] == [DAY_NIGHT]
    assert (await api.get("/contracts")).status_code == 401

    # Replaced under its name, then removed.
    flat = {"price": 0.28, "vat": 21}
    await run_admin(settings, "contracts", "add", name, "--file", contract_file(tmp_path, flat))
    listed = await run_admin(settings, "contracts", "list")
    assert [e["contract"] for e in listed if e["name"] == name] == [flat]
    listed = await run_admin(settings, "contracts", "remove", name)
    assert name not in [e["name"] for e in listed]
    refused = await admin_refusal(settings, "contracts", "remove", name)
    assert f"no contract '{name}'" in refused


@pytest.mark.parametrize(
    ("contract", "named"),
    [
        ({"vat": "21"}, "$.vat"),
        ({"price": 0.3, "tariff": 1}, "unknown field `tariff`"),
        ({"price": 0.3, "vat": -1}, "$.vat"),
        ({"price": 0.3, "vat": 2000}, "$.vat"),
        ({"price": 0.3, "floor": 0.5, "cap": 0.2}, "$.floor"),
        ({"price": 0.3, "factor": 1.1}, "$.factor"),
        ({"bands": ["weekday/07:00=0.30"]}, "weekends have no band"),
        ({"bands": ["07:00=x"]}, "is not a price"),
        ({"price": 0.3, "holidays": "XX"}, "$.holidays"),
        ({"price": 0.3, "kwh_per_m3": 10}, "$.kwh_per_m3"),
        ({"price": 0.3, "export": {"price": 0.1, "cap": "high"}}, "$.export.cap"),
        ({"price": 0.3, "export": {"vat": 5}}, "$.export.price"),
        ({"bands": [f"{h:02}:00=0.1" for h in range(24)] * 5}, "at most 96 bands"),
        ("[1, 2]", "$"),
        ("{not json", "not JSON"),
    ],
)
async def test_a_bad_contract_is_refused_naming_its_field_and_nothing_is_stored(
    settings: Settings, tmp_path: Path, contract: Any, named: str
) -> None:
    name = f"bad-{secrets.token_hex(3)}"
    refused = await admin_refusal(
        settings, "contracts", "add", name, "--file", contract_file(tmp_path, contract)
    )
    assert named in refused
    assert name not in [e["name"] for e in await run_admin(settings, "contracts", "list")]


async def test_a_contract_is_held_to_the_bounds_of_the_tariffs_command(
    settings: Settings, tmp_path: Path
) -> None:
    # The same bound refuses both, in the same words but for the name of the term.
    command = await admin_refusal(
        settings,
        "tariffs",
        "set",
        "1",
        "--medium",
        "power",
        "--from",
        "2026-01-01T00:00:00Z",
        "--price",
        "0.3",
        "--vat",
        "2000",
    )
    contract = await admin_refusal(
        settings,
        "contracts",
        "add",
        "vat-2000",
        "--file",
        contract_file(tmp_path, {"price": 0.3, "vat": 2000}),
    )
    assert command.replace("--vat", "$.vat").split(": ", 1)[1] == contract.split(": ", 1)[1]
