"""Admin commands of the engine: reprocessing a feed, a compaction round now, and the feeds
parked on bad data. (Tariffs and prices are billing's: billing/admin.py.)

Reprocessing and a retry only change tables and queue work; the running engine recomputes the
affected buckets. ``compact`` does the work itself, as the engine's loop would.
"""

from __future__ import annotations

import asyncio
from datetime import datetime

import asyncpg
import click
import msgspec

from energy_platform.core.console import CommandGroup, emit, parse_instant, run_in_transaction
from energy_platform.core.db.pool import create_pool
from energy_platform.core.errors import InvalidInput, NotFound
from energy_platform.core.inputs import parse_id
from energy_platform.core.settings import CompactionSettings, Settings
from energy_platform.engine.compaction import CompactionResult, compact
from energy_platform.engine.parking import RETRY

FEED_EXISTS = "SELECT 1 FROM cluster.feeds WHERE id = $1"
REPROCESS = "SELECT cluster.engine_reprocess($1, $2, $3)"
# Per feed and stage: what waits for a repair (docs/operations.md#parked-feed).
PARKED = """
SELECT p.feed_id, t.title, p.stage, array_agg(DISTINCT p.channel ORDER BY p.channel) AS channels,
       array_agg(DISTINCT p.stream_id ORDER BY p.stream_id)
           FILTER (WHERE p.stream_id IS NOT NULL) AS streams,
       min(lower(p.span)) AS "from", max(upper(p.span)) AS "to",
       (array_agg(p.sqlstate ORDER BY p.parked_at DESC, p.id DESC))[1] AS sqlstate,
       (array_agg(p.error ORDER BY p.parked_at DESC, p.id DESC))[1] AS error,
       min(p.parked_at) AS since, max(p.retried_at) AS retried
  FROM cluster.parked_work p
  LEFT JOIN cluster.current_feed_titles t ON t.feed_id = p.feed_id
 GROUP BY p.feed_id, t.title, p.stage
 ORDER BY min(p.parked_at), p.feed_id, p.stage"""


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


async def _require_feed(conn: asyncpg.Connection, feed_id: int, given: str) -> None:
    if await conn.fetchval(FEED_EXISTS, feed_id) is None:
        raise NotFound(f"no feed {given!r}")


@click.command("reprocess")
@click.argument("feed_id")
@click.option("--from", "since", required=True, help="ISO 8601 instant (inclusive).")
@click.option("--to", "until", default="now", help="ISO 8601 instant (exclusive); default now.")
@click.pass_obj
def reprocess(settings: Settings, feed_id: str, since: str, until: str) -> None:
    """Queue a feed's raw data in [--from, --to) for processing again."""
    fid, start, end = (
        parse_id(feed_id, "feed"),
        parse_instant(since, "--from"),
        parse_instant(until, "--to"),
    )
    if start >= end:
        raise InvalidInput("--from must be before --to")

    async def work(conn: asyncpg.Connection) -> dict[str, object]:
        await _require_feed(conn, fid, feed_id)
        streams = await conn.fetchval(REPROCESS, fid, start, end)
        return {
            "feed": str(fid),
            "from": start.isoformat(),
            "to": end.isoformat(),
            "streams": streams,
        }

    emit(run_in_transaction(settings.database, work))


class Compacted(msgspec.Struct, frozen=True):
    older_than_days: int
    """Whole UTC days that ended this many days ago or earlier were compacted."""
    days: int
    """Stream-days moved into the compact tier."""
    points: int
    """Points in the compact rows written."""
    chunks: int
    """Emptied row-tier chunks dropped."""
    busy: int
    """Emptied chunks another session held: dropped by a later round."""
    recoded: int
    """Compacted stream-days of an older codec encoded again."""


@click.command("compact")
@click.option(
    "--older-than",
    "older_than",
    type=int,
    help="Days (at least 2); default EP_COMPACTION_AFTER_DAYS.",
)
@click.pass_obj
def compact_now(settings: Settings, older_than: int | None) -> None:
    """Run one compaction round now (after a backfill, say); prints what it did."""
    days = settings.compaction.after_days if older_than is None else older_than
    if days == 0:
        raise InvalidInput(
            "compaction is off (EP_COMPACTION_AFTER_DAYS=0): give --older-than DAYS"
            if older_than is None
            else "--older-than must be at least 2"
        )
    try:  # the settings' own checks
        compaction = CompactionSettings(
            after_days=days, interval=settings.compaction.interval, page=settings.compaction.page
        )
    except ValueError:
        raise InvalidInput("--older-than must be at least 2") from None

    async def work() -> CompactionResult:
        pool = await create_pool(settings.database)
        try:
            return await compact(pool, compaction)
        finally:
            await pool.close()

    result = asyncio.run(work())
    emit(Compacted(older_than_days=days, **msgspec.structs.asdict(result)))


class Parked(msgspec.Struct, frozen=True):
    feed: str
    title: str | None
    """The feed's current title."""
    stage: str
    """processing (90 s buckets) or rollups (hours and days)."""
    channels: list[int]
    streams: list[str]
    """rollups: the streams whose hours failed."""
    from_: str | None = msgspec.field(name="from")
    """Start of the periods that failed: the bad rows are between from and to (null: the
    stream's first point)."""
    to: str | None
    """Their end (null: the stream's last point)."""
    sqlstate: str
    error: str
    """The latest error's message."""
    since: str
    """When the feed was first parked."""
    retried: str | None
    """When admin engine retry released it (null: still parked); the row goes once its work
    succeeds."""


@click.group("engine", cls=CommandGroup)
def engine() -> None:
    """Feeds whose work failed on their data: parked, and retried after a repair."""


@engine.command("parked")
@click.pass_obj
def list_parked(settings: Settings) -> None:
    """List the parked feeds: channels, the periods holding the bad rows, the error, since."""

    async def work(conn: asyncpg.Connection) -> list[Parked]:
        return [
            Parked(
                feed=str(r["feed_id"]),
                title=r["title"],
                stage=r["stage"],
                channels=list(r["channels"]),
                streams=[str(s) for s in r["streams"] or []],
                from_=_iso(r["from"]),
                to=_iso(r["to"]),
                sqlstate=r["sqlstate"],
                error=r["error"],
                since=r["since"].isoformat(),
                retried=_iso(r["retried"]),
            )
            for r in await conn.fetch(PARKED)
        ]

    emit(run_in_transaction(settings.database, work))


@engine.command("retry")
@click.argument("feed_id")
@click.pass_obj
def retry(settings: Settings, feed_id: str) -> None:
    """Put a parked feed's work back after its data was repaired; the engine takes it again."""
    fid = parse_id(feed_id, "feed")

    async def work(conn: asyncpg.Connection) -> dict[str, object]:
        released = await conn.fetchval(RETRY, fid)
        if not released:
            raise NotFound(f"feed {feed_id!r} has nothing parked")
        return {"feed": str(fid), "released": released}

    emit(run_in_transaction(settings.database, work))


GROUPS: list[click.Command] = [reprocess, compact_now, engine]
