"""What the data API page's tests see: the demo user's world (seeded by
tests/integration/api/dashboard/conftest.py) and its time span."""

from __future__ import annotations

from dataclasses import dataclass, field

import httpx

WEEK = 7 * 86_400
ZONE = "Europe/Prague"


@dataclass
class PageWorld:
    url: str
    user: str
    token: str
    feed: str
    now: int
    """The newest point of every stream, a multiple of 5 s."""
    streams: dict[str, str] = field(default_factory=dict)
    notifications: list[str] = field(default_factory=list)

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}
        )
