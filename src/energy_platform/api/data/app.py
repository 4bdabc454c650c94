from litestar import Litestar

from energy_platform.api.application import build_app
from energy_platform.api.dashboard.routes import dashboard_routes
from energy_platform.api.data.feeds import FeedsController
from energy_platform.api.data.notifications import NotificationsController
from energy_platform.api.openapi import bearer
from energy_platform.devices.ingest.watch import ingest_activity
from energy_platform.engine.watch import engine_queues
from energy_platform.settings import Settings


def create_app(settings: Settings) -> Litestar:
    """The data API app: feeds, streams, stream data and notifications; its page at ``/``."""
    return build_app(
        name="api",
        title="Energy platform data API",
        description="Feeds, streams, stream data and notifications.",
        settings=settings,
        route_handlers=[FeedsController, NotificationsController, *dashboard_routes()],
        authenticating={"caller": bearer("A user token (`admin users add`).")},
        # Every query here is one self-contained statement (or transaction) by key: one plan
        # fits all calls, and a connection needs no reset between requests.
        stateless_queries=True,
        read_replica=True,
        watches=[engine_queues, ingest_activity],  # the cluster's queues, seen from its API
    )
