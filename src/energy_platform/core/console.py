"""What every command shares: JSON documents on stdout, one-line errors on stderr, one
database transaction per admin command, and instants as operators write them."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import io
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, NoReturn, TypeVar

import asyncpg
import click
import msgspec

from energy_platform.core import inputs
from energy_platform.core.errors import PlatformError
from energy_platform.core.settings import DatabaseSettings, Settings

T = TypeVar("T")


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


class LazyGroup(CommandGroup):
    """A group whose commands live in other modules, imported only when one of them runs (or
    when help lists them): ``energy-platform admin users list`` starts without importing the
    forwarder, the broker clients and the web framework. ``lazy`` maps a command's name to the
    module whose ``GROUPS`` holds it."""

    def __init__(self, *args: Any, lazy: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy or {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.lazy:
            return super().get_command(ctx, cmd_name)
        groups: list[click.Command] = importlib.import_module(self.lazy[cmd_name]).GROUPS
        return next(c for c in groups if c.name == cmd_name)


def run_in_transaction(
    database: DatabaseSettings, work: Callable[[asyncpg.Connection], Awaitable[T]]
) -> T:
    """Run ``work`` on one connection in one transaction: a command changes all or nothing."""

    async def main() -> T:
        conn = await asyncpg.connect(database.url)
        try:
            async with conn.transaction():
                return await work(conn)
        finally:
            await conn.close()

    return asyncio.run(main())


def run_command(command: click.Command, settings: Settings, *args: str) -> Any:
    """Run ``command ARGS...`` in this process as the CLI would, and return its JSON answer.

    For scripts and tests that set things up through the admin commands themselves (say
    ``run_command(cli.admin, settings, "users", "add", "demo")``). An error propagates as the
    exception the command raised, not as exit status 1.
    """
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8")
    with contextlib.redirect_stdout(out):
        command.main(list(args), obj=settings, standalone_mode=False)
    out.flush()
    return msgspec.json.decode(raw.getvalue())


def parse_instant(value: str, field: str = "time") -> datetime:
    """``now`` or an ISO 8601 time; without a UTC offset it is UTC, as in the APIs."""
    if value == "now":
        return datetime.now(UTC).replace(microsecond=0)
    return inputs.parse_instant(value, field)
