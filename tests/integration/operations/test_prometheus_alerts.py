"""A real Prometheus (Debian's) on loopback scrapes a running platform with the shipped rules
and sees EPIngestSilent go pending when ingest stops consuming while a homebase publishes,
then clear when it consumes again.

The rules file it loads is deploy/prometheus/rules.yml with EPIngestSilent's threshold and
`for` shortened (600 s -> 4 s, 5m -> 60s), so that the test takes seconds; every other rule is
as shipped. Ingest runs as a process of its own, stopped with SIGSTOP: it holds its broker
session and the broker queues for it, exactly as a hung consumer does."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from energy_platform.core.settings import Settings
from energy_platform.devices.simulator.homebase import SimulatedHomebase
from energy_platform.services import build_services
from tests.support.admin import run_admin
from tests.support.http import http_client
from tests.support.platform import (
    Platform,
    paired_homebase,
    platform_settings,
    publish_as,
    start_ingest,
    wait_subscribed,
    with_cluster,
)
from tests.support.scrape import promtool_problems
from tests.support.services import eventually, free_port, running

ROOT = Path(__file__).resolve().parents[3]
SILENT_AFTER = 4  # seconds, instead of the shipped 600
FOR = "60s"  # instead of the shipped 5m: long enough to see the alert pending, not firing


def shortened_rules(directory: Path) -> Path:
    """The shipped rules with EPIngestSilent's threshold and `for` shortened."""
    rules = yaml.safe_load((ROOT / "deploy/prometheus/rules.yml").read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            if rule.get("alert") == "EPIngestSilent":
                assert "< 600" in rule["expr"]
                rule["expr"] = rule["expr"].replace("< 600", f"< {SILENT_AFTER}")
                rule["for"] = FOR
    path = directory / "rules.yml"
    path.write_text(yaml.safe_dump(rules))
    return path


@pytest.fixture
def workdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="ep-prometheus-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def start_prometheus(workdir: Path, api: str) -> tuple[subprocess.Popen[bytes], str]:
    rules = shortened_rules(workdir)
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(rules)],
        "scrape_configs": [
            {
                "job_name": "energy-platform-api",
                "static_configs": [{"targets": [api.removeprefix("http://")]}],
            }
        ],
    }
    (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    process = subprocess.Popen(
        [
            "prometheus",
            f"--config.file={workdir / 'prometheus.yml'}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(workdir / "prometheus.log", "wb"),  # noqa: SIM115 - the process keeps it
    )
    return process, f"http://127.0.0.1:{port}"


async def alert_state(prometheus: str, name: str) -> str:
    """``inactive``, ``pending`` or ``firing`` as Prometheus' rules API says once it has
    evaluated the rule; ``unknown`` before (or while it does not answer)."""
    async with http_client() as http:
        try:
            answer = await http.get(f"{prometheus}/api/v1/rules", timeout=2)
        except httpx.TransportError:
            return "unknown"
    if answer.status_code != 200:
        return "unknown"  # 503 until its storage is open
    for group in answer.json()["data"]["groups"]:
        for rule in group["rules"]:
            if rule.get("name") == name and not rule["lastEvaluation"].startswith("0001"):
                return str(rule["state"])
    return "unknown"


async def test_ingest_silent_goes_pending_when_ingest_stops_consuming(
    settings: Settings, mqtt_url: str, workdir: Path
) -> None:
    s = await with_cluster(platform_settings(settings, mqtt_url))
    api = f"http://127.0.0.1:{s.http.api_port}"
    provisioning = s.pairing.provisioning_url
    user = await run_admin(s, "users", "add", f"alerts-{secrets.token_hex(3)}")
    ingest = start_ingest(s)
    prometheus = None
    try:
        await wait_subscribed(ingest)
        services = build_services(["api", "provisioning"], s)
        async with running(*services, ready_urls=(api + "/healthz", provisioning + "/healthz")):
            platform = Platform(s, api, provisioning, user["token"], user["id"])
            sn, secret, _ = await paired_homebase(platform)
            homebase = SimulatedHomebase(sn, secret)
            t = int(time.time()) - 600

            async def publish() -> None:
                nonlocal t
                t += 1
                await publish_as(platform, sn, secret, homebase.batch([t]))

            for base in (api, provisioning):
                assert await promtool_problems(base) == ""
            prometheus, prometheus_url = start_prometheus(workdir, api)
            await eventually(lambda: _target_up(prometheus_url), within=60)

            async def quiet() -> bool:
                await publish()  # stored at once: nothing to say
                stored = await _query(
                    prometheus_url, f"ep_ingest_last_stored_age_seconds < {SILENT_AFTER}"
                )
                return (
                    bool(stored)
                    and await alert_state(prometheus_url, "EPIngestSilent") == "inactive"
                )

            await eventually(quiet, within=60)

            os.kill(ingest.pid, signal.SIGSTOP)
            stopped = time.monotonic()

            async def pending() -> bool:
                await publish()  # the homebase goes on publishing; nothing is stored
                return await alert_state(prometheus_url, "EPIngestSilent") == "pending"

            await eventually(pending, within=60)
            went_pending = time.monotonic() - stopped
            assert went_pending < 60  # pending, within its `for`: not yet firing

            os.kill(ingest.pid, signal.SIGCONT)

            async def cleared() -> bool:
                await publish()
                return await alert_state(prometheus_url, "EPIngestSilent") == "inactive"

            await eventually(cleared, within=60)
            print(f"EPIngestSilent pending {went_pending:.1f} s after ingest stopped")
    finally:
        if prometheus is not None:
            prometheus.terminate()
            prometheus.wait(10)
        os.kill(ingest.pid, signal.SIGCONT)
        ingest.terminate()
        ingest.wait(10)


async def _target_up(prometheus: str) -> bool:
    async with http_client() as http:
        try:
            answer = await http.get(f"{prometheus}/api/v1/query", params={"query": "up"}, timeout=2)
        except httpx.TransportError:
            return False
    if answer.status_code != 200:
        return False
    result = answer.json()["data"]["result"]
    return bool(result) and result[0]["value"][1] == "1"


async def _query(prometheus: str, query: str) -> list[object]:
    async with http_client() as http:
        # Its callers need the answer: a slow one is waited for, not taken for a failure.
        answer = await http.get(f"{prometheus}/api/v1/query", params={"query": query}, timeout=30)
    result: list[object] = answer.json()["data"]["result"]
    return result
