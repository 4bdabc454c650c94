"""CoAP devices as the ingest tests use them: added with the admin commands, posting readings
to the data server over real UDP."""

from __future__ import annotations

import secrets
import time

import aiocoap
import msgspec

from energy_platform.core.coap import JSON
from tests.support.admin import run_admin
from tests.support.platform import Platform, add_feed


async def device(platform: Platform, *, here: bool = True, feed: bool = True) -> str:
    sn = secrets.token_hex(8).upper()
    port = platform.settings.devices.coap_port if here else 1
    await run_admin(
        platform.settings, "coap-devices", "add", sn, "--data-server", f"127.0.0.1:{port}"
    )
    if feed:
        # A CoAP device is assigned by provisioning, not paired like a homebase.
        await add_feed(platform.settings, platform.user_id, sn, title="Meter", pair=False)
    return sn


async def post(
    coap: aiocoap.Context,
    platform: Platform,
    path: str,
    payload: bytes | None,
    content_format: int | None = JSON,
) -> aiocoap.numbers.codes.Code:
    request = aiocoap.Message(
        code=aiocoap.POST,
        uri=f"coap://127.0.0.1:{platform.settings.devices.coap_port}/{path}",
        payload=payload or b"",
    )
    if content_format is not None:
        request.opt.content_format = content_format
    response = await coap.request(request).response
    assert response.payload == b""
    return response.code


def reading(**fields: object) -> bytes:
    return msgspec.json.encode({"f": 4, "t": int(time.time()) - 5, "d": 9, **fields})
