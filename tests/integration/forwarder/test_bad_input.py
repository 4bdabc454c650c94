"""Input the database could not hold is a 400 problem, never a 500, and changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.forwarder import NewCustomer
from tests.support.http import http_client

# Loopback only: a test never configures any other destination.
STORED = {"interval": 5, "url": "http://127.0.0.1:9/hook", "format": "json", "mode": "all"}

OUT_OF_RANGE: list[tuple[str, dict[str, Any]]] = [
    ("NUL in the user", {"url": "http://a%00b:pw@127.0.0.1:9/hook"}),
    ("NUL in the password", {"url": "http://user:p%00w@127.0.0.1:9/hook"}),
    ("control character in the user", {"url": "http://a%1Bb@127.0.0.1:9/hook"}),
    ("raw control character", {"url": "http://127.0.0.1:9/ho\u0007ok"}),
    ("url too long", {"url": "http://127.0.0.1:9/" + "a" * 3000}),
    ("medium beyond int4", {"allow_list": [{"medium": 2**31}]}),
    ("medium beyond int8", {"allow_list": [{"medium": 2**64}]}),
    ("negative medium", {"allow_list": [{"medium": -1}]}),
    ("index beyond int4", {"allow_list": [{"medium": 12, "index": [2**31]}]}),
    ("arabic-indic digits in obis", {"allow_list": [{"obis": "\u0661.\u0668.\u0660"}]}),
    ("obis too long", {"allow_list": [{"obis": "1" * 10_000}]}),
    ("too many filters", {"deny_list": [{"medium": 12}] * 1001}),
]


@pytest.mark.parametrize(("case", "change"), OUT_OF_RANGE, ids=[c for c, _ in OUT_OF_RANGE])
async def test_config_values_the_database_cannot_hold_are_400(
    api: str, new_customer: NewCustomer, case: str, change: dict[str, Any]
) -> None:
    customer = await new_customer()
    async with http_client(base_url=api, headers=customer.headers()) as client:
        assert (await client.post("/config", json=STORED)).status_code == 200
        answer = await client.post("/config", json={**STORED, **change})
        assert answer.status_code == 400, (case, answer.text)
        assert answer.headers["content-type"] == "application/problem+json"
        assert answer.json()["status"] == 400
        assert (await client.get("/config")).json() == STORED


@pytest.mark.parametrize(
    "sn", ["\u0660123456789ABCDEF", "0123456789ABCDE%C2%B2", "0123456789ABCDE%00"]
)
async def test_serial_numbers_with_non_ascii_or_nul_are_400(
    api: str, new_customer: NewCustomer, sn: str
) -> None:
    customer = await new_customer()
    async with http_client(base_url=api, headers=customer.headers()) as client:
        added = await client.post(f"/register/{sn}")
        removed = await client.delete(f"/register/{sn}")
        listed = await client.get("/register")
    assert (added.status_code, removed.status_code) == (400, 400)
    assert added.headers["content-type"] == "application/problem+json"
    assert listed.json() == {"registered": []}
