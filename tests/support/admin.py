"""The admin commands as a test runs them: in this process (fast; the usual way), or as an
operator runs them, in a process of their own (for what only a process shows: its exit status,
its stderr, its environment)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from energy_platform import cli
from energy_platform.core.console import run_command
from energy_platform.core.settings import Settings

CLI = str(Path(sys.executable).with_name("energy-platform"))
"""The ``energy-platform`` command of this virtualenv."""


async def run_admin(settings: Settings, group: str, *args: str) -> Any:
    """``energy-platform admin GROUP ARGS...`` in this process: its JSON answer; an error
    propagates as the exception the command raised. The command runs an event loop of its own
    (asyncio.run), so it gets a worker thread, and the test's loop goes on serving meanwhile
    (``feeds add`` pairs through the provisioning a test runs in it)."""
    return await asyncio.to_thread(run_command, cli.admin, settings, group, *args)


async def admin_refusal(settings: Settings, group: str, *args: str) -> str:
    """``energy-platform admin GROUP ARGS...`` in this process, as an operator sees it refused:
    exit status 1 and nothing on stdout; what it wrote on stderr (the one line of ``fail``)."""

    def refuse() -> str:
        out, err = io.BytesIO(), io.StringIO()
        stdout = io.TextIOWrapper(out, encoding="utf-8")
        status: int | str | None = 0
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(err):
            try:
                cli.admin.main([group, *args], obj=settings, standalone_mode=False)
            except SystemExit as exit_:
                status = exit_.code
        stdout.flush()
        assert (status, out.getvalue()) == (1, b""), err.getvalue()
        return err.getvalue()

    return await asyncio.to_thread(refuse)


def admin_process(
    database_url: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``energy-platform admin ARGS...`` as an operator runs it, in a process of its own on
    ``database_url`` (and the variables ``env``): its exit status, stdout and stderr."""
    return subprocess.run(
        [CLI, "admin", *args],
        env={**os.environ, "EP_DATABASE_URL": database_url, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )


def answer(result: subprocess.CompletedProcess[str]) -> Any:
    """The JSON answer of a command that succeeded (else its stderr in the failure)."""
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)
