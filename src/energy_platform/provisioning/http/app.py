"""The provisioning app: cluster-facing and homebase-facing endpoints under ``/api``."""

from __future__ import annotations

from litestar import Litestar, Router
from litestar.di import Provide

from energy_platform.core.http.application import build_app
from energy_platform.core.http.openapi import api_key_header
from energy_platform.core.settings import Settings
from energy_platform.provisioning.http.clusters import (
    HEADER,
    CallingClusterController,
    ClusterController,
    CoapDeviceController,
    calling_cluster,
)
from energy_platform.provisioning.http.context import Provisioning
from energy_platform.provisioning.http.homebases import HomebaseController


def create_app(settings: Settings, provisioning: Provisioning | None = None) -> Litestar:
    """The provisioning app; its device and cluster endpoints live under ``/api``.

    ``provisioning`` is shared with the UDP services of the same process (their rate limits
    count the same devices); by default the app makes its own.
    """
    shared = provisioning or Provisioning.from_settings(settings)
    api = Router(
        path="/api",
        route_handlers=[
            ClusterController,
            CallingClusterController,
            CoapDeviceController,
            HomebaseController,
        ],
        dependencies={
            "cluster": Provide(calling_cluster),  # asked for by the cluster-facing handlers only
            "provisioning": Provide(lambda: shared, use_cache=True, sync_to_thread=False),
        },
    )
    return build_app(
        name="provisioning",
        title="Energy platform provisioning API",
        description="Clusters pair homebases and fetch secrets; homebases boot and upgrade.",
        settings=settings,
        route_handlers=[api],
        authenticating={
            "cluster": api_key_header(
                HEADER, "The cluster's secret (`admin clusters add`).", 401, 403
            )
        },
    )
