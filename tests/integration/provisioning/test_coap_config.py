"""CoAP provisioning over real UDP: ``GET /config/{sn}`` answers the data server and the time."""

from __future__ import annotations

import json
import time

import aiocoap
import psycopg

from tests.support.admin import run_admin
from tests.support.provisioning import Stack, new_sn


async def get(coap: aiocoap.Context, stack: Stack, path: str) -> aiocoap.Message:
    request = aiocoap.Message(code=aiocoap.GET, uri=f"coap://127.0.0.1:{stack.coap_port}{path}")
    return await coap.request(request).response


async def test_a_registered_device_gets_its_data_server_and_the_time(
    stack: Stack, coap: aiocoap.Context, sync_db: psycopg.Connection
) -> None:
    sn = new_sn()
    await run_admin(stack.settings, "coap-devices", "add", sn, "--data-server", "192.0.2.7:5683")

    response = await get(coap, stack, f"/config/{sn}")

    assert response.code == aiocoap.CONTENT
    assert response.opt.content_format == 50
    body = json.loads(response.payload)
    assert body["data_server"] == ["192.0.2.7", 5683]
    assert abs(body["time"] - time.time()) < 5
    assert body["interval"] == stack.settings.provisioning.config_interval
    row = sync_db.execute(
        "SELECT last_config FROM provisioning.coap_devices WHERE sn = %s", (sn,)
    ).fetchone()
    assert row is not None
    assert row[0] is not None  # the request is the device's heartbeat


async def test_a_moved_device_is_told_its_new_data_server(
    stack: Stack, coap: aiocoap.Context
) -> None:
    sn = new_sn()
    await run_admin(stack.settings, "coap-devices", "add", sn, "--data-server", "192.0.2.7:5683")
    await run_admin(stack.settings, "coap-devices", "add", sn, "--data-server", "192.0.2.8:15683")

    response = await get(coap, stack, f"/config/{sn}")

    assert json.loads(response.payload)["data_server"] == ["192.0.2.8", 15683]


async def test_bad_and_unknown_serial_numbers_get_4_00_and_4_04(
    stack: Stack, coap: aiocoap.Context
) -> None:
    bad = await get(coap, stack, "/config/0123456789abcdef")
    unknown = await get(coap, stack, f"/config/{new_sn()}")
    no_sn = await get(coap, stack, "/config")

    assert bad.code == aiocoap.BAD_REQUEST
    assert unknown.code == aiocoap.NOT_FOUND
    assert no_sn.code == aiocoap.NOT_FOUND
    assert bad.payload == b""
