"""The ingest service: holds the MQTT session that device data arrives on.

Decoding, storage and acknowledgement after commit arrive with the ingestion work; this service
already owns the broker connection, reconnecting with jittered backoff.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import aiomqtt
import structlog
from prometheus_client import Gauge

from energy_platform.devices.backoff import Backoff, sleep_unless_stopped
from energy_platform.errors import ConfigurationError
from energy_platform.settings import MqttSettings

log = structlog.get_logger()
BROKER_CONNECTED = Gauge("ep_mqtt_connected", "1 while the ingest service holds its broker session")


def broker_client(settings: MqttSettings, identifier: str) -> aiomqtt.Client:
    """An aiomqtt client for ``settings.url`` (``mqtt://[user:password@]host[:port]``)."""
    url = urlsplit(settings.url)
    if url.scheme != "mqtt" or not url.hostname:
        raise ConfigurationError(f"EP_MQTT_URL must look like mqtt://host:port, got {url.scheme!r}")
    return aiomqtt.Client(
        url.hostname,
        url.port or 1883,
        username=url.username,
        password=url.password,
        identifier=identifier,
    )


class IngestService:
    name = "ingest"

    def __init__(self, settings: MqttSettings) -> None:
        self._settings = settings

    async def run(self, stop: asyncio.Event) -> None:
        backoff = Backoff()
        while not stop.is_set():
            try:
                async with broker_client(self._settings, self._settings.client_id):
                    BROKER_CONNECTED.set(1)
                    backoff.reset()
                    log.info("broker connected", url=_public(self._settings.url))
                    await stop.wait()
            except aiomqtt.MqttError as e:
                delay = backoff.next_delay()
                log.warning("broker unreachable; retrying", error=str(e), retry_in=round(delay, 2))
                await sleep_unless_stopped(stop, delay)
            finally:
                BROKER_CONNECTED.set(0)


def _public(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}:{parts.port or 1883}"
