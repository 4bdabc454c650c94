"""CoAP provisioning: ``GET /config/{sn}`` names a device's data server; also a heartbeat."""

from __future__ import annotations

import time

import aiocoap
import msgspec

from energy_platform.core.coap import CoapSite, SerialResource, client_address, json_response
from energy_platform.core.db.pool import PoolHolder
from energy_platform.core.errors import NotFound
from energy_platform.core.ratelimit import DeviceRateLimits
from energy_platform.core.serials import checked_serial
from energy_platform.core.settings import Settings
from energy_platform.provisioning import queries


class DeviceConfig(msgspec.Struct, frozen=True):
    data_server: tuple[str, int]
    """Address and UDP port of the data server the device sends to."""
    time: int
    """Current Unix time, seconds."""
    interval: int
    """Seconds until the device should ask for its configuration again."""


def add_config_resource(site: CoapSite, settings: Settings, limits: DeviceRateLimits) -> None:
    """Add ``/config/{sn}`` to ``site``."""
    database = PoolHolder(settings.database)
    interval = settings.provisioning.config_interval

    async def config(sn: str, request: aiocoap.Message) -> aiocoap.Message:
        sn = checked_serial(sn)
        limits.check(sn, client_address(request))
        row = await database.pool.fetchrow(queries.COAP_CONFIG, sn)
        if row is None:
            raise NotFound(f"no CoAP device has serial number {sn}")
        return json_response(
            DeviceConfig((row["address"], row["port"]), int(time.time()), interval)
        )

    site.add(("config",), SerialResource(config), needs=database.opened)
