"""Run platform services inside the test's event loop, over real sockets."""

from __future__ import annotations

import asyncio
import inspect
import os
import reprlib
import secrets
import socket
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
from prometheus_client import REGISTRY

from energy_platform.core.http.clients import http_client
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


@asynccontextmanager
async def running(*services: Service, ready_urls: tuple[str, ...] = ()) -> AsyncIterator[None]:
    """Run ``services`` until the block ends; wait until each of ``ready_urls`` answers."""
    stop = asyncio.Event()
    tasks = [asyncio.create_task(s.run(stop), name=s.name) for s in services]
    try:
        for url in ready_urls:
            await wait_for_http(url)
        yield
    finally:
        stop.set()
        async with asyncio.timeout(30):
            await asyncio.gather(*tasks)


EVENTUALLY = 30.0
# A server's start is guarded against a hang, not judged on speed: on a 2-core machine at a
# load of 15, a data API in the test's loop took over 30 s to answer its first /healthz.
STARTED_WITHIN = 120.0


async def wait_for_http(url: str, within: float = STARTED_WITHIN) -> None:
    """Wait until ``url`` answers at all (any status)."""
    async with http_client() as client:
        await eventually(partial(_answers, client, url), within, 0.05, what=f"{url} answers")


async def _answers(client: httpx.AsyncClient, url: str) -> bool:
    try:
        await client.get(url, timeout=1.0)
    except httpx.TransportError:
        return False
    return True


def tmpfs() -> str | None:
    """``/dev/shm`` when it is writable: a directory where an fsync costs nothing (for servers
    a test kills, never the machine: a SIGKILLed process loses nothing a tmpfs holds); None,
    the default temporary directory, elsewhere."""
    return "/dev/shm" if os.access("/dev/shm", os.W_OK) else None  # noqa: S108


async def eventually(
    check: Callable[[], Any],
    within: float = EVENTUALLY,
    every: float = 0.1,
    *,
    what: str | None = None,
    holds: Callable[[Any], object] = bool,
) -> Any:
    """The one waiter: poll ``check`` (a coroutine function or a plain one) every ``every``
    seconds until ``holds`` its answer (by default: until it is true), and return that answer.
    After ``within`` seconds, fail with what was waited for (``what``, else the check's name or
    its lambda's source), for how long, and the last answer seen."""
    seen: list[Any] = []
    deadline = asyncio.timeout(within)
    try:
        async with deadline:
            while True:
                answer = check()
                answer = await answer if inspect.isawaitable(answer) else answer
                seen[:] = [answer]
                if holds(answer):
                    return answer
                await asyncio.sleep(every)
    except TimeoutError:
        if not deadline.expired():
            raise
        raise AssertionError(_never(check, within, what, seen)) from None


def until(
    check: Callable[[], Any],
    within: float = EVENTUALLY,
    what: str | None = None,
    every: float = 0.1,
    holds: Callable[[Any], object] = bool,
) -> Any:
    """:func:`eventually` where no event loop may run it (a thread, a synchronous test or
    helper): the same polling, answer and failure, in this thread."""
    deadline = time.monotonic() + within
    while True:
        answer = check()
        if holds(answer):
            return answer
        if time.monotonic() >= deadline:
            raise AssertionError(_never(check, within, what, [answer]))
        time.sleep(every)


def _never(check: Callable[[], Any], within: float, what: str | None, seen: list[Any]) -> str:
    last = reprlib.repr(seen[0]) if seen else "nothing (the first check had not answered)"
    return f"not within {within:g} s: {what or _described(check)}; last seen: {last}"


def _described(check: Callable[[], Any]) -> str:
    """A check as a reader knows it: a lambda's source line, else its name."""
    name = getattr(check, "__qualname__", repr(check))
    if "<lambda>" not in name:
        return name
    try:
        return inspect.getsource(check).strip()
    except (OSError, TypeError):
        return name


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
