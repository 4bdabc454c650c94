"""The ``energy-platform`` command: ``migrate``, ``serve SERVICE`` and ``admin ...``.

Settings are read from the environment once, here, and passed to everything else.
"""

from __future__ import annotations

import asyncio
import os

import click
import structlog

from energy_platform.core.console import LazyGroup, emit, fail
from energy_platform.core.errors import PlatformError
from energy_platform.core.logs import configure_logging
from energy_platform.core.paths import migrations_dir
from energy_platform.core.settings import Settings, renamed_variables, unknown_variables

# Each domain owns its admin commands (its admin.py, with a GROUPS list); they are named here,
# in one place, and a domain's module is imported only when one of its commands runs.
ADMIN_COMMANDS: dict[str, str] = {
    "users": "energy_platform.users.admin",
    **dict.fromkeys(("feeds", "streams"), "energy_platform.api.feeds_admin"),
    **dict.fromkeys(
        ("clusters", "homebases", "firmware", "upgrades", "coap-devices"),
        "energy_platform.provisioning.admin",
    ),
    **dict.fromkeys(("tariffs", "prices", "contracts"), "energy_platform.billing.admin"),
    **dict.fromkeys(("reprocess", "compact", "engine"), "energy_platform.engine.admin"),
    **dict.fromkeys(("import", "corrections"), "energy_platform.history.admin"),
    "customers": "energy_platform.forwarder.admin",
    "notifications": "energy_platform.notifications.admin",
    "broker-accounts": "energy_platform.pairing.admin",
}


@click.group(cls=LazyGroup, lazy={"simulate": "energy_platform.devices.simulator.command"})
@click.pass_context
def main(ctx: click.Context) -> None:
    """Energy platform: ingestion, processing, data API, provisioning and forwarding."""
    try:
        settings = Settings.from_env(os.environ)
    except PlatformError as e:
        fail(e.detail)
    configure_logging(settings.log)
    for name, meant in unknown_variables(os.environ).items():
        structlog.get_logger().warning("unknown setting ignored", variable=name, did_you_mean=meant)
    for name, current in renamed_variables(os.environ).items():
        structlog.get_logger().warning("setting renamed", variable=name, use=current)
    ctx.obj = settings


@main.command()
@click.pass_obj
def migrate(settings: Settings) -> None:
    """Apply the pending migrations of sql/ to the database."""
    from energy_platform.core.db import migrations

    applied = migrations.migrate(settings.database.url, migrations_dir())
    emit({"applied": [m.filename for m in applied]})


@main.command()
@click.argument(
    "names",
    metavar="SERVICE...",
    nargs=-1,
    required=True,
    type=click.Choice(["api", "provisioning", "forwarder", "ingest", "engine", "all"]),
)
@click.pass_obj
def serve(settings: Settings, names: tuple[str, ...]) -> None:
    """Run SERVICE... in one process (``all``: every one; a cluster without provisioning is
    ``api ingest engine forwarder``) until SIGTERM or Ctrl-C."""
    from energy_platform.core.lifecycle import freeze_startup_objects, run_services
    from energy_platform.core.logs import bind_service
    from energy_platform.services import build_services

    chosen = "all" if "all" in names else list(dict.fromkeys(names))
    services = build_services(chosen, settings)
    freeze_startup_objects()
    # Outside every service's task too: what asyncio reports when it collects an unretrieved
    # future runs in no task's context, and such a line would otherwise name no service.
    bind_service("platform")
    asyncio.run(run_services(services, shutdown_timeout=settings.shutdown_timeout))


@main.group(cls=LazyGroup, lazy=ADMIN_COMMANDS)
def admin() -> None:
    """Administration; every command answers JSON on stdout."""


@admin.command("migrations")
@click.pass_obj
def admin_migrations(settings: Settings) -> None:
    """List the applied migrations."""
    from energy_platform.core.db import migrations

    emit(migrations.applied(settings.database.url))
