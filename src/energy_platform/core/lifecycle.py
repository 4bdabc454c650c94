"""The lifecycle every service shares: run until asked to stop, then stop within a deadline.

A service is anything with a ``name`` and an async ``run(stop)`` that returns soon after ``stop``
is set. :func:`run_services` runs several in one TaskGroup, turns SIGTERM/SIGINT into ``stop``,
and cancels whatever is still running once the deadline passes, so no task outlives it.

A service that fails is restarted after a jittered backoff, logged with its traceback and
counted in ``ep_service_restarts_total``: one failing service never stops the others (the data
API keeps answering while ingest waits for its database). Only a ConfigurationError, which no
restart can heal, stops the process.
"""

from __future__ import annotations

import asyncio
import gc
import signal
from collections.abc import Sequence
from typing import Protocol

import structlog
from prometheus_client import Counter, Gauge

from energy_platform.core.background import Backoff, sleep_unless_stopped
from energy_platform.core.errors import ConfigurationError
from energy_platform.core.logs import bind_service

log = structlog.get_logger()
RESTARTS = Counter("ep_service_restarts_total", "Restarts of a failed service", ["service"])
UP = Gauge("ep_service_up", "1 while the service runs, 0 while it waits to restart", ["service"])
# A service that ran this long before failing starts its backoff afresh.
HEALTHY_AFTER = 60.0


class Service(Protocol):
    name: str

    async def run(self, stop: asyncio.Event) -> None:
        """Serve until ``stop`` is set, then release everything and return."""


def freeze_startup_objects() -> None:
    """Keep what the process has built so far (modules, apps, routes: 83,400 objects in
    ``serve api``) out of every later garbage collection. Call it once, after building the
    services and before serving them.

    A full collection traverses every tracked object, and requests leave enough survivors for
    one about every 5 s at 50 connections: each stopped the data API's event loop for 24-184 ms
    on the shared 2-core machine, and every request in flight waited with it (docs/api.md,
    the tail at 10 connections). With these objects frozen a full collection took 2-4 ms, at
    most 14 ms. Garbage that exists now is collected first; a frozen object is still freed when
    its last reference goes, only a cycle of frozen objects would stay.
    """
    gc.collect()
    gc.freeze()


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


async def _run_one(service: Service, stop: asyncio.Event, backoff: Backoff | None = None) -> None:
    bind_service(service.name)
    backoff = backoff or Backoff(base=0.5, cap=30.0)
    loop = asyncio.get_running_loop()
    while True:
        log.info("service started")
        UP.labels(service.name).set(1)
        started = loop.time()
        try:
            await service.run(stop)
        except ConfigurationError:
            stop.set()  # no restart can heal a setting: stop, and say why
            raise
        except Exception:
            if stop.is_set():
                raise
            log.exception("service failed; restarting")
        else:
            if stop.is_set():
                break
            log.error("service returned without being stopped; restarting")
        finally:
            UP.labels(service.name).set(0)
        if loop.time() - started >= HEALTHY_AFTER:
            backoff.reset()
        delay = backoff.next_delay()
        RESTARTS.labels(service.name).inc()
        log.info("service restarting", retry_in=round(delay, 2))
        await sleep_unless_stopped(stop, delay)
        if stop.is_set():
            break
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
