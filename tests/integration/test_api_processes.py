"""The data API in several processes on one port (docs/scaling.md): with EP_HTTP_REUSE_PORT the
kernel spreads connections among them, and when one dies the others go on answering."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import httpx

from energy_platform.core.http.clients import tls_context
from energy_platform.core.settings import Settings
from tests.support.admin import CLI, run_admin
from tests.support.platform import serve_env
from tests.support.services import until


def start_api(settings: Settings, *, reuse_port: bool) -> subprocess.Popen[bytes]:
    env = {**serve_env(settings), "EP_HTTP_REUSE_PORT": "true" if reuse_port else "false"}
    return subprocess.Popen(
        [CLI, "serve", "api"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def answers(url: str, token: str, requests: int) -> list[int]:
    """Status codes of ``requests`` requests, each on a new connection."""
    # No keep-alive: every request opens a connection, which the kernel hands to either process.
    no_reuse = httpx.Limits(max_keepalive_connections=0)
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(headers=headers, timeout=5, limits=no_reuse, verify=tls_context()) as http:
        return [http.get(url).status_code for _ in range(requests)]


def wait_ready(base: str, processes: list[subprocess.Popen[bytes]]) -> None:
    def ready() -> bool:
        assert all(p.poll() is None for p in processes), "an API process exited"
        try:
            return httpx.get(base + "/readyz", timeout=1, verify=tls_context()).status_code == 200
        except httpx.HTTPError:
            return False

    until(ready, 60, "the API answers /readyz")


def listening(pid: int, port: int) -> bool:
    """Whether process ``pid`` holds a socket listening on TCP ``port`` (Linux's /proc)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as rows:
            for row in list(rows)[1:]:
                fields = row.split()
                local, state, inode = fields[1], fields[3], fields[9]
                if state == "0A" and int(local.rpartition(":")[2], 16) == port:  # 0A: LISTEN
                    inodes.add(f"socket:[{inode}]")
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except FileNotFoundError:
        return False  # it exited
    return any(_link(fd) in inodes for fd in fds)


def _link(fd: Path) -> str:
    try:
        return os.readlink(fd)
    except OSError:
        return ""  # closed meanwhile


async def test_two_api_processes_share_a_port_and_survive_the_loss_of_one(
    settings: Settings,
) -> None:
    user = await run_admin(settings, "users", "add", f"processes-{time.time_ns()}")
    base = f"http://127.0.0.1:{settings.http.api_port}"
    url = f"{base}/users/{user['id']}/feeds"
    processes = [start_api(settings, reuse_port=True) for _ in range(2)]
    try:
        wait_ready(base, processes)

        # Both bound the one port: the first to answer says nothing of the other.
        def both_listen() -> bool:
            assert all(p.poll() is None for p in processes), "an API process exited"
            return all(listening(p.pid, settings.http.api_port) for p in processes)

        until(both_listen, 60, "both API processes listen on the port")
        assert answers(url, user["token"], 100) == [200] * 100

        processes[0].send_signal(signal.SIGKILL)
        processes[0].wait()
        assert answers(url, user["token"], 100) == [200] * 100  # the other one answers

        # Without the setting a second process on a taken port stops, as a stray one should.
        stray = start_api(settings, reuse_port=False)
        assert stray.wait(60) != 0
    finally:
        for p in processes:
            if p.poll() is None:
                p.terminate()
                p.wait(30)
