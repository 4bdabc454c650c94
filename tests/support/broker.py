"""A Mosquitto of a test's or benchmark's own, to kill: the private broker's configuration and
accounts (a copy of its dynamic security file, so the same passwords work) on a free port, with
the persistence lines under test."""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from tests.support.services import free_port, until

ROOT = Path(__file__).resolve().parents[2]
DYNSEC = ROOT / ".local" / "mosquitto" / "data" / "dynamic-security.json"

PERSISTENCE = "autosave_interval 1"
"""Mosquitto's snapshot settings as the private broker and deploy/ use them (docs/devices.md)."""


def _plugin() -> str:
    name = "mosquitto_dynamic_security.so"
    found = glob.glob(f"/usr/lib/{name}") + glob.glob(f"/usr/lib/*/{name}")
    if not found:
        raise RuntimeError("mosquitto_dynamic_security.so not found (apt-get install mosquitto)")
    return found[0]


def _accounts() -> bytes:
    """The private broker's dynamic security file as a whole. Mosquitto 2.0.11 rewrites it in
    place (truncate, then write) at every account change, which other tests make at any time:
    a copy taken meanwhile is empty or cut, and a broker started on it knows no account."""
    whole: bytes = until(
        DYNSEC.read_bytes, 30, "the private broker's accounts file whole", every=0.01, holds=_json
    )
    return whole


def _json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


class KillableBroker:
    """Starts on entry, ``kill()`` is SIGKILL, ``start()`` again keeps the data directory."""

    def __init__(self, persistence: str = PERSISTENCE) -> None:
        self.port = free_port()
        self._dir = Path(tempfile.mkdtemp(prefix="ep-broker-"))
        (self._dir / "data").mkdir()
        (self._dir / "data" / "dynamic-security.json").write_bytes(_accounts())
        user = "user root" if os.geteuid() == 0 else ""
        (self._dir / "mosquitto.conf").write_text(
            f"""{user}
listener {self.port} 127.0.0.1
allow_anonymous false
plugin {_plugin()}
plugin_opt_config_file {self._dir / "data" / "dynamic-security.json"}
persistence true
persistence_location {self._dir / "data"}/
{persistence}
max_queued_messages 0
max_inflight_messages 2000
max_packet_size 1049600
log_dest file {self._dir / "mosquitto.log"}
log_type error
log_type warning
"""
        )
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        mosquitto = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        self._process = subprocess.Popen([mosquitto, "-c", str(self._dir / "mosquitto.conf")])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
            except OSError:
                if self._process.poll() is not None:
                    raise RuntimeError(
                        f"mosquitto exited: {(self._dir / 'mosquitto.log').read_text()}"
                    ) from None
                time.sleep(0.05)
            else:
                return
        raise RuntimeError("mosquitto did not listen within 60 s")

    @property
    def snapshot(self) -> Path:
        """The file the broker saves its snapshot to (Mosquitto's name for it)."""
        return self._dir / "data" / "mosquitto.db"

    def saved(self, *parts: bytes) -> bool:
        """Whether the broker's last snapshot holds every one of ``parts`` (a client id, a
        topic, a payload: Mosquitto writes them as they are). It writes a new file and
        renames it over the old one, so a read never meets half a snapshot."""
        try:
            snapshot = self.snapshot.read_bytes()
        except FileNotFoundError:
            return False
        return all(part in snapshot for part in parts)

    def pids(self) -> list[int]:
        """The broker's process, while it runs (for its CPU time and memory)."""
        return [] if self._process is None else [self._process.pid]

    def kill(self) -> None:
        """SIGKILL: no snapshot at exit, as after a power cut or the OOM killer."""
        if self._process is not None:
            self._process.send_signal(signal.SIGKILL)
            self._process.wait()
            self._process = None

    def __enter__(self) -> KillableBroker:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait()
        shutil.rmtree(self._dir, ignore_errors=True)
