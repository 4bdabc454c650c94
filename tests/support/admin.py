"""Admin commands called in-process, as ``energy-platform admin GROUP ...`` would run them."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from energy_platform import cli
from energy_platform.core.console import run_command
from energy_platform.core.settings import Settings


def run_admin(settings: Settings, group: str, *args: str) -> Any:
    """The command's JSON answer; its error propagates as the exception it raised."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return run_command(cli.admin, settings, group, *args)
    # Called from a test's event loop: the command runs a loop of its own (asyncio.run), so it
    # gets a thread while this loop waits. A command that needs a service of this loop (feeds
    # add pairs through provisioning) goes through run_admin_async instead.
    with ThreadPoolExecutor(1) as worker:
        return worker.submit(run_command, cli.admin, settings, group, *args).result()


async def run_admin_async(settings: Settings, group: str, *args: str) -> Any:
    """``run_admin`` from inside an event loop (some commands run their own loop)."""
    return await asyncio.to_thread(run_admin, settings, group, *args)
