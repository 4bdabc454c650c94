from litestar import Litestar

from energy_platform.api.application import build_app
from energy_platform.api.forwarder.config import ConfigController
from energy_platform.api.forwarder.registrations import RegistrationsController
from energy_platform.api.openapi import bearer
from energy_platform.settings import Settings


def create_app(settings: Settings) -> Litestar:
    """The forwarder app: a customer's delivery configuration and registered homebases."""
    return build_app(
        name="forwarder",
        title="Energy platform forwarder API",
        description="Register homebases and configure webhook deliveries.",
        settings=settings,
        route_handlers=[ConfigController, RegistrationsController],
        authenticating={"customer": bearer("A customer token (`admin customers add`).")},
    )
