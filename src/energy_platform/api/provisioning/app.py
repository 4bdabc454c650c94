from litestar import Litestar

from energy_platform.api.application import build_app
from energy_platform.settings import Settings


def create_app(settings: Settings) -> Litestar:
    """The provisioning app; its device and cluster endpoints live under ``/api``."""
    return build_app(
        name="provisioning",
        title="Energy platform provisioning API",
        description="Clusters pair homebases and fetch secrets; homebases boot and upgrade.",
        settings=settings,
        route_handlers=[],
    )
