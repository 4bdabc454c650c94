"""A cluster's client of the provisioning API (``X-SvcClusterAuth``): pairing and secrets."""

from __future__ import annotations

from typing import TypeVar

import httpx
import msgspec

from energy_platform.core.errors import Conflict, InvalidInput, NotFound, Unavailable
from energy_platform.core.settings import PairingSettings


class SecretBody(msgspec.Struct):
    secret: str


class PairingBody(msgspec.Struct):
    paired: bool
    your_device: bool


B = TypeVar("B", bound=msgspec.Struct)


class PairedBody(msgspec.Struct):
    homebases: list[str]


class AssignmentBody(msgspec.Struct):
    assigned: bool


class ProvisioningClient:
    def __init__(self, settings: PairingSettings, http: httpx.AsyncClient) -> None:
        self._api = settings.provisioning_url.rstrip("/") + "/api"
        self._auth = {"X-SvcClusterAuth": settings.cluster_secret}
        self._http = http

    async def secret(self, sn: str) -> bytes:
        """The homebase's 256-byte secret; NotFound unless it is paired to this cluster.

        Unavailable when provisioning cannot answer or refuses this cluster itself (disabled,
        wrong secret): that is no verdict on the homebase, and its data must wait, not drop."""
        response = await self._call("GET", f"{sn}/secret/")
        if response.status_code == 403:
            # 403 is both "not your homebase" and "this cluster is disabled": ask which.
            status = await self._call("GET", f"{sn}/pair/")
            if status.status_code in (401, 403):
                raise Unavailable(f"provisioning refuses this cluster ({status.status_code})")
            raise NotFound(f"provisioning has no secret of {sn} for this cluster")
        if response.status_code in (404, 409):
            raise NotFound(f"provisioning has no secret of {sn} for this cluster")
        if response.status_code == 401:
            raise Unavailable("provisioning does not know this cluster's secret (401)")
        self._check(response)
        try:
            return bytes.fromhex(msgspec.json.decode(response.content, type=SecretBody).secret)
        except (msgspec.DecodeError, ValueError) as e:
            raise Unavailable("provisioning sent a malformed secret") from e

    async def pair(self, sn: str) -> None:
        """Pair the homebase with this cluster; fine if it already is, Conflict if elsewhere."""
        response = await self._call("POST", f"{sn}/pair/")
        if response.status_code == 304:
            status = await self._call("GET", f"{sn}/pair/")
            self._check(status)
            if not msgspec.json.decode(status.content, type=PairingBody).your_device:
                raise Conflict(f"homebase {sn} is paired to another cluster")
            return
        if response.status_code == 404:
            raise NotFound(f"provisioning knows no homebase {sn}")
        self._check(response)

    async def unpair(self, sn: str) -> None:
        """Unpair the homebase from this cluster; fine if it was not paired to it."""
        response = await self._call("POST", f"{sn}/unpair/")
        if response.status_code not in (304, 404):
            self._check(response)

    async def paired(self) -> list[str]:
        """Serial numbers of every homebase paired to this cluster."""
        response = await self._call("GET", "homebases/", under="cluster")
        return _answer(response, PairedBody).homebases

    async def coap_assigned(self, sn: str, address: str, port: int) -> bool:
        """Whether CoAP device ``sn`` sends to the data server at ``address:port``; NotFound
        if provisioning knows no such device."""
        response = await self._call(
            "GET",
            f"{sn}/assignment/",
            under="coap-device",
            params={"address": address, "port": str(port)},
        )
        if response.status_code == 404:
            raise NotFound(f"no CoAP device has serial number {sn}")
        return _answer(response, AssignmentBody).assigned

    async def _call(
        self,
        method: str,
        path: str,
        *,
        under: str = "device",
        params: dict[str, str] | None = None,
    ) -> httpx.Response:
        url = f"{self._api}/{under}/{path}"
        try:
            return await self._http.request(method, url, headers=self._auth, params=params)
        except httpx.HTTPError as e:
            raise Unavailable(f"provisioning unreachable: {type(e).__name__}") from e

    @staticmethod
    def _check(response: httpx.Response) -> None:
        if response.status_code in (401, 403):
            raise InvalidInput(
                f"provisioning refused this cluster ({response.status_code}):"
                " check EP_PAIRING_CLUSTER_SECRET"
            )
        if response.status_code != 200:
            raise Unavailable(f"provisioning answered {response.status_code}")


def _answer(response: httpx.Response, body: type[B]) -> B:
    """The body of a service's answer (not an operator's command): a refusal of this cluster
    itself is no verdict on what was asked, so it is Unavailable, like any other failure."""
    if response.status_code in (401, 403):
        raise Unavailable(f"provisioning refuses this cluster ({response.status_code})")
    if response.status_code != 200:
        raise Unavailable(f"provisioning answered {response.status_code}")
    try:
        return msgspec.json.decode(response.content, type=body)
    except msgspec.DecodeError as e:
        raise Unavailable(f"provisioning sent a malformed {body.__name__}") from e
