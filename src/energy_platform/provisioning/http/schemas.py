"""Wire formats of the provisioning API (the spec's objects and DESIGN.md's boot answer)."""

from __future__ import annotations

import msgspec

Address = tuple[str, int]
"""[IP address, port]."""


class Device(msgspec.Struct, frozen=True):
    partner: str
    sn: str
    type: str


class AvrFirmware(msgspec.Struct, frozen=True):
    version: str | None
    tags: list[str]


class Firmware(msgspec.Struct, frozen=True):
    version: str | None


class Firmwares(msgspec.Struct, frozen=True):
    avr: AvrFirmware
    bl: Firmware
    msp: Firmware


class Servers(msgspec.Struct, frozen=True):
    http: Address
    mqtt: Address


class ClusterSummary(msgspec.Struct, frozen=True):
    title: str
    enabled: bool
    id: int
    servers: Servers


class HomebaseDetails(msgspec.Struct, frozen=True):
    device: Device
    alive: bool
    last_boot: str | None
    """ISO 8601 with milliseconds, UTC; null before the first boot."""
    upgrade: str | None
    """When the last upgrade completed, ISO 8601 with milliseconds; null if none has."""
    firmwares: Firmwares
    cluster: ClusterSummary


class PairingStatus(msgspec.Struct, frozen=True):
    paired: bool
    your_device: bool
    detail: str


class PairedHomebases(msgspec.Struct, frozen=True):
    homebases: list[str]
    """Serial numbers of the homebases paired to the calling cluster, in order."""


class CoapAssignment(msgspec.Struct, frozen=True):
    assigned: bool
    """Whether the device sends to the data server the caller named."""


class HomebaseSecret(msgspec.Struct, frozen=True):
    secret: str
    """512 hex characters, 256 bytes."""
    detail: str


class UpgradeOffer(msgspec.Struct, frozen=True):
    component: str
    version: str
    size: int
    sha256: str


class TftpLocation(msgspec.Struct, frozen=True):
    port: int
    file: str


class BootAnswer(msgspec.Struct, frozen=True, omit_defaults=True, kw_only=True):
    cluster: Servers | None = None
    """Absent only in a 202 to a homebase that is not paired yet (it upgrades before it is sold)."""
    time: int
    upgrade: UpgradeOffer | None = None
    tftp: TftpLocation | None = None
    """Generations 0 and 3: where to fetch the image."""
    url: str | None = None
    """Generation 6: where to fetch the image."""
