"""The services behind ``serve provisioning``: HTTP ``/api``, TFTP, and CoAP resources."""

from __future__ import annotations

from energy_platform.api.provisioning import app as provisioning
from energy_platform.api.provisioning.context import Provisioning
from energy_platform.api.server import HttpService
from energy_platform.db.pool import PoolHolder
from energy_platform.devices.coap import CoapSite
from energy_platform.devices.tftp import TftpService
from energy_platform.lifecycle import Service
from energy_platform.provisioning.coap import add_config_resource
from energy_platform.provisioning.firmware import tftp_image
from energy_platform.settings import Settings


def provisioning_services(s: Settings, coap: CoapSite) -> list[Service]:
    """HTTP ``/api`` and TFTP for firmware of generations 0 and 3; ``/config/{sn}`` joins ``coap``.

    The HTTP app and the CoAP resource share one set of rate limits: they count the same devices.
    """
    shared = Provisioning.from_settings(s)
    add_config_resource(coap, s, shared.limits)
    firmware_db = PoolHolder(s.database)

    async def firmware(name: str) -> bytes | None:
        return await tftp_image(firmware_db.pool, name)

    app = provisioning.create_app(s, shared)
    return [
        HttpService.configured("provisioning", app, s.http, s.http.provisioning_port),
        TftpService(
            "tftp", s.devices.host, s.devices.tftp_port, firmware, resources=firmware_db.opened
        ),
    ]
