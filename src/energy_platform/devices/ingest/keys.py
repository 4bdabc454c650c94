"""Homebase keys: each secret fetched once from provisioning (as this cluster), then cached."""

from __future__ import annotations

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from energy_platform.core.cache import BoundedCache
from energy_platform.core.codec.envelope import derive_key
from energy_platform.core.errors import NotFound
from energy_platform.pairing.provisioning_client import ProvisioningClient

# How long "provisioning gives us no secret for this SN" and "asked again after a payload did
# not decrypt" are remembered: garbage from one SN costs at most one call a minute.
REASK_AFTER = 60.0


class KeyStore:
    """Raises NotFound when provisioning does not hand this cluster the homebase's secret,
    Unavailable while provisioning cannot be asked or refuses this cluster (the caller holds
    the message; nothing is dropped)."""

    def __init__(self, provisioning: ProvisioningClient, size: int) -> None:
        self._provisioning = provisioning
        self._keys: BoundedCache[str, AESGCM] = BoundedCache(size)
        self._missing: BoundedCache[str, str] = BoundedCache(size, REASK_AFTER)
        self._refreshed: BoundedCache[str, bool] = BoundedCache(size, REASK_AFTER)

    async def key(self, sn: str) -> AESGCM:
        key = self._keys.get(sn)
        if key is not None:
            return key
        missing = self._missing.get(sn)
        if missing is not None:
            raise NotFound(missing)
        try:
            key = derive_key(await self._provisioning.secret(sn))
        except NotFound as e:
            self._missing.put(sn, e.detail)
            raise
        self._keys.put(sn, key)
        return key

    def may_refresh(self, sn: str) -> bool:
        """Forget the key of ``sn`` so that the next :meth:`key` asks provisioning again (its
        secret may have changed); at most once a minute per SN. False when not forgotten."""
        if sn in self._refreshed:
            return False
        self._refreshed.put(sn, True)
        self._keys.pop(sn)
        return True
