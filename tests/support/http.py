"""The HTTP client tests talk to the platform with."""

from __future__ import annotations

from typing import Any

import httpx

from energy_platform.core.http import clients

TIMEOUT = 60.0
"""Seconds a test's request may take. On a loaded 2-core machine a request the platform answers
in milliseconds quiet can take several seconds, past httpx's 5 s default: a test fails then on
the machine, not on the platform. A test that checks a timeout passes its own."""


def http_client(**options: Any) -> httpx.AsyncClient:
    """``energy_platform``'s client (the shared TLS context) with the tests' timeout."""
    options.setdefault("timeout", TIMEOUT)
    return clients.http_client(**options)
