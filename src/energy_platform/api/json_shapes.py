"""Feeds and streams shaped as the API's JSON, built from rows (shared by the API and the CLI)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime

import asyncpg
import msgspec

from energy_platform.api import queries
from energy_platform.api.schemas import (
    Feed,
    FeedConfig,
    ProcessedStream,
    RawStream,
    Stream,
    StreamConfig,
    Subscription,
    SystemStream,
)

# A pool or a single connection: both answer fetch().
Queryable = asyncpg.Pool | asyncpg.Connection


def iso(value: datetime | None) -> str | None:
    """ISO 8601 with its UTC offset, or None for an unbounded end."""
    return None if value is None else value.isoformat()


async def render_feeds(db: Queryable, rows: Sequence[asyncpg.Record]) -> list[Feed]:
    """Feed objects for ``rows`` of (id, subscription_from, subscription_to), with configs."""
    configs: dict[int, list[FeedConfig]] = defaultdict(list)
    for c in await db.fetch(queries.FEED_CONFIGS, [r["id"] for r in rows]):
        configs[c["feed_id"]].append(
            FeedConfig(c["title"], c["timezone"], iso(c["valid_from"]), iso(c["valid_to"]))
        )
    return [
        Feed(
            str(r["id"]),
            Subscription(r["subscription_from"].isoformat(), r["subscription_to"].isoformat()),
            configs[r["id"]],
        )
        for r in rows
    ]


async def render_streams(db: Queryable, rows: Iterable[asyncpg.Record]) -> list[Stream]:
    """Stream objects for stream ``rows``, processed ones with their configs."""
    rows = list(rows)
    processed = [r["id"] for r in rows if r["type"] == "processed"]
    configs: dict[int, list[StreamConfig]] = defaultdict(list)
    if processed:
        for c in await db.fetch(queries.STREAM_CONFIGS, processed):
            configs[c["stream_id"]].append(
                StreamConfig(
                    c["title"],
                    c["medium"],
                    c["unit"],
                    iso(c["valid_from"]),
                    iso(c["valid_to"]),
                    c["submeter"],
                    c["main"],
                )
            )
    return [_stream(r, configs[r["id"]]) for r in rows]


def _stream(row: asyncpg.Record, configs: list[StreamConfig]) -> Stream:
    stream_id = str(row["id"])
    index = msgspec.UNSET if row["idx"] is None else row["idx"]
    if row["type"] == "raw":
        return RawStream(stream_id, "raw", row["channel"], row["device"], row["medium"], index)
    if row["type"] == "processed":
        register = msgspec.UNSET if row["register"] is None else row["register"]
        return ProcessedStream(
            stream_id,
            "processed",
            row["channel"],
            row["combined"],
            row["quantity"],
            configs,
            index,
            register,
            register,
        )
    return SystemStream(stream_id, "system", row["channel"])
