"""The provisioning service (HTTP, TFTP, CoAP) running in the test's loop.

Setup goes through the admin commands themselves (tests/support/provisioning.py); assertions
look at what a cluster or a homebase sees and at the rows in the database.
"""

from __future__ import annotations

import secrets
import socket
from collections.abc import AsyncIterator

import httpx
import msgspec
import pytest

from energy_platform.core.coap import CoapService, CoapSite
from energy_platform.core.settings import DeviceSettings, ProvisioningSettings, Settings
from energy_platform.provisioning.services import provisioning_services
from tests.support.http import http_client
from tests.support.provisioning import Stack
from tests.support.services import free_port, running


@pytest.fixture(scope="module")
def provisioning_settings(settings: Settings) -> Settings:
    """The session's settings with a secret key and free UDP ports for CoAP and TFTP."""
    return msgspec.structs.replace(
        settings,
        devices=DeviceSettings(coap_port=free_port(socket.SOCK_DGRAM)),
        provisioning=ProvisioningSettings(
            secret_key=secrets.token_hex(32), tftp_port=free_port(socket.SOCK_DGRAM)
        ),
    )


@pytest.fixture(scope="module")
async def stack(provisioning_settings: Settings) -> AsyncIterator[Stack]:
    """``serve provisioning``: the HTTP API, the TFTP server and the CoAP endpoint."""
    s = provisioning_settings
    base = f"http://{s.http.host}:{s.http.provisioning_port}"
    # What build_services("provisioning") makes, without importing the other domains' services.
    coap = CoapSite()
    services = [
        *provisioning_services(s, coap),
        CoapService("coap", "127.0.0.1", s.devices.coap_port, coap),
    ]
    async with running(*services, ready_urls=(base + "/healthz",)):
        yield Stack(s, base + "/api")


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with http_client(timeout=10) as client:
        yield client
