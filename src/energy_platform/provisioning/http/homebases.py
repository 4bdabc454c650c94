"""Homebase-facing endpoints: the boot heartbeat and the firmware download.

A homebase is known by its SN alone; both endpoints are rate-limited per SN and per address.
"""

from __future__ import annotations

import ipaddress
import time
from typing import Any

from litestar import Controller, Request, Response, get
from litestar.openapi import ResponseSpec
from litestar.params import FromQuery
from litestar.status_codes import HTTP_200_OK, HTTP_202_ACCEPTED

from energy_platform.core.errors import Conflict, NotFound
from energy_platform.core.http.database import Database
from energy_platform.core.http.openapi import problems
from energy_platform.core.serials import checked_serial, checked_version
from energy_platform.provisioning import queries
from energy_platform.provisioning.firmware import (
    TFTP_GENERATIONS,
    prepared_image,
    tftp_file_name,
)
from energy_platform.provisioning.http.context import SerialNumber, Shared
from energy_platform.provisioning.http.schemas import (
    BootAnswer,
    Servers,
    TftpLocation,
    UpgradeOffer,
)


def _client(request: Request[Any, Any, Any]) -> str:
    return request.client.host if request.client else ""


def _ip(address: str) -> str | None:
    """``address`` if it is an IP address (what the ``inet`` column takes), else None."""
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        return None


class HomebaseController(Controller):
    path = "/device/{sn:str}"
    tags = ("homebases",)

    @get(
        "/boot/",
        summary="Boot and heartbeat: the cluster's addresses (200), and an upgrade (202)",
        description="Query parameters avr, bl and msp report the running firmware versions.",
        opt=problems(400, 409, 429),
        responses={
            202: ResponseSpec(BootAnswer, description="An upgrade is prepared: fetch it first")
        },
    )
    async def boot(
        self,
        sn: SerialNumber,
        request: Request[Any, Any, Any],
        pool: Database,
        provisioning: Shared,
        avr: FromQuery[str | None] = None,
        bl: FromQuery[str | None] = None,
        msp: FromQuery[str | None] = None,
    ) -> Response[BootAnswer]:
        sn = checked_serial(sn)
        for field, value in (("avr", avr), ("bl", bl), ("msp", msp)):
            checked_version(value, field=field)
        address = _client(request)
        provisioning.limits.check(sn, address)
        async with pool.acquire() as conn, conn.transaction():
            booted = await conn.fetchrow(queries.RECORD_BOOT, sn, _ip(address), avr, bl, msp)
            if booted is None:
                raise NotFound(f"no homebase has serial number {sn}")
            await conn.execute(queries.COMPLETE_UPGRADE, sn, avr, bl, msp)
            row = await conn.fetchrow(queries.BOOT_ANSWER, sn)
        if row is None:
            raise NotFound(f"no homebase has serial number {sn}")
        cluster = None
        if row["cluster_id"] is not None:
            cluster = Servers(
                (row["http_address"], row["http_port"]), (row["mqtt_address"], row["mqtt_port"])
            )
        now = int(time.time())
        # A prepared upgrade wins, paired or not: a stock homebase upgrades before it is sold.
        if row["component"] is None:
            if cluster is None:
                raise Conflict("the homebase is not paired to any cluster")
            return Response(BootAnswer(cluster=cluster, time=now), status_code=HTTP_200_OK)
        offer = UpgradeOffer(row["component"], row["version"], row["size"], row["sha256"].hex())
        if row["generation"] in TFTP_GENERATIONS:
            file = tftp_file_name(sn, row["component"], row["version"])
            tftp = TftpLocation(provisioning.tftp_port, file)
            answer = BootAnswer(cluster=cluster, time=now, upgrade=offer, tftp=tftp)
        else:
            path = f"/api/device/{sn}/upgrade/"
            url = str(request.url.with_replacements(path=path, query=""))
            answer = BootAnswer(cluster=cluster, time=now, upgrade=offer, url=url)
        return Response(answer, status_code=HTTP_202_ACCEPTED)

    @get(
        "/upgrade/",
        summary="The prepared firmware image (every generation); 404 when none is prepared",
        media_type="application/octet-stream",
        opt=problems(400, 429),
    )
    async def upgrade(
        self,
        sn: SerialNumber,
        request: Request[Any, Any, Any],
        pool: Database,
        provisioning: Shared,
    ) -> Response[bytes]:
        sn = checked_serial(sn)
        provisioning.limits.check(sn, _client(request))
        # Generations 0 and 3 are offered TFTP at boot, but HTTP serves them the same bytes.
        prepared = await prepared_image(pool, sn)
        return Response(
            prepared.image,
            media_type="application/octet-stream",
            headers={
                "ETag": f'"{prepared.sha256.hex()}"',
                "Content-Disposition": (
                    f'attachment; filename="{prepared.component}-{prepared.version}.bin"'
                ),
            },
        )
