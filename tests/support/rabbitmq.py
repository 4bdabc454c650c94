"""RabbitMQ nodes of a test's or benchmark's own: Debian's ``rabbitmq-server`` started as this
process's children on loopback, each with free ports, a temporary data directory and a shared
Erlang cookie, beside an ``epmd`` of their own (on a free port, so that nothing is left behind
and nothing of the machine's is touched). ``kill()`` is SIGKILL of the node's whole process
group; ``start()`` again keeps its data directory."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from types import TracebackType

import httpx
import msgspec

from energy_platform.core.http.clients import tls_context
from energy_platform.core.settings import MqttSettings
from tests.support.services import free_port, tmpfs, until

SERVER = Path("/usr/lib/rabbitmq/bin/rabbitmq-server")
"""The server itself: Debian's /usr/sbin wrapper would switch to the rabbitmq user."""
CTL = SERVER.with_name("rabbitmqctl")
USER = "admin"
START_SECONDS = 300.0
"""How long a node (or a cluster) may take to start: three nodes took 21 s on a quiet machine
and 26 s on a loaded one, and a machine three times slower than usual is not rare here. A
wait ends as soon as the node is ready, and at once when its process exits."""


def available() -> bool:
    return SERVER.exists() and shutil.which("epmd") is not None


class Epmd:
    """Erlang's port mapper on a free port, for the nodes started with its ``env``."""

    def __init__(self) -> None:
        self.port = free_port()
        epmd = shutil.which("epmd") or "epmd"
        self._process = subprocess.Popen(
            [epmd, "-port", str(self.port)], start_new_session=True, stderr=subprocess.DEVNULL
        )

    def stop(self) -> None:
        self._process.kill()
        self._process.wait()


