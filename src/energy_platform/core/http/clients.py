"""Outgoing HTTP clients on the process's one verifying TLS context.

httpx builds a TLS context for every client it makes, loading the CA bundle each time: about
40 ms of CPU, spent again by each short-lived client (a pairing, a poll, an admin command's
call). One context serves them all: it is read-only once made.
"""

from __future__ import annotations

import functools
import ssl
from typing import Any

import httpx


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The verifying context httpx would make (its CA bundle, ``SSL_CERT_FILE`` honoured)."""
    return httpx.create_ssl_context()


def http_client(**options: Any) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` with ``options``, on the shared TLS context."""
    return httpx.AsyncClient(verify=tls_context(), **options)
