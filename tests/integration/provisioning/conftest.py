"""The provisioning service (HTTP, TFTP, CoAP) running in the test's loop, and ways to set it up.

Setup goes through the admin commands themselves (called in-process, with the same settings);
assertions look at what a cluster or a homebase sees and at the rows in the database.
"""

from __future__ import annotations

import secrets
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import msgspec
import psycopg
import pytest

from energy_platform.devices.coap import CoapService, CoapSite
from energy_platform.provisioning.services import provisioning_services
from energy_platform.settings import DeviceSettings, ProvisioningSettings, Settings
from tests.support.admin import run_admin
from tests.support.services import free_port, running


class Stack(msgspec.Struct, frozen=True):
    settings: Settings
    base: str
    """``http://host:port/api``."""

    @property
    def coap_port(self) -> int:
        return self.settings.devices.coap_port

    @property
    def tftp_port(self) -> int:
        return self.settings.devices.tftp_port


@pytest.fixture(scope="session")
def provisioning_settings(settings: Settings) -> Settings:
    """The session's settings with a secret key and free UDP ports for CoAP and TFTP."""
    return msgspec.structs.replace(
        settings,
        devices=DeviceSettings(
            coap_port=free_port(socket.SOCK_DGRAM), tftp_port=free_port(socket.SOCK_DGRAM)
        ),
        provisioning=ProvisioningSettings(secret_key=secrets.token_hex(32)),
    )


@pytest.fixture(scope="session")
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
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


def new_sn() -> str:
    return secrets.token_hex(8).upper()


class Cluster(msgspec.Struct, frozen=True):
    id: int
    secret: str

    @property
    def auth(self) -> dict[str, str]:
        return {"X-SvcClusterAuth": self.secret}


def add_cluster(settings: Settings, title: str = "cluster") -> Cluster:
    out = run_admin(
        settings,
        "clusters",
        "add",
        "--title",
        title,
        "--http",
        "10.0.0.1:80",
        "--mqtt",
        "10.0.0.2:1883",
    )
    return Cluster(out["id"], out["secret"])


def add_homebase(settings: Settings, generation: int = 6) -> str:
    sn = new_sn()
    run_admin(
        settings,
        "homebases",
        "add",
        sn,
        "--partner",
        "acme",
        "--type",
        "HB-1",
        "--generation",
        str(generation),
    )
    return sn


@pytest.fixture(scope="session")
def db(provisioning_settings: Settings) -> Iterator[psycopg.Connection]:
    """A connection for asserting on rows (autocommit: each query sees the latest state)."""
    with psycopg.connect(provisioning_settings.database.url, autocommit=True) as conn:
        yield conn


def homebase_row(db: psycopg.Connection, sn: str) -> dict[str, Any] | None:
    with db.cursor(row_factory=psycopg.rows.dict_row) as cursor:
        return cursor.execute(
            "SELECT * FROM provisioning.homebases WHERE sn = %s", (sn,)
        ).fetchone()


def all_rows(db: psycopg.Connection) -> list[tuple[Any, ...]]:
    """Every provisioning row there is, to show that a refused request changed nothing."""
    return [row for query in EVERY_TABLE for row in db.execute(query).fetchall()]


EVERY_TABLE = (
    "SELECT * FROM provisioning.clusters ORDER BY id",
    "SELECT * FROM provisioning.homebases ORDER BY sn",
    "SELECT * FROM provisioning.upgrades ORDER BY sn",
    "SELECT id, component, version, sha256 FROM provisioning.firmware_images ORDER BY id",
    "SELECT * FROM provisioning.coap_devices ORDER BY sn",
)
