"""What the provisioning handlers share: the key, the rate limits, the path's serial number."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import msgspec
import structlog
from litestar.di import NamedDependency
from litestar.params import Parameter

from energy_platform.core.errors import Unavailable
from energy_platform.core.ratelimit import DeviceRateLimits
from energy_platform.core.serials import SERIAL_NUMBER
from energy_platform.core.settings import Settings
from energy_platform.provisioning.crypto import SecretKey

log = structlog.get_logger()


class Provisioning(msgspec.Struct, frozen=True, kw_only=True):
    key_or_none: SecretKey | None
    limits: DeviceRateLimits
    tftp_port: int

    @classmethod
    def from_settings(cls, settings: Settings) -> Provisioning:
        hex_key = settings.provisioning.secret_key
        if not hex_key:
            # The service still pairs and boots homebases; only secrets are unavailable.
            log.warning("EP_PROVISIONING_SECRET_KEY is not set: homebase secrets answer 503")
        return cls(
            key_or_none=SecretKey(hex_key) if hex_key else None,
            limits=DeviceRateLimits(settings.provisioning),
            tftp_port=settings.provisioning.tftp_port,
        )

    @property
    def key(self) -> SecretKey:
        if self.key_or_none is None:
            raise Unavailable("homebase secrets are unavailable: no encryption key is configured")
        return self.key_or_none


def iso_millis(moment: datetime | None) -> str | None:
    """``2026-11-22T06:05:46.123Z``: ISO 8601 with milliseconds, as the spec shows times."""
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


SerialNumber = Annotated[
    str,
    Parameter(
        pattern=f"^{SERIAL_NUMBER.pattern}$",
        description="The homebase's serial number, 16 characters [0-9A-F] (else 400).",
    ),
]
"""The ``{sn}`` path parameter, its format in the OpenAPI document (handlers check it too)."""
Shared = NamedDependency[Provisioning]
"""The key and rate limits (``provisioning``)."""
