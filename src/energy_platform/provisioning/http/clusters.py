"""Cluster-facing endpoints: details, pairing, secret. Every call carries ``X-SvcClusterAuth``.

A cluster sees the details and the secret of a homebase only while it holds the pairing;
otherwise 403 (the SN exists, as the pairing status already tells any cluster).
"""

from __future__ import annotations

from ipaddress import ip_address
from typing import Annotated, Any

import msgspec
from litestar import Controller, Request, Response, get, post
from litestar.di import NamedDependency
from litestar.openapi import ResponseSpec
from litestar.params import Parameter
from litestar.status_codes import HTTP_200_OK, HTTP_304_NOT_MODIFIED

from energy_platform.core.errors import Forbidden, InvalidInput, NotFound, Unauthorized
from energy_platform.core.http.database import Database
from energy_platform.core.http.openapi import problems
from energy_platform.core.serials import checked_serial
from energy_platform.provisioning import queries
from energy_platform.provisioning.crypto import cluster_secret_digest, same_digest
from energy_platform.provisioning.http.context import SerialNumber, Shared, iso_millis
from energy_platform.provisioning.http.schemas import (
    AvrFirmware,
    ClusterSummary,
    CoapAssignment,
    Device,
    Firmware,
    Firmwares,
    HomebaseDetails,
    HomebaseSecret,
    PairedHomebases,
    PairingStatus,
    Servers,
)

HEADER = "X-SvcClusterAuth"


SN_PROBLEMS = problems(400)
"""A serial number that is not ``[0-9A-F]{16}``."""
NOT_MODIFIED = ResponseSpec(None, description="Nothing changed (no body)")


class CallingCluster(msgspec.Struct, frozen=True):
    id: int


Caller = NamedDependency[CallingCluster]
"""The authenticated cluster (``cluster``)."""


async def calling_cluster(request: Request[Any, Any, Any], pool: Database) -> CallingCluster:
    """The cluster whose secret the request carries: 401 if none does, 403 if it is disabled."""
    secret = request.headers.get(HEADER)
    if not secret:
        raise Unauthorized(f"the {HEADER} header is missing")
    digest = cluster_secret_digest(secret)
    # The lookup is by the SHA-256 of the secret, so its timing says nothing about the secret;
    # the comparison of the digests is constant-time anyway.
    row = await pool.fetchrow(queries.CALLING_CLUSTER, digest)
    if row is None or not same_digest(row["secret_sha256"], digest):
        raise Unauthorized(f"the {HEADER} header does not authorize any cluster")
    if not row["enabled"]:
        raise Forbidden("this cluster is disabled")
    return CallingCluster(row["id"])


async def _paired_cluster(pool: Database, sn: str) -> int | None:
    row = await pool.fetchrow(queries.HOMEBASE_PAIRING, sn)
    if row is None:
        raise NotFound(f"no homebase has serial number {sn}")
    cluster_id: int | None = row["cluster_id"]
    return cluster_id


def _status(paired_to: int | None, cluster: Caller) -> PairingStatus:
    if paired_to is None:
        return PairingStatus(False, False, "the homebase is not paired")
    if paired_to == cluster.id:
        return PairingStatus(True, True, "the homebase is paired to your cluster")
    return PairingStatus(True, False, "the homebase is paired to another cluster")


