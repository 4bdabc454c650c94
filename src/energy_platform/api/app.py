from collections.abc import Sequence

from litestar import Litestar, Router

from energy_platform.api.dashboard.routes import dashboard_routes
from energy_platform.api.export import export_routes
from energy_platform.api.feeds import FeedsController
from energy_platform.billing.http import bill_routes
from energy_platform.billing.overview import overview_routes
from energy_platform.core.gauges import Watch
from energy_platform.core.http.application import build_app
from energy_platform.core.http.openapi import bearer
from energy_platform.core.http.shares import CostlyReads, PoolShare, Presence, Ration, UserLanes
from energy_platform.core.settings import Settings
from energy_platform.history.http import undo_limits
from energy_platform.live.http import live_routes
from energy_platform.live.hub import LiveHub
from energy_platform.notifications.http import NotificationsController
from energy_platform.users.http import TokensController
from energy_platform.users.usage import recording_token_uses


def create_app(settings: Settings, watches: Sequence[Watch] = ()) -> Litestar:
    """The data API app: feeds, streams, stream data, bills and price curves (billing's
    routes), notifications and the users' tokens; its page at ``/``; each feed live at
    ``/feeds/{id}/live``, from one follower of the live log.
    ``watches``: the cluster's gauges its ``/metrics`` adds (services.py passes the engine's
    and ingest's: the data API is the cluster's always-running HTTP service)."""
    hub = LiveHub(settings.database, settings.live)
    # Exports, overviews and what-ifs hold at most half the pool: the other half is left for
    # the rest; while others are served, each user's overviews and what-ifs are rationed.
    presence = Presence()
    costly = CostlyReads(
        PoolShare(max(1, settings.database.pool_max // 2)),
        UserLanes(settings.api.costly_connections_per_user),
        Ration(settings.api.costly_share_per_user, settings.api.costly_burst_s),
        presence,
    )
    return build_app(
        name="api",
        title="Energy platform data API",
        description="Feeds, streams, stream data and CSV exports, bills and notifications.",
        settings=settings,
        route_handlers=[
            # The feeds' controller carries history's writes, and the undo its users' shares.
            Router(
                path="/",
                route_handlers=[FeedsController],
                dependencies=undo_limits(settings.history),
            ),
            export_routes(costly.share, settings.api),
            bill_routes(settings.billing.currency, costly),
            overview_routes(settings.billing.currency, costly, settings.api),
            NotificationsController,
            TokensController,
            live_routes(hub),
            *dashboard_routes(),
        ],
        authenticating={"caller": bearer("A user token (`admin users add`).")},
        lifespan=[recording_token_uses(presence), lambda _: hub.following()],
        # Every query here is one self-contained statement (or transaction) by key: one plan
        # fits all calls, and a connection needs no reset between requests.
        stateless_queries=True,
        read_replica=True,
        watches=watches,
        # No statement, and no transaction left open, outlasts its client: an export's
        # snapshot cannot hold back vacuum for longer than EP_API_IDLE_IN_TRANSACTION_S.
        session=settings.api.session(),
    )
