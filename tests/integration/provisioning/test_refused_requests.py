"""Requests that must be refused with a clear 4xx, leaving every row as it was."""

from __future__ import annotations

import httpx
import msgspec
import psycopg
import pytest

from energy_platform.core.http.server import HttpService
from energy_platform.core.settings import Settings
from energy_platform.provisioning.http import app as provisioning
from tests.support.provisioning import Stack, add_cluster, add_homebase, all_rows, new_sn
from tests.support.services import free_port, running

BAD_SERIALS = [
    "0123456789abcdef",
    "0123456789ABCDE",
    "0123456789ABCDEF0",
    "G123456789ABCDEF",
    "\u0660123456789ABCDEF",  # an Arabic-Indic zero first
    "0123456789ABCDE%00",
    "0123456789ABCDE%C2%B2",
]


def assert_problem(response: httpx.Response, status: int) -> None:
    assert response.status_code == status, (response.request.url, response.text)
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == status
    assert body["title"]
    assert body["detail"]


async def test_a_missing_or_wrong_cluster_header_is_401_and_changes_nothing(
    stack: Stack, http: httpx.AsyncClient, sync_db: psycopg.Connection
) -> None:
    cluster = await add_cluster(stack.settings)
    sn = await add_homebase(stack.settings)
    url = f"{stack.base}/device/{sn}/"
    before = all_rows(sync_db)

    for headers in ({}, {"X-SvcClusterAuth": ""}, {"X-SvcClusterAuth": cluster.secret + "0"}):
        for method, path in (
            ("GET", ""),
            ("GET", "pair/"),
            ("POST", "pair/"),
            ("POST", "unpair/"),
            ("GET", "secret/"),
        ):
            response = await http.request(method, url + path, headers=headers)
            assert_problem(response, 401)
            assert "secret" not in response.json()

    assert all_rows(sync_db) == before


async def test_bad_serial_numbers_are_400_on_every_path(
    stack: Stack, http: httpx.AsyncClient, sync_db: psycopg.Connection
) -> None:
    cluster = await add_cluster(stack.settings)
    before = all_rows(sync_db)
    for sn in BAD_SERIALS:
        url = f"{stack.base}/device/{sn}/"
        for method, path in (("GET", ""), ("GET", "pair/"), ("POST", "pair/"),
                             ("POST", "unpair/"), ("GET", "secret/")):  # fmt: skip
            response = await http.request(method, url + path, headers=cluster.auth)
            assert_problem(response, 400)
            assert response.json()["field"] == "sn"
        for path in ("boot/", "upgrade/"):
            assert_problem(await http.get(url + path), 400)
    assert all_rows(sync_db) == before


async def test_unknown_serial_numbers_are_404_for_homebases_too(
    stack: Stack, http: httpx.AsyncClient, sync_db: psycopg.Connection
) -> None:
    before = all_rows(sync_db)
    sn = new_sn()
    assert_problem(await http.get(f"{stack.base}/device/{sn}/boot/", params={"avr": "1"}), 404)
    assert_problem(await http.get(f"{stack.base}/device/{sn}/upgrade/"), 404)
    assert all_rows(sync_db) == before


async def test_an_invalid_reported_version_is_400_and_records_no_boot(
    stack: Stack, http: httpx.AsyncClient, sync_db: psycopg.Connection
) -> None:
    sn = await add_homebase(stack.settings)
    before = all_rows(sync_db)
    for avr in ("1.0; drop", "1.0\x00", "\u0661.0", "1" * 33, ""):
        response = await http.get(f"{stack.base}/device/{sn}/boot/", params={"avr": avr})
        assert_problem(response, 400)
        assert response.json()["field"] == "avr"
    assert all_rows(sync_db) == before


async def test_an_oversized_body_is_413_and_pairs_nothing(
    stack: Stack, http: httpx.AsyncClient, sync_db: psycopg.Connection
) -> None:
    cluster = await add_cluster(stack.settings)
    sn = await add_homebase(stack.settings)
    before = all_rows(sync_db)
    body = b"x" * (stack.settings.http.max_body_bytes + 1)
    response = await http.post(
        f"{stack.base}/device/{sn}/pair/", headers=cluster.auth, content=body
    )
    assert_problem(response, 413)
    assert all_rows(sync_db) == before


@pytest.mark.parametrize(
    ("method", "path"),
    [("PUT", "pair/"), ("DELETE", "pair/"), ("GET", "unpair/"), ("POST", "secret/"),
     ("POST", "boot/"), ("DELETE", "upgrade/"), ("POST", "")],
)  # fmt: skip
async def test_a_wrong_method_is_405_and_changes_nothing(
    stack: Stack, http: httpx.AsyncClient, sync_db: psycopg.Connection, method: str, path: str
) -> None:
    cluster = await add_cluster(stack.settings)
    sn = await add_homebase(stack.settings)
    before = all_rows(sync_db)
    response = await http.request(method, f"{stack.base}/device/{sn}/{path}", headers=cluster.auth)
    assert_problem(response, 405)
    assert all_rows(sync_db) == before


async def test_homebase_requests_are_rate_limited_per_serial_number_and_per_address(
    provisioning_settings: Settings, http: httpx.AsyncClient
) -> None:
    settings = msgspec.structs.replace(
        provisioning_settings,
        provisioning=msgspec.structs.replace(
            provisioning_settings.provisioning,
            sn_requests_per_minute=1,
            sn_burst=3,
            address_requests_per_minute=1,
            address_burst=8,
        ),
    )
    port = free_port()
    service = HttpService("provisioning", provisioning.create_app(settings), "127.0.0.1", port)
    base = f"http://127.0.0.1:{port}"
    one, others = await add_homebase(settings), [await add_homebase(settings) for _ in range(5)]
    async with running(service, ready_urls=(base + "/healthz",)):
        same_sn = [(await http.get(f"{base}/api/device/{one}/boot/")).status_code for _ in range(4)]
        same_address = [
            (await http.get(f"{base}/api/device/{sn}/upgrade/")).status_code for sn in others
        ]

    # 3 for the SN's burst, then 429; the address's burst of 8 runs out on the other homebases.
    assert same_sn == [409, 409, 409, 429]
    assert same_address == [404, 404, 404, 404, 429]
