"""Admin commands called in-process, as ``energy-platform admin GROUP ...`` would run them."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from typing import Any

from energy_platform.cli import ADMIN_GROUPS
from energy_platform.settings import Settings

GROUPS = {group.name: group for group in ADMIN_GROUPS}


def run_admin(settings: Settings, group: str, *args: str) -> Any:
    """The command's JSON answer; its error propagates as the exception it raised."""
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8")
    with contextlib.redirect_stdout(out):
        GROUPS[group].main(list(args), obj=settings, standalone_mode=False)
    out.flush()
    return json.loads(raw.getvalue())


async def run_admin_async(settings: Settings, group: str, *args: str) -> Any:
    """``run_admin`` from inside an event loop (some commands run their own loop)."""
    return await asyncio.to_thread(run_admin, settings, group, *args)
