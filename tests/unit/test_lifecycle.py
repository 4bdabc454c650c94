import asyncio
import os
import signal

import pytest

from energy_platform.lifecycle import run_services


class Polite:
    def __init__(self, name: str) -> None:
        self.name = name
        self.stopped = False

    async def run(self, stop: asyncio.Event) -> None:
        await stop.wait()
        self.stopped = True


class Stubborn:
    name = "stubborn"

    def __init__(self) -> None:
        self.cancelled = False

    async def run(self, stop: asyncio.Event) -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.cancelled = True
            raise


class Broken:
    name = "broken"

    async def run(self, stop: asyncio.Event) -> None:
        await asyncio.sleep(0.05)
        raise RuntimeError("boom")


async def test_sigterm_stops_every_service() -> None:
    services = [Polite("a"), Polite("b")]
    loop = asyncio.get_running_loop()
    loop.call_later(0.1, os.kill, os.getpid(), signal.SIGTERM)
    await asyncio.wait_for(run_services(services, shutdown_timeout=5), 5)
    assert all(s.stopped for s in services)


async def test_a_service_that_ignores_stop_is_cancelled_at_the_deadline() -> None:
    polite, stubborn = Polite("a"), Stubborn()
    loop = asyncio.get_running_loop()
    loop.call_later(0.05, os.kill, os.getpid(), signal.SIGINT)
    started = loop.time()
    await asyncio.wait_for(run_services([polite, stubborn], shutdown_timeout=0.3), 5)
    assert loop.time() - started < 2
    assert polite.stopped
    assert stubborn.cancelled


async def test_one_failing_service_stops_the_others_and_the_error_surfaces() -> None:
    polite = Polite("a")
    with pytest.raises(ExceptionGroup) as error:
        await asyncio.wait_for(run_services([polite, Broken()], shutdown_timeout=5), 5)
    assert error.group_contains(RuntimeError, match="boom")
    assert polite.stopped
