"""Ingestion: homebase data from MQTT and CoAP device data into TimescaleDB."""

from energy_platform.devices.ingest.service import IngestService

__all__ = ["IngestService"]
