"""Typed settings, read once from ``EP_*`` environment variables and passed in.

Each section below maps to variables named ``EP_<SECTION>_<FIELD>``, for example
``EP_DATABASE_URL`` or ``EP_HTTP_API_PORT``. Nothing in the package reads the environment on
its own: the CLI calls :meth:`Settings.from_env` once and hands the result down.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from energy_platform.errors import ConfigurationError


class DatabaseSettings(msgspec.Struct, frozen=True, kw_only=True):
    url: str = "postgresql://postgres@127.0.0.1:54329/energy_platform"
    """PostgreSQL (with TimescaleDB) connection URL."""
    pool_max: int = 10
    """Connections per service pool."""
    connect_timeout: float = 5.0
    """Seconds to wait for a connection before reporting the database unreachable."""


class MqttSettings(msgspec.Struct, frozen=True, kw_only=True):
    url: str = "mqtt://127.0.0.1:1883"
    """Broker URL, ``mqtt://[user:password@]host:port``."""
    client_id: str = "energy-platform-ingest"
    """Client id of the persistent ingest session."""


class HttpSettings(msgspec.Struct, frozen=True, kw_only=True):
    host: str = "127.0.0.1"
    """Address the HTTP services bind to."""
    api_port: int = 8000
    """Port of the data API (feeds, streams, notifications)."""
    provisioning_port: int = 8001
    """Port of the provisioning API."""
    forwarder_port: int = 8002
    """Port of the forwarder API."""
    max_body_bytes: int = 1_048_576
    """Largest accepted request body; larger ones get 413."""


class DeviceSettings(msgspec.Struct, frozen=True, kw_only=True):
    host: str = "127.0.0.1"
    """Address the UDP services (CoAP, TFTP) bind to."""
    coap_port: int = 5683
    """CoAP port of the provisioning and data servers."""
    tftp_port: int = 6969
    """Read-only TFTP port for firmware of generations 0 and 3."""


class LogSettings(msgspec.Struct, frozen=True, kw_only=True):
    format: Literal["auto", "json", "console"] = "auto"
    """``auto``: console on a TTY, JSON lines otherwise."""
    level: Literal["debug", "info", "warning", "error"] = "info"
    """Lowest level written."""


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    database: DatabaseSettings = msgspec.field(default_factory=DatabaseSettings)
    mqtt: MqttSettings = msgspec.field(default_factory=MqttSettings)
    http: HttpSettings = msgspec.field(default_factory=HttpSettings)
    devices: DeviceSettings = msgspec.field(default_factory=DeviceSettings)
    log: LogSettings = msgspec.field(default_factory=LogSettings)
    shutdown_timeout: float = 10.0
    """Seconds a service may take to stop before its tasks are cancelled."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        """Build settings from ``EP_*`` variables; unknown ``EP_*`` names are ignored."""
        raw: dict[str, Any] = {}
        names: dict[str, str] = {}
        for section, section_type in _sections().items():
            values: dict[str, str] = {}
            for field in msgspec.structs.fields(section_type):
                name = f"EP_{section}_{field.name}".upper()
                names[f"$.{section}.{field.name}"] = name
                if name in environ:
                    values[field.name] = environ[name]
            if values:
                raw[section] = values
        if "EP_SHUTDOWN_TIMEOUT" in environ:
            raw["shutdown_timeout"] = environ["EP_SHUTDOWN_TIMEOUT"]
        names["$.shutdown_timeout"] = "EP_SHUTDOWN_TIMEOUT"
        try:
            return msgspec.convert(raw, cls, strict=False)
        except msgspec.ValidationError as e:
            message = str(e)
            for path, name in names.items():
                if message.endswith(f"at `{path}`"):
                    message = f"{name}: {message.removesuffix(f' - at `{path}`')}"
            raise ConfigurationError(message) from e


def _sections() -> dict[str, type[msgspec.Struct]]:
    return {
        f.name: f.type
        for f in msgspec.structs.fields(Settings)
        if isinstance(f.type, type) and issubclass(f.type, msgspec.Struct)
    }
