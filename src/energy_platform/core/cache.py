"""A per-serial-number cache with a size limit and an age limit, so that memory stays bounded
whatever serial numbers arrive."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class BoundedCache(Generic[K, V]):
    """Entries live ``ttl`` seconds; past ``size`` entries the oldest inserted goes first."""

    def __init__(
        self, size: int, ttl: float = float("inf"), clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._size = max(size, 1)
        self._ttl = ttl
        self._clock = clock
        self._entries: dict[K, tuple[float, V]] = {}

    def get(self, key: K) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if self._clock() - entry[0] >= self._ttl:
            del self._entries[key]
            return None
        return entry[1]

    def __contains__(self, key: K) -> bool:
        return self.get(key) is not None

    def put(self, key: K, value: V) -> None:
        self._entries.pop(key, None)
        while len(self._entries) >= self._size:
            del self._entries[next(iter(self._entries))]
        self._entries[key] = (self._clock(), value)

    def pop(self, key: K) -> None:
        self._entries.pop(key, None)

    def __len__(self) -> int:
        return len(self._entries)
