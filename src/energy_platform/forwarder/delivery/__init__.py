"""Forwarder deliveries: registered homebases' points, every interval, at least once."""

from energy_platform.forwarder.delivery.service import DeliveryService

__all__ = ["DeliveryService"]
