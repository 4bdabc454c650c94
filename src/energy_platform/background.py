"""How a background loop waits: jittered backoff between retries, and sleeps that end when the
service is asked to stop.

Background loops (ingest, the notification rules, the lifecycle's restarts, the simulators)
wait through these two, so a stop is never held up by a sleep and the retries of many workers
never fall into step. It sits beside ``lifecycle`` rather than in one domain's folder because
``devices/``, ``engine/`` and the lifecycle all use it."""

from __future__ import annotations

import asyncio
import random


class Backoff:
    """Delays of ``base * 2**n`` capped at ``cap``, each drawn uniformly from ``[0, delay]``."""

    def __init__(self, base: float = 0.5, cap: float = 30.0) -> None:
        self.base = base
        self.cap = cap
        self._attempt = 0

    def reset(self) -> None:
        self._attempt = 0

    def next_delay(self) -> float:
        delay = min(self.cap, self.base * 2**self._attempt)
        self._attempt += 1
        # Full jitter keeps many reconnecting workers from hitting the broker in step.
        return random.uniform(0, delay)  # noqa: S311 - not a secret


async def sleep_unless_stopped(
    stop: asyncio.Event, seconds: float, wake: asyncio.Event | None = None
) -> None:
    """Sleep ``seconds``, waking early when ``stop`` (or ``wake``, when given) is set; the
    caller checks ``stop`` after it, and clears ``wake``."""
    events = (stop,) if wake is None else (stop, wake)
    waits = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in waits:
            task.cancel()
