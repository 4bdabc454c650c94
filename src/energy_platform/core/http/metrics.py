"""HTTP metrics of every service: requests, errors, durations and requests in progress.

The same families Litestar's Prometheus middleware kept (``ep_http_*``, labelled by method,
route template, status and service), measured by a plain ASGI wrapper that looks up each
label set's children once: Litestar's middleware built a request object, label dicts and four
label lookups per request: without it the data endpoint served 9-35 % more requests/s
(docs/scaling.md, issue 21).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send
from prometheus_client import Counter, Gauge, Histogram

LABELS = ("method", "path", "status_code", "app_name")
REQUESTS = Counter("ep_http_requests_total", "Total requests", LABELS)
ERRORS = Counter("ep_http_requests_error_total", "Requests answered with a 5xx status", LABELS)
DURATION = Histogram("ep_http_request_duration_seconds", "Request duration, in seconds", LABELS)
IN_PROGRESS = Gauge(
    "ep_http_requests_in_progress",
    "Requests being answered",
    ("method", "path", "app_name"),
    multiprocess_mode="livesum",
)
UNMEASURED = frozenset({"/metrics", "/healthz"})
"""Scraped and probed all the time: counting them would only measure the scraper."""

Children = tuple[Counter, Histogram, Counter | None]
"""What one finished request of a label set counts: requests, its duration, 5xx answers."""


def http_metrics(app_name: str) -> Callable[[ASGIApp], ASGIApp]:
    """Litestar middleware recording every HTTP request of service ``app_name``. It runs for
    routed requests only (an unknown path or method is answered before it), so the route
    templates bound the label sets: each one's children are looked up once."""
    in_progress: dict[tuple[str, str], Gauge] = {}
    finished: dict[tuple[str, str, int], Children] = {}

    def children(method: str, path: str, status: int) -> Children:
        key = (method, path, status)
        if key not in finished:
            labels = (method, path, str(status), app_name)
            error = ERRORS.labels(*labels) if status >= 500 else None
            finished[key] = (REQUESTS.labels(*labels), DURATION.labels(*labels), error)
        return finished[key]

    def middleware(app: ASGIApp) -> ASGIApp:
        async def measured(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != ScopeType.HTTP or scope["path"] in UNMEASURED:
                await app(scope, receive, send)
                return
            method, path = scope["method"], scope["path_template"]
            gauge = in_progress.get((method, path))
            if gauge is None:
                gauge = in_progress[(method, path)] = IN_PROGRESS.labels(method, path, app_name)
            started = time.perf_counter()
            status = 500  # unless a response starts: what a request that dies without one is
            ended = 0.0

            async def observed(message: Message) -> None:
                nonlocal status, ended
                if message["type"] == "http.response.start":
                    status = message["status"]
                elif message["type"] == "http.response.body" and not message.get("more_body"):
                    ended = time.perf_counter()
                await send(message)

            gauge.inc()
            try:
                await app(scope, receive, observed)
            finally:
                gauge.dec()
                count, duration, error = children(method, path, status)
                count.inc()
                duration.observe((ended or time.perf_counter()) - started)
                if error is not None:
                    error.inc()

        return measured

    return middleware
