"""The forwarder API: customer tokens, /config with every validation rule, /register."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from energy_platform.core.settings import Settings
from tests.support.admin import run_admin
from tests.support.forwarder import NewCustomer, configure, grant
from tests.support.http import http_client
from tests.support.platform import add_feed
from tests.support.provisioning import new_sn

VALID = {"interval": 5, "url": "http://127.0.0.1:9/hook", "format": "json", "mode": "all"}


async def test_every_endpoint_needs_a_customer_token(api: str) -> None:
    async with http_client(base_url=api) as client:
        for method, path in (
            ("GET", "/config"),
            ("POST", "/config"),
            ("GET", "/register"),
            ("POST", "/register/0123456789ABCDEF"),
            ("DELETE", "/register/0123456789ABCDEF"),
        ):
            for headers in ({}, {"Authorization": "Bearer not-a-token"}):
                answer = await client.request(method, path, headers=headers, json=VALID)
                assert answer.status_code == 401, (method, path)
                assert answer.headers["content-type"] == "application/problem+json"
                assert answer.headers["www-authenticate"].startswith("Bearer")


async def test_config_is_404_until_posted_then_answers_what_was_stored(
    api: str, new_customer: NewCustomer
) -> None:
    customer = await new_customer()
    async with http_client(base_url=api, headers=customer.headers()) as client:
        assert (await client.get("/config")).status_code == 404
        body = {
            **VALID,
            "mode": "aggregated",
            "interval": 15,
            "url": "http://user:secret@127.0.0.1:8080/in?x=1",
            "deny_list": [{"medium": 12, "index": [1, 2]}, {"obis": "1.8.0"}],
        }
        posted = await client.post("/config", json=body)
        assert posted.status_code == 200, posted.text
        expected = {**body, "deny_list": [{"medium": 12, "index": [1, 2]}, {"obis": "1-0:1.8.0"}]}
        assert posted.json() == expected
        assert (await client.get("/config")).json() == expected
        replaced = await client.post("/config", json=VALID)
        assert replaced.json() == VALID
        assert (await client.get("/config")).json() == VALID


async def test_an_obis_filter_takes_every_form_ingest_stores(
    api: str, new_customer: NewCustomer
) -> None:
    # Ingest stores codes with a past billing period's suffix (*F) as streams of their own, and
    # *255 (the current value) as the code without it: a filter names them in any form, short
    # or full, and means what ingest stores.
    customer = await new_customer()
    codes = ["1-0:1.8.0*255", "2.8.0*1", "255-255:255.255.255*255"]
    async with http_client(base_url=api, headers=customer.headers()) as client:
        posted = await client.post(
            "/config", json={**VALID, "allow_list": [{"obis": code} for code in codes]}
        )
        assert posted.status_code == 200, posted.text
        assert [f["obis"] for f in posted.json()["allow_list"]] == [
            "1-0:1.8.0",
            "1-0:2.8.0*1",
            "255-255:255.255.255",
        ]


INVALID: list[tuple[str, dict[str, Any]]] = [
    ("interval 0", {"interval": 0}),
    ("interval 61", {"interval": 61}),
    ("interval not an integer", {"interval": "5"}),
    ("relative url", {"url": "/hook"}),
    ("ftp url", {"url": "ftp://127.0.0.1/hook"}),
    ("url without host", {"url": "http:///hook"}),
    ("url not a string", {"url": 5}),
    ("format xml", {"format": "xml"}),
    ("mode other", {"mode": "sometimes"}),
    ("empty filter", {"allow_list": [{}]}),
    ("index without medium", {"allow_list": [{"index": [1]}]}),
    ("index without medium, with obis", {"deny_list": [{"index": [1], "obis": "1.8.0"}]}),
    ("empty index", {"allow_list": [{"medium": 12, "index": []}]}),
    ("both lists", {"allow_list": [{"medium": 5}], "deny_list": [{"medium": 12}]}),
    ("filter not an object", {"allow_list": [5]}),
    ("unknown filter field", {"allow_list": [{"medium": 5, "colour": 1}]}),
    ("unknown field", {"intervall": 5}),
    ("bad obis", {"allow_list": [{"obis": "power"}]}),
]


@pytest.mark.parametrize(("case", "change"), INVALID, ids=[c for c, _ in INVALID])
async def test_an_invalid_config_is_400_and_changes_nothing(
    api: str, new_customer: NewCustomer, case: str, change: dict[str, Any]
) -> None:
    customer = await new_customer()
    async with http_client(base_url=api, headers=customer.headers()) as client:
        assert (await client.post("/config", json=VALID)).status_code == 200
        answer = await client.post("/config", json={**VALID, **change})
        assert answer.status_code == 400, (case, answer.text)
        assert answer.headers["content-type"] == "application/problem+json"
        assert answer.json()["status"] == 400
        assert (await client.get("/config")).json() == VALID


@pytest.mark.parametrize(
    "missing", ["interval", "url", "format", "mode"], ids=lambda m: f"without {m}"
)
async def test_every_required_field_is_required(
    api: str, new_customer: NewCustomer, missing: str
) -> None:
    customer = await new_customer()
    body = {k: v for k, v in VALID.items() if k != missing}
    async with http_client(base_url=api, headers=customer.headers()) as client:
        assert (await client.post("/config", json=body)).status_code == 400


async def test_one_empty_list_beside_a_filled_one_is_accepted(
    api: str, new_customer: NewCustomer
) -> None:
    customer = await new_customer()
    answer = await configure(api, customer, VALID["url"], allow_list=[{"medium": 5}], deny_list=[])
    assert answer.status_code == 200
    assert answer.json()["allow_list"] == [{"medium": 5}]


async def test_registration_201_200_409_404_and_any_payload_is_ignored(
    api: str, new_customer: NewCustomer, db: asyncpg.Connection
) -> None:
    alice, bob = await new_customer(), await new_customer()
    sn = new_sn()
    await grant(db, alice, sn)
    await grant(db, bob, sn)
    async with (
        http_client(base_url=api, headers=alice.headers()) as a,
        http_client(base_url=api, headers=bob.headers()) as b,
    ):
        first = await a.post(f"/register/{sn}", content=b"\x00 not json at all")
        assert first.status_code == 201, first.text
        assert first.json()["sn"] == sn
        again = await a.post(f"/register/{sn}", json={"anything": [1, 2]})
        assert again.status_code == 200
        assert again.json() == first.json()
        assert (await b.post(f"/register/{sn}")).status_code == 409
        assert (await a.get("/register")).json() == {"registered": [sn]}
        assert (await b.get("/register")).json() == {"registered": []}
        assert (await b.delete(f"/register/{sn}")).status_code == 404
        gone = await a.delete(f"/register/{sn}")
        assert gone.status_code == 200
        assert gone.json()["sn"] == sn
        assert (await a.delete(f"/register/{sn}")).status_code == 404
        assert (await a.get("/register")).json() == {"registered": []}
        assert (await b.post(f"/register/{sn}")).status_code == 201
    periods = await db.fetch(
        "SELECT customer_id, upper_inf(period) AS open FROM forwarder.registration_periods"
        " WHERE homebase_sn = $1 ORDER BY lower(period)",
        sn,
    )
    assert [(p["customer_id"], p["open"]) for p in periods] == [(alice.id, False), (bob.id, True)]


@pytest.mark.parametrize(
    "sn", ["0123456789abcdef", "0123456789ABCDE", "0123456789ABCDEF0", "0123456789ABCDEG"]
)
async def test_a_serial_number_must_match_the_pattern(
    api: str, new_customer: NewCustomer, sn: str
) -> None:
    customer = await new_customer()
    async with http_client(base_url=api, headers=customer.headers()) as client:
        for method in ("POST", "DELETE"):
            answer = await client.request(method, f"/register/{sn}")
            assert answer.status_code == 400, (method, answer.text)
            assert answer.headers["content-type"] == "application/problem+json"


async def test_a_registered_homebase_leaves_the_data_api_and_comes_back(
    api: str,
    settings: Settings,
    new_customer: NewCustomer,
    db: asyncpg.Connection,
) -> None:
    from energy_platform.api import app as data
    from energy_platform.core.http.server import HttpService
    from tests.support.services import free_port, running

    user = await run_admin(settings, "users", "add", f"fw-{new_sn()}")
    sn = new_sn()
    feed = await add_feed(settings, user["id"], sn, title="Forwarded home")
    port = free_port()
    service = HttpService("api", data.create_app(settings), "127.0.0.1", port)
    customer = await new_customer()
    await grant(db, customer, sn)
    base = f"http://127.0.0.1:{port}"
    async with (
        running(service, ready_urls=(base + "/healthz",)),
        http_client(
            base_url=base, headers={"Authorization": f"Bearer {user['token']}"}
        ) as data_api,
        http_client(base_url=api, headers=customer.headers()) as fw,
    ):
        assert (await data_api.get(f"/feeds/{feed['id']}")).status_code == 200
        assert (await fw.post(f"/register/{sn}")).status_code == 201
        assert (await data_api.get(f"/feeds/{feed['id']}")).status_code == 404
        listed = (await data_api.get(f"/users/{user['id']}/feeds")).json()
        assert feed["id"] not in [f["id"] for f in listed]
        assert (await fw.delete(f"/register/{sn}")).status_code == 200
        assert (await data_api.get(f"/feeds/{feed['id']}")).status_code == 200


async def test_admin_adds_a_customer_whose_token_works_and_is_never_listed(
    api: str, settings: Settings, db: asyncpg.Connection
) -> None:
    added = await run_admin(settings, "customers", "add", f"cli-{new_sn()}")
    try:
        async with http_client(
            base_url=api, headers={"Authorization": f"Bearer {added['token']}"}
        ) as client:
            assert (await client.get("/register")).json() == {"registered": []}
        listed = await run_admin(settings, "customers", "list")
        mine = [c for c in listed if c["id"] == added["id"]]
        assert len(mine) == 1
        assert "token" not in mine[0]
        assert added["token"] not in str(listed)
        with pytest.raises(SystemExit):
            await run_admin(settings, "customers", "add", added["name"])
    finally:
        await db.execute("DELETE FROM forwarder.customers WHERE id = $1", int(added["id"]))
