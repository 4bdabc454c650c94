from litestar import Litestar

from energy_platform.api.application import build_app
from energy_platform.api.data.feeds import FeedsController
from energy_platform.api.data.notifications import NotificationsController
from energy_platform.settings import Settings


def create_app(settings: Settings) -> Litestar:
    """The data API app: feeds, streams, stream data and notifications."""
    return build_app(
        name="api",
        title="Energy platform data API",
        description="Feeds, streams, stream data and notifications.",
        settings=settings,
        route_handlers=[FeedsController, NotificationsController],
        # Every query here reads by key (token, feed, stream, user): one plan fits all calls.
        generic_plans=True,
    )
