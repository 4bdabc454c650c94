"""Reading a service's ``/metrics`` as Prometheus does."""

from __future__ import annotations

import asyncio
import subprocess

from prometheus_client.parser import text_string_to_metric_families

from tests.support.http import http_client


async def scrape(base: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of ``base/metrics``: (name, sorted labels) -> value."""
    async with http_client() as http:
        answer = await http.get(f"{base}/metrics")
    assert answer.status_code == 200, answer.text
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def value(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str,
          **labels: str) -> float | None:  # fmt: skip
    return samples.get((name, tuple(sorted(labels.items()))))


async def promtool_problems(base: str) -> str:
    """What ``promtool check metrics`` says about ``base/metrics`` (empty: nothing)."""
    async with http_client() as http:
        text = (await http.get(f"{base}/metrics")).text
    done = await asyncio.to_thread(
        subprocess.run,
        ["promtool", "check", "metrics"],
        input=text,
        capture_output=True,
        text=True,
        check=False,
    )
    return "" if done.returncode == 0 else done.stdout + done.stderr
