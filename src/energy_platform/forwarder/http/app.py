from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from litestar import Litestar, Router
from litestar.di import Provide

from energy_platform.core.http.application import build_app
from energy_platform.core.http.openapi import bearer
from energy_platform.core.settings import Settings
from energy_platform.forwarder.delivery.watch import parked_customers, undelivered
from energy_platform.forwarder.destinations import AllowedNetworks
from energy_platform.forwarder.http.config import ConfigController
from energy_platform.forwarder.http.deliveries import DeliveriesController
from energy_platform.forwarder.http.registrations import RegistrationsController
from energy_platform.pairing.pairings import Pairings


def create_app(settings: Settings) -> Litestar:
    """The forwarder app: a customer's delivery configuration and registered homebases."""
    allowed = AllowedNetworks(settings.forwarder.networks())
    pairings = Pairings(settings.pairing, settings.mqtt)  # refuses missing settings at once

    def allowed_networks() -> AllowedNetworks:
        return allowed

    def pairing() -> Pairings:
        return pairings

    @asynccontextmanager
    async def pairing_client(_: Litestar) -> AsyncIterator[None]:
        async with pairings:
            yield

    customer_api = Router(
        path="/",
        route_handlers=[ConfigController, RegistrationsController, DeliveriesController],
        dependencies={
            "allowed_networks": Provide(allowed_networks, sync_to_thread=False),
            "pairings": Provide(pairing, sync_to_thread=False),
        },
    )
    return build_app(
        name="forwarder",
        title="Energy platform forwarder API",
        description="Register homebases and configure webhook deliveries.",
        settings=settings,
        route_handlers=[customer_api],
        authenticating={"customer": bearer("A customer token (`admin customers add`).")},
        lifespan=[pairing_client],
        watches=[undelivered, parked_customers],
    )
