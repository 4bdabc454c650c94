"""Admin commands called in-process, as ``energy-platform admin GROUP ...`` would run them."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from energy_platform import cli
from energy_platform.core.console import run_command
from energy_platform.core.settings import Settings

CLI = str(Path(sys.executable).with_name("energy-platform"))
"""The ``energy-platform`` command of this virtualenv."""


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


def admin_process(database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``energy-platform admin ARGS...`` as an operator runs it, in a process of its own on
    ``database_url``: its exit status, stdout and stderr, to assert on."""
    return subprocess.run(
        [CLI, "admin", *args],
        env={**os.environ, "EP_DATABASE_URL": database_url},
        capture_output=True,
        text=True,
        check=False,
    )


def answer(result: subprocess.CompletedProcess[str]) -> Any:
    """The JSON answer of a command that succeeded (else its stderr in the failure)."""
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)
