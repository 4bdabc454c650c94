"""The ``energy-platform`` command: ``migrate``, ``serve SERVICE`` and ``admin ...``.

Settings are read from the environment once, here, and passed to everything else.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any, NoReturn

import click
import msgspec

from energy_platform.db import migrations
from energy_platform.errors import PlatformError
from energy_platform.logs import configure_logging
from energy_platform.paths import migrations_dir
from energy_platform.settings import Settings


def fail(message: str) -> NoReturn:
    """Exit non-zero with a one-line message on stderr."""
    click.echo(f"energy-platform: {' '.join(message.split())}", err=True)
    sys.exit(1)


def emit(value: Any) -> None:
    """Write ``value`` as one JSON document on stdout (what every admin command answers)."""
    sys.stdout.buffer.write(msgspec.json.encode(value) + b"\n")
    sys.stdout.flush()


class _Commands(click.Group):
    """Turns any error of a command into one line on stderr and exit status 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except PlatformError as e:
            fail(e.detail)
        except Exception as e:
            fail(f"{type(e).__name__}: {str(e).strip() or 'failed'}")


@click.group(cls=_Commands)
@click.pass_context
def main(ctx: click.Context) -> None:
    """Energy platform: ingestion, processing, data API, provisioning and forwarding."""
    try:
        settings = Settings.from_env(os.environ)
    except PlatformError as e:
        fail(e.detail)
    configure_logging(settings.log)
    ctx.obj = settings


@main.command()
@click.pass_obj
def migrate(settings: Settings) -> None:
    """Apply the pending migrations of sql/ to the database."""
    applied = migrations.migrate(settings.database.url, migrations_dir())
    emit({"applied": [m.filename for m in applied]})


@main.command()
@click.argument(
    "service", type=click.Choice(["api", "provisioning", "forwarder", "ingest", "engine", "all"])
)
@click.pass_obj
def serve(settings: Settings, service: str) -> None:
    """Run SERVICE (or all of them in one process) until SIGTERM or Ctrl-C."""
    from energy_platform.lifecycle import run_services
    from energy_platform.services import build_services

    services = build_services(service, settings)
    asyncio.run(run_services(services, shutdown_timeout=settings.shutdown_timeout))


@main.group(cls=_Commands)
def admin() -> None:
    """Administration; every command answers JSON on stdout."""


@admin.command("migrations")
@click.pass_obj
def admin_migrations(settings: Settings) -> None:
    """List the applied migrations."""
    emit(migrations.applied(settings.database.url))
