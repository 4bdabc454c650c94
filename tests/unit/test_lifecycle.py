import asyncio
import os
import signal
import subprocess
import sys

import pytest
from prometheus_client import REGISTRY

from energy_platform.core.errors import ConfigurationError
from energy_platform.core.lifecycle import run_services
from tests.support.services import eventually


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


async def test_sigterm_stops_every_service() -> None:
    services = [Polite("a"), Polite("b")]
    loop = asyncio.get_running_loop()
    loop.call_later(0.1, os.kill, os.getpid(), signal.SIGTERM)
    await asyncio.wait_for(run_services(services, shutdown_timeout=5), 60)
    assert all(s.stopped for s in services)


async def test_a_service_that_ignores_stop_is_cancelled_at_the_deadline() -> None:
    polite, stubborn = Polite("a"), Stubborn()
    loop = asyncio.get_running_loop()
    loop.call_later(0.05, os.kill, os.getpid(), signal.SIGINT)
    started = loop.time()
    await asyncio.wait_for(run_services([polite, stubborn], shutdown_timeout=0.3), 60)
    assert loop.time() - started < 10  # at its 0.3 s deadline, not after its hour's sleep
    assert polite.stopped
    assert stubborn.cancelled


class FailsTwice:
    name = "fails-twice"

    def __init__(self) -> None:
        self.runs = 0

    async def run(self, stop: asyncio.Event) -> None:
        self.runs += 1
        if self.runs <= 2:
            raise RuntimeError("boom")
        await stop.wait()


async def test_a_failing_service_is_restarted_and_the_others_keep_running() -> None:
    polite, failing = Polite("a"), FailsTwice()
    before = (
        REGISTRY.get_sample_value("ep_service_restarts_total", {"service": "fails-twice"}) or 0.0
    )

    async def stop_once_restarted_twice() -> None:
        await eventually(lambda: failing.runs == 3)  # its third run waits for the stop
        os.kill(os.getpid(), signal.SIGTERM)

    stopping = asyncio.create_task(stop_once_restarted_twice())
    await asyncio.wait_for(run_services([polite, failing], shutdown_timeout=5), 60)
    await stopping
    assert failing.runs == 3
    assert polite.stopped
    restarts = REGISTRY.get_sample_value("ep_service_restarts_total", {"service": "fails-twice"})
    assert restarts == before + 2


class Misconfigured:
    name = "misconfigured"

    async def run(self, stop: asyncio.Event) -> None:
        raise ConfigurationError("EP_MQTT_URL must look like mqtt://host:port")


async def test_a_configuration_error_stops_the_process_with_its_message() -> None:
    polite = Polite("a")
    with pytest.raises(ExceptionGroup) as error:
        await asyncio.wait_for(run_services([polite, Misconfigured()], shutdown_timeout=5), 60)
    assert error.group_contains(ConfigurationError, match="EP_MQTT_URL")
    assert polite.stopped


# In an interpreter of its own: gc.freeze() is for the whole process, and would change how this
# test process collects from then on.
FREEZE_PROBE = """
import gc, weakref
from energy_platform.core.lifecycle import freeze_startup_objects

class Node:
    pass

gc.disable()  # only the function's own collection may find the cycle
cycle = Node()
cycle.me = cycle
collected = weakref.ref(cycle)
del cycle
built = [Node() for _ in range(10_000)]
freeze_startup_objects()
assert collected() is None, "a cycle left over from startup is collected, not frozen"
assert gc.get_freeze_count() > len(built)
assert len(gc.get_objects()) < 1_000, "what startup built is walked by no later collection"
"""


def test_startup_objects_stay_out_of_later_collections_and_startup_garbage_is_collected() -> None:
    subprocess.run([sys.executable, "-c", FREEZE_PROBE], check=True, timeout=60)
