"""The services behind ``serve provisioning``: HTTP ``/api``, TFTP, and CoAP resources."""

from __future__ import annotations

import msgspec

from energy_platform.core.coap import CoapSite
from energy_platform.core.db.pool import PoolHolder
from energy_platform.core.http.server import HttpService
from energy_platform.core.lifecycle import Service
from energy_platform.core.settings import Settings
from energy_platform.core.tftp import TftpService
from energy_platform.provisioning.coap import add_config_resource
from energy_platform.provisioning.firmware import tftp_image
from energy_platform.provisioning.http import app as provisioning
from energy_platform.provisioning.http.context import Provisioning


def provisioning_services(s: Settings, coap: CoapSite) -> list[Service]:
    """HTTP ``/api`` (with a certificate: HTTPS, and plain HTTP on a port of its own) and TFTP
    for firmware of generations 0 and 3; ``/config/{sn}`` joins ``coap``.

    The HTTP app and the CoAP resource share one set of rate limits: they count the same devices.
    """
    shared = Provisioning.from_settings(s)
    add_config_resource(coap, s, shared.limits)
    firmware_db = PoolHolder(s.database)

    async def firmware(name: str) -> bytes | None:
        return await tftp_image(firmware_db.pool, name)

    app = provisioning.create_app(s, shared)
    services: list[Service] = [
        HttpService.configured("provisioning", app, s.http, s.http.provisioning_port),
        TftpService(
            "tftp", s.devices.host, s.provisioning.tftp_port, firmware, resources=firmware_db.opened
        ),
    ]
    if s.http.tls and s.http.provisioning_plain_port:
        # Homebases may speak HTTP or HTTPS (the spec): with a certificate, the same API on a
        # plain port too. An app of its own (its own pool and lifespan), the same rate limits.
        plain = msgspec.structs.replace(s.http, tls_cert="", tls_key="")
        services.append(
            HttpService.configured(
                "provisioning-http",
                provisioning.create_app(s, shared),
                plain,
                s.http.provisioning_plain_port,
            )
        )
    return services
