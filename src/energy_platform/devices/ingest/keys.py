"""Homebase keys: each secret fetched once from provisioning (as this cluster), then cached."""

from __future__ import annotations

import httpx
import msgspec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from energy_platform.devices.codec.envelope import derive_key
from energy_platform.errors import NotFound, Unavailable
from energy_platform.settings import ClusterSettings


class SecretBody(msgspec.Struct):
    secret: str


class KeyStore:
    """Raises NotFound when provisioning does not hand this cluster the homebase's secret,
    Unavailable while provisioning cannot be asked (the caller retries; nothing is dropped)."""

    def __init__(self, settings: ClusterSettings, http: httpx.AsyncClient) -> None:
        self._settings = settings
        self._http = http
        self._keys: dict[str, AESGCM] = {}

    async def key(self, sn: str) -> AESGCM:
        key = self._keys.get(sn)
        if key is None:
            key = self._keys[sn] = derive_key(await self._fetch(sn))
        return key

    def forget(self, sn: str) -> None:
        self._keys.pop(sn, None)

    async def _fetch(self, sn: str) -> bytes:
        url = f"{self._settings.provisioning_url.rstrip('/')}/api/device/{sn}/secret/"
        try:
            response = await self._http.get(
                url, headers={"X-SvcClusterAuth": self._settings.secret}
            )
        except httpx.HTTPError as e:
            raise Unavailable(f"provisioning unreachable: {type(e).__name__}") from e
        if response.status_code in (403, 404, 409):
            raise NotFound(f"provisioning has no secret of {sn} for this cluster")
        if response.status_code != 200:
            raise Unavailable(f"provisioning answered {response.status_code}")
        try:
            return bytes.fromhex(msgspec.json.decode(response.content, type=SecretBody).secret)
        except (msgspec.DecodeError, ValueError) as e:
            raise Unavailable("provisioning sent a malformed secret") from e
