"""The CoAP data server as a client written elsewhere sees it: libcoap's ``coap-client``
(Debian's libcoap3-bin), a record of newer firmware and resource discovery (RFC 6690)."""

import asyncio
import re
import shutil
import time

import msgspec
import pytest

from tests.support.coap import device
from tests.support.platform import Platform, add_feed

CLIENT = shutil.which("coap-client-notls") or shutil.which("coap-client")
ERROR_CODE = re.compile(r"\b[45]\.\d\d\b")
pytestmark = pytest.mark.skipif(
    CLIENT is None, reason="libcoap3-bin is installed by scripts/install-system.sh --for-tests"
)


async def coap_client(*args: str) -> tuple[int, str, str]:
    """Run coap-client (waiting 5 s at most); (exit status, stdout, stderr). An error answer
    shows as its code ("4.00 ...") in the output."""
    assert CLIENT is not None
    process = await asyncio.create_subprocess_exec(
        CLIENT, "-B", "5", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await process.communicate()
    return process.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace")


async def test_coap_client_posts_a_record_of_newer_firmware_and_it_is_stored(
    platform: Platform,
) -> None:
    sn = await device(platform, feed=False)
    feed = (
        await add_feed(platform.settings, platform.user_id, sn, title="libcoap meter", pair=False)
    )["id"]
    t = int(time.time()) - 5
    record = msgspec.json.encode({"f": 4, "t": t, "d": 9, "o": {"1.7.0": 321.5}, "q": 1})
    port = platform.settings.devices.coap_port

    status, out, err = await coap_client(
        "-m", "post", "-t", "50", "-e", record.decode(), f"coap://127.0.0.1:{port}/data/{sn}"
    )

    assert status == 0, err
    assert not ERROR_CODE.search(out + err), out + err
    # What an error looks like to this client, so that the check above can fail: "ch" is a
    # homebase property, refused over CoAP.
    refused = msgspec.json.encode({"f": 4, "t": t, "d": 9, "ch": 1, "o": {"1.7.0": 1.0}})
    _, out, err = await coap_client(
        "-m", "post", "-t", "50", "-e", refused.decode(), f"coap://127.0.0.1:{port}/data/{sn}"
    )
    code = ERROR_CODE.search(out + err)
    assert code is not None, out + err
    assert code.group() == "4.00", out + err
    async with platform.client() as api:
        (power,) = (await api.get(f"/feeds/{feed}/streams")).json()
        points = (await api.get(f"/feeds/{feed}/streams/{power['id']}/data")).json()
    assert points == [[t, 321.5]]


async def test_coap_client_discovers_the_resources(platform: Platform) -> None:
    port = platform.settings.devices.coap_port
    status, out, err = await coap_client("-m", "get", f"coap://127.0.0.1:{port}/.well-known/core")
    assert status == 0, err
    for path in ("</data>", "</events>", "</config>", "</clock>"):
        assert path in out
