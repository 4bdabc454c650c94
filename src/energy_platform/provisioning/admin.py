"""``energy-platform admin clusters|homebases|firmware|upgrades|coap-devices``: JSON out.

A cluster secret is printed once, when the cluster is added, and stored only as its SHA-256.
A homebase secret is generated here, stored encrypted and never printed: clusters fetch it.
"""

from __future__ import annotations

import csv
import hashlib
import ipaddress
from collections.abc import Callable
from pathlib import Path

import asyncpg
import click
import msgspec

from energy_platform.core.console import CommandGroup, emit, run_in_transaction
from energy_platform.core.errors import InvalidInput, NotFound
from energy_platform.core.inputs import INT8_MAX, checked_text
from energy_platform.core.serials import COMPONENTS, checked_serial, checked_version
from energy_platform.core.settings import Settings
from energy_platform.provisioning.crypto import (
    SecretKey,
    cluster_secret_digest,
    new_cluster_secret,
    new_homebase_secret,
)

INSERT_CLUSTER = """
INSERT INTO provisioning.clusters (title, http_address, http_port, mqtt_address, mqtt_port,
                                   secret_sha256)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING id
"""
LIST_CLUSTERS = """
SELECT id, title, enabled, host(http_address), http_port, host(mqtt_address), mqtt_port,
       (SELECT count(*) FROM provisioning.homebases AS h WHERE h.cluster_id = c.id)
FROM provisioning.clusters AS c ORDER BY id
"""
SET_CLUSTER_ENABLED = "UPDATE provisioning.clusters SET enabled = $1 WHERE id = $2 RETURNING id"
REPLACE_CLUSTER_DIGEST = (
    "UPDATE provisioning.clusters SET secret_sha256 = $1 WHERE id = $2 RETURNING id"
)
INSERT_HOMEBASE = """
INSERT INTO provisioning.homebases (sn, partner, type, generation, secret_encrypted)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (sn) DO NOTHING
RETURNING sn
"""
INSERT_FIRMWARE = """
INSERT INTO provisioning.firmware_images (component, version, tags, image, sha256)
VALUES ($1, $2, $3, $4, $5)
RETURNING id, size
"""
FIRMWARE_ID = "SELECT id FROM provisioning.firmware_images WHERE component = $1 AND version = $2"
KNOWN_HOMEBASES = "SELECT sn FROM provisioning.homebases WHERE sn = ANY($1::text[])"
PREPARE_UPGRADES = """
INSERT INTO provisioning.upgrades (sn, firmware_id)
SELECT sn, $1 FROM unnest($2::text[]) AS sn
ON CONFLICT (sn) DO UPDATE SET firmware_id = excluded.firmware_id, prepared_at = now()
RETURNING sn
"""
CANCEL_UPGRADES = "DELETE FROM provisioning.upgrades WHERE sn = ANY($1::text[]) RETURNING sn"
UPSERT_COAP_DEVICE = """
INSERT INTO provisioning.coap_devices (sn, data_server_address, data_server_port)
VALUES ($1, $2, $3)
ON CONFLICT (sn) DO UPDATE
SET data_server_address = excluded.data_server_address,
    data_server_port = excluded.data_server_port
"""


class Address(msgspec.Struct, frozen=True):
    host: str
    port: int

    def pair(self) -> tuple[str, int]:
        return (self.host, self.port)


class ClusterOut(msgspec.Struct):
    id: int
    title: str
    enabled: bool
    http: tuple[str, int]
    mqtt: tuple[str, int]
    homebases: int = 0
    secret: str | None = None


class HomebaseRow(msgspec.Struct, frozen=True):
    """One row of ``homebases import``'s CSV (header: sn,partner,type,generation)."""

    sn: str
    partner: str
    type: str
    generation: int


def _address(value: str, field: str) -> Address:
    host, _, port = value.rpartition(":")
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
        number = int(port)
    except ValueError:
        raise InvalidInput(f"{field}: expected IP:PORT, got {value!r}") from None
    if not 1 <= number <= 65535:
        raise InvalidInput(f"{field}: port {number} is out of range")
    return Address(str(ip), number)


# --- clusters -------------------------------------------------------------------------------


@click.group("clusters", cls=CommandGroup)
def clusters() -> None:
    """Clusters that homebases are paired to."""


@clusters.command("add")
@click.option("--title", required=True, help="Human-readable description.")
@click.option("--http", "http", required=True, help="IP:PORT of the cluster's HTTP server.")
@click.option("--mqtt", "mqtt", required=True, help="IP:PORT of the cluster's MQTT broker.")
@click.pass_obj
def add_cluster(settings: Settings, title: str, http: str, mqtt: str) -> None:
    """Add a cluster; its secret is printed now and never again."""
    http_address, mqtt_address = _address(http, "--http"), _address(mqtt, "--mqtt")
    title = checked_text(title, "--title")
    secret = new_cluster_secret()

    async def work(conn: asyncpg.Connection) -> int:
        cluster_id: int = await conn.fetchval(
            INSERT_CLUSTER,
            title,
            http_address.host,
            http_address.port,
            mqtt_address.host,
            mqtt_address.port,
            cluster_secret_digest(secret),
        )
        return cluster_id

    cluster_id = run_in_transaction(settings.database, work)
    emit(
        ClusterOut(cluster_id, title, True, http_address.pair(), mqtt_address.pair(), secret=secret)
    )


