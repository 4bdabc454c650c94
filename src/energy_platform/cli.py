"""The ``energy-platform`` command: ``migrate``, ``serve SERVICE`` and ``admin ...``.

Settings are read from the environment once, here, and passed to everything else.
"""

from __future__ import annotations

import asyncio
import os

import click
import structlog

from energy_platform.api import admin as data_admin
from energy_platform.cluster import admin as cluster_admin
from energy_platform.core.console import CommandGroup, emit, fail
from energy_platform.core.db import migrations
from energy_platform.core.errors import PlatformError
from energy_platform.core.logs import configure_logging
from energy_platform.core.paths import migrations_dir
from energy_platform.core.settings import Settings, unknown_variables
from energy_platform.devices.simulate import simulate
from energy_platform.engine import admin as engine_admin
from energy_platform.forwarder import admin as forwarder_admin
from energy_platform.provisioning import admin as provisioning_admin

ADMIN_GROUPS: list[click.Command] = [
    *data_admin.GROUPS,
    *provisioning_admin.GROUPS,
    *engine_admin.GROUPS,
    *forwarder_admin.GROUPS,
    *cluster_admin.GROUPS,
]


@click.group(cls=CommandGroup)
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
    ctx.obj = settings


@main.command()
@click.pass_obj
def migrate(settings: Settings) -> None:
    """Apply the pending migrations of sql/ to the database."""
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
    from energy_platform.core.lifecycle import run_services
    from energy_platform.services import build_services

    chosen = "all" if "all" in names else list(dict.fromkeys(names))
    services = build_services(chosen, settings)
    asyncio.run(run_services(services, shutdown_timeout=settings.shutdown_timeout))


@main.group(cls=CommandGroup)
def admin() -> None:
    """Administration; every command answers JSON on stdout."""


main.add_command(simulate)

# Each domain owns its admin commands; they are registered here, in one place.
for group in ADMIN_GROUPS:
    admin.add_command(group)


@admin.command("migrations")
@click.pass_obj
def admin_migrations(settings: Settings) -> None:
    """List the applied migrations."""
    emit(migrations.applied(settings.database.url))
