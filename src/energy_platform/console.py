"""How commands talk to a terminal: JSON documents on stdout, one-line errors on stderr."""

from __future__ import annotations

import sys
from typing import Any, NoReturn

import click
import msgspec

from energy_platform.errors import PlatformError


def fail(message: str) -> NoReturn:
    """Exit with status 1 and ``message`` as one line on stderr."""
    sys.stderr.write(f"energy-platform: {' '.join(message.split())}\n")
    sys.exit(1)


def emit(value: Any) -> None:
    """Write ``value`` as one JSON document on stdout (what every admin command answers)."""
    sys.stdout.buffer.write(msgspec.json.encode(value) + b"\n")
    sys.stdout.flush()


class CommandGroup(click.Group):
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
