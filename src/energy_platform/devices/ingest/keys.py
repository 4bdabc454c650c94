"""Homebase keys: each secret fetched once from provisioning (as this cluster), then cached."""

from __future__ import annotations

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from energy_platform.devices.codec.envelope import derive_key
from energy_platform.provisioning.client import ProvisioningClient


class KeyStore:
    """Raises NotFound when provisioning does not hand this cluster the homebase's secret,
    Unavailable while provisioning cannot be asked (the caller retries; nothing is dropped)."""

    def __init__(self, provisioning: ProvisioningClient) -> None:
        self._provisioning = provisioning
        self._keys: dict[str, AESGCM] = {}

    async def key(self, sn: str) -> AESGCM:
        key = self._keys.get(sn)
        if key is None:
            key = self._keys[sn] = derive_key(await self._provisioning.secret(sn))
        return key

    def forget(self, sn: str) -> None:
        self._keys.pop(sn, None)
