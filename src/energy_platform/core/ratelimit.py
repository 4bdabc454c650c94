"""Token buckets per key (serial number, client address), in the memory of one process.

Several provisioning processes each enforce the limits on their own: with N of them behind a
load balancer a client gets at most N times the rate, which still stops a runaway device.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from energy_platform.core.errors import TooManyRequests
from energy_platform.core.settings import ProvisioningSettings

_MAX_KEYS = 100_000


class TokenBuckets:
    """``burst`` requests at once per key, refilled at ``per_minute``."""

    def __init__(
        self, per_minute: int, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = per_minute / 60.0
        self.burst = float(max(burst, 1))
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}

    def take(self, key: str) -> bool:
        """Spend one token of ``key``; False when it has none left."""
        now = self._clock()
        tokens, then = self._buckets.get(key, (self.burst, now))
        tokens = min(self.burst, tokens + (now - then) * self.rate)
        if tokens < 1.0:
            self._buckets[key] = (tokens, now)
            return False
        if len(self._buckets) >= _MAX_KEYS:
            self._forget_full(now)
        self._buckets[key] = (tokens - 1.0, now)
        return True

    def _forget_full(self, now: float) -> None:
        # A bucket that has refilled is the same as no bucket: drop those to bound memory.
        self._buckets = {
            key: (tokens, then)
            for key, (tokens, then) in self._buckets.items()
            if tokens + (now - then) * self.rate < self.burst
        }


class DeviceRateLimits:
    """The limits of homebase- and device-facing requests: per serial number and per address."""

    def __init__(self, settings: ProvisioningSettings) -> None:
        self.per_sn = TokenBuckets(settings.sn_requests_per_minute, settings.sn_burst)
        self.per_address = TokenBuckets(
            settings.address_requests_per_minute, settings.address_burst
        )

    def check(self, sn: str, address: str) -> None:
        """Raise :class:`TooManyRequests` (429, CoAP 4.29) when either limit is spent."""
        if not self.per_address.take(address):
            raise TooManyRequests("too many requests from this address; retry in a minute")
        if not self.per_sn.take(sn):
            raise TooManyRequests("too many requests for this serial number; retry in a minute")