class RabbitNode:
    """One node; ``peers`` names every node of its cluster (itself included) to form one."""

    def __init__(
        self, root: Path, name: str, epmd: Epmd, cookie: str, password: str, peers: Sequence[str]
    ) -> None:
        self.name = name
        self.amqp_port, self.mqtt_port, self.http_port = free_port(), free_port(), free_port()
        self.dist_port = free_port()
        self.password = password
        self._dir = root / name.partition("@")[0]
        home = self._dir / "home"
        home.mkdir(parents=True)
        (home / ".erlang.cookie").write_text(cookie)
        (home / ".erlang.cookie").chmod(0o400)
        (self._dir / "enabled_plugins").write_text("[rabbitmq_mqtt,rabbitmq_management].\n")
        (self._dir / "empty.conf").write_text("")
        peer_lines = "".join(
            f"cluster_formation.classic_config.nodes.{i} = {peer}\n"
            for i, peer in enumerate(peers, 1)
        )
        (self._dir / "rabbitmq.conf").write_text(
            f"""listeners.tcp.default = 127.0.0.1:{self.amqp_port}
mqtt.listeners.tcp.default = 127.0.0.1:{self.mqtt_port}
mqtt.allow_anonymous = false
management.tcp.ip = 127.0.0.1
management.tcp.port = {self.http_port}
loopback_users = none
default_user = {USER}
default_pass = {password}
default_user_tags.administrator = true
log.console = false
log.file.level = warning
disk_free_limit.absolute = 1MB
cluster_formation.peer_discovery_backend = classic_config
{peer_lines}"""
        )
        # disk_free_limit: below 50 MB free (the default) a node raises an alarm that blocks
        # every publisher of its cluster, its CONNECT not even answered (tried: a homebase's
        # every connection timed out, no publish acknowledged, and only the node's log said
        # why). A test's node shares its disk, or the tmpfs, with the whole suite (a restore
        # drill's PostgreSQL beside it), whose use of it is no test's subject. The alarm is an
        # operator's matter (docs/operations.md), its threshold in deploy/rabbitmq/.
        self._env = {
            **os.environ,
            "HOME": str(home),
            "ERL_EPMD_PORT": str(epmd.port),
            "RABBITMQ_NODENAME": name,
            "RABBITMQ_NODE_PORT": str(self.amqp_port),
            "RABBITMQ_DIST_PORT": str(self.dist_port),
            "RABBITMQ_MNESIA_BASE": str(self._dir / "mnesia"),
            "RABBITMQ_LOG_BASE": str(self._dir / "log"),
            "RABBITMQ_CONFIG_FILE": str(self._dir / "rabbitmq"),
            "RABBITMQ_ADVANCED_CONFIG_FILE": str(self._dir / "advanced.config"),
            "RABBITMQ_CONF_ENV_FILE": str(self._dir / "empty.conf"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(self._dir / "enabled_plugins"),
            "RABBITMQ_PLUGINS_EXPAND_DIR": str(self._dir / "plugins"),
            "RABBITMQ_PID_FILE": str(self._dir / "pid"),
        }
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def api(self) -> str:
        return f"http://{USER}:{self.password}@127.0.0.1:{self.http_port}"

    def start(self) -> None:
        """Start the node without waiting for it (``wait_ready``)."""
        self._process = subprocess.Popen(
            [str(SERVER)],
            env=self._env,
            start_new_session=True,  # its own group: kill() takes beam and its helpers
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def wait_ready(self, timeout: float = START_SECONDS) -> None:
        """Until the node takes MQTT and AMQP connections (MQTT opens last)."""
        deadline = time.monotonic() + timeout
        for port in (self.amqp_port, self.mqtt_port):
            left = max(deadline - time.monotonic(), 0)
            until(partial(self._listens, port), left, f"{self.name} listens on port {port}")

    def _listens(self, port: int) -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        except OSError:
            if self._process is None or self._process.poll() is not None:
                raise RuntimeError(f"{self.name} exited: {self.log()}") from None
            return False
        return True

    def restart(self) -> None:
        """Restart the node gently, as docs/operations.md asks of an operator once the ingest
        queue is declared: ``rabbitmqctl stop_app`` (its applications stop and close their
        files) and ``start_app``, in the same Erlang VM; ready when it returns.

        RabbitMQ 3.10's Ra writes a new quorum queue's registration (``names.dets``) to disk
        only on its periodic save or a clean stop (synced at once since rabbitmq/ra#443): a
        node SIGKILLed before then restarts without the queue's log, and the queue takes no
        consumer again. A test that kills a node mid-burst restarts it gently first, as a queue
        declared long before a crash has been saved (docs/devices.md#rabbitmq). The VM stays:
        measured at a load of 7, this took about 4 s of CPU (the node's and rabbitmqctl's)
        where stopping the VM and booting a new one took over 8 s."""
        for command in ("stop_app", "start_app"):
            subprocess.run(
                [str(CTL), "-n", self.name, command],
                env=self._env,
                check=True,
                capture_output=True,
                timeout=START_SECONDS,
            )
        self.wait_ready()

    def kill(self) -> None:
        """SIGKILL of the node: nothing flushed, as after a power cut or the OOM killer.
        Returns once every thread of the node has exited: a killed beam's threads free its
        memory before the last of them closes its sockets, and until then its ports still take
        connections (a ``wait_ready`` right after ``start`` took them for the new node's,
        seconds early)."""
        if self._process is not None:
            group = self._process.pid
            os.killpg(group, signal.SIGKILL)
            self._process.wait()
            self._process = None
            until(
                lambda: all(_exited(pid) for pid in _members(group)),
                START_SECONDS,
                f"{self.name}'s processes exit",
            )

    def pids(self) -> list[int]:
        """The node's processes (beam and its helpers: its process group), while it runs."""
        if self._process is None:
            return []
        return _members(self._process.pid)

    def log(self) -> str:
        logs = sorted((self._dir / "log").glob("*.log"))
        return "\n".join(p.read_text()[-3000:] for p in logs)

    def queue(self, name: str, vhost: str = "/") -> dict[str, object]:
        """The management API's view of a queue (messages, leader, members...)."""
        path = f"/api/queues/{vhost.replace('/', '%2F')}/{name}"
        response = httpx.get(
            f"http://127.0.0.1:{self.http_port}{path}",
            auth=(USER, self.password),
            timeout=30,
            verify=tls_context(),
        )
        response.raise_for_status()
        return msgspec.json.decode(response.content, type=dict[str, object])

    def settings(self, base: MqttSettings) -> MqttSettings:
        """``base`` (share group, prefix, client id) on this node, as its administrator."""
        return msgspec.structs.replace(
            base,
            broker="rabbitmq",
            url=f"mqtt://127.0.0.1:{self.mqtt_port}",
            amqp_url=f"amqp://{USER}:{self.password}@127.0.0.1:{self.amqp_port}/",
            accounts_url=self.api,
        )


def _members(group: int) -> list[int]:
    """The processes of process group ``group``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[2]) == group:  # pgrp, the 5th field of /proc/PID/stat
            found.append(int(stat.parent.name))
    return found


def _exited(pid: int) -> bool:
    """Whether every thread of process ``pid`` has exited. Its main thread is a zombie as soon
    as it has, while the others may still hold the process's files."""
    for task in Path(f"/proc/{pid}/task").glob("*/stat"):
        try:
            state = task.read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue  # gone meanwhile
        if state not in ("Z", "X"):
            return False
    return True


class RabbitCluster:
    """``size`` nodes forming one cluster (one node: a plain broker); a context manager that
    leaves no process and no file behind."""

    def __init__(self, size: int = 1, *, in_memory: bool = False) -> None:
        # in_memory: the nodes' files on tmpfs. A quorum queue fsyncs each write on every node;
        # three nodes on the disk the suite's PostgreSQL writes to had a loaded machine take
        # over 120 s for 100 publishes. What a kill test asserts is unchanged (tmpfs()).
        where = tmpfs() if in_memory else None
        self._root = Path(tempfile.mkdtemp(prefix="ep-rabbitmq-", dir=where))
        self._epmd = Epmd()
        tag = secrets.token_hex(3)
        names = [f"ep-{tag}-{i}@localhost" for i in range(size)]
        cookie, password = secrets.token_hex(16).upper(), secrets.token_hex(8)
        self.nodes = [
            RabbitNode(self._root, name, self._epmd, cookie, password, names) for name in names
        ]
        self.started_in = 0.0
        """Seconds from the first start until every node was ready."""

    def __enter__(self) -> RabbitCluster:
        began = time.monotonic()
        try:
            for node in self.nodes:
                node.start()
            for node in self.nodes:
                node.wait_ready()
            if len(self.nodes) > 1:
                self._wait_clustered()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        self.started_in = time.monotonic() - began
        return self

    def _wait_clustered(self) -> None:
        until(
            self._nodes_seen,
            START_SECONDS,
            f"the {len(self.nodes)} nodes run as one cluster",
            every=0.2,
            holds=lambda seen: (
                isinstance(seen, list)
                and len([n for n in seen if n.get("running")]) == len(self.nodes)
            ),
        )

    def _nodes_seen(self) -> object:
        """The first node's list of nodes, or why it gave none."""
        node = self.nodes[0]
        # The management API of a node that takes AMQP and MQTT may not listen yet, or answer
        # slowly or with an error while its peers boot: asked again, not failed.
        try:
            response = httpx.get(
                f"http://127.0.0.1:{node.http_port}/api/nodes",
                auth=(USER, node.password),
                timeout=30,
                verify=tls_context(),
            )
        except httpx.TransportError as e:
            return repr(e)
        return response.json() if response.status_code == 200 else response.text

    def __exit__(
        self,
        kind: type[BaseException] | None = None,
        value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        for node in self.nodes:
            node.kill()
        self._epmd.stop()
        shutil.rmtree(self._root, ignore_errors=True)
