"""What ingest refuses: counted per cause, logged at most once per cause and homebase a minute."""

from __future__ import annotations

import time

import structlog
from prometheus_client import Counter

log = structlog.get_logger()
DROPPED = Counter(
    "ep_ingest_dropped_total", "Messages or records ingest refused, by cause", ["cause"]
)
LOG_EVERY = 60.0


class Drops:
    def __init__(self) -> None:
        self._logged: dict[tuple[str, str], float] = {}

    def record(self, cause: str, sn: str, detail: str) -> None:
        DROPPED.labels(cause).inc()
        now = time.monotonic()
        key = (cause, sn)
        if now - self._logged.get(key, -LOG_EVERY) >= LOG_EVERY:
            self._logged[key] = now
            # The detail comes from the decoder, never from the payload's values or secrets.
            log.warning("dropped", cause=cause, sn=sn, detail=detail[:200])
