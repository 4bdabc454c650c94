"""Which services exist and how each is built from the settings."""

from __future__ import annotations

from collections.abc import Callable

from energy_platform.api import data, forwarder, provisioning
from energy_platform.api.server import HttpService
from energy_platform.devices.ingest import IngestService
from energy_platform.engine.service import EngineService
from energy_platform.lifecycle import Service
from energy_platform.settings import Settings


def _api(s: Settings) -> Service:
    return HttpService("api", data.create_app(s), s.http.host, s.http.api_port)


def _provisioning(s: Settings) -> Service:
    app = provisioning.create_app(s)
    return HttpService("provisioning", app, s.http.host, s.http.provisioning_port)


def _forwarder(s: Settings) -> Service:
    return HttpService("forwarder", forwarder.create_app(s), s.http.host, s.http.forwarder_port)


BUILDERS: dict[str, Callable[[Settings], Service]] = {
    "api": _api,
    "provisioning": _provisioning,
    "forwarder": _forwarder,
    "ingest": lambda s: IngestService(s.mqtt),
    "engine": lambda s: EngineService(s.database),
}


def build_services(name: str, settings: Settings) -> list[Service]:
    """The services behind ``serve NAME``; ``all`` is every one of them in one process."""
    names = list(BUILDERS) if name == "all" else [name]
    return [BUILDERS[n](settings) for n in names]