@clusters.command("list")
@click.pass_obj
def list_clusters(settings: Settings) -> None:
    """Every cluster with its addresses and number of paired homebases (no secrets)."""
    rows = run_in_transaction(settings.database, lambda conn: conn.fetch(LIST_CLUSTERS))
    emit([ClusterOut(r[0], r[1], r[2], (r[3], r[4]), (r[5], r[6]), r[7]) for r in rows])


def _set_enabled(settings: Settings, cluster_id: int, enabled: bool) -> None:
    async def work(conn: asyncpg.Connection) -> None:
        if await conn.fetchval(SET_CLUSTER_ENABLED, enabled, cluster_id) is None:
            raise NotFound(f"no cluster has id {cluster_id}")

    run_in_transaction(settings.database, work)
    emit({"id": cluster_id, "enabled": enabled})


@clusters.command("enable")
@click.argument("cluster_id", type=click.IntRange(1, INT8_MAX))
@click.pass_obj
def enable_cluster(settings: Settings, cluster_id: int) -> None:
    """Let the cluster use the provisioning API again."""
    _set_enabled(settings, cluster_id, True)


@clusters.command("disable")
@click.argument("cluster_id", type=click.IntRange(1, INT8_MAX))
@click.pass_obj
def disable_cluster(settings: Settings, cluster_id: int) -> None:
    """Refuse the cluster's API calls (403); its homebases keep booting."""
    _set_enabled(settings, cluster_id, False)


@clusters.command("secret")
@click.argument("cluster_id", type=click.IntRange(1, INT8_MAX))
@click.pass_obj
def rotate_cluster_secret(settings: Settings, cluster_id: int) -> None:
    """Give the cluster a new secret, printed now and never again; the old one is refused
    (401) at once. Set it as the cluster's EP_PAIRING_CLUSTER_SECRET and restart its services."""
    secret = new_cluster_secret()

    async def work(conn: asyncpg.Connection) -> None:
        digest = cluster_secret_digest(secret)
        if await conn.fetchval(REPLACE_CLUSTER_DIGEST, digest, cluster_id) is None:
            raise NotFound(f"no cluster has id {cluster_id}")

    run_in_transaction(settings.database, work)
    emit({"id": cluster_id, "secret": secret})


# --- homebases ------------------------------------------------------------------------------


@click.group("homebases", cls=CommandGroup)
def homebases() -> None:
    """Homebases and their secrets."""


def _checked(row: HomebaseRow) -> HomebaseRow:
    checked_serial(row.sn)
    if row.generation not in (0, 3, 6):
        raise InvalidInput(f"{row.sn}: generation must be 0, 3 or 6")
    if not row.partner or not row.type:
        raise InvalidInput(f"{row.sn}: partner and type must not be empty")
    checked_text(row.partner, "partner", max_length=100)
    checked_text(row.type, "type", max_length=100)
    return row


def _insert_homebases(settings: Settings, rows: list[HomebaseRow]) -> list[str]:
    key = SecretKey(settings.provisioning.secret_key)

    async def work(conn: asyncpg.Connection) -> list[str]:
        added: list[str] = []
        for row in rows:
            secret = key.encrypt(row.sn, new_homebase_secret())
            inserted = await conn.fetchval(
                INSERT_HOMEBASE, row.sn, row.partner, row.type, row.generation, secret
            )
            if inserted is not None:
                added.append(row.sn)
        return added

    return run_in_transaction(settings.database, work)


@homebases.command("add")
@click.argument("sn")
@click.option("--partner", required=True)
@click.option("--type", "model", required=True, help="Model code.")
@click.option("--generation", type=click.Choice(["0", "3", "6"]), required=True)
@click.pass_obj
def add_homebase(settings: Settings, sn: str, partner: str, model: str, generation: str) -> None:
    """Add a homebase with a new 256-byte secret (stored encrypted, not printed)."""
    row = _checked(HomebaseRow(sn, partner, model, int(generation)))
    if not _insert_homebases(settings, [row]):
        raise InvalidInput(f"homebase {sn} exists already")
    emit({"sn": sn, "partner": partner, "type": model, "generation": int(generation)})


