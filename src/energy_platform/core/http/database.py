"""The app's database pool as a dependency: every handler that queries asks for ``pool``.

``build_app`` opens the pool in the app's lifespan and provides it here, once for every
service, so a handler (or a dependency such as an authentication) declares ``pool: Database``
and never reaches into the app's state itself.
"""

from __future__ import annotations

import asyncpg
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide

Database = NamedDependency[asyncpg.Pool]
"""A handler's or dependency's parameter ``pool``: the app's pool."""


def _app_pool(state: State) -> asyncpg.Pool:
    pool: asyncpg.Pool = state.db
    return pool


Reads = NamedDependency[asyncpg.Pool]
"""A handler's or dependency's parameter ``reads``: the pool reads may use, a streaming replica's
when the app is given one (``EP_DATABASE_READ_URL``), else the app's pool. Nothing writes there."""


def _read_pool(state: State) -> asyncpg.Pool:
    pool: asyncpg.Pool = state.read_db
    return pool


POOL = {
    "pool": Provide(_app_pool, sync_to_thread=False),
    "reads": Provide(_read_pool, sync_to_thread=False),
}
"""The app-level dependencies ``build_app`` registers."""
