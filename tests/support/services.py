"""Run platform services inside the test's event loop, over real sockets."""

from __future__ import annotations

import asyncio
import inspect
import os
import secrets
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from urllib.parse import urlsplit, urlunsplit

import httpx
from prometheus_client import REGISTRY

from energy_platform.core.lifecycle import Service


def _test_ports() -> range:
    """Below Linux's ephemeral range (32768-60999): a port the kernel picks there for a test
    can be taken, before the test's server binds it, as the source port of any outgoing
    connection. With pytest-xdist, each worker takes a slice of its own, so two workers never
    hand out the same port."""
    ports = range(20_000, 32_768)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if not worker.startswith("gw") or count <= 1:
        return ports
    size = len(ports) // count
    start = ports.start + int(worker.removeprefix("gw")) * size
    return range(start, start + size)


TEST_PORTS = _test_ports()
_handed_out: set[tuple[int, int]] = set()


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    """A port of 127.0.0.1 free for ``kind`` now, below the ephemeral range, and never the same
    one twice in this process."""
    for port in secrets.SystemRandom().sample(TEST_PORTS, min(500, len(TEST_PORTS))):
        if (kind, port) in _handed_out:
            continue
        with socket.socket(socket.AF_INET, kind) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add((kind, port))
        return port
    raise RuntimeError("no free port below the ephemeral range")


async def wait_for_http(url: str) -> None:
    """Poll ``url`` until it answers at all (any status); callers bound the wait."""
    async with httpx.AsyncClient() as client:
        while True:
            try:
                await client.get(url, timeout=1.0)
            except httpx.TransportError:
                await asyncio.sleep(0.05)
            else:
                return


@asynccontextmanager
async def running(*services: Service, ready_urls: tuple[str, ...] = ()) -> AsyncIterator[None]:
    """Run ``services`` until the block ends; wait until each of ``ready_urls`` answers."""
    stop = asyncio.Event()
    tasks = [asyncio.create_task(s.run(stop), name=s.name) for s in services]
    try:
        async with asyncio.timeout(30):
            for url in ready_urls:
                await wait_for_http(url)
        yield
    finally:
        stop.set()
        async with asyncio.timeout(30):
            await asyncio.gather(*tasks)


EVENTUALLY = 30.0


def tmpfs() -> str | None:
    """``/dev/shm`` when it is writable: a directory where an fsync costs nothing (for servers
    a test kills, never the machine: a SIGKILLed process loses nothing a tmpfs holds); None,
    the default temporary directory, elsewhere."""
    return "/dev/shm" if os.access("/dev/shm", os.W_OK) else None  # noqa: S108


async def eventually(
    check: Callable[[], Awaitable[bool] | bool], within: float = EVENTUALLY, every: float = 0.1
) -> None:
    """Poll ``check`` (a coroutine function, or a plain one) every ``every`` seconds until it
    holds; fail after ``within`` seconds."""
    async with asyncio.timeout(within):
        while True:
            holds = check()
            if await holds if inspect.isawaitable(holds) else holds:
                return
            await asyncio.sleep(every)


def until(check: Callable[[], bool], within: float, what: str) -> None:
    """:func:`eventually` for a test without an event loop: poll ``check`` until it holds;
    fail after ``within`` seconds, saying ``what`` did not happen."""
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"not within {within:g} s: {what}"
        time.sleep(0.1)


def periodic_rounds(loop: str) -> float:
    """Rounds of the periodic ``loop`` (``rules``, ``retention``...: core/background.py) that
    this process has completed without a fault, as its metric counts them."""
    labels = {"loop": loop, "outcome": "ok"}
    return REGISTRY.get_sample_value("ep_housekeeping_rounds_total", labels) or 0.0


async def rounds_later(done: Callable[[], float], rounds: int, within: float = EVENTUALLY) -> None:
    """Wait until ``rounds`` whole rounds of a loop have run since the call, ``done`` counting
    the rounds it completed: a state that must stay is then seen to stay by the loop itself,
    however slowly the machine runs it. The round already under way when this is called
    began before it, so it does not count."""
    start = done()
    await eventually(lambda: done() >= start + rounds + 1, within)


def with_port(url: str, port: int) -> str:
    """``url`` (``scheme://[user[:password]@]host:port/...``) on 127.0.0.1:``port``."""
    parts = urlsplit(url)
    credentials = parts.netloc.rpartition("@")[0]
    at = f"{credentials}@" if credentials else ""
    return urlunsplit(parts._replace(netloc=f"{at}127.0.0.1:{port}"))
