"""What ingest refuses: counted per cause, logged at most once per cause and SN a minute, and
kept as a dead letter (``cluster.dead_letters``) for operators and analysts."""

from __future__ import annotations

import msgspec
import structlog
from prometheus_client import Counter

from energy_platform.core.cache import BoundedCache

log = structlog.get_logger()
DROPPED = Counter(
    "ep_ingest_dropped_total",
    "Messages, records of a batch or CoAP requests ingest refused, by cause",
    ["cause"],
)
LOG_EVERY = 60.0
KEPT_BYTES = 65_536

INSERT_DEAD_LETTERS = """
INSERT INTO cluster.dead_letters (transport, sn, topic, cause, detail, sealed, size, payload)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::boolean[],
                     $7::int[], $8::bytea[])"""


class DeadLetter(msgspec.Struct, frozen=True):
    """A refused message, as its row in ``cluster.dead_letters``."""

    transport: str
    sn: str | None
    topic: str
    cause: str
    detail: str
    sealed: bool
    size: int
    payload: bytes

    @classmethod
    def of(
        cls,
        transport: str,
        sn: str | None,
        topic: str,
        cause: str,
        detail: str,
        payload: bytes,
        *,
        sealed: bool,
    ) -> DeadLetter:
        return cls(
            transport,
            sn,
            topic[:512],
            cause,
            detail[:1000],
            sealed,
            len(payload),
            payload[:KEPT_BYTES],
        )


def dead_letter_columns(letters: list[DeadLetter]) -> list[list[object]]:
    """The arguments of INSERT_DEAD_LETTERS."""
    return [
        list(column) for column in zip(*(msgspec.structs.astuple(d) for d in letters), strict=True)
    ]


class Drops:
    def __init__(self, size: int = 100_000) -> None:
        self._logged: BoundedCache[tuple[str, str], bool] = BoundedCache(size, LOG_EVERY)

    def record(self, cause: str, sn: str, detail: str, count: int = 1) -> None:
        """Count ``count`` refusals (messages, a message's records, CoAP requests)."""
        DROPPED.labels(cause).inc(count)
        key = (cause, sn)
        if key not in self._logged:
            self._logged.put(key, True)
            # The detail comes from the decoder, never from the payload's values or secrets.
            log.warning("dropped", cause=cause, sn=sn, detail=detail[:200])