@homebases.command("import")
@click.argument("csv_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.pass_obj
def import_homebases(settings: Settings, csv_file: Path) -> None:
    """Add the homebases of a CSV file (sn,partner,type,generation), all or none."""
    with csv_file.open(newline="") as f:
        raw = list(csv.DictReader(f))
    try:
        rows = [_checked(r) for r in msgspec.convert(raw, list[HomebaseRow], strict=False)]
    except msgspec.ValidationError as e:
        raise InvalidInput(f"{csv_file.name}: {e}") from e
    added = _insert_homebases(settings, rows)
    emit({"imported": added, "existing": [r.sn for r in rows if r.sn not in set(added)]})


# --- firmware and upgrades ------------------------------------------------------------------


@click.group("firmware", cls=CommandGroup)
def firmware() -> None:
    """Firmware images."""


@firmware.command("upload")
@click.argument("image", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--component", type=click.Choice(COMPONENTS), required=True)
@click.option("--version", "version", required=True)
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.pass_obj
def upload_firmware(
    settings: Settings, image: Path, component: str, version: str, tags: tuple[str, ...]
) -> None:
    """Store an image; a homebase gets it once an upgrade to it is prepared."""
    checked_version(version, field="--version")
    for tag in tags:
        checked_text(tag, "--tag")
    content = image.read_bytes()
    digest = hashlib.sha256(content).digest()

    async def work(conn: asyncpg.Connection) -> asyncpg.Record:
        (row,) = await conn.fetch(INSERT_FIRMWARE, component, version, list(tags), content, digest)
        return row

    row = run_in_transaction(settings.database, work)
    emit(
        {
            "id": row[0],
            "component": component,
            "version": version,
            "tags": list(tags),
            "size": row[1],
            "sha256": digest.hex(),
        }
    )


def _serials(sns: tuple[str, ...], listing: Path | None) -> list[str]:
    values = list(sns)
    if listing is not None:
        values += [line.strip() for line in listing.read_text().splitlines() if line.strip()]
    if not values:
        raise InvalidInput("name at least one serial number (arguments or --file)")
    return sorted({checked_serial(v) for v in values})


def serial_numbers(command: Callable[..., None]) -> Callable[..., None]:
    """The homebases a command is for: serial numbers as arguments (``sns``) and/or in a file
    of one a line (``--file``, ``listing``); :func:`_serials` reads both."""
    command = click.option(
        "--file",
        "listing",
        type=click.Path(exists=True, path_type=Path),
        help="A file with one serial number per line.",
    )(command)
    return click.argument("sns", nargs=-1)(command)


@click.group("upgrades", cls=CommandGroup)
def upgrades() -> None:
    """Prepared firmware upgrades of homebases."""


@upgrades.command("prepare")
@serial_numbers
@click.option("--component", type=click.Choice(COMPONENTS), required=True)
@click.option("--version", "version", required=True)
@click.pass_obj
def prepare_upgrades(
    settings: Settings, sns: tuple[str, ...], listing: Path | None, component: str, version: str
) -> None:
    """Prepare an upgrade to an uploaded image for each homebase (replacing a prepared one)."""
    serials = _serials(sns, listing)

    async def work(conn: asyncpg.Connection) -> list[str]:
        image_id = await conn.fetchval(FIRMWARE_ID, component, version)
        if image_id is None:
            raise NotFound(f"no {component} image has version {version}")
        known = {r[0] for r in await conn.fetch(KNOWN_HOMEBASES, serials)}
        if unknown := [sn for sn in serials if sn not in known]:
            raise NotFound(f"unknown homebases: {', '.join(unknown)}")
        return [r[0] for r in await conn.fetch(PREPARE_UPGRADES, image_id, serials)]

    prepared = run_in_transaction(settings.database, work)
    emit({"prepared": sorted(prepared), "component": component, "version": version})


@upgrades.command("cancel")
@serial_numbers
@click.pass_obj
def cancel_upgrades(settings: Settings, sns: tuple[str, ...], listing: Path | None) -> None:
    """Cancel the prepared upgrades of these homebases."""
    serials = _serials(sns, listing)

    async def work(conn: asyncpg.Connection) -> list[str]:
        return [r[0] for r in await conn.fetch(CANCEL_UPGRADES, serials)]

    cancelled = run_in_transaction(settings.database, work)
    emit({"cancelled": sorted(cancelled)})


# --- CoAP devices ---------------------------------------------------------------------------


@click.group("coap-devices", cls=CommandGroup)
def coap_devices() -> None:
    """CoAP devices and their data servers."""


@coap_devices.command("add")
@click.argument("sn")
@click.option("--data-server", required=True, help="IP:PORT of the device's CoAP data server.")
@click.pass_obj
def add_coap_device(settings: Settings, sn: str, data_server: str) -> None:
    """Add a CoAP device (or move it to another data server)."""
    checked_serial(sn)
    server = _address(data_server, "--data-server")

    async def work(conn: asyncpg.Connection) -> None:
        await conn.execute(UPSERT_COAP_DEVICE, sn, server.host, server.port)

    run_in_transaction(settings.database, work)
    emit({"sn": sn, "data_server": server.pair()})


GROUPS: list[click.Command] = [clusters, homebases, firmware, upgrades, coap_devices]
