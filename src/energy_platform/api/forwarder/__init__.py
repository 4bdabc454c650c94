"""The forwarder API: customer configuration and homebase registrations."""

from energy_platform.api.forwarder.app import create_app

__all__ = ["create_app"]
