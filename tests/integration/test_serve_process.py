"""`energy-platform serve` as a user runs it: a real process, real ports, real signals."""

import json
import os
import signal
import socket
import subprocess
import threading

import httpx
import pytest

from energy_platform.core.http.clients import tls_context
from tests.support.admin import CLI
from tests.support.services import free_port, until


def start(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [CLI, *args],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


class LogLines:
    """The lines a process writes to stderr, read as they come (a full pipe would stall it)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        assert process.stderr is not None
        self._stderr = process.stderr
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self._stderr:
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()

    def wait_for(self, text: str, timeout: float) -> bool:
        """Whether a line holding ``text`` came within ``timeout`` seconds."""
        with self._changed:
            return self._changed.wait_for(lambda: any(text in x for x in self.lines), timeout)

    def close(self) -> None:
        """Read to the end (the process has exited)."""
        self._reader.join(30)

    def text(self) -> str:
        return "".join(self.lines)


def wait_ready(
    urls: list[str], process: subprocess.Popen[str], log: LogLines, timeout: float = 60
) -> None:
    pending = list(urls)

    def all_ready() -> bool:
        assert process.poll() is None, log.text()
        while pending:
            try:
                if httpx.get(pending[0], timeout=1, verify=tls_context()).status_code != 200:
                    return False
            except httpx.TransportError:
                return False
            pending.pop(0)
        return True

    until(all_ready, timeout, f"every service answers /readyz: {urls}")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_all_runs_every_service_and_stops_cleanly_on_a_signal(
    database_url: str, mqtt_url: str, sig: signal.Signals
) -> None:
    ports = {"API": free_port(), "PROVISIONING": free_port(), "FORWARDER": free_port()}
    env = {f"EP_HTTP_{name}_PORT": str(port) for name, port in ports.items()}
    env |= {"EP_DATABASE_URL": database_url, "EP_MQTT_URL": mqtt_url, "EP_LOG_FORMAT": "json"}
    env["EP_COMPACTION_AFTER_DAYS"] = "0"  # the module's database is shared (tests/conftest.py)
    # CoAP and TFTP on free UDP ports: the defaults may be taken by another run.
    env |= {
        "EP_DEVICES_COAP_PORT": str(free_port(socket.SOCK_DGRAM)),
        "EP_PROVISIONING_TFTP_PORT": str(free_port(socket.SOCK_DGRAM)),
    }
    process = start(["serve", "all"], env)
    log = LogLines(process)
    try:
        wait_ready([f"http://127.0.0.1:{p}/readyz" for p in ports.values()], process, log)
        # Stopped while every service is at work: ingest too, which has reached the broker.
        assert log.wait_for('"subscribed"', 60), log.text()
        process.send_signal(sig)
        process.wait(timeout=30)
        log.close()
    finally:
        process.kill()

    assert process.returncode == 0, log.text()
    events = [json.loads(line) for line in log.lines]
    stopped = {e["service"] for e in events if e["event"] == "service stopped"}
    assert stopped == {
        "api",
        "provisioning",
        "tftp",
        "coap",
        "forwarder",
        "deliveries",
        "ingest",
        "engine",
        "rules",
        "retention",
        "compaction",
        "live-log",
    }
    assert [e for e in events if "service" not in e] == []
    assert any(e["event"] == "broker connected" and e["service"] == "ingest" for e in events)


def test_serve_refuses_an_unknown_service() -> None:
    result = subprocess.run(
        [CLI, "serve", "everything"], capture_output=True, text=True, check=False
    )
    assert result.returncode != 0
    assert "everything" in result.stderr
