"""Provisioning set up as an operator does it (the admin commands, in-process), and the rows a
test asserts on."""

from __future__ import annotations

import secrets
from typing import Any

import msgspec
import psycopg

from energy_platform.core.settings import Settings
from tests.support.admin import run_admin


class Stack(msgspec.Struct, frozen=True):
    """``serve provisioning`` as the provisioning tests run it."""

    settings: Settings
    base: str
    """``http://host:port/api``."""

    @property
    def coap_port(self) -> int:
        return self.settings.devices.coap_port

    @property
    def tftp_port(self) -> int:
        return self.settings.provisioning.tftp_port


def new_sn() -> str:
    """A serial number no other test uses."""
    return secrets.token_hex(8).upper()


class Cluster(msgspec.Struct, frozen=True):
    id: int
    secret: str

    @property
    def auth(self) -> dict[str, str]:
        return {"X-SvcClusterAuth": self.secret}


async def add_cluster(settings: Settings, title: str = "cluster") -> Cluster:
    out = await run_admin(
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


async def add_homebase(settings: Settings, generation: int = 6) -> str:
    sn = new_sn()
    await run_admin(
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
