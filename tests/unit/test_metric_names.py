"""Every metric the platform exposes passes ``promtool check metrics`` (Prometheus's own lint:
base units, counter suffixes, help text), so dashboards and alerts name them the usual way."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from prometheus_client import REGISTRY, generate_latest

import energy_platform.cli
import energy_platform.services  # noqa: F401 - registers every service's metrics


def test_the_exposition_of_every_metric_passes_promtool() -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail("promtool missing: scripts/install-system.sh --for-tests installs it")
    exposition = generate_latest(REGISTRY)
    assert b"ep_engine_" in exposition
    assert b"ep_forwarder_" in exposition
    checked = subprocess.run(
        [promtool, "check", "metrics"], input=exposition, capture_output=True, check=False
    )
    assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()
