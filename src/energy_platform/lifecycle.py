"""The lifecycle every service shares: run until asked to stop, then stop within a deadline.

A service is anything with a ``name`` and an async ``run(stop)`` that returns soon after ``stop``
is set. :func:`run_services` runs several in one TaskGroup, turns SIGTERM/SIGINT into ``stop``,
and cancels whatever is still running once the deadline passes, so no task outlives it.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Sequence
from typing import Protocol

import structlog

from energy_platform.logs import bind_service

log = structlog.get_logger()


class Service(Protocol):
    name: str

    async def run(self, stop: asyncio.Event) -> None:
        """Serve until ``stop`` is set, then release everything and return."""


async def run_services(services: Sequence[Service], *, shutdown_timeout: float) -> None:
    """Run ``services`` until SIGTERM/SIGINT or until one of them fails."""
    bind_service("platform")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [
                group.create_task(_run_one(service, stop), name=service.name)
                for service in services
            ]
            group.create_task(
                _enforce_deadline(stop, tasks, grace=shutdown_timeout), name="deadline"
            )
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)


async def _run_one(service: Service, stop: asyncio.Event) -> None:
    bind_service(service.name)
    log.info("service started")
    try:
        await service.run(stop)
    except BaseException:
        # One failed service stops the others: a half-running platform is worse than none.
        stop.set()
        raise
    log.info("service stopped")


async def _enforce_deadline(
    stop: asyncio.Event, tasks: Sequence[asyncio.Task[None]], *, grace: float
) -> None:
    await stop.wait()
    log.info("stopping", grace_seconds=grace)
    _, pending = await asyncio.wait(tasks, timeout=grace)
    for task in pending:
        log.warning("service did not stop in time; cancelling", task=task.get_name())
        task.cancel()
