"""Which services exist and how each is built from the settings.

A builder returns the services of one name; those that answer CoAP add their resources to the
process's one :class:`CoapSite`, which is served by a single ``coap`` service (the provisioning
server and the data server share UDP 5683 when they run in one process).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from energy_platform.api import app as data
from energy_platform.core.coap import CoapService, CoapSite
from energy_platform.core.http.application import build_app
from energy_platform.core.http.server import HttpService
from energy_platform.core.lifecycle import Service
from energy_platform.core.settings import Settings
from energy_platform.devices.ingest import IngestService
from energy_platform.devices.ingest.coap_data import add_data_resources
from energy_platform.devices.ingest.watch import ingest_activity
from energy_platform.engine.compaction import compaction
from energy_platform.engine.retention import retention
from energy_platform.engine.service import EngineService
from energy_platform.engine.watch import engine_queues
from energy_platform.forwarder.delivery import DeliveryService
from energy_platform.forwarder.http import app as forwarder
from energy_platform.live.pruning import live_pruning
from energy_platform.notifications.rules import notification_rules
from energy_platform.notifications.watch import parked_rules
from energy_platform.pairing.pairings import account_reconciliation
from energy_platform.provisioning.services import provisioning_services

# The cluster's queues, seen from its data API's /metrics (docs/operations.md#watching).
CLUSTER_WATCHES = (engine_queues, ingest_activity, parked_rules)


def _api(s: Settings, _: CoapSite) -> list[Service]:
    app = data.create_app(s, watches=CLUSTER_WATCHES)
    return [HttpService.configured("api", app, s.http, s.http.api_port)]


def _forwarder(s: Settings, _: CoapSite) -> list[Service]:
    app = forwarder.create_app(s)
    return [
        HttpService.configured("forwarder", app, s.http, s.http.forwarder_port),
        DeliveryService(s.database, s.forwarder),
    ]


def _ingest(s: Settings, coap: CoapSite) -> list[Service]:
    add_data_resources(coap, s)
    return [IngestService(s)]


BUILDERS: dict[str, Callable[[Settings, CoapSite], list[Service]]] = {
    "api": _api,
    "provisioning": provisioning_services,
    "forwarder": _forwarder,
    "ingest": _ingest,
    "engine": lambda s, _: [
        EngineService(s.database, s.engine, currency=s.billing.currency),
        notification_rules(s.database, s.notifications, s.engine),
        retention(s.database, s.retention, s.history.corrections_days, s.notifications.events_days),
        compaction(s.database, s.compaction),
        live_pruning(s.database, s.live),
        *account_reconciliation(s),
    ],
}


def build_services(names: str | Sequence[str], settings: Settings) -> list[Service]:
    """The services behind ``serve NAME``; ``all`` is every one of them in one process."""
    if isinstance(names, str):
        names = list(BUILDERS) if names == "all" else [names]
    coap = CoapSite()
    services = [service for n in names for service in BUILDERS[n](settings, coap)]
    if coap:
        devices = settings.devices
        services.append(CoapService("coap", devices.host, devices.coap_port, coap))
    if settings.http.metrics_port and not any(isinstance(s, HttpService) for s in services):
        # Engine and ingest alone answer no HTTP: Prometheus scrapes them here.
        app = build_app(name="metrics", title="Metrics", settings=settings, route_handlers=[])
        services.append(
            HttpService.configured("metrics", app, settings.http, settings.http.metrics_port)
        )
    return services