class ClusterController(Controller):
    path = "/device/{sn:str}"
    tags = ("clusters",)

    @get("/", summary="Homebase details (only for the cluster it is paired to)", opt=SN_PROBLEMS)
    async def details(self, sn: SerialNumber, cluster: Caller, pool: Database) -> HomebaseDetails:
        sn = checked_serial(sn)
        row = await pool.fetchrow(queries.HOMEBASE_DETAILS, sn)
        if row is None:
            raise NotFound(f"no homebase has serial number {sn}")
        if row["cluster_id"] != cluster.id:
            raise Forbidden("the homebase is not paired to your cluster")
        return HomebaseDetails(
            device=Device(row["partner"], row["sn"], row["type"]),
            alive=row["alive"],
            last_boot=iso_millis(row["last_boot"]),
            upgrade=iso_millis(row["last_upgrade"]),
            firmwares=Firmwares(
                avr=AvrFirmware(row["avr_version"], list(row["avr_tags"])),
                bl=Firmware(row["bl_version"]),
                msp=Firmware(row["msp_version"]),
            ),
            cluster=ClusterSummary(
                title=row["title"],
                enabled=row["enabled"],
                id=row["cluster_id"],
                servers=Servers(
                    (row["http_address"], row["http_port"]),
                    (row["mqtt_address"], row["mqtt_port"]),
                ),
            ),
        )

    @get("/pair/", summary="Pairing status, as seen by the calling cluster", opt=SN_PROBLEMS)
    async def pairing_status(
        self, sn: SerialNumber, cluster: Caller, pool: Database
    ) -> PairingStatus:
        sn = checked_serial(sn)
        return _status(await _paired_cluster(pool, sn), cluster)

    @post(
        "/pair/",
        status_code=HTTP_200_OK,
        summary="Pair: 200, or 304 if already paired",
        opt=SN_PROBLEMS,
        responses={304: NOT_MODIFIED},
    )
    async def pair(
        self, sn: SerialNumber, cluster: Caller, pool: Database, request: Request[Any, Any, Any]
    ) -> Response[PairingStatus | None]:
        sn = checked_serial(sn)
        await request.body()  # no body is defined; reading it enforces the size limit (413)
        if await pool.fetchrow(queries.PAIR, sn, cluster.id) is not None:
            return Response(_status(cluster.id, cluster))
        await _paired_cluster(pool, sn)  # 404 for an unknown SN
        return Response(None, status_code=HTTP_304_NOT_MODIFIED)

    @post(
        "/unpair/",
        status_code=HTTP_200_OK,
        summary="Unpair: 200, or 304 if not yours",
        opt=SN_PROBLEMS,
        responses={304: NOT_MODIFIED},
    )
    async def unpair(
        self, sn: SerialNumber, cluster: Caller, pool: Database, request: Request[Any, Any, Any]
    ) -> Response[PairingStatus | None]:
        sn = checked_serial(sn)
        await request.body()
        if await pool.fetchrow(queries.UNPAIR, sn, cluster.id) is not None:
            return Response(_status(None, cluster))
        await _paired_cluster(pool, sn)
        return Response(None, status_code=HTTP_304_NOT_MODIFIED)

    @get(
        "/secret/",
        summary="The homebase secret (only for the cluster it is paired to)",
        opt=problems(400, 503),  # 503 while no encryption key is configured
    )
    async def secret(
        self, sn: SerialNumber, cluster: Caller, pool: Database, provisioning: Shared
    ) -> HomebaseSecret:
        sn = checked_serial(sn)
        row = await pool.fetchrow(queries.PAIRED_CIPHERTEXT, sn)
        if row is None:
            raise NotFound(f"no homebase has serial number {sn}")
        if row["cluster_id"] != cluster.id:
            raise Forbidden("the homebase is not paired to your cluster")
        secret = provisioning.key.decrypt(sn, row["secret_encrypted"])
        return HomebaseSecret(secret.hex(), "the homebase secret, 256 bytes as hex")


class CallingClusterController(Controller):
    """What a cluster asks about itself (beside the spec's per-homebase endpoints)."""

    path = "/cluster"
    tags = ("clusters",)

    @get("/homebases/", summary="Serial numbers of the homebases paired to the calling cluster")
    async def paired(self, cluster: Caller, pool: Database) -> PairedHomebases:
        # A cluster reconciles its broker's accounts with this (admin broker-accounts sync).
        return PairedHomebases(
            [row["sn"] for row in await pool.fetch(queries.PAIRED_TO, cluster.id)]
        )


class CoapDeviceController(Controller):
    """What a cluster's CoAP data server asks before it takes a device's data: whether the
    device is assigned to it (the spec's 4.05 otherwise). Yes or no only: a cluster learns no
    other data server's address."""

    path = "/coap-device/{sn:str}"
    tags = ("clusters",)

    @get(
        "/assignment/",
        summary="Whether the CoAP device sends to the data server at address:port",
        opt=SN_PROBLEMS,
    )
    async def assignment(
        self,
        sn: SerialNumber,
        cluster: Caller,
        pool: Database,
        address: Annotated[str, Parameter(description="The data server's IP address.")],
        port: Annotated[int, Parameter(ge=1, le=65535, description="Its UDP port.")],
    ) -> CoapAssignment:
        sn = checked_serial(sn)
        try:
            ip = ip_address(address)
        except ValueError:
            raise InvalidInput(f"{address!r} is not an IP address", field="address") from None
        row = await pool.fetchrow(queries.COAP_DATA_SERVER, sn)
        if row is None:
            raise NotFound(f"no CoAP device has serial number {sn}")
        return CoapAssignment(ip_address(row["address"]) == ip and row["port"] == port)
