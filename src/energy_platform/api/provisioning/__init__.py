"""The provisioning API: clusters, homebases, pairing, secrets, boot and firmware."""

from energy_platform.api.provisioning.app import create_app

__all__ = ["create_app"]
